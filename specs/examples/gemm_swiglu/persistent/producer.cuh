// producer.cuh — component `gemm.producer` (future owner: the mainloop package; role `producer`,
// one warp of the first warpgroup, one elected lane issues everything).
//
// Owns: the TMA descriptors of A [M, K] and B [N, K] (tmap_a, tmap_b; bf16, box {64, a_box_rows}
// and {64, BN / C}, 128B swizzle), the write side of the ring `kv` (ring.cuh), the L2 policies.
// Shares: the ring with the consumers; the work sequence with the scheduler (scheduler.cuh).
//
// Per k-step (KSUB k-blocks of 64) of every work unit (elected lane of warp 0):
//   1. wait empty[s] for parity phase ^ 1 (the consumers of all C CTAs released the slot; the
//      first pass through the ring returns at once);
//   2. arrive.expect_tx(full[s], KSUB * (a_box_rows * 128 + BN * 128)) on this CTA's full[s]:
//      one arrival (the barrier's count is 1) and the phase's transaction bytes, KSUB of A's
//      boxes plus KSUB of B's whole tiles;
//   3. for each k-block j: TMA A's box (rows 128 tile_m .., a_box_rows of them) into A
//      sub-block j of slot s, completing on full[s];
//   4. for each k-block j: C == 1: TMA B's BN rows into B sub-block j, completing on full[s].
//      C == 2: TMA B's rows BN tile_n + rank BN / 2 .. (half the tile) multicast to both CTAs of
//      the cluster, landing at B sub-block j + rank * BN / 2 * 128 in each and completing those
//      bytes on each CTA's full[s]; the peer's copy of the other half completes the rest;
//   5. advance (s, phase).
// The peer's multicast for the next pass into this CTA's slot s is issued only after the
// peer's producer saw empty[s] of ITS CTA complete, which needs this CTA's consumers' release:
// so no copy of pass p + 1 lands while this CTA's consumers read pass p.
#pragma once

#include "common.cuh"
#include "ring.cuh"
#include "scheduler.cuh"

namespace gs {

template <unsigned BN, unsigned C, unsigned KSUB>
__device__ __forceinline__ void producer_main(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b,
                                              unsigned a_box_rows, unsigned policy_bits, const Ring& ring,
                                              Scheduler sched) {
    const unsigned rank = C > 1 ? cluster_rank() : 0u;
    const uint64_t pol_a = (policy_bits & 2u) ? policy_evict_last() : policy_evict_normal();
    const uint64_t pol_b = (policy_bits & 1u) ? policy_evict_first() : policy_evict_normal();
    const unsigned tx = KSUB * (a_box_rows * 128u + BN * 128u);
    RingCursor cur;
    Work w;
    while (sched.next(w)) {
        const int m0 = static_cast<int>(w.tile_m * 128u);
        const int n0 = static_cast<int>(w.tile_n * BN + rank * (BN / C));
        for (unsigned kt = w.k_begin; kt < w.k_end; ++kt) {
            const unsigned full = ring.full_bar(cur.slot);
            mbar_wait(ring.empty_bar(cur.slot), cur.phase ^ 1u);
            mbar_arrive_expect_tx(full, tx);
#pragma unroll
            for (unsigned j = 0; j < KSUB; ++j) {
                tma_load(ring.a(cur.slot, j), tmap_a, static_cast<int>((kt * KSUB + j) * 64u), m0, full, pol_a);
            }
#pragma unroll
            for (unsigned j = 0; j < KSUB; ++j) {
                const int k0 = static_cast<int>((kt * KSUB + j) * 64u);
                if constexpr (C > 1) {
                    tma_load_multicast(ring.b(cur.slot, j) + rank * (BN / C) * 128u, tmap_b, k0, n0, full,
                                       static_cast<unsigned short>((1u << C) - 1u), pol_b);
                } else {
                    tma_load(ring.b(cur.slot, j), tmap_b, k0, n0, full, pol_b);
                }
            }
            cur.advance(ring.depth);
        }
    }
}

}  // namespace gs
