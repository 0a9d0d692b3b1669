// attn_abi.cuh — what the components of the attention family share, owned by no component
// (kernlink's generated glue states it in the linked form): the tile a CTA works on, the shared
// memory layout the driver hands every role, and the fixed signatures of the callables each
// owner exports. In this one-unit build every callable is `extern "C" __device__` and forced
// inline (KL_CALLABLE); linked, the same signatures fold to straight-line code after LTO.
//
// Callables (each served by exactly one component; `kp` is the kernel's parameter block, in which
// each provider finds its own block: the one-unit driver (attention.cu) defines the kl_ names as
// forwarders, the linked build as trampolines to the exports, and both fold to straight-line code):
//   mask (mask_*.cuh), called by the core's two consumer warpgroups, every lane of every warp,
//   converged (full warps, warp-uniform arguments except q and kv):
//     bool kl_mask(kp, int q, int kv)                           keep score (q, kv)? kv < seq_k
//                                                               always; q may be >= seq_q
//                                                               (padding rows of the last tile)
//     void kl_mask_kv_range(kp, int q_lo, int q_hi, int seq_k, int* kv_lo, int* kv_hi)
//                                                               a superset [kv_lo, kv_hi) of the
//                                                               key positions any row of
//                                                               [q_lo, q_hi) keeps; called by
//                                                               every thread when it computes its
//                                                               tile (attn_tile)
//     bool kl_mask_block_full(kp, int q_lo, int q_hi, int kv_lo, int kv_hi)
//                                                               every (q, kv) of the block kept?
//                                                               (warp-uniform arguments)
//   score (score_*.cuh), called by the consumers, converged full warps, once per score element,
//   before the mask, on the RAW dot product q.k (the core applies softmax_scale after it):
//     float kl_score(kp, float s, int b, int h, int q, int kv)
//   load (load_*.cuh): the kv-block sequence, read by the producer thread and by every consumer
//   thread (the same answers for the same arguments), and the producer entry:
//     int  kl_load_kv_count(kp, Tile*)
//     int  kl_load_kv_block(kp, Tile*, int i)                   0 <= i < count
//   epilogue (epilogue.cuh), called once per consumer warpgroup after its last PV wgmma retired,
//   all 128 threads converged:
//     void kl_epilogue(kp, Tile*, unsigned staging /* the Q slot */, int wg, int seq_q,
//                      float* o /* ATTN_D / 2 accumulators, wgmma m64nDk16 layout */,
//                      float* m /* 2 row maxima, raw */, float* l /* 2 partial sums */, float scale)
#pragma once

#include <stdint.h>

#ifndef ATTN_D
#define ATTN_D 128
#endif
#ifndef ATTN_STAGES
#define ATTN_STAGES 2
#endif

#define KL_CALLABLE extern "C" __device__ __forceinline__

namespace attn {

constexpr int kBlockM = 128;                     // query rows per CTA (64 per consumer warpgroup)
constexpr int kBlockN = 128;                     // key rows per kv block
constexpr int kD = ATTN_D;                       // head dim: 64 or 128
constexpr int kSubs = kD / 64;                   // 128-byte column sub-tiles of a row
constexpr unsigned kSubBytes = 128u * 128u;      // one sub-tile: 128 rows x 128 B
constexpr unsigned kQBytes = kBlockM * kD * 2u;  // Q tile (also the epilogue's staging)
constexpr unsigned kKVBytes = kBlockN * kD * 2u; // one K or V slot
constexpr unsigned kStages = ATTN_STAGES;        // ring depth (K and V rings alike)
static_assert(kD == 64 || kD == 128, "head dim 64 or 128");

// Named barrier IDs (0 is __syncthreads); a linked component defines the macros as its handles.
#ifndef ATTN_BAR_SCHED0
#define ATTN_BAR_SCHED0 1u  // consumer warpgroup 0's turn to issue wgmma (256 threads)
#define ATTN_BAR_SCHED1 2u  // consumer warpgroup 1's turn (256 threads)
#endif
// Warpgroup wg's choice of two barrier IDs. The one-unit build's wg is a run-time value: there
// arithmetic (a select costs the window composition 68 B of spills); a linked entry's wg is a
// constant, and core.cu selects, so that each entry's code names one handle.
#ifndef ATTN_TURN
#define ATTN_TURN(wg, a, b) ((a) + (wg) * ((b) - (a)))
#endif
#ifndef ATTN_BAR_EPI0
#define ATTN_BAR_EPI0 3u  // consumer warpgroup 0's staging complete (128 threads)
#define ATTN_BAR_EPI1 4u  // consumer warpgroup 1's staging complete (128 threads)
#endif

// The tile of one CTA: (batch b, head h) and 128 query rows from m0; the kv blocks
// [n_lo, n_hi) that the mask's range query leaves (empty when n_lo == n_hi).
struct Tile {
    int b, h, bh;
    int m_block, m0;
    int n_lo, n_hi;
};

// Shared memory (addresses in the shared window): Q tile, K ring, V ring (slot s at + s
// k_stride / v_stride), their depths, and the barriers: q_full, q_empty, k_full[s], k_empty[s],
// v_full[s], v_empty[s] (8 B each).
struct Smem {
    unsigned q, k, v;
    unsigned k_stride, v_stride;
    unsigned k_depth, v_depth;
    unsigned q_full, q_empty, k_full, k_empty, v_full, v_empty;
};

// A position in the K or V ring of `depth` slots: the slot and the parity of the pass through
// the ring (the producer and each consumer warpgroup walk the same sequence from (0, 0)).
struct RingPos {
    unsigned depth;
    unsigned slot = 0;
    unsigned phase = 0;
    __device__ __forceinline__ explicit RingPos(unsigned d) : depth(d) {}
    __device__ __forceinline__ void advance() {
        if (++slot == depth) {
            slot = 0;
            phase ^= 1u;
        }
    }
};

constexpr unsigned kBarrierBytes = 8u * (2u + 4u * kStages);
// dynamic shared memory of the kernel: 1 KiB alignment slack + Q + rings + barriers
constexpr unsigned kSmemBytes = 1024u + kQBytes + 2u * kStages * kKVBytes + kBarrierBytes;
static_assert(kSmemBytes <= 232448u, "ring too deep for 227 KiB of shared memory");

}  // namespace attn

// The callables (attn_abi.cuh's header): declared here for the one-unit build; a linked component
// gets them from its generated kl_<stage>.h (ATTN_LINKED), with the same types.
#ifndef ATTN_LINKED
KL_CALLABLE bool kl_mask(void* kp, int q, int kv);
KL_CALLABLE void kl_mask_kv_range(void* kp, int q_lo, int q_hi, int seq_k, void* kv_lo, void* kv_hi);
KL_CALLABLE bool kl_mask_block_full(void* kp, int q_lo, int q_hi, int kv_lo, int kv_hi);
KL_CALLABLE float kl_score(void* kp, float s, int b, int h, int q, int kv);
KL_CALLABLE int kl_load_kv_count(void* kp, void* tile);
KL_CALLABLE int kl_load_kv_block(void* kp, void* tile, int i);
KL_CALLABLE void kl_epilogue(void* kp, void* tile, unsigned staging, int wg, int seq_q, void* o, void* m, void* l, float scale);
#endif
