// gemm.mainloop_swapab64 — the wgmma consumer of the swap-AB linked GEMM + SwiGLU, x_rows 64 (32 < M <= 64)
// (contract: consumer_swapab64.kc). The code is consumer_swapab.cuh's, instantiated with this
// package's handles and facts (kl_gemm_mainloop_swapab64.h).
#include "consumer.cuh"
#include "consumer_swapab.cuh"
#include "kl_gemm_mainloop_swapab64.h"
#include "scheduler.cuh"

namespace {
GS_SWAPAB_MAINLOOP_HANDLES(kl_gemm_mainloop_swapab64, gs_consumer_swapab_sched_init, gs_consumer_swapab_sched_next,
                           gs_consumer_swapab_swiglu);
}  // namespace

extern "C" __device__ void gs_consumer_swapab_main(const GsSwapMmaParams* p, unsigned char* smem) {
    gs::swapab_consume<SwapMainloop>(p, smem);
}
