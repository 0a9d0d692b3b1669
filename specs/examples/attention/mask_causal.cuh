// mask_causal.cuh — component `attn.mask.causal` (owner: the mask team): keep (q, kv) when
// kv <= q (top-left aligned, PyTorch SDPA's is_causal). Owns attn_mask_keep, attn_mask_kv_range,
// attn_mask_block_full (served as kl_mask, kl_mask_kv_range, kl_mask_block_full; attn_abi.cuh).
#pragma once

#include "attn_abi.cuh"

#ifndef KL_ATTN_MASK_CAUSAL_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct MaskParams {
    int unused0, unused1, unused2, unused3;
};
#endif

__device__ __forceinline__ bool attn_mask_keep(const MaskParams*, int q, int kv) { return kv <= q; }

__device__ __forceinline__ void attn_mask_kv_range(const MaskParams*, int, int q_hi, int seq_k, int* kv_lo, int* kv_hi) {
    *kv_lo = 0;
    *kv_hi = q_hi < seq_k ? q_hi : seq_k;  // the last row q_hi - 1 keeps kv <= q_hi - 1
}

__device__ __forceinline__ bool attn_mask_block_full(const MaskParams*, int q_lo, int, int, int kv_hi) { return kv_hi - 1 <= q_lo; }
