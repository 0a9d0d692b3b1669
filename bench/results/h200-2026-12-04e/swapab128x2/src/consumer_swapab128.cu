// gemm.mainloop_swapab128 — the wgmma consumer of the swap-AB linked GEMM + SwiGLU, x_rows 128 (64 < M <= 128),
// two warpgroups of 64 rows of X each (contract: consumer_swapab128.kc). The code is consumer_swapab_split.cuh's
// swapab_consume_split, instantiated with this package's handles and facts (kl_gemm_mainloop_swapab128.h).
#include "consumer.cuh"
#include "consumer_swapab.cuh"
#include "consumer_swapab_split.cuh"
#include "kl_gemm_mainloop_swapab128.h"
#include "scheduler.cuh"

namespace {
GS_SWAPAB_MAINLOOP_HANDLES(kl_gemm_mainloop_swapab128, gs_consumer_swapab_sched_init, gs_consumer_swapab_sched_next,
                           gs_consumer_swapab_swiglu);
}  // namespace

extern "C" __device__ void gs_consumer_swapab_main(const GsSwapMmaParams* p, unsigned char* smem) {
    gs::swapab_consume_split<SwapMainloop>(p, smem);
}
