// mask_chunked.cuh — component `attn.mask.chunked` (owner: the mask team): chunked local
// attention, keep (q, kv) when kv <= q and both lie in the same chunk of `chunk` positions
// (a power of two: the chunk start of q is q & -chunk, no division). Owns attn_mask_keep,
// attn_mask_kv_range, attn_mask_block_full (served as kl_mask, ...; attn_abi.cuh).
#pragma once

#include "attn_abi.cuh"

#ifndef KL_ATTN_MASK_CHUNKED_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct MaskParams {
    int chunk, unused0, unused1, unused2;
};
#endif

// Branch-free (& rather than &&): the unrolled calls of one row share q & -chunk.
__device__ __forceinline__ bool attn_mask_keep(const MaskParams* p, int q, int kv) { return (kv <= q) & (kv >= (q & -p->chunk)); }

__device__ __forceinline__ void attn_mask_kv_range(const MaskParams* p, int q_lo, int q_hi, int seq_k, int* kv_lo, int* kv_hi) {
    *kv_lo = q_lo & -p->chunk;
    *kv_hi = q_hi < seq_k ? q_hi : seq_k;
}

__device__ __forceinline__ bool attn_mask_block_full(const MaskParams* p, int q_lo, int q_hi, int kv_lo, int kv_hi) {
    const int start = q_lo & -p->chunk;
    return kv_hi - 1 <= q_lo && ((q_hi - 1) & -p->chunk) == start && kv_lo >= start;
}
