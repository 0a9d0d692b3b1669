// score_alibi.cuh — component `attn.score.alibi` (owner: the score team): ALiBi, the scaled score
// x plus slope_h (kv - q), slope_h = 2^(-8 (h + 1) / heads); stated on the raw dot product s the
// core passes: s -> s + slope_h (kv - q) / scale. Owns attn_score (served as kl_score).
#pragma once

#include "attn_abi.cuh"

#ifndef KL_ATTN_SCORE_ALIBI_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct ScoreParams {
    float inv_scale;     // 1 / softmax_scale
    float neg8_over_h;   // -8 / heads
    int unused0, unused1;
};
#endif

__device__ __forceinline__ float attn_score(const ScoreParams* p, float s, int, int h, int q, int kv) {
    const float slope = exp2f(p->neg8_over_h * static_cast<float>(h + 1)) * p->inv_scale;
    return fmaf(slope, static_cast<float>(kv - q), s);
}
