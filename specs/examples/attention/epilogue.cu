// epilogue.cu — package `attn.epilogue` (contract epilogue.kc): epilogue.cuh's attn_epilogue as the
// export `epilogue`, its two named barriers from the handles of kl_attn_epilogue.h, its parameters
// from the kernel's block (kp) at this stage's offset.
#define ATTN_LINKED
#include "kl_attn_epilogue.h"
#define ATTN_BAR_EPI0 kl_attn_epilogue_epi0_bar_id()
#define ATTN_BAR_EPI1 kl_attn_epilogue_epi1_bar_id()
#include "epilogue.cuh"

static_assert(sizeof(EpiParams) == sizeof(EpiBlock) && alignof(EpiParams) == alignof(EpiBlock), "EpiBlock");
static_assert(__builtin_offsetof(EpiParams, lse) == __builtin_offsetof(EpiBlock, lse), "EpiBlock: lse");

extern "C" __device__ void attn_epilogue_store(void* kp, void* t, unsigned staging, int wg, int seq_q, void* o, void* m,
                                               void* l, float scale) {
    const EpiParams* p =
        reinterpret_cast<const EpiParams*>(static_cast<const char*>(kp) + kl_attn_epilogue_params_offset());
    attn_epilogue(p, static_cast<const attn::Tile*>(t), staging, wg, seq_q,
                  static_cast<float*>(o), static_cast<const float*>(m), static_cast<const float*>(l), scale);
}
