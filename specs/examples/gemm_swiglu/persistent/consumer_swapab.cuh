// The code of the swap-AB mainloop packages (gemm.mainloop_swapab: consumer_swapab.cu, x_rows 32;
// gemm.mainloop_swapab64: consumer_swapab64.cu, x_rows 64). Role `mma`: one warpgroup runs every unit
// with consumer.cuh's mainloop, A = the slot's two 64-row fragments of W (gate at 0, up at 8 KiB: the
// mainloop's FRAGS = 2, 8 KiB apart) and B = X's N = x_rows rows at 16 KiB (the producer's fact, the
// package's `assumes`, compiled in: one loop, so that conformance finds the ring's steps once). One
// wgmma group in flight; each slot is released on `empty` once the group that read it retired. After
// each unit the epilogue package stores SwiGLU of the two fragments. A package's .cu includes its
// generated header, then this one, and instantiates the template with its handles
// (GS_SWAPAB_MAINLOOP_HANDLES).
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

}  // namespace gs
