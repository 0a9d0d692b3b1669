// load_dense.cuh — component `attn.load.dense` (owner: the load team): the producer role. Loads
// the tile's Q once and streams K and V blocks of a dense [B * H, seq, D] bf16 layout through
// TMA (3-D tensor maps, boxes of 64 columns x 128 rows x 1, 128B swizzle) into the K and V
// rings. Visits the mask's kv-block range from the last block down (diagonal blocks first).
// Owns: LoadParams, attn_load_kv_count / attn_load_kv_block (served as kl_load_kv_count /
// kl_load_kv_block), attn_load_main (attn_abi.cuh), the write
// side of q_full and of the K / V rings. Shares with the core: the rings' layout (Smem, the
// depth kStages) and protocol (attention.cu's header), the kv-block sequence.
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"
#include "load_common.cuh"

struct LoadParams {
    CUtensorMap q;  // [B * H, seq_q, D], box {64, 128, 1}
    CUtensorMap k;  // [B * H, seq_k, D], box {64, 128, 1}
    CUtensorMap v;  // [B * H, seq_k, D], box {64, 128, 1}
    int seq_q, seq_k;
    uint64_t unused[15];
};

__device__ __forceinline__ int attn_load_kv_count(const LoadParams*, const attn::Tile* t) { return t->n_hi - t->n_lo; }

__device__ __forceinline__ int attn_load_kv_block(const LoadParams*, const attn::Tile* t, int i) {
    return t->n_hi - 1 - i;
}

// One K or V block (ATTN_D / 64 boxes) into the slot at `dst`, completing on `bar`.
__device__ __forceinline__ void load_kv_block(const LoadParams* p, const CUtensorMap* map, const attn::Tile* t,
                                              int n_block, unsigned dst, unsigned bar) {
#pragma unroll
    for (int sub = 0; sub < attn::kSubs; ++sub) {
        attn::tma_load_3d(dst + sub * attn::kSubBytes, map, 64 * sub, n_block * attn::kBlockN, t->bh, bar);
    }
}

// One thread (warp 0 lane 0 of the producer warpgroup); kp: the kernel's parameter block.
__device__ __forceinline__ void attn_load_main(const LoadParams* p, void* kp, attn::Tile* t, const attn::Smem* s) {
    attn::tma_prefetch_map(&p->q);
    attn::tma_prefetch_map(&p->k);
    attn::tma_prefetch_map(&p->v);
    attn_load_q(&p->q, t, s);
    attn_produce_kv(kp, &p->k, &p->v, t, s, [&](const CUtensorMap* map, int n_block, unsigned dst, unsigned bar) {
        load_kv_block(p, map, t, n_block, dst, bar);
    });
}
