// mask_none.cuh — component `attn.mask.none` (owner: the mask team): no mask (every key of the
// sequence is kept). Owns kl_mask, kl_mask_kv_range, kl_mask_block_full (attn_abi.cuh gives
// their signatures and call-site guarantees); shares nothing else with the core.
#pragma once

#include "attn_abi.cuh"

struct MaskParams {
    int unused0, unused1, unused2, unused3;
};

KL_CALLABLE bool kl_mask(const MaskParams*, int, int) { return true; }

KL_CALLABLE void kl_mask_kv_range(const MaskParams*, int, int, int seq_k, int* kv_lo, int* kv_hi) {
    *kv_lo = 0;
    *kv_hi = seq_k;
}

KL_CALLABLE bool kl_mask_block_full(const MaskParams*, int, int, int, int) { return true; }
