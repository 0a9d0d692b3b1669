// gemm.scheduler — the tile scheduler package of the linked persistent GEMM + SwiGLU (contract:
// scheduler.kc). It owns the tile order and the split of the work among the persistent clusters
// (scheduler.cuh: raster groups, data-parallel waves, stream-K ranges) and exports two callables;
// the producer and the consumers each hold a gs::Scheduler cursor and walk the same sequence of
// units through them. The linker's trampolines inline both (LTO), so the cursor stays in
// registers.
#include "kl_gemm_scheduler.h"
#include "scheduler.cuh"

extern "C" __device__ void gs_sched_init_impl(void* sched, void* problem) {
    const gs::Problem& p = *static_cast<const gs::Problem*>(problem);
    static_cast<gs::Scheduler*>(sched)->init(p.m, p.n, p.k, p.k_step, p.bn, p.raster, p.stream_k, p.cluster_size,
                                             p.cluster_rank);
}

extern "C" __device__ bool gs_sched_next_impl(void* sched, void* work) {
    return static_cast<gs::Scheduler*>(sched)->next(*static_cast<gs::Work*>(work));
}
