// score_softcap.cu — package `attn.score.softcap` (contract score_softcap.kc): score_softcap.cuh's attn_score as the
// export score; the parameters from the kernel's block (kp) at this stage's offset.
#define ATTN_LINKED
#include "kl_attn_score_softcap.h"
#include "score_softcap.cuh"

extern "C" __device__ float attn_score_softcap(void* kp, float s, int b, int h, int q, int kv) {
    const ScoreParams* p =
        reinterpret_cast<const ScoreParams*>(static_cast<const char*>(kp) + kl_attn_score_softcap_params_offset());
    return attn_score(p, s, b, h, q, kv);
}
