// swiglu.epilogue_swapab64 — SwiGLU of a swap-AB tile and its store, x_rows 64 (32 < M <= 64) (contract:
// epilogue_swapab64.kc). The code is epilogue_swapab.cuh's, at N = this package's assumed x_rows
// (kl_swiglu_epilogue_swapab64.h).
#include "epilogue.cuh"
#include "epilogue_swapab.cuh"
#include "kl_swiglu_epilogue_swapab64.h"

extern "C" __device__ void gs_swiglu_swapab_store(void* acc, void* out, unsigned ld, unsigned m, unsigned col0) {
    constexpr unsigned kN = kl_swiglu_epilogue_swapab64_assumed_x_rows;
    gs::store_swapab<kN>(*static_cast<const float(*)[2][kN / 2]>(acc), static_cast<unsigned*>(out), ld, m, col0);
}
