// score_none.cuh — component `attn.score.none` (owner: the score team): the identity score
// modification. Owns kl_score (attn_abi.cuh gives its signature and call-site guarantees).
#pragma once

#include "attn_abi.cuh"

struct ScoreParams {
    float unused0, unused1;
    int unused2, unused3;
};

KL_CALLABLE float kl_score(const ScoreParams*, float s, int, int, int, int) { return s; }
