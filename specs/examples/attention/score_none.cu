// score_none.cu — package `attn.score.none` (contract score_none.kc): score_none.cuh's attn_score as the
// export score; the parameters from the kernel's block (kp) at this stage's offset.
#define ATTN_LINKED
#include "kl_attn_score_none.h"
#include "score_none.cuh"

extern "C" __device__ float attn_score_none(void* kp, float s, int b, int h, int q, int kv) {
    const ScoreParams* p =
        reinterpret_cast<const ScoreParams*>(static_cast<const char*>(kp) + kl_attn_score_none_params_offset());
    return attn_score(p, s, b, h, q, kv);
}
