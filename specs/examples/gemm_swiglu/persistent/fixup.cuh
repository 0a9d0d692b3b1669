// fixup.cuh — component `gemm.streamk_fixup` (future owner: the mainloop package; it runs in the
// consumer warpgroups, role `mma`, of every CTA, and its partner is the same role in OTHER CTAs).
//
// Owns: the workspace, one f32 partial tile per CTA at ws + slot * (R / 4) * 256 float4 (R = the
// accumulator floats per consumer thread, BN / 2), in fragment order: float4 q of consumer
// thread t at [q * 256 + t]; and one u32 counter per CTA, flags[slot], 0 between launches;
// slot = cluster * C + rank (scheduler.cuh: Scheduler::slot).
//
// Counter protocol (consumer threads t = 0..255 of both warpgroups, a named barrier of 256: 1 in
// the one-unit driver, the claim `sk_sync` that the linked consumers run between the fix-up
// package's calls):
//   raise (segment kind PARTIAL, at most once per CTA per launch, its first stream-K segment):
//     1. every thread whose warp holds a row < M stores its accumulators to ws[slot(own)];
//     2. every thread: fence (membar.gl), then bar.sync(1, 256);
//     3. t == 0: st.release.gpu flags[slot(own)] = 1.
//   await (segment kind FINISH, the last segment of a range, at most once per CTA per launch):
//     1. t == 0: for each contributor g' (clusters g + 1 .. whose non-empty range starts inside
//        the tile, in order): spin ld.acquire.gpu flags[slot(g')] until 1, then store 0 (reset
//        for the next launch: the awaiting CTA is the counter's only reader);
//     2. bar.sync(1, 256);
//     3. every thread whose warp holds a row < M adds ws[slot(g')] (ld.global.cg) to its
//        accumulators, contributors in increasing order (deterministic sums).
// A FINISH of cluster g waits only for clusters g' > g, whose PARTIAL is the first stream-K
// segment they run; every CTA must be resident at once (the host sizes the grid to the
// co-resident clusters), so the wait always ends.
#pragma once

#include "common.cuh"
#include "scheduler.cuh"

namespace gs {

// What the linked kernel's consumers pass the fix-up package (fixup.cu) besides the accumulator,
// the workspace and the counters: the scheduler, the segment's tile in the stream-K part, the
// consumer thread (0..255, the same in every CTA) and whether its warp holds a row < M.
struct FixupSite {
    const Scheduler* sched;
    unsigned sk_tile;
    unsigned t;
    unsigned warp_live;
};

// raise, in two parts around the barrier (the linked consumers run the barrier themselves):
//   steps 1-2a: store the partial and fence;
template <int R>
__device__ __forceinline__ void sk_store(const float (&acc)[R], float4* ws, unsigned slot, unsigned t, bool warp_live) {
    float4* dst = ws + static_cast<size_t>(slot) * (R / 4) * 256u;
    if (warp_live) {
#pragma unroll
        for (int q = 0; q < R / 4; ++q) {
            dst[q * 256 + t] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
        }
    }
    __threadfence();
}

//   step 3: thread 0 raises the CTA's counter.
__device__ __forceinline__ void sk_flag(unsigned* flags, unsigned slot, unsigned t) {
    if (t == 0) {
        st_release_gpu(flags + slot, 1u);
    }
}

template <int R>
__device__ __forceinline__ void sk_raise(const float (&acc)[R], float4* ws, unsigned* flags, unsigned slot,
                                         unsigned t, bool warp_live) {
    sk_store<R>(acc, ws, slot, t, warp_live);
    named_sync(1, 256);
    sk_flag(flags, slot, t);
}

// await, in two parts around the barrier:
//   step 1: thread 0 waits for every later contributor's counter (and resets it);
__device__ __forceinline__ void sk_await(unsigned* flags, const Scheduler& sched, unsigned sk_tile, unsigned t) {
    const unsigned tile_end = (sk_tile + 1u) * sched.k_tiles;
    if (t == 0) {
        for (unsigned g = sched.cluster + 1u; g < sched.clusters && sched.sk_start(g) < tile_end; ++g) {
            if (sched.sk_start(g + 1u) == sched.sk_start(g)) {
                continue;  // an empty range contributes nothing
            }
            unsigned* flag = flags + sched.slot(g);
            while (ld_acquire_gpu(flag) == 0u) {
            }
            st_relaxed_gpu(flag, 0u);
        }
    }
}

//   step 3: add their partials in increasing order.
template <int R>
__device__ __forceinline__ void sk_add(float (&acc)[R], const float4* ws, const Scheduler& sched, unsigned sk_tile,
                                       unsigned t, bool warp_live) {
    if (!warp_live) {
        return;
    }
    const unsigned tile_end = (sk_tile + 1u) * sched.k_tiles;
    for (unsigned g = sched.cluster + 1u; g < sched.clusters && sched.sk_start(g) < tile_end; ++g) {
        if (sched.sk_start(g + 1u) == sched.sk_start(g)) {
            continue;
        }
        const float4* src = ws + static_cast<size_t>(sched.slot(g)) * (R / 4) * 256u;
#pragma unroll
        for (int q = 0; q < R / 4; ++q) {
            const float4 v = __ldcg(src + q * 256 + t);
            acc[4 * q] += v.x;
            acc[4 * q + 1] += v.y;
            acc[4 * q + 2] += v.z;
            acc[4 * q + 3] += v.w;
        }
    }
}

template <int R>
__device__ __forceinline__ void sk_await_add(float (&acc)[R], const float4* ws, unsigned* flags,
                                             const Scheduler& sched, unsigned sk_tile, unsigned t, bool warp_live) {
    sk_await(flags, sched, sk_tile, t);
    named_sync(1, 256);
    sk_add<R>(acc, ws, sched, sk_tile, t, warp_live);
}

}  // namespace gs
