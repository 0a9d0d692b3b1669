// load_blocksparse.cuh — component `attn.load.blocksparse` (owner: the load team): the producer
// role for block-sparse attention (Phi-3-small style). Visits, for each (b, h, m-block), only
// the kv blocks of 128 keys that a per-row-block list names, in the list's order; Q, K and V are
// dense [B * H, seq, D] bf16 (3-D tensor maps, boxes {64, 128, 1}, 128B swizzle). The core still
// applies the mask (listed blocks outside the mask's range contribute nothing).
// Owns: LoadParams, attn_load_kv_count / attn_load_kv_block (served as kl_load_kv_count /
// kl_load_kv_block), attn_load_main (attn_abi.cuh), the write
// side of q_full and the K / V rings. Shares with the core: the rings and the kv-block sequence.
//   block_cnt[bh * m_blocks + m_block]                              blocks listed for the row block
//   block_idx[(bh * m_blocks + m_block) * max_blocks + i], i < cnt  their kv-block indices
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"
#include "load_common.cuh"

struct LoadParams {
    CUtensorMap q;
    CUtensorMap k;
    CUtensorMap v;
    const int* block_idx;
    const int* block_cnt;
    int max_blocks;
    int m_blocks;
    int seq_q, seq_k;
    uint64_t unused[12];
};

__device__ __forceinline__ int attn_load_kv_count(const LoadParams* p, const attn::Tile* t) {
    return __ldg(p->block_cnt + t->bh * p->m_blocks + t->m_block);
}

__device__ __forceinline__ int attn_load_kv_block(const LoadParams* p, const attn::Tile* t, int i) {
    return __ldg(p->block_idx + (t->bh * p->m_blocks + t->m_block) * p->max_blocks + i);
}

// One thread (warp 0 lane 0 of the producer warpgroup); kp: the kernel's parameter block.
__device__ __forceinline__ void attn_load_main(const LoadParams* p, void* kp, attn::Tile* t, const attn::Smem* s) {
    attn::tma_prefetch_map(&p->q);
    attn::tma_prefetch_map(&p->k);
    attn::tma_prefetch_map(&p->v);
    attn_load_q(&p->q, t, s);
    attn_produce_kv(kp, &p->k, &p->v, t, s, [&](const CUtensorMap* map, int n_block, unsigned dst, unsigned bar) {
#pragma unroll
        for (int sub = 0; sub < attn::kSubs; ++sub) {
            attn::tma_load_3d(dst + sub * attn::kSubBytes, map, 64 * sub, n_block * attn::kBlockN, t->bh, bar);
        }
    });
}
