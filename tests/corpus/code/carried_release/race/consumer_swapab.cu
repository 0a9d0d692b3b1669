// Broken twin (tests/corpus/test_code_controls.py): the carried release of ../pass issued before
// k-step i's commit and `wgmma.wait_group 1`: the group that read the released slot may still be
// pending when the producer refills it (L-CONFORM `ring-step` `unretired`).
// gemm.mainloop_swapab — the wgmma consumer of the swap-AB small-M linked GEMM + SwiGLU
// (contract: consumer_swapab.kc). Role `mma`: one warpgroup runs every unit with consumer.cuh's
// mainloop, A = the slot's two 64-row fragments of W (gate at 0, up at 8 KiB: the mainloop's
// FRAGS = 2, 8 KiB apart) and B = X's N = x_rows rows at 16 KiB (the producer's fact, compiled
// in: one loop, so that conformance finds the ring's steps once). One wgmma group in flight; each
// slot is released on `empty` once the group that read it retired. After each unit the epilogue
// package stores SwiGLU of the two fragments.
#include "consumer.cuh"
#include "kl_gemm_mainloop_swapab.h"
#include "scheduler.cuh"

namespace {
constexpr unsigned kBN = kl_gemm_mainloop_swapab_assumed_block_n;  // W rows per tile
constexpr unsigned kN = kl_gemm_mainloop_swapab_assumed_x_rows;    // wgmma's N: X's rows
constexpr unsigned kHalf = kBN / 2u * 128u;                        // 8 KiB: one fragment's rows
}  // namespace

namespace {
// The k-steps of one unit, CUTLASS-style: the slot of k-step i - 1 is released once k-step i's
// wgmma group is issued and the one before it retired, the previous unit's last slot included
// (held across the unit boundary); the caller releases the last slot after its last unit.
template <unsigned BN, int FRAGS>
__device__ __forceinline__ void carried_mainloop(float (&acc)[FRAGS][BN / 2], const gs::Ring& ring,
                                                 gs::RingCursor& cur, unsigned n_k, bool leader, unsigned& held) {
    const uint64_t da0 = gs::wgmma_desc(ring.a(0, 0));
    const uint64_t db0 = gs::wgmma_desc(ring.b(0, 0));
#pragma unroll 1
    for (unsigned i = 0; i < n_k; ++i) {
        gs::mbar_wait(ring.full_bar(cur.slot), cur.phase);
        const unsigned step = cur.slot * (ring.stage_bytes >> 4);
        gs::fence_acc(acc);
        gs::wgmma_fence();
#pragma unroll
        for (unsigned ks = 0; ks < 4; ++ks) {
            gs::mma_k16<BN, FRAGS>(acc, da0 + step + 2u * ks, db0 + step + 2u * ks, (i | ks) != 0u);
        }
        if (leader && held != 0u) {
            gs::release_slot<1>(ring, held - 1u);
        }
        gs::wgmma_commit();
        gs::fence_acc(acc);
        gs::wgmma_wait<1>();
        held = cur.slot + 1u;
        cur.advance(ring.depth);
    }
    gs::wgmma_wait<0>();
    gs::fence_acc(acc);
}
}  // namespace

extern "C" __device__ void gs_consumer_swapab_main(const GsSwapMmaParams* p, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    const unsigned t = threadIdx.x - 32u * kl_gemm_mainloop_swapab_mma_warp0();  // 0..127
    gs::Ring ring;
    ring.slots = base + kl_gemm_mainloop_swapab_kv_operands_smem();
    ring.stage_bytes = kl_gemm_mainloop_swapab_kv_operands_stride();
    ring.a_sub = 2u * kHalf;
    ring.b_sub = kN * 128u;
    ring.b_off = 2u * kHalf;
    ring.full = base + kl_gemm_mainloop_swapab_kv_full_bar();
    ring.empty = base + kl_gemm_mainloop_swapab_kv_empty_bar();
    ring.depth = kl_gemm_mainloop_swapab_kv_depth();
    // data-parallel only, as the producer's
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    gs::Scheduler sched;
    gs_consumer_swapab_sched_init(&sched, &problem);
    float acc[2][kN / 2];
    gs::RingCursor cur;
    unsigned held = 0;  // 1 + the slot the last k-step read, still to release (0: none)
    gs::Work u;
    while (gs_consumer_swapab_sched_next(&sched, &u)) {
        carried_mainloop<kN, 2>(acc, ring, cur, u.k_end - u.k_begin, t == 0, held);
        gs_consumer_swapab_swiglu(acc, p->out, p->n / 2u, p->m, u.tile_n * (kBN / 2u));
    }
    if (t == 0 && held != 0u) {
        gs::release_slot<1>(ring, held - 1u);
    }
}
