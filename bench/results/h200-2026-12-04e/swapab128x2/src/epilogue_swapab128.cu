// swiglu.epilogue_swapab128 — SwiGLU of a swap-AB tile and its store, x_rows 128 (64 < M <= 128): one
// consumer warpgroup's half, 64 rows of X (contract: epilogue_swapab128.kc). The code is epilogue_swapab.cuh's,
// at N = this package's assumed x_rows / 2: the mainloop's two warpgroups each call it with their own
// fragment (kl_swiglu_epilogue_swapab128.h).
#include "epilogue.cuh"
#include "epilogue_swapab.cuh"
#include "kl_swiglu_epilogue_swapab128.h"

extern "C" __device__ void gs_swiglu_swapab_store(void* acc, void* out, unsigned ld, unsigned m, unsigned col0) {
    constexpr unsigned kN = kl_swiglu_epilogue_swapab128_assumed_x_rows / 2u;
    gs::store_swapab<kN>(*static_cast<const float(*)[2][kN / 2]>(acc), static_cast<unsigned*>(out), ld, m, col0);
}
