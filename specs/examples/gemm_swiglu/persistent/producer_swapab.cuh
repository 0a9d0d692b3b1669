// The code of the swap-AB producer packages (gemm.producer_swapab: producer_swapab.cu, x_rows 32;
// gemm.producer_swapab64: producer_swapab64.cu, x_rows 64): gemm.producer_small's protocol with W as
// the wide operand. The role `producer` (the first warpgroup); its first thread issues every copy,
// the others return at once. Per k-step of every unit of the scheduler's sequence, into slot s of
// ring `kv` (a slot of claim `operands`: W's 64 gate rows at 0, its 64 up rows at 8 KiB, X's
// x_rows rows at 16 KiB, each 128 B per row, 128B-swizzled):
//   1. wait empty[s] for parity phase ^ 1 (the consumer warpgroup released it);
//   2. arrive.expect_tx(full[s], 16 KiB + x_rows * 128); credit X's x_rows - x_box_rows rows past
//      its box with mbarrier.complete_tx: every phase completes on the slot's bytes;
//   3. TMA W's gate box, W's up box (4-D map [n / 32][2][16][k], box {64, 16, 1, 4}: 4 groups of
//      16 rows, 64 rows in a row) and X's box.
// A package's .cu includes its generated header, then this one, and instantiates the templates
// with its handles (GS_SWAPAB_PRODUCER_HANDLES): one body, each package's facts and handles.
#pragma once
#include "common.cuh"
#include "scheduler.cuh"

// The struct of one package's handles and facts that the templates below take. P is the prefix of
// the package's generated header (kl_gemm_producer_swapab, kl_gemm_producer_swapab64), INIT and NEXT
// its scheduler call trampolines.
#define GS_SWAPAB_PRODUCER_HANDLES(P, INIT, NEXT)                                                             \
    struct SwapProducer {                                                                                     \
        static constexpr unsigned block_m = P##_assumed_block_m;                                              \
        static constexpr unsigned block_n = P##_assumed_block_n; /* W rows per tile: 64 gate + 64 up */        \
        static constexpr unsigned x_rows = P##_owned_x_rows;                                                  \
        static __device__ __forceinline__ unsigned warp0() { return P##_producer_warp0(); }                   \
        static __device__ __forceinline__ unsigned depth() { return P##_kv_depth(); }                         \
        static __device__ __forceinline__ unsigned full_count() { return P##_kv_full_count(); }               \
        static __device__ __forceinline__ unsigned empty_count() { return P##_kv_empty_count(); }             \
        static __device__ __forceinline__ unsigned full_bar(unsigned s) { return P##_kv_full_bar_at(s); }     \
        static __device__ __forceinline__ unsigned empty_bar(unsigned s) { return P##_kv_empty_bar_at(s); }   \
        static __device__ __forceinline__ unsigned operands(unsigned s) { return P##_kv_operands_smem_at(s); } \
        static __device__ __forceinline__ void sched_init(gs::Scheduler* s, gs::Problem* p) { INIT(s, p); }   \
        static __device__ __forceinline__ bool sched_next(gs::Scheduler* s, gs::Work* w) { return NEXT(s, w); } \
    }

namespace gs {

// The ring's init hook: thread 0 initializes every slot's two barriers.
template <class H>
__device__ __forceinline__ void swapab_kv_init(unsigned char* smem) {
    const unsigned base = smem_u32(smem);
    for (unsigned s = 0; s < H::depth(); ++s) {
        mbar_init(base + H::full_bar(s), H::full_count());
        mbar_init(base + H::empty_bar(s), H::empty_count());
    }
    fence_mbar_init();
}

// The producer role (P: the package's load params: tmap_w, tmap_x, m, n, k, x_box_rows).
template <class H, class P>
__device__ __forceinline__ void swapab_produce(const P* p, unsigned char* smem) {
    constexpr unsigned kBN = H::block_n;
    constexpr unsigned kBM = H::block_m;
    constexpr unsigned kGroups = kBN / 32u;      // 16-row gate/up groups of W per tile
    constexpr unsigned kHalf = kBN / 2u * 128u;  // one half's 64 x 64 box: 8 KiB
    constexpr unsigned kXRows = H::x_rows;
    constexpr unsigned kBytesX = kXRows * 128u;  // X's region: x_rows rows of 64
    if (threadIdx.x != 32u * H::warp0()) {
        return;
    }
    const auto* tmap_w = static_cast<const CUtensorMap*>(p->tmap_w);
    const auto* tmap_x = static_cast<const CUtensorMap*>(p->tmap_x);
    tma_prefetch_map(tmap_w);
    tma_prefetch_map(tmap_x);
    const unsigned base = smem_u32(smem);
    const unsigned depth = H::depth();
    // W streams once (evict_first); X is read by every CTA at every k-step (evict_last)
    const uint64_t pol_w = policy_evict_first();
    const uint64_t pol_x = policy_evict_last();
    // X's box has 1..x_rows rows (the host writes m rounded up to 8): the check the contract's box
    // and credit rest on (conformance reads the bound from this trap)
    if (p->x_box_rows - 1u > kXRows - 1u) __trap();
    const unsigned credit = kBytesX - p->x_box_rows * 128u;  // X's rows past its box
    // data-parallel only: every unit is a whole tile (no stream-K fix-up in this pipeline)
    Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    Scheduler sched;
    H::sched_init(&sched, &problem);
    unsigned slot = 0, phase = 0;
    Work w;
    while (H::sched_next(&sched, &w)) {
        const int m0 = static_cast<int>(w.tile_m * kBM);
        const int g0 = static_cast<int>(w.tile_n * kGroups);
        for (unsigned kt = w.k_begin; kt < w.k_end; ++kt) {
            const unsigned full = base + H::full_bar(slot);
            const unsigned dst = base + H::operands(slot);
            mbar_wait(base + H::empty_bar(slot), phase ^ 1u);
            mbar_arrive_expect_tx(full, 2u * kHalf + kBytesX);
            if (credit != 0u) {
                mbar_complete_tx(full, credit);
            }
            const int k0 = static_cast<int>(kt * 64u);
            tma_load_4d(dst, tmap_w, k0, 0, 0, g0, full, pol_w);          // gate rows
            tma_load_4d(dst + kHalf, tmap_w, k0, 0, 1, g0, full, pol_w);  // up rows
            tma_load(dst + 2u * kHalf, tmap_x, k0, m0, full, pol_x);
            if (++slot == depth) {
                slot = 0;
                phase ^= 1u;
            }
        }
    }
}

}  // namespace gs
