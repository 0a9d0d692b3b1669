// gemm.scheduler_small — gemm.scheduler (scheduler.cu) for the small-M pipeline (contract:
// scheduler_small.kc): the same gs::Scheduler, whose facts name 128 x 128 tiles.
#include "kl_gemm_scheduler_small.h"
#include "scheduler.cuh"

extern "C" __device__ void gs_sched_small_init_impl(void* sched, void* problem) {
    const gs::Problem& p = *static_cast<const gs::Problem*>(problem);
    static_cast<gs::Scheduler*>(sched)->init(p.m, p.n, p.k, p.k_step, p.bn, p.raster, p.stream_k, p.cluster_size,
                                             p.cluster_rank);
}

extern "C" __device__ bool gs_sched_small_next_impl(void* sched, void* work) {
    return static_cast<gs::Scheduler*>(sched)->next(*static_cast<gs::Work*>(work));
}
