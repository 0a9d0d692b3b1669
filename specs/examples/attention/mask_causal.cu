// mask_causal.cu — package `attn.mask.causal` (contract mask_causal.kc): mask_causal.cuh's functions as the
// exports mask, mask_kv_range and mask_block_full; the parameters from the kernel's block (kp) at
// this stage's offset.
#define ATTN_LINKED
#include "kl_attn_mask_causal.h"
#include "mask_causal.cuh"

namespace {
__device__ __forceinline__ const MaskParams* mask_params(void* kp) {
    return reinterpret_cast<const MaskParams*>(static_cast<const char*>(kp) + kl_attn_mask_causal_params_offset());
}
}  // namespace

extern "C" __device__ bool attn_mask_causal_keep(void* kp, int q, int kv) { return attn_mask_keep(mask_params(kp), q, kv); }

extern "C" __device__ void attn_mask_causal_kv_range(void* kp, int q_lo, int q_hi, int seq_k, void* kv_lo, void* kv_hi) {
    attn_mask_kv_range(mask_params(kp), q_lo, q_hi, seq_k, static_cast<int*>(kv_lo), static_cast<int*>(kv_hi));
}

extern "C" __device__ bool attn_mask_causal_block_full(void* kp, int q_lo, int q_hi, int kv_lo, int kv_hi) {
    return attn_mask_block_full(mask_params(kp), q_lo, q_hi, kv_lo, kv_hi);
}
