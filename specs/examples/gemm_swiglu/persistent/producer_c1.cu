// gemm.producer_c1 — the TMA producer of the linked persistent GEMM + SwiGLU without a cluster
// (contract: producer_c1.kc): gemm.producer (producer.cu) with a cluster of one CTA, so W's 256 x 64
// box is one plain TMA, no multicast (the one-unit driver's gs_coop256_c1). Role `producer` (the
// first warpgroup, setmaxnreg 40 by the dispatch kernel); its first thread issues every copy, the
// others return at once. Per k-step of every unit of the scheduler's sequence, into slot s of ring
// `kv` (a slot of claim `operands` holds A's 128 x 64 box at 0 and W's 256 x 64 at 16 KiB):
//   1. wait empty[s] for parity phase ^ 1 (both consumer warpgroups released it);
//   2. arrive.expect_tx(full[s], 48 KiB); when A's box is smaller than 128 rows (m < 128), credit
//      the box's missing rows with mbarrier.complete_tx: every phase completes on 48 KiB;
//   3. TMA A's box and W's box into the slot.
// Without the cluster an M of 3 m-tiles computes 3, not the 4 of two cluster rows.
#include "common.cuh"
#include "kl_gemm_producer_c1.h"
#include "scheduler.cuh"

// params GsLoadParams (producer_c1.kc; the struct is the header's): tmap_a, tmap_b the tensor maps
// of A = X [m, k] (box {64, a_box_rows}) and W [n, k] (box {64, 256}), bf16, 128B swizzle, in global
// memory; policy 3 = W evict_first and A evict_last, else normal.

namespace {
constexpr unsigned kBN = kl_gemm_producer_c1_assumed_block_n;
constexpr unsigned kBytesA = kl_gemm_producer_c1_assumed_block_m * 128u;  // A's 128 x 64 bf16 box
constexpr unsigned kBytesB = kBN * 128u;                                  // W's 256 x 64
}  // namespace

extern "C" __device__ void gemm_producer_c1_kv_init(const GsLoadParams* /*params*/, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    for (unsigned s = 0; s < kl_gemm_producer_c1_kv_depth(); ++s) {
        gs::mbar_init(base + kl_gemm_producer_c1_kv_full_bar_at(s), kl_gemm_producer_c1_kv_full_count());
        gs::mbar_init(base + kl_gemm_producer_c1_kv_empty_bar_at(s), kl_gemm_producer_c1_kv_empty_count());
    }
    gs::fence_mbar_init();
}

extern "C" __device__ void gs_producer_c1_main(const GsLoadParams* p, unsigned char* smem) {
    if (threadIdx.x != 32u * kl_gemm_producer_c1_producer_warp0()) {
        return;
    }
    const auto* tmap_a = static_cast<const CUtensorMap*>(p->tmap_a);
    const auto* tmap_b = static_cast<const CUtensorMap*>(p->tmap_b);
    gs::tma_prefetch_map(tmap_a);
    gs::tma_prefetch_map(tmap_b);
    const unsigned base = gs::smem_u32(smem);
    const unsigned depth = kl_gemm_producer_c1_kv_depth();
    // policy 3: W evict_first, A evict_last; any other value: both normal (a whole-word test, as
    // gemm.producer's)
    const bool stream_w = p->policy == 3u;
    const uint64_t pol_a = stream_w ? gs::policy_evict_last() : gs::policy_evict_normal();
    const uint64_t pol_b = stream_w ? gs::policy_evict_first() : gs::policy_evict_normal();
    // A's box has 1..128 rows (the host provider writes them): the check the contract's box and credit
    // rest on (conformance reads the bound from this trap)
    if (p->a_box_rows - 1u > 127u) __trap();
    const unsigned credit = kBytesA - p->a_box_rows * 128u;  // A's rows past its box
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, p->raster, p->stream_k, 1u, 0u};
    gs::Scheduler sched;
    gs_producer_c1_sched_init(&sched, &problem);
    unsigned slot = 0, phase = 0;
    gs::Work w;
    while (gs_producer_c1_sched_next(&sched, &w)) {
        const int m0 = static_cast<int>(w.tile_m * 128u);
        const int n0 = static_cast<int>(w.tile_n * kBN);
        for (unsigned kt = w.k_begin; kt < w.k_end; ++kt) {
            const unsigned full = base + kl_gemm_producer_c1_kv_full_bar_at(slot);
            const unsigned dst = base + kl_gemm_producer_c1_kv_operands_smem_at(slot);
            gs::mbar_wait(base + kl_gemm_producer_c1_kv_empty_bar_at(slot), phase ^ 1u);
            gs::mbar_arrive_expect_tx(full, kBytesA + kBytesB);
            if (credit != 0u) {
                gs::mbar_complete_tx(full, credit);
            }
            const int k0 = static_cast<int>(kt * 64u);
            gs::tma_load(dst, tmap_a, k0, m0, full, pol_a);
            gs::tma_load(dst + kBytesA, tmap_b, k0, n0, full, pol_b);
            if (++slot == depth) {
                slot = 0;
                phase ^= 1u;
            }
        }
    }
}
