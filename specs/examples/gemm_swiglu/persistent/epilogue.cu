// swiglu.epilogue — the SwiGLU epilogue package of the linked persistent GEMM + SwiGLU
// (contract: epilogue.kc; arithmetic and staging protocol: epilogue.cuh, GS_EPI 1 unless the
// flags say otherwise). Each consumer warpgroup calls it once per output unit with its 64 x 256
// f32 accumulator (wgmma m64n256k16 layout), in three calls around the caller's named barrier:
// begin, write (the 64 x 128 SwiGLU outputs into the staging claim the caller passes), store
// (TMA, rows past M clipped by the map). Each warpgroup's thread 0 issues. The _n128 write and
// store take a 64 x 128 accumulator (64 x 64 outputs: the small-M pipeline's 128 x 128 tiles).
#include "epilogue.cuh"
#include "kl_swiglu_epilogue.h"

namespace {
constexpr int kFrags = 1;  // one 64-row fragment per warpgroup (the cooperative schedule)
constexpr int kNJ = 32;    // 256 accumulator columns = 32 n8-blocks
constexpr int kNJSmall = 16;  // 128 of them (the small-M pipeline's 128 x 128 tiles)
__device__ __forceinline__ unsigned thread_in_warpgroup() { return threadIdx.x & 127u; }
}  // namespace

extern "C" __device__ void gs_swiglu_epilogue_begin() { gs::swiglu_begin(thread_in_warpgroup()); }

extern "C" __device__ void gs_swiglu_epilogue_write(void* acc, unsigned staging) {
    gs::swiglu_write<kFrags, kNJ>(*static_cast<const float(*)[kFrags][kNJ * 4]>(acc), staging,
                                  thread_in_warpgroup());
}

extern "C" __device__ void gs_swiglu_epilogue_store(void* tmap_out, unsigned staging, unsigned row0, unsigned col0) {
    gs::swiglu_store<kFrags, kNJ>(staging, static_cast<const CUtensorMap*>(tmap_out), static_cast<int>(row0),
                                  static_cast<int>(col0), thread_in_warpgroup());
}

extern "C" __device__ void gs_swiglu_epilogue_write_n128(void* acc, unsigned staging) {
    gs::swiglu_write<kFrags, kNJSmall>(*static_cast<const float(*)[kFrags][kNJSmall * 4]>(acc), staging,
                                       thread_in_warpgroup());
}

extern "C" __device__ void gs_swiglu_epilogue_store_n128(void* tmap_out, unsigned staging, unsigned row0,
                                                         unsigned col0) {
    gs::swiglu_store<kFrags, kNJSmall>(staging, static_cast<const CUtensorMap*>(tmap_out), static_cast<int>(row0),
                                       static_cast<int>(col0), thread_in_warpgroup());
}

extern "C" __device__ void gs_swiglu_epilogue_drain() { gs::epilogue_drain(thread_in_warpgroup()); }
