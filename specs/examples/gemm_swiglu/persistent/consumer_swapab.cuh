// The code of the swap-AB mainloop packages (gemm.mainloop_swapab: consumer_swapab.cu, x_rows 32;
// gemm.mainloop_swapab64: consumer_swapab64.cu, x_rows 64). Role `mma`: one warpgroup runs every unit
// with consumer.cuh's mainloop, A = the slot's two 64-row fragments of W (gate at 0, up at 8 KiB: the
// mainloop's FRAGS = 2, 8 KiB apart) and B = X's N = x_rows rows at 16 KiB (the producer's fact, the
// package's `assumes`, compiled in: one loop, so that conformance finds the ring's steps once). One
// wgmma group in flight; each slot is released on `empty` once the group that read it retired. After
// each unit the epilogue package stores SwiGLU of the two fragments. A package's .cu includes its
// generated header, then this one, and instantiates the template with its handles
// (GS_SWAPAB_MAINLOOP_HANDLES). gemm.mainloop_swapab128 (consumer_swapab128.cu, x_rows 128) runs
// swapab_consume_split instead: two warpgroups, each over half of X's rows of every slot.
#pragma once
#include "consumer.cuh"
#include "scheduler.cuh"

// The struct of one package's handles and facts that swapab_consume takes. P is the prefix of the
// package's generated header (kl_gemm_mainloop_swapab, kl_gemm_mainloop_swapab64); INIT, NEXT and
// SWIGLU its call trampolines.
#define GS_SWAPAB_MAINLOOP_HANDLES(P, INIT, NEXT, SWIGLU)                                                    \
    struct SwapMainloop {                                                                                    \
        static constexpr unsigned block_n = P##_assumed_block_n; /* W rows per tile */                       \
        static constexpr unsigned x_rows = P##_assumed_x_rows;   /* wgmma's N: X's rows */                   \
        static __device__ __forceinline__ unsigned warp0() { return P##_mma_warp0(); }                       \
        static __device__ __forceinline__ unsigned operands() { return P##_kv_operands_smem(); }             \
        static __device__ __forceinline__ unsigned stride() { return P##_kv_operands_stride(); }             \
        static __device__ __forceinline__ unsigned full_bar() { return P##_kv_full_bar(); }                  \
        static __device__ __forceinline__ unsigned empty_bar() { return P##_kv_empty_bar(); }                \
        static __device__ __forceinline__ unsigned depth() { return P##_kv_depth(); }                        \
        static __device__ __forceinline__ void sched_init(gs::Scheduler* s, gs::Problem* p) { INIT(s, p); }  \
        static __device__ __forceinline__ bool sched_next(gs::Scheduler* s, gs::Work* w) { return NEXT(s, w); } \
        static __device__ __forceinline__ void swiglu(void* acc, void* out, unsigned ld, unsigned m, unsigned col0) { \
            SWIGLU(acc, out, ld, m, col0);                                                                   \
        }                                                                                                    \
    }

namespace gs {

// The mma role (P: the package's params: out, m, n, k).
template <class H, class P>
__device__ __forceinline__ void swapab_consume(const P* p, unsigned char* smem) {
    constexpr unsigned kBN = H::block_n;
    constexpr unsigned kN = H::x_rows;
    constexpr unsigned kHalf = kBN / 2u * 128u;  // 8 KiB: one fragment's rows
    const unsigned base = smem_u32(smem);
    const unsigned t = threadIdx.x - 32u * H::warp0();  // 0..127
    Ring ring;
    ring.slots = base + H::operands();
    ring.stage_bytes = H::stride();
    ring.a_sub = 2u * kHalf;
    ring.b_sub = kN * 128u;
    ring.b_off = 2u * kHalf;
    ring.full = base + H::full_bar();
    ring.empty = base + H::empty_bar();
    ring.depth = H::depth();
    // data-parallel only, as the producer's
    Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    Scheduler sched;
    H::sched_init(&sched, &problem);
    float acc[2][kN / 2];
    RingCursor cur;
    Work u;
    while (H::sched_next(&sched, &u)) {
        mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);
        H::swiglu(acc, p->out, p->n / 2u, p->m, u.tile_n * (kBN / 2u));
    }
}

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
