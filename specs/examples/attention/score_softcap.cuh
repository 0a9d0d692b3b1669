// score_softcap.cuh — component `attn.score.softcap` (owner: the score team): logit soft-capping
// of the scaled score x = scale s: x -> cap tanh(x / cap) (tanh.approx, one MUFU op), stated on
// the raw dot product s the core passes: s -> (cap / scale) tanh(s scale / cap). Owns attn_score
// (served as kl_score).
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"

#ifndef KL_ATTN_SCORE_SOFTCAP_H  // linked: the struct of the contract's `params`, from kl_<stage>.h (included first)
struct ScoreParams {
    float scale_over_cap;  // softmax_scale / cap
    float cap_over_scale;  // cap / softmax_scale
    int unused0, unused1;
};
#endif

__device__ __forceinline__ float attn_score(const ScoreParams* p, float s, int, int, int, int) {
    return p->cap_over_scale * attn::tanh_approx(s * p->scale_over_cap);
}
