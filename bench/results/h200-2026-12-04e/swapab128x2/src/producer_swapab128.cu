// gemm.producer_swapab128 — the TMA producer of the swap-AB linked GEMM + SwiGLU, x_rows 128 (64 < M <= 128)
// (contract: producer_swapab128.kc). The code is producer_swapab.cuh's, instantiated with this
// package's handles and facts (kl_gemm_producer_swapab128.h).
#include "common.cuh"
#include "kl_gemm_producer_swapab128.h"
#include "producer_swapab.cuh"
#include "scheduler.cuh"

namespace {
GS_SWAPAB_PRODUCER_HANDLES(kl_gemm_producer_swapab128, gs_producer_swapab_sched_init, gs_producer_swapab_sched_next);
}  // namespace

extern "C" __device__ void gemm_producer_swapab128_kv_init(const GsSwapLoadParams* /*params*/, unsigned char* smem) {
    gs::swapab_kv_init<SwapProducer>(smem);
}

extern "C" __device__ void gs_producer_swapab_main(const GsSwapLoadParams* p, unsigned char* smem) {
    gs::swapab_produce<SwapProducer>(p, smem);
}
