// attention.cu — the one-unit driver of the attention family for sm_90a: forward attention,
// bf16 Q / K / V [B, H, seq, D] (paged: K / V in a page cache), f32 accumulate, bf16 O
// [B, H, seq_q, D] and f32 log-sum-exp [B, H, seq_q], head dim D = 64 or 128 (ATTN_D), ring
// depth ATTN_STAGES (2 or 3 at D = 128: 227 KiB of shared memory hold Q + 3 K/V slot pairs).
//
// It includes one file per future component and owns only what joins them: the parameter
// block, the tile decode, the shared memory layout, barrier initialisation and the role split
// (in the linked form, kernlink's generated glue). Which mask, score and load it includes is
// chosen at build time (build.sh): -DATTN_MASK_H="mask_causal.cuh" etc.
//   core.cuh               attn.core           consumers: wgmma, online softmax, ping-pong
//   load_dense.cuh         attn.load.dense     producer: Q once, K / V rings, dense layout
//   load_blocksparse.cuh   attn.load.blocksparse  producer: only the listed kv blocks
//   load_paged.cuh         attn.load.paged     producer: K / V through a page table
//   load_common.cuh        (load team)         the producer loop the three loads share
//   mask_{none,causal,window,chunked}.cuh      attn.mask.*   kl_mask + block queries
//   score_{none,softcap,alibi}.cuh             attn.score.*  kl_score
//   epilogue.cuh           attn.epilogue       O / l in bf16 through a TMA store, LSE
//   attn_abi.cuh           (no owner)          Tile, Smem, the callables' fixed signatures
//   attn_common.cuh        (no owner)          instruction wrappers
//
// Kernel: extern "C" attn_fwd(const __grid_constant__ AttnParams), 384 threads = 3 warpgroups,
// __launch_bounds__(384, 1) (register cap 168 at entry), dynamic shared memory
// attn::kSmemBytes (attn_smem_bytes in the cubin), grid (ceil(seq_q / 128), H, B); the CTA
// (x, h, b) computes query rows m0 = 128 (gridDim.x - 1 - x) .. + 127 of head (b, h) (the
// longest causal rows first).
//
// ============================ synchronization protocols ============================
// Roles. Warpgroup 0 = producer (threads 0..127): setmaxnreg.dec 24 (ATTN_LOAD_REGS); thread 0
// (warp 0, lane 0) runs attn_load_main, the other 127 threads return. Warpgroups 1 and 2 =
// consumers wg = 0, 1 (threads 128..255, 256..383): setmaxnreg.inc 240 (ATTN_CORE_REGS;
// 24 + 2 x 240 = 504 <= 3 x 168, so the increase is always granted); tw = threadIdx % 128.
// N = kl_load_kv_count (the same for every role), block i of the sequence =
// kl_load_kv_block(i). S = kStages.
//
// (P0) Set-up, once per CTA. Every thread computes the tile and the mask's kv range
// (kl_mask_kv_range on rows [m0, min(m0 + 128, seq_q)), clipped to [0, seq_k), in blocks of
// 128; attn_tile.cuh; linked, each role computes it after the split). Thread 0 initialises:
// q_full count 1, q_empty count 2; k_full[s], v_full[s] count 1; k_empty[s],
// v_empty[s] count 2 (one arrival per consumer warpgroup), s < S; then
// fence.mbarrier_init.release.cluster. __syncthreads (all 384 threads, barrier 0). Then the
// role split (no CTA-wide barrier after it).
//
// (P1) The Q ring, one slot, one phase. Producer thread: try_wait.parity q_empty, 1 (passes at
// once on the fresh barrier), mbarrier.arrive.expect_tx q_full,
// tx = 128 D 2 bytes (32 KiB at D = 128), then D / 64 TMA boxes {64, 128, 1} (16 KiB each,
// zero-filled past seq_q) completing on q_full. Each consumer thread: try_wait.parity q_full, 0
// before anything else (also when N = 0: the epilogue reuses Q's storage). After its last wgmma
// retired, thread tw = 0 of each consumer warpgroup arrives on q_empty (the producer never
// refills Q: the tile is loaded once; the epilogue then stages O in the slot).
//
// (P2) K ring and V ring, S slots each (slot = the kv-block sequence index mod S, phase = the
// parity of the pass: both advance per block, phase ^= 1 when the slot wraps to 0, from (0, 0);
// the producer and each consumer warpgroup walk the same sequence, K and V each their own).
//   producer thread, per block, in the order K_0, (K_i, V_{i-1}) for i = 1 .. N - 1, V_{N-1}:
//     1. mbarrier.try_wait.parity empty[slot], phase ^ 1 (first pass: returns at once);
//     2. mbarrier.arrive.expect_tx full[slot], tx = 128 D 2 bytes (the phase's one arrival);
//     3. the load's copies of the block into the slot, completing exactly that many bytes on
//        full[slot] (dense / block-sparse: D / 64 boxes {64, 128, 1}; paged: 128 / page_size
//        pages x D / 64 boxes {64, 1, page_size, 1}).
//   consumer warpgroup (all 128 threads wait; thread tw = 0 releases):
//     K: try_wait.parity k_full[slot], phase in the phase that issues S_i = Q K_i^T, after its
//        turn (P3); after the wgmma.wait_group that retires it (wait_group 1 in phases
//        1 .. N - 1, then the softmax of S_i; wait_group 0 in phase 0), tw = 0 arrives on
//        k_empty[slot];
//     V: try_wait.parity v_full[slot], phase in the phase that issues O += P_i V_i (phase
//        i + 1), right after the K wait, before the phase's first wgmma (no wait between the
//        two GEMMs of a phase: ptxas would inject a warpgroup.arrive there, C7519); after
//        wgmma.wait_group 0 retires it, tw = 0 arrives on v_empty[slot].
//     empty[slot] completes its phase when both consumer warpgroups have arrived (count 2):
//     only then may the producer overwrite the slot. The arrival is plain (release, CTA
//     scope) and follows wgmma.wait_group, which orders the tensor core's reads of the slot.
//
// (P3) Ping-pong turns: named barriers ATTN_BAR_SCHED0 = 1 (warpgroup 0's turn) and ATTN_BAR_SCHED1 = 2
// (warpgroup 1's turn), 256 threads each: the owner waits with bar.sync (128 threads), the other
// warpgroup arrives with bar.arrive (128 threads). A consumer warpgroup runs N + 1 phases
// (phase 0: S_0; phase i = 1 .. N - 1: S_i then PV_{i-1}; phase N: PV_{N-1}); in each it
//   1. bar.sync its own barrier (skipped by warpgroup 0 in phase 0: it takes the first turn);
//   2. waits the ring barriers of the phase (K then V) and issues the phase's wgmma
//      (wgmma.fence first, one wgmma.commit_group per GEMM: S_i = 4 D / 64 x m64n128k16 from
//      shared memory, PV = 8 x m64nDk16 with P from registers);
//   3. bar.arrive the other warpgroup's barrier (skipped by warpgroup 1 in phase N);
//   4. waits its wgmma (wait_group 1 for S_i, then softmax(S_i), then wait_group 0 for PV),
//      releases slots, rescales O, packs P.
// Counts: ATTN_BAR_SCHED0 sees N bar.sync of warpgroup 0 and N bar.arrive of warpgroup 1;
// ATTN_BAR_SCHED1 sees N + 1 of each: every generation completes with 256 threads, none is left
// half-arrived at exit. A warpgroup can arrive at most one generation ahead (its next arrive
// needs its own next turn, which needs the other's arrive). N = 0: no phase, no barrier.
// N is the same for both warpgroups (one kv sequence per CTA).
//
// (P4) Epilogue, per consumer warpgroup, after its phase N (its last wgmma retired, so its 64
// rows of Q are dead: each warpgroup's QK^T read only its own rows): every thread stores its
// O / l as bf16 into those rows (st.shared, 128B-swizzled), fence.proxy.async.shared::cta,
// bar.sync ATTN_BAR_EPI0 / ATTN_BAR_EPI1 (IDs 3, 4; 128 threads); thread tw = 0 issues D / 64 TMA stores
// (boxes {64, 64, 1}), commits the bulk group and waits for its source reads
// (cp.async.bulk.wait_group.read 0) before exiting. LSE: plain st.global by lanes with
// lane % 4 == 0, rows < seq_q.
//
// Callables (signatures and call-site guarantees: attn_abi.cuh): kl_mask_kv_range by every
// thread before the split; kl_load_kv_count / kl_load_kv_block by the producer thread and by
// every consumer thread; kl_score, kl_mask, kl_mask_block_full by every consumer thread,
// converged, full warps; kl_epilogue by each consumer warpgroup, converged.
#include <stddef.h>

#include "attn_abi.cuh"
#include "attn_common.cuh"

#ifndef ATTN_MASK_H
#define ATTN_MASK_H "mask_causal.cuh"
#endif
#ifndef ATTN_SCORE_H
#define ATTN_SCORE_H "score_none.cuh"
#endif
#ifndef ATTN_LOAD_H
#define ATTN_LOAD_H "load_dense.cuh"
#endif
#ifndef ATTN_LOAD_REGS
#define ATTN_LOAD_REGS 24
#endif
#ifndef ATTN_CORE_REGS
#define ATTN_CORE_REGS 240
#endif

#include ATTN_MASK_H
#include ATTN_SCORE_H
#include ATTN_LOAD_H
#include "core.cuh"
#include "attn_tile.cuh"
#include "epilogue.cuh"

static_assert(ATTN_LOAD_REGS + 2 * ATTN_CORE_REGS <= 3 * 168, "setmaxnreg budgets exceed the entry allocation");

// The kernel's one parameter: each component's block at a fixed offset (the harness packs it; the
// linked kernel's params block, placed by kernlink in pipeline order, has the same layout).
struct AttnParams {
    LoadParams load;    // @ 0: 3 tensor maps (128 B each, 128-aligned) + 128 B
    EpiParams epi;      // @ 512: 1 tensor map + 128 B
    CoreParams core;    // @ 768: 32 B
    MaskParams mask;    // @ 800: 16 B
    ScoreParams score;  // @ 816: 16 B
};
static_assert(sizeof(LoadParams) == 512 && sizeof(EpiParams) == 256, "component block sizes");
static_assert(sizeof(CoreParams) == 32 && sizeof(MaskParams) == 16 && sizeof(ScoreParams) == 16, "sizes");
static_assert(offsetof(AttnParams, epi) == 512 && offsetof(AttnParams, core) == 768, "offsets");
static_assert(offsetof(AttnParams, mask) == 800 && offsetof(AttnParams, score) == 816, "offsets");
static_assert(sizeof(AttnParams) == 896, "parameter block size");

// The callables, as the linked build's trampolines serve them: each forwards to the component's
// definition with its own block of the parameter block kp.
namespace {
__device__ __forceinline__ const AttnParams* attn_params(void* kp) { return static_cast<const AttnParams*>(kp); }
}  // namespace
KL_CALLABLE bool kl_mask(void* kp, int q, int kv) { return attn_mask_keep(&attn_params(kp)->mask, q, kv); }
KL_CALLABLE void kl_mask_kv_range(void* kp, int q_lo, int q_hi, int seq_k, void* kv_lo, void* kv_hi) {
    attn_mask_kv_range(&attn_params(kp)->mask, q_lo, q_hi, seq_k, static_cast<int*>(kv_lo), static_cast<int*>(kv_hi));
}
KL_CALLABLE bool kl_mask_block_full(void* kp, int q_lo, int q_hi, int kv_lo, int kv_hi) {
    return attn_mask_block_full(&attn_params(kp)->mask, q_lo, q_hi, kv_lo, kv_hi);
}
KL_CALLABLE float kl_score(void* kp, float s, int b, int h, int q, int kv) {
    return attn_score(&attn_params(kp)->score, s, b, h, q, kv);
}
KL_CALLABLE int kl_load_kv_count(void* kp, void* t) {
    return attn_load_kv_count(&attn_params(kp)->load, static_cast<const attn::Tile*>(t));
}
KL_CALLABLE int kl_load_kv_block(void* kp, void* t, int i) {
    return attn_load_kv_block(&attn_params(kp)->load, static_cast<const attn::Tile*>(t), i);
}
KL_CALLABLE void kl_epilogue(void* kp, void* t, unsigned staging, int wg, int seq_q, void* o, void* m, void* l,
                             float scale) {
    attn_epilogue(&attn_params(kp)->epi, static_cast<const attn::Tile*>(t), staging, wg,
                  seq_q, static_cast<float*>(o), static_cast<const float*>(m), static_cast<const float*>(l), scale);
}

extern "C" __device__ const unsigned attn_smem_bytes = attn::kSmemBytes;
extern "C" __device__ const unsigned attn_stages = attn::kStages;
extern "C" __device__ const unsigned attn_head_dim = attn::kD;

extern "C" __global__ void __launch_bounds__(384, 1) attn_fwd(const __grid_constant__ AttnParams p) {
    using namespace attn;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    void* const kp = const_cast<AttnParams*>(&p);
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    Smem s;
    s.q = base;
    s.k = base + kQBytes;
    s.v = s.k + kStages * kKVBytes;
    s.k_stride = s.v_stride = kKVBytes;
    s.k_depth = s.v_depth = kStages;
    s.q_full = s.v + kStages * kKVBytes;
    s.q_empty = s.q_full + 8u;
    s.k_full = s.q_empty + 8u;
    s.k_empty = s.k_full + 8u * kStages;
    s.v_full = s.k_empty + 8u * kStages;
    s.v_empty = s.v_full + 8u * kStages;

    const Tile t = attn_tile(kp, p.core.seq_q, p.core.seq_k);

    if (threadIdx.x == 0) {
        mbar_init(s.q_full, 1);
        mbar_init(s.q_empty, 2);
#pragma unroll
        for (unsigned i = 0; i < kStages; ++i) {
            mbar_init(s.k_full + 8u * i, 1);
            mbar_init(s.v_full + 8u * i, 1);
            mbar_init(s.k_empty + 8u * i, 2);
            mbar_init(s.v_empty + 8u * i, 2);
        }
        fence_mbar_init();
    }
    __syncthreads();

    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        regs_dealloc<ATTN_LOAD_REGS>();
        if (threadIdx.x == 0) {
            Tile tl = t;
            attn_load_main(&p.load, kp, &tl, &s);
        }
    } else {
        regs_alloc<ATTN_CORE_REGS>();
        // The warpgroup index as lane 0 holds it: warp-uniform to ptxas, which then keeps what derives from it
        // (Q's wgmma descriptor, the turn barrier IDs) in uniform registers; from threadIdx.x / 128 directly it
        // rebuilt the descriptors per wgmma in vector registers (R2UR), 1-2 % slower (h200-2026-12-04b/attention).
        attn_core_main(p.core, kp, t, s, __shfl_sync(0xffffffffu, wg - 1, 0));
    }
}
