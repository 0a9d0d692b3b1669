// attn_tile.cuh — the CTA's tile, which every role computes for itself (owned by no component, like
// attn_abi.cuh): grid (ceil(seq_q / 128), H, B), heads = gridDim.y. CTAs take tiles in launch
// order (the linear block index, x fastest), longest-processing-time first within sections of
// `sw` heads whose K and V fit in L2 together (sw a power of 2, FlashAttention's LPT order): the
// section's last query block of each of its heads, then the block before, and so on. Causal
// rows near the end of the sequence keep the most keys, so the long tiles start first and the
// short ones fill the tail of the last wave; a section's CTAs in flight share its heads' K and V
// in L2. A tile is 128 query rows m0 .. m0 + 127 of head (b, h) and the kv blocks of 128 keys
// that the mask's range query (kl_mask_kv_range) leaves.
#pragma once

#include "attn_abi.cuh"

namespace attn {

constexpr unsigned kL2KiB = 50u << 10;  // the K and V a section may hold in L2, in KiB

__device__ __forceinline__ Tile attn_tile(void* kp, int seq_q, int seq_k) {
    const unsigned m_blocks = gridDim.x, heads = gridDim.y, bh_all = gridDim.y * gridDim.z;
    const unsigned lin = blockIdx.x + m_blocks * (blockIdx.y + heads * blockIdx.z);
    // sw: the largest power of 2 of heads (at most all of them) whose K and V (seq_k x D bf16
    // each: seq_k D / 256 KiB) fit in kL2KiB together, at least 1 (no division: no subroutine)
    const unsigned head_kib = (static_cast<unsigned>(seq_k > 0 ? seq_k : 1) * kD + 255u) / 256u;
    unsigned sw = 1;
    while (2u * sw <= bh_all && 2u * sw * head_kib <= kL2KiB) {
        sw *= 2u;
    }
    const unsigned section = lin / (sw * m_blocks), in_section = lin % (sw * m_blocks);
    const unsigned first = section * sw;
    const unsigned width = bh_all - first < sw ? bh_all - first : sw;  // the last section may be narrower
    Tile t;
    t.bh = static_cast<int>(first + in_section % width);
    t.b = t.bh / static_cast<int>(heads);
    t.h = t.bh % static_cast<int>(heads);
    t.m_block = static_cast<int>(m_blocks - 1 - in_section / width);
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
