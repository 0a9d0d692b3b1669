// gemm.mainloop_swapab — the wgmma consumer of the swap-AB linked GEMM + SwiGLU, x_rows 32 (M <= 32)
// (contract: consumer_swapab.kc). The code is consumer_swapab.cuh's, instantiated with this
// package's handles and facts (kl_gemm_mainloop_swapab.h).
#include "consumer.cuh"
#include "consumer_swapab.cuh"
#include "kl_gemm_mainloop_swapab.h"
#include "scheduler.cuh"

namespace {
GS_SWAPAB_MAINLOOP_HANDLES(kl_gemm_mainloop_swapab, gs_consumer_swapab_sched_init, gs_consumer_swapab_sched_next,
                           gs_consumer_swapab_swiglu);
}  // namespace

extern "C" __device__ void gs_consumer_swapab_main(const GsSwapMmaParams* p, unsigned char* smem) {
    gs::swapab_consume<SwapMainloop>(p, smem);
}
