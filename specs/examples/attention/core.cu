// core.cu — package `attn.core` (contract core.kc): core.cuh behind the kernlink ABI, one entry
// per consumer warpgroup (roles core0 / core1, the same attn_core_main). Each computes its tile
// (the mask's range query) and reads the rings' slots and barriers, their depths and the turn
// barriers from the handles of kl_attn_core.h; the callables get the kernel's parameter block kp.
#define ATTN_LINKED
#include "kl_attn_core.h"
#define ATTN_BAR_SCHED0 kl_attn_core_sched0_bar_id()
#define ATTN_BAR_SCHED1 kl_attn_core_sched1_bar_id()
#define ATTN_TURN(wg, a, b) ((wg) == 0 ? (a) : (b))
#include "core.cuh"
#include "attn_tile.cuh"

namespace {
__device__ __forceinline__ void core_entry(const CoreParams* params, unsigned char* smem, int wg) {
    void* const kp = const_cast<char*>(reinterpret_cast<const char*>(params) - kl_attn_core_params_offset());
    const unsigned base = attn::smem_u32(smem);
    attn::Smem s;
    s.q = base + kl_attn_core_q_q_tile_smem();
    s.k = base + kl_attn_core_k_k_tiles_smem();
    s.v = base + kl_attn_core_v_v_tiles_smem();
    s.k_stride = kl_attn_core_k_k_tiles_stride();
    s.v_stride = kl_attn_core_v_v_tiles_stride();
    s.k_depth = kl_attn_core_k_depth();
    s.v_depth = kl_attn_core_v_depth();
    s.q_full = base + kl_attn_core_q_full_bar();
    s.q_empty = base + kl_attn_core_q_empty_bar();
    s.k_full = base + kl_attn_core_k_full_bar();
    s.k_empty = base + kl_attn_core_k_empty_bar();
    s.v_full = base + kl_attn_core_v_full_bar();
    s.v_empty = base + kl_attn_core_v_empty_bar();
    const attn::Tile t = attn::attn_tile(kp, params->seq_q, params->seq_k);
    attn::attn_core_main(*params, kp, t, s, wg);
}
}  // namespace

extern "C" __device__ void attn_core_wg0(const CoreParams* params, unsigned char* smem) { core_entry(params, smem, 0); }

extern "C" __device__ void attn_core_wg1(const CoreParams* params, unsigned char* smem) { core_entry(params, smem, 1); }
