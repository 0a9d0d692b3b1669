// gemm_swiglu_persistent.cu — the one-unit driver of the persistent warp-specialized GEMM + SwiGLU
// for sm_90a: out[M, N/2] = silu(X Wg^T) * (X Wu^T), bf16 in, f32 accumulate, bf16 out, with
// W [N, K] = Wg and Wu interleaved by 16 rows (rows 32g .. 32g + 15 = Wg's rows 16g .., the next
// 16 = Wu's), K a multiple of 64 KSUB, N a multiple of the tile's BN.
//
// It includes one header per component and owns only what joins them: the shared memory layout,
// barrier initialisation, the role split and the teardown. The same headers are the code of the
// kernlink components beside it (scheduler.cu, producer.cu, consumer.cu, fixup.cu, epilogue.cu
// with their .kc), which `kernlink build gemm_swiglu_persistent.kp` links into gs_coop256_c2's
// schedule (the link's ABI places the ring, barriers and counters; bench/results/h200-2026-12-03/
// gemmlink/README.md compares the two builds); gemm_swiglu_persistent_small.kp links gs_coop128_c1's
// (the small-M path: <stem>_small.cu + .kc, with the fix-up's and the epilogue's 64 x 128 exports;
// bench/results/h200-2026-12-04/gemm/README.md).
//   scheduler.cuh  gemm.scheduler        tile order, data-parallel + stream-K split (facts)
//   producer.cuh   gemm.producer         TMA loads of A and B into the ring `kv`
//   ring.cuh       (mainloop)            the ring's layout and cursor, shared by producer/consumers
//   consumer.cuh   gemm.mainloop (mma)   wgmma consumers, cooperative or ping-pong
//   fixup.cuh      gemm.streamk_fixup    stream-K partials and counters (consumer role)
//   epilogue.cuh   swiglu.epilogue       SwiGLU and the TMA store of each output tile
//   common.cuh, wgmma.cuh                instruction wrappers (no component)
//
// Kernels (extern "C", 384 threads = 3 warpgroups, __launch_bounds__(384, 1): 1 CTA per SM,
// dynamic shared memory gs_smem_bytes_<name> = ring + 2 epilogue claims + 2 x 16 barriers + 1 KiB):
//   gs_coop256_c2   cooperative, tile 128 x 256, 2 x 1 clusters, B multicast, ring 192 KiB
//                   (4 slots of 48 KiB at M >= 128) — what the bench's `auto` runs for M > 128
//                   (stream-K for the last wave, raster 16 m-tiles)
//   gs_coop128_c1   cooperative, tile 128 x 128, ring 208 KiB (6 slots of 32 KiB at M >= 128,
//                   11 of 18 KiB at M = 16) — `auto` for M <= 128, data-parallel
//   gs_coop256_c1   gs_coop256_c2 without the cluster
//   gs_coop128k2_c1 gs_coop128_c1 with 2 k-blocks of 64 per slot (128 B -> 256 B per W row and request)
//   gs_coop128k4r_c1 4 k-blocks per slot, each slot released as soon as its own wgmma retired
//   gs_pp128_c1     ping-pong, 128 x 128 per warpgroup, ring 192 KiB
//   gs_pp128_c2     the same in 2 x 1 clusters with B multicast
// Measured on the H200 (bench/results/h200-2026-12-03/README.md): cooperative 128 x 256 in
// clusters beats ping-pong 128 x 128 at M >= 512 (the 256-wide wgmma reads less shared memory
// per flop); at M <= 128 every variant streams W at the same rate.
//
// Host contract (bench/gemm_swiglu_persistent.py): params as GsParams below; grid = G * C CTAs,
// G = the clusters co-resident on the GPU (cuOccupancyMaxActiveClusters; 132 SMs: 132 CTAs) when
// stream_k = 1 or 2 (a FINISH segment spins on later clusters: all must be resident), else
// min(G, units); a_box_rows = 128, or M rounded up to 8 when M < 128 (the ring's slots shrink and
// the ring deepens); workspace of G * C * 256 * BN / 8 float4 and flags of G * C u32, zero before
// the first launch (the kernel leaves them zero); policy = 3 (B evict_first, A evict_last) when
// M <= 128, else 0.
//
// ============================ synchronization protocols ============================
// Roles: warpgroup 0 = producer (setmaxnreg.dec 40; warp 0 lane 0 issues every copy, the other
// 127 threads go straight to the teardown); warpgroups 1, 2 = consumers w = 0, 1 (setmaxnreg.inc
// 232; threads t = 0..255, tw = t % 128 within the warpgroup). C = cluster size (1 or 2). Both
// CTAs of a cluster run the same protocol (no step is rank-0-only: each rank loads half of B and
// multicasts it); rank only selects the m-tile, B's half, and the stream-K slot.
// D = ring depth = min(16, ring bytes / stage bytes), stage bytes = KSUB * (a_sub + BN * 128),
// a_sub = a_box_rows * 128 rounded up to 1 KiB: a run-time value, the same for every role.
//
// (P0) Before the loop (once per CTA). Thread 0: for s < D, mbarrier.init full[s] count 1 and
// empty[s] count E = 2 C (cooperative) or C (ping-pong); fence.mbarrier_init.release.cluster.
// Then C = 2: every thread of both CTAs barrier.cluster.arrive.release + barrier.cluster.wait
// .acquire (no peer multicasts into or arrives on a barrier before it is initialised); C = 1:
// __syncthreads. Producer lane: prefetch.tensormap A, B; consumer thread t = 0: prefetch out.
// Ping-pong only: warpgroup 1 bar.arrive(ORDER0 = 4, 256) before its loop (P2).
//
// (P1) Ring `kv`, per k-step (KSUB k-blocks of 64) of every unit of the scheduler's sequence; the
// producer and each consumer warpgroup walk the same (slot s, phase) sequence: s += 1 per
// k-step, phase ^= 1 when s wraps to 0, both from (0, 0); a ping-pong warpgroup skips the other
// warpgroup's units by advancing its cursor by their k-step count.
//   producer (elected lane, per k-step):
//     1. mbarrier.try_wait.parity empty[s], phase ^ 1 (first pass: returns at once);
//     2. mbarrier.arrive.expect_tx full[s], tx = KSUB * (a_box_rows * 128 + BN * 128) (the
//        phase's one arrival, and its bytes);
//     3. KSUB x TMA A box {64 k, a_box_rows rows} at (64 k-block, 128 tile_m) -> A sub-block j,
//        complete_tx on full[s] of this CTA;
//     4. KSUB x: C = 1: TMA B box {64, BN} at (64 k-block, BN tile_n) -> B sub-block j,
//        complete_tx on full[s]; C = 2: TMA B box {64, BN / 2} at (64 k-block, BN tile_n +
//        rank BN / 2), .multicast::cluster ctaMask 0b11 -> B sub-block j + rank BN / 2 * 128 in
//        BOTH CTAs, complete_tx on full[s] (same offset) of both CTAs. Each CTA's full[s] phase
//        thus completes on its producer's 1 arrival + own A + own half of B + the peer's half;
//        the peer's bytes may land before this CTA's expect_tx (tx-count goes negative, the
//        phase cannot complete without the arrival); the peer's copy for pass p + 1 is issued
//        only after the peer's empty[s] completed, which needs THIS CTA's release of pass p.
//   consumer warpgroup (all 128 threads wait; thread tw = 0 releases), KEEP = 1 (every kernel
//   but k4r):
//     1. try_wait.parity full[s], phase;
//     2. wgmma.fence; 4 KSUB (cooperative) or 8 KSUB (ping-pong: two m64 chains) wgmma, the
//        first of a unit with scale-d 0; wgmma.commit_group;
//     3. from the unit's second k-step on: wgmma.wait_group 1 (the previous k-step's group
//        retired) -> tw = 0: release s_prev;
//     after the unit's last k-step: wgmma.wait_group 0 -> tw = 0: release the last slot.
//     KEEP = 0 (k4r): wait_group 0 after each commit, then release s itself (one slot held).
//   release s = mbarrier.arrive on empty[s] of every CTA of the cluster: C = 1 local arrive;
//   C = 2 mapa.shared::cluster + mbarrier.arrive.shared::cluster to rank 0 and to rank 1 (default
//   .release.cta semantics; .release.cluster costs a MEMBAR.GPU per arrival). empty[s] completes
//   on E arrivals: cooperative, both warpgroups of both CTAs; ping-pong, the consuming warpgroup
//   of both CTAs (the cluster's CTAs run the same unit sequence, so the same warpgroup index).
//
// (P2) Ping-pong order: named barriers ORDER0 = 4 and ORDER1 = 5, 256 threads each (128
// bar.arrive of the signalling warpgroup + 128 bar.sync of the waiting one). Unit j of a CTA
// belongs to warpgroup j % 2. Before the loop warpgroup 1 bar.arrive(ORDER0). Per own unit,
// warpgroup w: bar.sync(ORDER_w) -> (P1) for all its k-steps -> bar.arrive(ORDER_{1-w}) right
// after the last commit, before wait_group 0 -> release -> epilogue (P3), overlapping the other
// warpgroup's mainloop. After the loop exactly one arrival is unmatched: the CTA's unit count
// even -> warpgroup 0 bar.sync(ORDER0) once more; odd -> warpgroup 1 bar.sync(ORDER1). At most
// one arrival is ever pending per barrier (strict alternation).
//
// (P3) Epilogue, per output tile, in the warpgroup that owns the accumulator (cooperative: 64
// rows x BN / 2 outputs each; ping-pong: 128 x 64), named barrier 2 + w with 128 threads, issuer
// tw = 0, a staging claim per warpgroup reused every tile:
//     1. issuer: cp.async.bulk.wait_group.read 0 (the previous tile's TMA stores finished
//        READING the claim; their global writes may still be in flight);
//     2. bar.sync(2 + w, 128);
//     3. all: SwiGLU of the fragments (gate n8-blocks 4c, 4c+1 with up 4c+2, 4c+3 in the same
//        thread), stmatrix.x4 into the claim (128B swizzle), fence.proxy.async.shared::cta;
//     4. bar.sync(2 + w, 128);
//     5. issuer: TMA store per 64 x 64 box (rows >= M clipped by tmap_out), commit_group.
//   End of kernel: issuer cp.async.bulk.wait_group 0. A cooperative warpgroup whose 64 rows all
//   lie at or past M skips (P3) entirely (its wgmma still ran: a branch around them serialised
//   every wgmma, ptxas C7515).
//
// (P4) Stream-K counters (cooperative kernels with stream_k = 1; named barrier 1 with the 256
// consumer threads; slot = cluster * C + rank; flags[] zero at launch and at exit):
//   PARTIAL (the first stream-K segment of a cluster's range when it starts past k = 0; at most
//   one per CTA per launch): warps holding a row < M store their accumulators to ws[slot]
//   (float4 q of thread t at [q * 256 + t]) -> every thread membar.gl -> bar.sync(1, 256) ->
//   t = 0: st.release.gpu flags[slot] = 1 (raised once, by the consumer role of this CTA).
//   FINISH (the last segment of a range when it starts at k = 0 and ends before K; at most one
//   per CTA per launch): t = 0, for each later cluster g' = g + 1, ... while start(g') < the
//   tile's end, skipping empty ranges: spin ld.acquire.gpu flags[slot(g')] until 1, then
//   st.relaxed.gpu flags[slot(g')] = 0 (the awaiting CTA is the only reader) -> bar.sync(1, 256)
//   -> warps holding a row < M add ws[slot(g')] (ld.global.cg) in increasing g' (deterministic)
//   -> (P3). The partner of a counter is the SAME role (consumers) of another CTA, same rank;
//   a FINISH waits only on later clusters, whose awaited PARTIAL is their first stream-K segment
//   (after the same number of data-parallel units as every cluster), and every CTA is resident,
//   so every wait ends.
//
// (P5) Teardown: C = 2: every thread of both CTAs barrier.cluster.arrive.release +
// barrier.cluster.wait.acquire (no CTA exits while its peer may still multicast into its shared
// memory or arrive on its empty[]). C = 1: nothing (consumers outlive the producer's last copy).
//
// What the hand-off of (P3) needs from the contract language: the accumulator is exported once
// per unit (a generation per tile) by the consumer warpgroup and imported in the SAME threads,
// in registers (a route that is the identity); the "ring of accumulator buffers" is the two
// warpgroups' register files in ping-pong (depth 2, released when the epilogue returns and the
// warpgroup's next bar.sync(ORDER_w) passes) and one buffer per warpgroup in the cooperative
// kernels (released when the epilogue returns, before the next unit's first wgmma); the staging
// claim's release waits for an asynchronous READ (cp.async.bulk.wait_group.read) and its slot
// index restarts every tile.
// ==================================================================================
#include <cuda.h>

#include "common.cuh"
#include "consumer.cuh"
#include "epilogue.cuh"
#include "producer.cuh"
#include "ring.cuh"
#include "scheduler.cuh"

// The kernel's only parameter (a __grid_constant__ block; bench/gemm_swiglu_persistent.py packs it).
struct GsParams {  // 128-aligned (CUtensorMap), 512 bytes
    CUtensorMap tmap_a;    // @0   A = X [M, K] bf16, box {64, a_box_rows}, 128B swizzle
    CUtensorMap tmap_b;    // @128 B = W [N, K] bf16, box {64, BN / C}, 128B swizzle
    CUtensorMap tmap_out;  // @256 out [M, N / 2] bf16, box {64, 64}, 128B swizzle
    float4* workspace;     // @384 stream-K partials: G * C slots of 256 * BN / 8 float4
    unsigned* flags;       // @392 stream-K counters: G * C u32, zero
    unsigned m;            // @400
    unsigned n;            // @404 rows of W (gate + up)
    unsigned k;            // @408
    unsigned a_box_rows;   // @412 rows of A's box: 128, or M rounded up to 8 when M < 128
    unsigned raster;       // @416 cluster-rows per raster group
    unsigned stream_k;     // @420 0: data-parallel only; 1: data-parallel waves + stream-K rest; 2: + the last full wave
    unsigned policy;       // @424 bit 0: B evict_first; bit 1: A evict_last
    unsigned reserved;     // @428
};
static_assert(sizeof(GsParams) == 512, "GsParams layout");
static_assert(offsetof(GsParams, workspace) == 384, "GsParams layout");
static_assert(offsetof(GsParams, m) == 400, "GsParams layout");
static_assert(offsetof(GsParams, policy) == 424, "GsParams layout");

namespace gs {

template <unsigned BN_, unsigned C_, bool PINGPONG_, unsigned RING_KB_, unsigned KSUB_, int KEEP_ = 1>
struct Config {
    static constexpr int KEEP = KEEP_;
    static constexpr unsigned BN = BN_;
    static constexpr unsigned C = C_;
    static constexpr bool PINGPONG = PINGPONG_;
    static constexpr unsigned KSUB = KSUB_;
    // The ring's region: as many slots as fit, smaller A boxes (M < 128) making smaller slots
    // and a deeper ring in the same region (ring.cuh: Ring::layout).
    static constexpr unsigned RING_BYTES = RING_KB_ * 1024u;
    static constexpr unsigned STAGING = PINGPONG ? epilogue_staging_bytes<2, 16>() : epilogue_staging_bytes<1, BN / 8>();
    static constexpr unsigned RING_OFF = 0;
    static constexpr unsigned STAGING_OFF = RING_BYTES;
    static constexpr unsigned FULL_OFF = STAGING_OFF + 2u * STAGING;
    static constexpr unsigned EMPTY_OFF = FULL_OFF + 8u * kMaxDepth;
    static constexpr unsigned SMEM = EMPTY_OFF + 8u * kMaxDepth + 1024u;  // + alignment slack
    static constexpr unsigned EMPTY_COUNT = (PINGPONG ? 1u : 2u) * C;
    static_assert(SMEM <= 232448u, "shared memory per block");
    static_assert(!PINGPONG || BN == 128, "ping-pong tiles are 128 x 128 per warpgroup");
};

template <class Cfg>
__device__ __forceinline__ void kernel_body(const GsParams& p) {
    extern __shared__ unsigned char smem_raw[];
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    Ring ring;
    ring.layout(base + Cfg::RING_OFF, Cfg::RING_BYTES, base + Cfg::FULL_OFF, base + Cfg::EMPTY_OFF, p.a_box_rows,
                Cfg::BN, Cfg::KSUB);
    const unsigned wg = threadIdx.x / 128u;

    // (P0)
    if (threadIdx.x == 0) {
        for (unsigned s = 0; s < ring.depth; ++s) {
            mbar_init(ring.full_bar(s), 1u);
            mbar_init(ring.empty_bar(s), Cfg::EMPTY_COUNT);
        }
        fence_mbar_init();
    }
    if constexpr (Cfg::C > 1) {
        cluster_sync();
    } else {
        __syncthreads();
    }

    Scheduler sched;
    sched.init(p.m, p.n, p.k, 64u * Cfg::KSUB, Cfg::BN, p.raster, Cfg::PINGPONG ? 0u : p.stream_k, Cfg::C,
               Cfg::C > 1 ? cluster_rank() : 0u);

    if (wg == 0) {
        regs_dealloc<40>();
        if (threadIdx.x == 0) {
            tma_prefetch_map(&p.tmap_a);
            tma_prefetch_map(&p.tmap_b);
            producer_main<Cfg::BN, Cfg::C, Cfg::KSUB>(&p.tmap_a, &p.tmap_b, p.a_box_rows, p.policy, ring, sched);
        }
        __syncwarp();
    } else {
        regs_alloc<232>();
        const unsigned w = wg - 1u;
        if (threadIdx.x == 128) {
            tma_prefetch_map(&p.tmap_out);
        }
        ConsumerArgs args;
        args.tmap_out = &p.tmap_out;
        args.ws = p.workspace;
        args.flags = p.flags;
        args.m = p.m;
        args.a_box_rows = p.a_box_rows;
        args.staging = base + Cfg::STAGING_OFF + w * Cfg::STAGING;
        if constexpr (Cfg::PINGPONG) {
            consumer_pingpong<Cfg::C, Cfg::KSUB>(args, ring, sched, w);
        } else {
            consumer_cooperative<Cfg::BN, Cfg::C, Cfg::KSUB, Cfg::KEEP>(args, ring, sched, w);
        }
    }
    // (P5)
    if constexpr (Cfg::C > 1) {
        cluster_sync();
    }
}

}  // namespace gs

#define GS_KERNEL(NAME, CLUSTER_ATTR, ...)                                                       \
    extern "C" __device__ const unsigned gs_smem_bytes_##NAME = gs::Config<__VA_ARGS__>::SMEM; \
    extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_ATTR NAME(const __grid_constant__ GsParams p) { \
        gs::kernel_body<gs::Config<__VA_ARGS__>>(p);                                             \
    }

#define GS_NO_CLUSTER
#define GS_CLUSTER2 __cluster_dims__(2, 1, 1)

// build.sh compiles one cubin per kernel (-DGS_ONLY_<name>); without a selection, all of them.
#if !defined(GS_ONLY_coop256_c1) && !defined(GS_ONLY_coop256_c2) && !defined(GS_ONLY_coop128_c1) && \
    !defined(GS_ONLY_coop128k2_c1) && !defined(GS_ONLY_coop128k4r_c1) && !defined(GS_ONLY_pp128_c1) && \
    !defined(GS_ONLY_pp128_c2)
#define GS_ALL 1
#endif
#if GS_ALL || defined(GS_ONLY_coop256_c1)
GS_KERNEL(gs_coop256_c1, GS_NO_CLUSTER, 256, 1, false, 192, 1)
#endif
#if GS_ALL || defined(GS_ONLY_coop256_c2)
GS_KERNEL(gs_coop256_c2, GS_CLUSTER2, 256, 2, false, 192, 1)
#endif
#if GS_ALL || defined(GS_ONLY_coop128_c1)
GS_KERNEL(gs_coop128_c1, GS_NO_CLUSTER, 128, 1, false, 208, 1)
#endif
#if GS_ALL || defined(GS_ONLY_coop128k2_c1)
GS_KERNEL(gs_coop128k2_c1, GS_NO_CLUSTER, 128, 1, false, 208, 2)
#endif
#if GS_ALL || defined(GS_ONLY_coop128k4r_c1)
GS_KERNEL(gs_coop128k4r_c1, GS_NO_CLUSTER, 128, 1, false, 208, 4, 0)
#endif
#if GS_ALL || defined(GS_ONLY_pp128_c1)
GS_KERNEL(gs_pp128_c1, GS_NO_CLUSTER, 128, 1, true, 192, 1)
#endif
#if GS_ALL || defined(GS_ONLY_pp128_c2)
GS_KERNEL(gs_pp128_c2, GS_CLUSTER2, 128, 2, true, 192, 1)
#endif
