// gemm.mainloop_c1 — the wgmma consumers of the linked persistent GEMM + SwiGLU without a cluster
// (contract: consumer_c1.kc): gemm.mainloop (consumer.cu) with a cluster of one CTA (the one-unit
// driver's gs_coop256_c1). Role `mma`: two warpgroups (setmaxnreg 232 by the dispatch kernel) work
// on every unit together, warpgroup w on rows 64 w .. 64 w + 63 of its 128 x 256 tile (wgmma
// m64n256k16, one group in flight, each slot released on this CTA's `empty` barrier once the group
// that read it retired). After a unit, by its kind (the scheduler package's gs_sched_next):
// PARTIAL -> the fix-up package raises this CTA's counter with its partial; FINISH -> the fix-up
// package adds every later contributor's partial, then the epilogue; FULL -> the epilogue package
// (SwiGLU, TMA store), both warpgroups together on the named barrier `epi_sync` (rows past M are
// clipped by the output's map). Ring, slots, barriers, counters and named barriers come from the
// linker's handles.
#include "consumer.cuh"
#include "fixup.cuh"
#include "kl_gemm_mainloop_c1.h"
#include "scheduler.cuh"

// params GsMmaParams (consumer_c1.kc; the struct is the header's): tmap_out the tensor map of
// out [m, n / 2] bf16 (box {64, 64}, 128B swizzle) in global memory; workspace the stream-K
// partials, 256 * 256 / 4 float4 per CTA of the grid.

namespace {
constexpr unsigned kBN = kl_gemm_mainloop_c1_assumed_block_n;
constexpr unsigned kBytesA = kl_gemm_mainloop_c1_assumed_block_m * 128u;
constexpr int kR = kBN / 2;  // accumulator floats per thread
}  // namespace

extern "C" __device__ void gs_consumer_c1_main(const GsMmaParams* p, unsigned char* smem) {
    const unsigned base = gs::smem_u32(smem);
    const unsigned t = threadIdx.x - 32u * kl_gemm_mainloop_c1_mma_warp0();  // 0..255
    const unsigned w = t >> 7, tw = t & 127u;
    const bool leader = tw == 0;
    if (t == 0) {
        gs::tma_prefetch_map(static_cast<const CUtensorMap*>(p->tmap_out));
    }
    // The ring as consumer.cuh's mainloop reads it: slot s's A at operands + s * stride, W's
    // 256 rows 16 KiB further.
    gs::Ring ring;
    ring.slots = base + kl_gemm_mainloop_c1_kv_operands_smem();
    ring.stage_bytes = kl_gemm_mainloop_c1_kv_operands_stride();
    ring.a_sub = kBytesA;
    ring.b_sub = kBN * 128u;
    ring.b_off = kBytesA;
    ring.full = base + kl_gemm_mainloop_c1_kv_full_bar();
    ring.empty = base + kl_gemm_mainloop_c1_kv_empty_bar();
    ring.depth = kl_gemm_mainloop_c1_kv_depth();
    // Warpgroup 1's rows start 8 KiB into A's box; with a box of at most 64 rows (m <= 64) they
    // lie past m and it reads warpgroup 0's rows instead (never stored).
    const unsigned a_off = (w == 1 && p->a_box_rows > 64u) ? 8192u : 0u;
    const unsigned staging = base + kl_gemm_mainloop_c1_out_stage_staging_smem() + w * (kBN / 16u) * 1024u;
    unsigned* flags = kl_gemm_mainloop_c1_sk_flags_counter_ptr();
    gs::Problem problem{p->m, p->n, p->k, 64u, kBN, p->raster, p->stream_k, 1u, 0u};
    gs::Scheduler sched;
    gs_consumer_c1_sched_init(&sched, &problem);
    float acc[1][kR];
    gs::RingCursor cur;
    gs::Work u;
    while (gs_consumer_c1_sched_next(&sched, &u)) {
        const unsigned row0 = u.tile_m * 128u + 64u * w;
        gs::mainloop<kBN, 1, 1, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, a_off, leader, 0u);
        gs::FixupSite site{&sched, u.sk_tile, t, row0 + 16u * (tw >> 5) < p->m ? 1u : 0u};
        if (u.kind == gs::kPartial) {
            gs_consumer_c1_fixup_store(acc[0], p->workspace, &site);
            gs::named_sync(kl_gemm_mainloop_c1_sk_sync_bar_id(), kl_gemm_mainloop_c1_sk_sync_threads());
            gs_consumer_c1_fixup_raise(flags, &site);
            continue;
        }
        if (u.kind == gs::kFinish) {
            gs_consumer_c1_fixup_await(flags, &site);
            gs::named_sync(kl_gemm_mainloop_c1_sk_sync_bar_id(), kl_gemm_mainloop_c1_sk_sync_threads());
            gs_consumer_c1_fixup_add(acc[0], p->workspace, &site);
        }
        gs_consumer_c1_swiglu_begin();
        gs::named_sync(kl_gemm_mainloop_c1_epi_sync_bar_id(), kl_gemm_mainloop_c1_epi_sync_threads());
        gs_consumer_c1_swiglu_write(acc, staging);
        gs::named_sync(kl_gemm_mainloop_c1_epi_sync_bar_id(), kl_gemm_mainloop_c1_epi_sync_threads());
        gs_consumer_c1_swiglu_store(p->tmap_out, staging, row0, u.tile_n * (kBN / 2u));
    }
    gs_consumer_c1_swiglu_drain();
}
