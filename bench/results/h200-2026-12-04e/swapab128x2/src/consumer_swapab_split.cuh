// The two-warpgroup swap-AB mainloop of the x_rows 128 lever (gemm.mainloop_swapab128: consumer_swapab128.cu;
// bench/results/h200-2026-12-04e/swapab128x2, not shipped: it lost to linked_small:dp at M = 96 and 128).
// It runs consumer.cuh's mainloop as consumer_swapab.cuh's swapab_consume does, with the handles of
// GS_SWAPAB_MAINLOOP_HANDLES (consumer_swapab.cuh).
#pragma once
#include "consumer.cuh"
#include "consumer_swapab.cuh"
#include "scheduler.cuh"

namespace gs {

// The mma role of two warpgroups (gemm.mainloop_swapab128; P: out, m, n, k): both consume every slot
// with the mainloop above, A = the slot's gate and up rows of W, and warpgroup w's B = X's rows
// x_rows / 2 * w .. (its half: N = x_rows / 2, b_off x_rows / 2 * 128 bytes further); each warpgroup's
// thread 0 releases the slot on `empty` (count 2). After each unit each warpgroup stores SwiGLU of its
// own two fragments: out advanced by its first row of X, m less by as many rows (none left: no store).
template <class H, class P>
__device__ __forceinline__ void swapab_consume_split(const P* p, unsigned char* smem) {
    constexpr unsigned kBN = H::block_n;
    constexpr unsigned kN = H::x_rows / 2u;      // wgmma's N: one warpgroup's rows of X
    constexpr unsigned kHalf = kBN / 2u * 128u;  // 8 KiB: one fragment's rows
    const unsigned base = smem_u32(smem);
    const unsigned t = threadIdx.x - 32u * H::warp0();  // 0..255
    const unsigned w = t >> 7;                          // the warpgroup: 0 or 1
    const unsigned tw = t & 127u;
    Ring ring;
    ring.slots = base + H::operands();
    ring.stage_bytes = H::stride();
    ring.a_sub = 2u * kHalf;
    ring.b_sub = H::x_rows * 128u;
    ring.b_off = 2u * kHalf + w * (kN * 128u);
    ring.full = base + H::full_bar();
    ring.empty = base + H::empty_bar();
    ring.depth = H::depth();
    const unsigned row0 = w * kN;  // this warpgroup's first row of X
    const unsigned m = p->m > row0 ? p->m - row0 : 0u;
    void* out = static_cast<unsigned char*>(p->out) + static_cast<size_t>(row0) * p->n;  // row0 rows of n / 2 bf16
    // data-parallel only, as the producer's
    Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    Scheduler sched;
    H::sched_init(&sched, &problem);
    float acc[2][kN / 2];
    RingCursor cur;
    Work u;
    while (H::sched_next(&sched, &u)) {
        mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, tw == 0, 0u);
        H::swiglu(acc, out, p->n / 2u, m, u.tile_n * (kBN / 2u));
    }
}

}  // namespace gs
