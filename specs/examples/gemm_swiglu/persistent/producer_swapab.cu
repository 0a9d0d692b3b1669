// gemm.producer_swapab — the TMA producer of the swap-AB small-M linked GEMM + SwiGLU (contract:
// producer_swapab.kc; gemm.producer_small's protocol with W as the wide operand). Role `producer`
// (the first warpgroup, setmaxnreg 40 by the dispatch kernel); its first thread issues every copy,
// the others return at once. Per k-step of every unit of the scheduler's sequence, into slot s of
// ring `kv` (a slot of claim `operands`: W's 64 gate rows at 0, its 64 up rows at 8 KiB, X's
// x_rows rows at 16 KiB, each 128 B per row, 128B-swizzled):
//   1. wait empty[s] for parity phase ^ 1 (the consumer warpgroup released it);
//   2. arrive.expect_tx(full[s], 20 KiB); credit X's x_rows - x_box_rows rows past its box with
//      mbarrier.complete_tx: every phase completes on 20 KiB;
//   3. TMA W's gate box, W's up box (4-D map [n / 32][2][16][k], box {64, 16, 1, 4}: 4 groups of
//      16 rows, 64 rows in a row) and X's box.
#include "common.cuh"
// One source, two packages: producer_swapab.kc (x_rows 32) and, built with GS_SWAPAB128
// (producer_swapab128.flags), producer_swapab128.kc (x_rows 128). The define only picks the
// package's header and handle prefix; every size below comes from that header's facts.
#ifdef GS_SWAPAB128
#include "kl_gemm_producer_swapab128.h"
#define GS_P(name) kl_gemm_producer_swapab128_##name
#define GS_P_KV_INIT gemm_producer_swapab128_kv_init
#else
#include "kl_gemm_producer_swapab.h"
#define GS_P(name) kl_gemm_producer_swapab_##name
#define GS_P_KV_INIT gemm_producer_swapab_kv_init
#endif
#include "scheduler.cuh"

namespace {
constexpr unsigned kBN = GS_P(assumed_block_n);  // W rows per tile: 64 gate + 64 up
constexpr unsigned kBM = GS_P(assumed_block_m);
constexpr unsigned kGroups = kBN / 32u;   // 16-row gate/up groups of W per tile
constexpr unsigned kHalf = kBN / 2u * 128u;  // one half's 64 x 64 box: 8 KiB
constexpr unsigned kXRows = GS_P(owned_x_rows);
constexpr unsigned kBytesX = kXRows * 128u;  // X's region: x_rows rows of 64
}  // namespace

extern "C" __device__ void GS_P_KV_INIT(const GsSwapLoadParams* /*params*/, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    for (unsigned s = 0; s < GS_P(kv_depth)(); ++s) {
        gs::mbar_init(base + GS_P(kv_full_bar_at)(s), GS_P(kv_full_count)());
        gs::mbar_init(base + GS_P(kv_empty_bar_at)(s), GS_P(kv_empty_count)());
    }
    gs::fence_mbar_init();
}

extern "C" __device__ void gs_producer_swapab_main(const GsSwapLoadParams* p, unsigned char* smem) {
    if (threadIdx.x != 32u * GS_P(producer_warp0)()) {
        return;
    }
    const auto* tmap_w = static_cast<const CUtensorMap*>(p->tmap_w);
    const auto* tmap_x = static_cast<const CUtensorMap*>(p->tmap_x);
    gs::tma_prefetch_map(tmap_w);
    gs::tma_prefetch_map(tmap_x);
    const unsigned base = gs::smem_u32(smem);
    const unsigned depth = GS_P(kv_depth)();
    // W streams once (evict_first); X is read by every CTA at every k-step (evict_last)
    const uint64_t pol_w = gs::policy_evict_first();
    const uint64_t pol_x = gs::policy_evict_last();
    // X's box has 1..x_rows rows (the host writes m rounded up to 8): the check the contract's box
    // and credit rest on (conformance reads the bound from this trap)
    if (p->x_box_rows - 1u > kXRows - 1u) __trap();
    const unsigned credit = kBytesX - p->x_box_rows * 128u;  // X's rows past its box
    // data-parallel only: every unit is a whole tile (no stream-K fix-up in this pipeline)
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, 1u, 0u, 1u, 0u};
    gs::Scheduler sched;
    gs_producer_swapab_sched_init(&sched, &problem);
    unsigned slot = 0, phase = 0;
    gs::Work w;
    while (gs_producer_swapab_sched_next(&sched, &w)) {
        const int m0 = static_cast<int>(w.tile_m * kBM);
        const int g0 = static_cast<int>(w.tile_n * kGroups);
        for (unsigned kt = w.k_begin; kt < w.k_end; ++kt) {
            const unsigned full = base + GS_P(kv_full_bar_at)(slot);
            const unsigned dst = base + GS_P(kv_operands_smem_at)(slot);
            gs::mbar_wait(base + GS_P(kv_empty_bar_at)(slot), phase ^ 1u);
            gs::mbar_arrive_expect_tx(full, 2u * kHalf + kBytesX);
            if (credit != 0u) {
                gs::mbar_complete_tx(full, credit);
            }
            const int k0 = static_cast<int>(kt * 64u);
            gs::tma_load_4d(dst, tmap_w, k0, 0, 0, g0, full, pol_w);          // gate rows
            gs::tma_load_4d(dst + kHalf, tmap_w, k0, 0, 1, g0, full, pol_w);  // up rows
            gs::tma_load(dst + 2u * kHalf, tmap_x, k0, m0, full, pol_x);
            if (++slot == depth) {
                slot = 0;
                phase ^= 1u;
            }
        }
    }
}
