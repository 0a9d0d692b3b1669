// load_paged.cuh — component `attn.load.paged` (owner: the load team): the producer role for a
// paged KV cache (vLLM style): K and V caches [num_pages, page_size, H, D] bf16, a page table
// [B, table_stride] of physical page numbers, page_size 16, 32, 64 or 128 (a divisor of the
// 128-key block, a multiple of 8 so that each page is whole 1024-byte swizzle atoms). A kv block
// of 128 keys is 128 / page_size pages, each one TMA box {64, 1, page_size, 1} per 64-column
// sub-tile (4-D tensor maps, 128B swizzle) landing at + page * page_size * 128 B of the slot.
// Pages past the sequence's last page (a partial last block) reload the last page: the copy
// always completes kKVBytes, and the core masks keys >= seq_k. Q is dense [B * H, seq_q, D].
// Visits the mask's kv-block range from the last block down. Owns: LoadParams, attn_load_kv_count
// / attn_load_kv_block (served as kl_load_kv_count / kl_load_kv_block), attn_load_main, the write
// side of the Q ring and the K / V rings. Shares with the core: the rings and the kv-block sequence.
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"
#include "load_common.cuh"

struct LoadParams {
    CUtensorMap q;  // [B * H, seq_q, D], box {64, 128, 1}
    CUtensorMap k;  // [num_pages, page_size, H, D], box {64, 1, page_size, 1}
    CUtensorMap v;
    const int* page_table;
    int table_stride;
    int page_size;
    int seq_k;
    int seq_q;
    uint64_t unused[13];
};

__device__ __forceinline__ int attn_load_kv_count(const LoadParams*, const attn::Tile* t) { return t->n_hi - t->n_lo; }

__device__ __forceinline__ int attn_load_kv_block(const LoadParams*, const attn::Tile* t, int i) {
    return t->n_hi - 1 - i;
}

// One thread (warp 0 lane 0 of the producer warpgroup); kp: the kernel's parameter block.
__device__ __forceinline__ void attn_load_main(const LoadParams* p, void* kp, attn::Tile* t, const attn::Smem* s) {
    attn::tma_prefetch_map(&p->q);
    attn::tma_prefetch_map(&p->k);
    attn::tma_prefetch_map(&p->v);
    attn_load_q(&p->q, t, s);
    const int page_size = p->page_size;
    const int per_block = attn::kBlockN / page_size;
    const int last_page = (p->seq_k - 1) / page_size;
    const int* table = p->page_table + t->b * p->table_stride;
    attn_produce_kv(kp, &p->k, &p->v, t, s, [&](const CUtensorMap* map, int n_block, unsigned dst, unsigned bar) {
        const int first = n_block * per_block;
        int phys[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {  // the block's table entries first: their loads overlap
            const int page = first + j < last_page ? first + j : last_page;
            phys[j] = j < per_block ? __ldg(table + page) : 0;
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (j < per_block) {
#pragma unroll
                for (int sub = 0; sub < attn::kSubs; ++sub) {
                    attn::tma_load_4d(dst + sub * attn::kSubBytes + j * page_size * 128, map, 64 * sub, t->h, 0,
                                      phys[j], bar);
                }
            }
        }
    });
}
