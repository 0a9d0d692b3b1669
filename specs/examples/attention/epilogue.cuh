// epilogue.cuh — component `attn.epilogue` (owner: the epilogue team): runs in each consumer
// warpgroup after its last PV wgmma retired. Finishes the row sums (quad reduction), writes
// O / l as bf16 into the warpgroup's own 64 rows of the Q tile (128B-swizzled, the layout of the
// output tensor map's box), then one thread stores them with TMA (boxes {64, 64, 1} of a
// [B * H, seq_q, D] tensor map: rows >= seq_q are clipped by the copy engine), and writes the
// log-sum-exp lse[bh, q] = scale m + ln l (f32; -inf, and O = 0, for a row that kept no key).
// Owns: EpiParams, attn_epilogue (served as kl_epilogue, attn_abi.cuh), the named barriers
// ATTN_BAR_EPI0 / ATTN_BAR_EPI1 (one per warpgroup, 128 threads),
// the bulk store group of thread 0 of the warpgroup. Shares with the core: the accumulator
// layout (wgmma m64nDk16: thread (warp w, lane) holds rows 16 w + lane / 4 + {0, 8}, columns
// 8 c + 2 (lane % 4) + {0, 1}), and the Q tile's storage, which the core no longer reads once its
// last QK^T retired (each warpgroup's wgmma read only its own 64 rows of Q).
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"

struct EpiParams {
    CUtensorMap o;  // [B * H, seq_q, D] bf16, box {64, 64, 1}, 128B swizzle
    float* lse;     // [B * H, seq_q] f32
    uint64_t unused[15];
};

// staging: the Q slot's shared address (the warpgroup's 64 rows at + 8 KiB wg).
__device__ __forceinline__ void attn_epilogue(const EpiParams* p, const attn::Tile* t, unsigned staging, int wg,
                                              int seq_q, float* o, const float* m, const float* l, float scale) {
    const int tw = threadIdx.x & 127;
    const int warp = tw >> 5, lane = tw & 31;
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float sum = l[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        inv[h] = sum > 0.0f ? attn::rcp_approx(sum) : 0.0f;
        const int row = t->m0 + 64 * wg + 16 * warp + (lane >> 2) + 8 * h;
        if ((lane & 3) == 0 && row < seq_q) {
            p->lse[static_cast<size_t>(t->bh) * seq_q + row] =
                sum > 0.0f ? m[h] * scale + __logf(sum) : -__int_as_float(0x7f800000);
        }
    }
    // O / l as bf16 into the warpgroup's rows of the Q tile, 128B-swizzled: row r's 16-byte
    // chunk j lies at chunk j ^ (r % 8) of its 128-byte row (conflict-free: the 8 rows of a
    // store instruction land in 8 different chunks).
    const unsigned base = staging + 8192u * wg;
#pragma unroll
    for (int c = 0; c < attn::kD / 8; ++c) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned r = 16u * warp + (lane >> 2) + 8u * h;
            const unsigned addr = base + (c / 8) * attn::kSubBytes + r * 128u + (((c % 8) ^ (r % 8)) << 4) +
                                  4u * (lane & 3);
            const uint32_t v = attn::pack_bf16(o[4 * c + 2 * h] * inv[h], o[4 * c + 2 * h + 1] * inv[h]);
            asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
        }
    }
    attn::fence_proxy_async_smem();
    attn::named_sync(ATTN_BAR_EPI0 + wg * (ATTN_BAR_EPI1 - ATTN_BAR_EPI0), 128);
    if (tw == 0) {
#pragma unroll
        for (int sub = 0; sub < attn::kSubs; ++sub) {
            attn::tma_store_3d(&p->o, base + sub * attn::kSubBytes, 64 * sub, t->m0 + 64 * wg, t->bh);
        }
        attn::bulk_commit();
        attn::bulk_wait_read0();
    }
}
