// consumer.cuh — component `gemm.mainloop` consumers (future owner: the mainloop package; role
// `mma`, two warpgroups after the producer's, `setmaxnreg` 232 each).
//
// Owns: the read side of the ring `kv`, the wgmma issue, the f32 accumulators and their export to
// the epilogue (swiglu_epilogue, epilogue.cuh: called by the warpgroup that owns the
// accumulator, once per output tile). Shares: the ring with the producer, the work sequence with
// the scheduler, the stream-K counters with the same role of other CTAs (fixup.cuh).
//
// Two schedules of the two warpgroups (template parameter of the driver):
//
// COOPERATIVE (tile 128 x BN, BN = 256 or 128): both warpgroups consume every slot, warpgroup
// w computes rows 64 w .. 64 w + 63 with wgmma m64nBNk16 (A rows at + 8 KiB w of each A
// sub-block; with A's box at most 64 rows warpgroup 1 reads warpgroup 0's rows instead).
//   per k-step: wait full[s] (parity phase); wgmma.fence; 4 KSUB x wgmma (k16 steps 32 B apart,
//   k-blocks a sub-block apart); commit; KEEP = 1: wait_group 1 (the previous k-step's group
//   retired), thread 0 of the warpgroup arrives on empty[s_prev] of every CTA of the cluster
//   (count of empty[] = 2 C); KEEP = 0: wait_group 0, arrive on empty[s].
//   after the unit: wait_group 0; release the last slot; then by kind: PARTIAL -> sk_raise;
//   FINISH -> sk_await_add, epilogue; FULL -> epilogue. A warpgroup whose 64 rows all lie at or
//   past M runs the same wgmma (a branch around them, even outside the k-loop, made ptxas
//   serialize every wgmma of the kernel: C7515) and skips only the epilogue.
//
// PING-PONG (tile 128 x 128 per warpgroup, two m64n128k16 chains of 64 rows each): the units of
// a CTA alternate between the warpgroups (unit j -> warpgroup j % 2), every slot is consumed by
// one warpgroup (count of empty[] = C). The mainloops are ordered by two named barriers,
// ORDER0 = 4 and ORDER1 = 5, 256 threads each (128 arrive with bar.arrive, 128 wait with bar.sync):
//   before the loop: warpgroup 1 arrives on ORDER0 (so warpgroup 0 may start);
//   per unit of warpgroup w: bar.sync(ORDER_w) (wait for the turn); issue every k-step
//   (as above, waiting and releasing slots); bar.arrive(ORDER_{1-w}) right after the last
//   k-step's commit (the other warpgroup may issue while this one drains); wait_group 0;
//   release; epilogue (under the other warpgroup's mainloop).
//   after the loop: exactly one arrival is left unmatched (units even: on ORDER0, units odd: on
//   ORDER1); its waiter (warpgroup 0 / 1) consumes it with one more bar.sync.
#pragma once

#include "common.cuh"
#include "epilogue.cuh"
#include "fixup.cuh"
#include "ring.cuh"
#include "scheduler.cuh"
#include "wgmma.cuh"

namespace gs {

constexpr unsigned kOrder0 = 4;
constexpr unsigned kOrder1 = 5;

template <unsigned C>
__device__ __forceinline__ void release_slot(const Ring& ring, unsigned slot) {
    if constexpr (C > 1) {
#pragma unroll
        for (unsigned r = 0; r < C; ++r) {
            mbar_arrive_cluster(ring.empty_bar(slot), r);
        }
    } else {
        mbar_arrive(ring.empty_bar(slot));
    }
}

// One wgmma k16 step of the tile for one warpgroup: FRAGS fragments of 64 rows (A's descriptor
// advanced by 8 KiB = 512 descriptor units per fragment), all BN columns of B. (The swap-AB
// mainloop, consumer_swapab.cu, runs it with A = W's gate and up rows, two fragments, and
// B = X's BN = 16, 32 or 64 rows.)
template <unsigned BN, int FRAGS>
__device__ __forceinline__ void mma_k16(float (&acc)[FRAGS][BN / 2], uint64_t da, uint64_t db, unsigned accumulate) {
#pragma unroll
    for (int f = 0; f < FRAGS; ++f) {
        if constexpr (BN == 256) {
            wgmma_m64n256k16(acc[f], da + 512u * f, db, accumulate);
        } else if constexpr (BN == 128) {
            wgmma_m64n128k16(acc[f], da + 512u * f, db, accumulate);
        } else if constexpr (BN == 64) {
            wgmma_m64n64k16(acc[f], da + 512u * f, db, accumulate);
        } else if constexpr (BN == 32) {
            wgmma_m64n32k16(acc[f], da + 512u * f, db, accumulate);
        } else {
            static_assert(BN == 16, "wgmma.cuh has m64nNk16 for N = 16, 32, 64, 128, 256");
            wgmma_m64n16k16(acc[f], da + 512u * f, db, accumulate);
        }
    }
}

template <int FRAGS, int R>
__device__ __forceinline__ void fence_acc(float (&acc)[FRAGS][R]) {
#pragma unroll
    for (int f = 0; f < FRAGS; ++f) {
        fence_regs(acc[f]);
    }
}

// The k-steps of one unit (n_k of them, KSUB k-blocks of 64 each): acc = A[rows] * B^T over
// them. `a_off` selects the warpgroup's rows in an A sub-block. Thread `leader` releases slots.
// KEEP = wgmma groups left in flight per k-step: 1 holds two slots (the tensor pipe never waits
// for a group to retire), 0 releases each slot as soon as its own group retired (one slot held:
// a deeper effective ring for memory-bound shapes). Returns with every wgmma retired and every
// slot released.
template <unsigned BN, unsigned C, int FRAGS, unsigned KSUB, int KEEP>
__device__ __forceinline__ void mainloop(float (&acc)[FRAGS][BN / 2], const Ring& ring, RingCursor& cur,
                                         unsigned n_k, unsigned a_off, bool leader, unsigned order_next) {
    // Descriptors of slot 0; a slot is stage_bytes / 16 descriptor units further, a k16 step
    // 32 bytes = 2 units (the address field is the descriptor's low 14 bits; no carry out of it
    // within shared memory).
    const uint64_t da0 = wgmma_desc(ring.a(0, 0) + a_off);
    const uint64_t db0 = wgmma_desc(ring.b(0, 0));
    const unsigned a_sub = ring.a_sub >> 4, b_sub = ring.b_sub >> 4;
    unsigned prev = 0;
    // Not unrolled: one copy of the k-step, so that kernlink's conformance check finds the ring's
    // steps in one loop (nvcc unrolls it by 4 otherwise, with the remainder outside the loop).
#pragma unroll 1
    for (unsigned i = 0; i < n_k; ++i) {
        mbar_wait(ring.full_bar(cur.slot), cur.phase);
        const unsigned step = cur.slot * (ring.stage_bytes >> 4);
        fence_acc(acc);
        wgmma_fence();
#pragma unroll
        for (unsigned j = 0; j < KSUB; ++j) {
#pragma unroll
            for (unsigned ks = 0; ks < 4; ++ks) {
                mma_k16<BN, FRAGS>(acc, da0 + step + j * a_sub + 2u * ks, db0 + step + j * b_sub + 2u * ks,
                                   (i | j | ks) != 0u);
            }
        }
        wgmma_commit();
        fence_acc(acc);
        if constexpr (KEEP == 0) {
            wgmma_wait<0>();
            fence_acc(acc);
            if (leader) {
                release_slot<C>(ring, cur.slot);
            }
        } else {
            if (i > 0) {
                wgmma_wait<1>();
                if (leader) {
                    release_slot<C>(ring, prev);
                }
            }
        }
        prev = cur.slot;
        cur.advance(ring.depth);
    }
    if (order_next != 0) {
        named_arrive(order_next, 256);  // ping-pong: the other warpgroup may issue now
    }
    if constexpr (KEEP != 0) {
        wgmma_wait<0>();
        fence_acc(acc);
        if (leader && n_k > 0) {
            release_slot<C>(ring, prev);
        }
    }
}

struct ConsumerArgs {
    const CUtensorMap* tmap_out;
    float4* ws;
    unsigned* flags;
    unsigned m;
    unsigned a_box_rows;
    unsigned staging;  // this warpgroup's epilogue claim
};

// COOPERATIVE: warpgroup w (0 or 1) of the two consumer warpgroups.
template <unsigned BN, unsigned C, unsigned KSUB, int KEEP>
__device__ __forceinline__ void consumer_cooperative(const ConsumerArgs& args, const Ring& ring, Scheduler sched,
                                                     unsigned w) {
    constexpr int R = BN / 2;
    float acc[1][R];
    const unsigned t = threadIdx.x - 128u;  // consumer thread 0..255
    const unsigned tw = t & 127u;           // thread in the warpgroup
    const bool leader = tw == 0;
    // Warpgroup 1's rows start 8 KiB into A's sub-block; with A's box at most 64 rows
    // (M <= 64) they are all past M, and it reads warpgroup 0's rows instead (never stored),
    // so that no read leaves the slot.
    const unsigned a_off = (w == 1 && args.a_box_rows > 64u) ? 8192u : 0u;
    RingCursor cur;
    Work u;
    while (sched.next(u)) {
        const unsigned row0 = u.tile_m * 128u + 64u * w;
        const unsigned n_k = u.k_end - u.k_begin;
        const bool live = row0 < args.m;  // warpgroup-uniform
        mainloop<BN, C, 1, KSUB, KEEP>(acc, ring, cur, n_k, a_off, leader, 0u);
        const bool warp_live = row0 + 16u * (tw >> 5) < args.m;
        if (u.kind == kPartial) {
            sk_raise<R>(acc[0], args.ws, args.flags, sched.slot(sched.cluster), t, warp_live);
            continue;
        }
        if (u.kind == kFinish) {
            sk_await_add<R>(acc[0], args.ws, args.flags, sched, u.sk_tile, t, warp_live);
        }
        if (live) {
            swiglu_epilogue<1, BN / 8>(acc, args.staging, args.tmap_out, static_cast<int>(row0),
                                       static_cast<int>(u.tile_n * (BN / 2)), tw, 2u + w);
        }
    }
    epilogue_drain(tw);
}

// PING-PONG: warpgroup w (0 or 1); every unit is FULL (the host runs it data-parallel only).
template <unsigned C, unsigned KSUB>
__device__ __forceinline__ void consumer_pingpong(const ConsumerArgs& args, const Ring& ring, Scheduler sched,
                                                  unsigned w) {
    float acc[2][64];
    const unsigned tw = (threadIdx.x - 128u) & 127u;
    const bool leader = tw == 0;
    const unsigned order_mine = w == 0 ? kOrder0 : kOrder1;
    const unsigned order_other = w == 0 ? kOrder1 : kOrder0;
    if (w == 1) {
        named_arrive(kOrder0, 256);  // the arrival before the loop: warpgroup 0 starts
    }
    RingCursor cur;
    Work u;
    unsigned j = 0;
    while (sched.next(u)) {
        const unsigned n_k = u.k_end - u.k_begin;
        if ((j++ & 1u) != w) {
            cur.skip(n_k, ring.depth);  // the other warpgroup's unit
            continue;
        }
        named_sync(order_mine, 256);
        mainloop<128, C, 2, KSUB, 1>(acc, ring, cur, n_k, 0u, leader, order_other);
        swiglu_epilogue<2, 16>(acc, args.staging, args.tmap_out, static_cast<int>(u.tile_m * 128u),
                               static_cast<int>(u.tile_n * 64u), tw, 2u + w);
    }
    // j = this CTA's unit count: even leaves warpgroup 1's last arrival on ORDER0 unmatched,
    // odd leaves warpgroup 0's last arrival on ORDER1 unmatched.
    if ((j & 1u) == w) {
        named_sync(order_mine, 256);
    }
    epilogue_drain(tw);
}

}  // namespace gs
