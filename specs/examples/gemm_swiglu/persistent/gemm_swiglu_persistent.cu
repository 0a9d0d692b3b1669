// gemm_swiglu_persistent.cu — the one-unit driver of the persistent warp-specialized GEMM + SwiGLU
// for sm_90a: out[M, N/2] = silu(X Wg^T) * (X Wu^T), bf16 in, f32 accumulate, bf16 out, with
// W [N, K] = Wg and Wu interleaved by 16 rows (rows 32g .. 32g + 15 = Wg's rows 16g .., the next
// 16 = Wu's), K a multiple of 64, N a multiple of the tile's BN.
//
// It includes one file per future component and owns only what joins them: shared memory
// layout, barrier initialisation, the role split and the teardown.
//   scheduler.cuh  gemm.scheduler        tile order, data-parallel + stream-K split
//   producer.cuh   gemm.producer         TMA loads of A and B into the ring `kv`
//   ring.cuh       (mainloop)            the ring's layout and cursor
//   consumer.cuh   gemm.mainloop (mma)   wgmma consumers, cooperative or ping-pong
//   fixup.cuh      gemm.streamk_fixup    stream-K partials and counters
//   epilogue.cuh   swiglu.epilogue       SwiGLU and the TMA store of each output tile
//   common.cuh, wgmma.cuh                instruction wrappers (no component)
//
// Kernels (extern "C", 384 threads = 3 warpgroups, 1 CTA per SM, dynamic shared memory =
// gs_smem_bytes_<name>, grid = G * C CTAs with G the co-resident clusters or fewer):
//   gs_coop256_c1  cooperative, tile 128 x 256, ring depth 4 (48 KiB slots), no cluster
//   gs_coop256_c2  the same in 2 x 1 clusters, B multicast (each CTA loads half of B's tile)
//   gs_coop128_c1  cooperative, tile 128 x 128, depth 6 (32 KiB slots)
//   gs_pp128_c1    ping-pong, 128 x 128 per warpgroup, depth 6
//   gs_pp128_c2    the same in 2 x 1 clusters with B multicast
//
// ============================ synchronization protocols ============================
// Roles: warpgroup 0 = producer (warp 0, lane 0 issues; warps 1-3 idle; setmaxnreg.dec 40);
// warpgroups 1, 2 = consumers w = 0, 1 (setmaxnreg.inc 232). C = cluster size (1 or 2).
//
// (P0) Before the loop. Thread 0 initialises, for each slot s < depth, full[s] with count 1 and
// empty[s] with count E = 2 C (cooperative) or C (ping-pong); fence.mbarrier_init.release.cluster.
// Then every thread of the cluster: barrier.cluster.arrive.release + wait.acquire (C = 2; no
// peer may multicast into or arrive on a barrier before it is initialised), or __syncthreads
// (C = 1). Producer lane: prefetch.tensormap A, B; consumer thread 0: prefetch.tensormap out.
//
// (P1) Ring `kv` (depth D, per k-step of every unit, both sides walk the same (slot, phase)
// sequence: slot advances by one per k-step, phase flips at each wrap, both start at (0, 0)):
//   producer (elected lane): wait empty[s] parity phase^1 ->
//     mbarrier.arrive.expect_tx full[s], tx = a_box_rows * 128 + BN * 128 bytes (1 arrival) ->
//     TMA A box {64, a_box_rows} at (64 kt, 128 tile_m) into A(s), complete_tx on full[s] ->
//     C = 1: TMA B box {64, BN} at (64 kt, BN tile_n) into B(s), complete_tx on full[s];
//     C = 2: TMA B box {64, BN/2} at (64 kt, BN tile_n + rank BN/2), .multicast::cluster mask
//     0b11, into B(s) + rank BN/2 * 128 of BOTH CTAs, complete_tx on full[s] of both CTAs.
//     So full[s] of each CTA completes on 1 arrival + (own A + own half B + peer half B) bytes.
//   consumer warpgroup (all 128 threads wait; thread 0 of the warpgroup releases):
//     wait full[s] parity phase -> wgmma.fence -> 4 (cooperative) or 8 (ping-pong) wgmma ->
//     commit -> wait_group 1 -> release s_prev: mbarrier.arrive on empty[s_prev] of every CTA
//     of the cluster (C = 2: mapa + mbarrier.arrive.shared::cluster to rank 0
//     and 1) -> after the unit's last k-step: wait_group 0, release the last slot.
//   empty[s] of a CTA thus completes when E arrivals came: in the cooperative kernels the two
//   warpgroups of each CTA of the cluster, in ping-pong the one consuming warpgroup per CTA.
//
// (P2) Ping-pong order (named barriers ORDER0 = 4, ORDER1 = 5, 256 threads: 128 bar.arrive of
// the signalling warpgroup + 128 bar.sync of the waiting one). Units of a CTA alternate,
// unit j -> warpgroup j % 2. Before the loop warpgroup 1 bar.arrive(ORDER0). Per own unit,
// warpgroup w: bar.sync(ORDER_w) -> issue all k-steps of (P1) -> bar.arrive(ORDER_{1-w}) right
// after the last commit -> wait_group 0 -> release -> epilogue (P3), which overlaps the other
// warpgroup's mainloop. After the loop the one unmatched arrival is consumed: unit count even
// -> warpgroup 0 bar.sync(ORDER0); odd -> warpgroup 1 bar.sync(ORDER1).
//
// (P3) Epilogue, per output tile and warpgroup (named barrier 2 + w, 128 threads; issuer =
// thread 0 of the warpgroup; staging claim of its own, reused every tile):
//   issuer: cp.async.bulk.wait_group.read 0 (the previous tile's stores finished reading the
//   claim) -> bar.sync(2 + w) -> all: SwiGLU, stmatrix into the claim, fence.proxy.async
//   .shared::cta -> bar.sync(2 + w) -> issuer: TMA stores (boxes of 64 x 64), commit_group.
//   End of kernel: issuer cp.async.bulk.wait_group 0.
//
// (P4) Stream-K counters (cooperative kernels, params.stream_k = 1; named barrier 1, the 256
// consumer threads; flags[] zero before the launch and again after it):
//   PARTIAL (first stream-K segment of a cluster's range, starts past k = 0): warps with a row
//   < M store the accumulators to ws[slot] -> every thread membar.gl -> bar.sync(1, 256) ->
//   consumer thread 0: st.release.gpu flags[slot] = 1.
//   FINISH (last segment, starts at k = 0, ends before K): consumer thread 0, for each later
//   cluster g' whose non-empty range starts inside the tile (increasing g'): spin
//   ld.acquire.gpu flags[slot(g')] == 1, then st.relaxed flags[slot(g')] = 0 -> bar.sync(1, 256)
//   -> warps with a row < M add ws[slot(g')] (ld.global.cg) in increasing g' -> epilogue.
//   slot = cluster * C + rank: in a cluster each rank pairs with the same rank of the other
//   cluster. The awaited segment is always the first stream-K segment of a later cluster, all
//   clusters are co-resident (host), so every wait ends.
//
// (P5) Teardown: C = 2: every thread of both CTAs barrier.cluster.arrive.release + wait.acquire
// (no CTA exits while its peer may still multicast into it or arrive on its empty[]).
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
    unsigned stream_k;     // @420 0: data-parallel only; 1: data-parallel waves + stream-K rest
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
