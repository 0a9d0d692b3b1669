// mask_none.cuh — component `attn.mask.none` (owner: the mask team): no mask (every key of the
// sequence is kept). Owns attn_mask_keep, attn_mask_kv_range, attn_mask_block_full
// (served as kl_mask, kl_mask_kv_range, kl_mask_block_full) (attn_abi.cuh); shares
// nothing else with the core.
#pragma once

#include "attn_abi.cuh"

#ifndef KL_ATTN_MASK_NONE_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct MaskParams {
    int unused0, unused1, unused2, unused3;
};
#endif

__device__ __forceinline__ bool attn_mask_keep(const MaskParams*, int, int) { return true; }

__device__ __forceinline__ void attn_mask_kv_range(const MaskParams*, int, int, int seq_k, int* kv_lo, int* kv_hi) {
    *kv_lo = 0;
    *kv_hi = seq_k;
}

__device__ __forceinline__ bool attn_mask_block_full(const MaskParams*, int, int, int, int) { return true; }
