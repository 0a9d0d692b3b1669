// gemm.streamk_fixup — the stream-K fix-up package of the linked persistent GEMM + SwiGLU
// (contract: fixup.kc; protocol: fixup.cuh and consumer.kc's counter `sk_flags`). Run by the
// consumer warpgroups of every CTA (their 256 threads, converged), around the caller's named
// barrier; the partner of a counter is the same role in another CTA.
#include "fixup.cuh"
#include "kl_gemm_streamk_fixup.h"

namespace {
constexpr int kR = 128;      // a 64 x 256 f32 accumulator per warpgroup: 128 per thread
constexpr int kRSmall = 64;  // a 64 x 128 one (the small-M pipeline): 64 per thread
__device__ __forceinline__ const gs::FixupSite& site_of(void* site) { return *static_cast<const gs::FixupSite*>(site); }
}  // namespace

extern "C" __device__ void gs_sk_store(void* acc, void* workspace, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_store<kR>(*static_cast<const float(*)[kR]>(acc), static_cast<float4*>(workspace),
                     s.sched->slot(s.sched->cluster), s.t, s.warp_live != 0u);
}

extern "C" __device__ void gs_sk_raise(void* flags, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_flag(static_cast<unsigned*>(flags), s.sched->slot(s.sched->cluster), s.t);
}

extern "C" __device__ void gs_sk_await(void* flags, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_await(static_cast<unsigned*>(flags), *s.sched, s.sk_tile, s.t);
}

extern "C" __device__ void gs_sk_add(void* acc, void* workspace, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_add<kR>(*static_cast<float(*)[kR]>(acc), static_cast<const float4*>(workspace), *s.sched, s.sk_tile, s.t,
                   s.warp_live != 0u);
}

extern "C" __device__ void gs_sk_store_r64(void* acc, void* workspace, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_store<kRSmall>(*static_cast<const float(*)[kRSmall]>(acc), static_cast<float4*>(workspace),
                          s.sched->slot(s.sched->cluster), s.t, s.warp_live != 0u);
}

extern "C" __device__ void gs_sk_add_r64(void* acc, void* workspace, void* site) {
    const gs::FixupSite& s = site_of(site);
    gs::sk_add<kRSmall>(*static_cast<float(*)[kRSmall]>(acc), static_cast<const float4*>(workspace), *s.sched,
                        s.sk_tile, s.t, s.warp_live != 0u);
}
