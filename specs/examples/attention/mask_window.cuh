// mask_window.cuh — component `attn.mask.window` (owner: the mask team): sliding window, keep
// (q, kv) when q - left <= kv <= q + right, 0 <= left, right < 2^31 (left = right = huge: no mask;
// right = 0: causal window). Owns attn_mask_keep, attn_mask_kv_range, attn_mask_block_full
// (served as kl_mask, kl_mask_kv_range, kl_mask_block_full) (attn_abi.cuh).
#pragma once

#include "attn_abi.cuh"

#ifndef KL_ATTN_MASK_WINDOW_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct MaskParams {
    int left, right, unused0, unused1;
};
#endif

// q - left <= kv <= q + right as one unsigned compare: 0 <= kv - q + left <= left + right, exact in
// 32-bit unsigned arithmetic for 0 <= q, kv, left, right < 2^31 (with the two compares it replaces,
// the window composition's consumer loop needed 237 registers; with one, 183).
__device__ __forceinline__ bool attn_mask_keep(const MaskParams* p, int q, int kv) {
    const unsigned left = static_cast<unsigned>(p->left), right = static_cast<unsigned>(p->right);
    return static_cast<unsigned>(kv) - static_cast<unsigned>(q) + left <= left + right;
}

__device__ __forceinline__ void attn_mask_kv_range(const MaskParams* p, int q_lo, int q_hi, int seq_k, int* kv_lo, int* kv_hi) {
    const int lo = q_lo - p->left;
    const int hi = q_hi + p->right;  // the last row q_hi - 1 keeps kv <= q_hi - 1 + right
    *kv_lo = lo > 0 ? lo : 0;
    *kv_hi = hi < seq_k ? hi : seq_k;
}

__device__ __forceinline__ bool attn_mask_block_full(const MaskParams* p, int q_lo, int q_hi, int kv_lo, int kv_hi) {
    return kv_lo >= q_hi - 1 - p->left && kv_hi - 1 <= q_lo + p->right;
}
