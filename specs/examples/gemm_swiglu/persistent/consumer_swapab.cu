// gemm.mainloop_swapab — the wgmma consumer of the swap-AB small-M linked GEMM + SwiGLU
// (contract: consumer_swapab.kc). Role `mma`: one warpgroup runs every unit with consumer.cuh's
// mainloop, A = the slot's two 64-row fragments of W (gate at 0, up at 8 KiB: the mainloop's
// FRAGS = 2, 8 KiB apart) and B = X's N = x_rows rows at 16 KiB (the producer's fact, compiled
// in: one loop, so that conformance finds the ring's steps once). One wgmma group in flight; each
// slot is released on `empty` once the group that read it retired. After each unit the epilogue
// package stores SwiGLU of the two fragments.
#include "consumer.cuh"
// One source, two packages: consumer_swapab.kc (x_rows 32) and, built with GS_SWAPAB128
// (consumer_swapab128.flags), consumer_swapab128.kc (x_rows 128): the define picks the package's
// header and handle prefix; wgmma's N is that header's assumed x_rows.
#ifdef GS_SWAPAB128
#include "kl_gemm_mainloop_swapab128.h"
#define GS_M(name) kl_gemm_mainloop_swapab128_##name
#else
#include "kl_gemm_mainloop_swapab.h"
#define GS_M(name) kl_gemm_mainloop_swapab_##name
#endif
#include "scheduler.cuh"

namespace {
constexpr unsigned kBN = GS_M(assumed_block_n);  // W rows per tile
constexpr unsigned kN = GS_M(assumed_x_rows);    // wgmma's N: X's rows
constexpr unsigned kHalf = kBN / 2u * 128u;                        // 8 KiB: one fragment's rows
}  // namespace

extern "C" __device__ void gs_consumer_swapab_main(const GsSwapMmaParams* p, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    const unsigned t = threadIdx.x - 32u * GS_M(mma_warp0)();  // 0..127
    gs::Ring ring;
    ring.slots = base + GS_M(kv_operands_smem)();
    ring.stage_bytes = GS_M(kv_operands_stride)();
    ring.a_sub = 2u * kHalf;
    ring.b_sub = kN * 128u;
    ring.b_off = 2u * kHalf;
    ring.full = base + GS_M(kv_full_bar)();
    ring.empty = base + GS_M(kv_empty_bar)();
    ring.depth = GS_M(kv_depth)();
    // data-parallel only, as the producer's
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    gs::Scheduler sched;
    gs_consumer_swapab_sched_init(&sched, &problem);
    float acc[2][kN / 2];
    gs::RingCursor cur;
    gs::Work u;
    while (gs_consumer_swapab_sched_next(&sched, &u)) {
        gs::mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);
        gs_consumer_swapab_swiglu(acc, p->out, p->n / 2u, p->m, u.tile_n * (kBN / 2u));
    }
}
