// gemm.producer_small — the TMA producer of the small-M linked GEMM + SwiGLU (contract:
// producer_small.kc; gemm.producer's protocol without the cluster). Role `producer` (the first
// warpgroup, setmaxnreg 40 by the dispatch kernel); its first thread issues every copy, the
// others return at once. Per k-step of every unit of the scheduler's sequence, into slot s of ring
// `kv` (a slot of claim `operands` holds A's 128 x 64 box at 0 and W's 128 x 64 at 16 KiB):
//   1. wait empty[s] for parity phase ^ 1 (both consumer warpgroups released it);
//   2. arrive.expect_tx(full[s], 32 KiB); when A's box is smaller than 128 rows (m < 128), credit
//      the box's missing rows with mbarrier.complete_tx: every phase completes on 32 KiB;
//   3. TMA A's box and W's box into the slot.
// With `prefetch` = d > 0 the lane also asks L2 for W's box d k-steps ahead (the unit's first d at
// its start): W's bytes in flight are then no longer bounded by the ring's slots.
#include "common.cuh"
#include "kl_gemm_producer_small.h"
#include "scheduler.cuh"

namespace {
constexpr unsigned kBN = kl_gemm_producer_small_assumed_block_n;
constexpr unsigned kBytesA = kl_gemm_producer_small_assumed_block_m * 128u;  // A's 128 x 64 bf16 box
constexpr unsigned kBytesB = kBN * 128u;                                     // W's 128 x 64
}  // namespace

extern "C" __device__ void gemm_producer_small_kv_init(const GsLoadParams* /*params*/, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    for (unsigned s = 0; s < kl_gemm_producer_small_kv_depth(); ++s) {
        gs::mbar_init(base + kl_gemm_producer_small_kv_full_bar_at(s), kl_gemm_producer_small_kv_full_count());
        gs::mbar_init(base + kl_gemm_producer_small_kv_empty_bar_at(s), kl_gemm_producer_small_kv_empty_count());
    }
    gs::fence_mbar_init();
}

extern "C" __device__ void gs_producer_small_main(const GsLoadParams* p, unsigned char* smem) {
    if (threadIdx.x != 32u * kl_gemm_producer_small_producer_warp0()) {
        return;
    }
    const auto* tmap_a = static_cast<const CUtensorMap*>(p->tmap_a);
    const auto* tmap_b = static_cast<const CUtensorMap*>(p->tmap_b);
    gs::tma_prefetch_map(tmap_a);
    gs::tma_prefetch_map(tmap_b);
    const unsigned base = gs::smem_u32(smem);
    const unsigned depth = kl_gemm_producer_small_kv_depth();
    // policy 3: W evict_first, A evict_last (what the host passes for one m-tile); any other
    // value: both normal (a whole-word test, as gemm.producer's)
    const bool stream_w = p->policy == 3u;
    const uint64_t pol_a = stream_w ? gs::policy_evict_last() : gs::policy_evict_normal();
    const uint64_t pol_b = stream_w ? gs::policy_evict_first() : gs::policy_evict_normal();
    // A's box has 1..128 rows (the host provider writes them): the check the contract's box and credit
    // rest on (conformance reads the bound from this trap)
    if (p->a_box_rows - 1u > 127u) __trap();
    const unsigned credit = kBytesA - p->a_box_rows * 128u;  // A's rows past its box
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, p->raster, p->stream_k, 1u, 0u};
    gs::Scheduler sched;
    gs_producer_small_sched_init(&sched, &problem);
    unsigned slot = 0, phase = 0;
    gs::Work w;
    while (gs_producer_small_sched_next(&sched, &w)) {
        const int m0 = static_cast<int>(w.tile_m * 128u);
        const int n0 = static_cast<int>(w.tile_n * kBN);
        const unsigned ahead = p->prefetch;
        for (unsigned kt = w.k_begin; kt < w.k_end && kt < w.k_begin + ahead; ++kt) {
            gs::tma_prefetch_l2(tmap_b, static_cast<int>(kt * 64u), n0);
        }
        for (unsigned kt = w.k_begin; kt < w.k_end; ++kt) {
            const unsigned full = base + kl_gemm_producer_small_kv_full_bar_at(slot);
            const unsigned dst = base + kl_gemm_producer_small_kv_operands_smem_at(slot);
            gs::mbar_wait(base + kl_gemm_producer_small_kv_empty_bar_at(slot), phase ^ 1u);
            gs::mbar_arrive_expect_tx(full, kBytesA + kBytesB);
            if (credit != 0u) {
                gs::mbar_complete_tx(full, credit);
            }
            const int k0 = static_cast<int>(kt * 64u);
            gs::tma_load(dst, tmap_a, k0, m0, full, pol_a);
            gs::tma_load(dst + kBytesA, tmap_b, k0, n0, full, pol_b);
            if (ahead != 0u && kt + ahead < w.k_end) {
                gs::tma_prefetch_l2(tmap_b, static_cast<int>((kt + ahead) * 64u), n0);
            }
            if (++slot == depth) {
                slot = 0;
                phase ^= 1u;
            }
        }
    }
}
