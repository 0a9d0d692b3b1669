// score_alibi.cu — package `attn.score.alibi` (contract score_alibi.kc): score_alibi.cuh's attn_score as the
// export score; the parameters from the kernel's block (kp) at this stage's offset.
#define ATTN_LINKED
#include "kl_attn_score_alibi.h"
#include "score_alibi.cuh"

extern "C" __device__ float attn_score_alibi(void* kp, float s, int b, int h, int q, int kv) {
    const ScoreParams* p =
        reinterpret_cast<const ScoreParams*>(static_cast<const char*>(kp) + kl_attn_score_alibi_params_offset());
    return attn_score(p, s, b, h, q, kv);
}
