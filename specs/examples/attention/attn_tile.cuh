// attn_tile.cuh — the CTA's tile, which every role computes for itself (owned by no component, like
// attn_abi.cuh): grid (ceil(seq_q / 128), H, B), heads = gridDim.y; the CTA (x, h, b) takes query
// rows m0 = 128 (gridDim.x - 1 - x) .. + 127 of head (b, h) (the longest causal rows first) and
// the kv blocks of 128 keys that the mask's range query (kl_mask_kv_range) leaves.
#pragma once

#include "attn_abi.cuh"

namespace attn {

__device__ __forceinline__ Tile attn_tile(void* kp, int seq_q, int seq_k) {
    Tile t;
    t.b = blockIdx.z;
    t.h = blockIdx.y;
    t.bh = t.b * static_cast<int>(gridDim.y) + t.h;
    t.m_block = gridDim.x - 1 - blockIdx.x;
    t.m0 = t.m_block * kBlockM;
    const int q_hi = t.m0 + kBlockM < seq_q ? t.m0 + kBlockM : seq_q;
    int kv_lo = 0, kv_hi = 0;
    kl_mask_kv_range(kp, t.m0, q_hi, seq_k, &kv_lo, &kv_hi);
    kv_lo = kv_lo > 0 ? kv_lo : 0;
    kv_hi = kv_hi < seq_k ? kv_hi : seq_k;
    t.n_lo = kv_lo / kBlockN;
    t.n_hi = kv_hi > kv_lo ? (kv_hi + kBlockN - 1) / kBlockN : t.n_lo;
    return t;
}

}  // namespace attn
