// epilogue.cuh — component `swiglu.epilogue` (future owner: the epilogue package; it runs in the
// threads of the consumer warpgroup that owns the accumulator, once per output tile).
//
// Owns: the output's TMA descriptor (tmap_out: bf16 [M, N / 2], box {64, 64}, 128B swizzle),
// the SwiGLU arithmetic, and a staging claim in shared memory per consumer warpgroup
// (FRAGS x 64 rows x NJ * 4 bf16 = FRAGS * NJ / 16 boxes of 8 KiB, 1024-aligned).
// Imports: the accumulator, FRAGS fragments of one warpgroup in the wgmma m64nNk16 f32 layout
// (N = 8 NJ): thread t of the warpgroup (warp q = t / 32, lane l) holds for n8-block j the
// values d[4j + e] at (row 16q + l / 4 + 8 (e / 2), column 8j + 2 (l % 4) + e % 2).
//
// W interleaves gate and up rows by 16: accumulator columns 32c .. 32c + 15 are gate, the next
// 16 the matching up columns, so n8-block 4c + h (gate) and 4c + 2 + h (up) sit in the same
// thread at the same index: out column 16c + 8h + 2 (l % 4) + e % 2 of the tile's BN / 2 is
//     bf16(silu(g) * u),  silu(g) = g / (1 + exp(-g))  (f32; swiglu2 below).
//
// Protocol per tile (the warpgroup's 128 threads; `issuer` is its thread 0):
//   1. issuer: cp.async.bulk.wait_group.read 0 — the previous tile's TMA stores have finished
//      READING the staging claim (an asynchronous read: the claim may be rewritten after it);
//   2. bar.sync(bar_id, 128) — every thread knows the claim is free;
//   3. every thread: SwiGLU of its fragments, stmatrix.x4 into the claim (128B-swizzled), then
//      fence.proxy.async.shared::cta (its generic-proxy writes visible to the TMA engine);
//   4. bar.sync(bar_id, 128) — the claim is complete;
//   5. issuer: one TMA store per 64 x 64 box (rows past M are clipped by the descriptor), then
//      cp.async.bulk.commit_group. The stores run on while the warpgroup starts its next tile.
// At the end of the kernel the issuer waits cp.async.bulk.wait_group 0 (epilogue_drain).
#pragma once

#include "common.cuh"

namespace gs {

__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
    unsigned out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    return out;
}

// The SwiGLU arithmetic, chosen at build time by GS_EPI (build.sh builds each with a suffix _eN;
// the bench measures them; 1 is the default: on the H200, 2026-12-03, M = 2048, mode 0 took
// 0.736 ms, 1 0.714, 2 0.710 and the arithmetic-free 9 0.705 — the epilogue runs while the
// tensor pipe idles, so its MUFU work is on the critical path):
//   0  silu(g) = g / (1 + exp(-g)) with __expf and __fdividef: two MUFU operations per output
//      (ex2, rcp), f32 throughout (the example's epilogue.cu does the same);
//   1  the same with the reciprocal on the FMA pipe: exp(-g) by ex2.approx (one MUFU, -g log2 e
//      clamped at 64 so that 1 + e stays finite), 1 / (1 + e) from an integer-trick seed and two
//      Newton steps (relative error below 7e-6, against bf16's 2^-9 rounding of the output);
//   2  silu(g) = h + h tanh(h), h = g / 2, tanh.approx.f32: one MUFU per output (absolute
//      error about |h| 2^-11: relative error grows in the negative tail);
//   9  diagnostic, NOT SwiGLU: g * u (the epilogue's cost without its arithmetic; fails the check).
#ifndef GS_EPI
#define GS_EPI 1
#endif

__device__ __forceinline__ float rcp_newton(float d) {  // d in [1, 2^64 + 1]
    float r = __int_as_float(0x7EF311C3 - __float_as_int(d));
    r = r * fmaf(-d, r, 2.0f);
    r = r * fmaf(-d, r, 2.0f);
    return r;
}

__device__ __forceinline__ float ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float tanh_approx(float x) {
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// bf16x2 of (silu(g0) u0, silu(g1) u1), low half first.
__device__ __forceinline__ unsigned swiglu2(float g0, float g1, float u0, float u1) {
#if GS_EPI == 0
    return pack_bf16x2(__fdividef(g0, 1.0f + __expf(-g0)) * u0, __fdividef(g1, 1.0f + __expf(-g1)) * u1);
#elif GS_EPI == 1
    const float kLog2e = 1.4426950408889634f;
    const float e0 = ex2_approx(fminf(-g0 * kLog2e, 64.0f)), e1 = ex2_approx(fminf(-g1 * kLog2e, 64.0f));
    return pack_bf16x2(g0 * rcp_newton(1.0f + e0) * u0, g1 * rcp_newton(1.0f + e1) * u1);
#elif GS_EPI == 2
    const float h0 = 0.5f * g0, h1 = 0.5f * g1;
    return pack_bf16x2(fmaf(h0, tanh_approx(h0), h0) * u0, fmaf(h1, tanh_approx(h1), h1) * u1);
#elif GS_EPI == 9
    return pack_bf16x2(g0 * u0, g1 * u1);
#else
#error "GS_EPI: 0, 1, 2 or 9"
#endif
}

__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

// Staging bytes per consumer warpgroup.
template <int FRAGS, int NJ>
__host__ __device__ constexpr unsigned epilogue_staging_bytes() {
    return FRAGS * (NJ / 16) * 8192u;
}

// One tile's epilogue for one warpgroup, in three parts around the two barriers of the protocol
// (the linked consumers run the barriers themselves, between the epilogue package's calls):
// FRAGS fragments of 64 rows, fragment f at output rows row0 + 64 f; output columns col0 ..
// col0 + 4 NJ - 1. t = thread in the warpgroup (0..127).
//   step 1: the issuer waits until the previous tile's stores have read the staging claim;
__device__ __forceinline__ void swiglu_begin(unsigned t) {
    if (t == 0) {
        bulk_wait_read0();
    }
}

//   step 3: every thread writes the SwiGLU of its fragments into the claim and fences the async proxy;
template <int FRAGS, int NJ>
__device__ __forceinline__ void swiglu_write(const float (&acc)[FRAGS][NJ * 4], unsigned staging, unsigned t) {
    static_assert(NJ % 16 == 0, "whole 64-column boxes");
    constexpr int kBoxes = NJ / 16;  // 64-column boxes per fragment
    const unsigned q = t >> 5, l = t & 31u;
    const unsigned mat = l >> 3, rr = l & 7u;
    const unsigned row = 16u * q + 8u * (mat & 1u) + rr;  // this lane's stmatrix row address
#pragma unroll
    for (int f = 0; f < FRAGS; ++f) {
#pragma unroll
        for (int c = 0; c < NJ / 4; ++c) {
            const float* g0 = &acc[f][4 * (4 * c)];      // gate, n8-block 4c
            const float* g1 = &acc[f][4 * (4 * c + 1)];  // gate, n8-block 4c + 1
            const float* u0 = &acc[f][4 * (4 * c + 2)];  // up, n8-block 4c + 2
            const float* u1 = &acc[f][4 * (4 * c + 3)];  // up, n8-block 4c + 3
            const unsigned r0 = swiglu2(g0[0], g0[1], u0[0], u0[1]);
            const unsigned r1 = swiglu2(g0[2], g0[3], u0[2], u0[3]);
            const unsigned r2 = swiglu2(g1[0], g1[1], u1[0], u1[1]);
            const unsigned r3 = swiglu2(g1[2], g1[3], u1[2], u1[3]);
            const unsigned ob = 2u * c + (mat >> 1);  // output 8-column block this lane addresses
            const unsigned box = static_cast<unsigned>(f * kBoxes) + (ob >> 3);
            const unsigned addr = staging + box * 8192u + row * 128u + (((ob & 7u) ^ rr) << 4);
            stmatrix_x4(addr, r0, r1, r2, r3);
        }
    }
    fence_proxy_async_smem();
}

//   step 5: the issuer stores the claim with TMA, one store per 64 x 64 box, and commits the group.
template <int FRAGS, int NJ>
__device__ __forceinline__ void swiglu_store(unsigned staging, const CUtensorMap* tmap_out, int row0, int col0,
                                             unsigned t) {
    constexpr int kBoxes = NJ / 16;
    if (t == 0) {
#pragma unroll
        for (int f = 0; f < FRAGS; ++f) {
#pragma unroll
            for (int b = 0; b < kBoxes; ++b) {
                tma_store(tmap_out, staging + static_cast<unsigned>(f * kBoxes + b) * 8192u, col0 + 64 * b,
                          row0 + 64 * f);
            }
        }
        bulk_commit();
    }
}

// The whole protocol for one warpgroup (the one-unit driver), on named barrier `bar_id` of 128.
template <int FRAGS, int NJ>
__device__ __forceinline__ void swiglu_epilogue(const float (&acc)[FRAGS][NJ * 4], unsigned staging,
                                                const CUtensorMap* tmap_out, int row0, int col0, unsigned t,
                                                unsigned bar_id) {
    swiglu_begin(t);
    named_sync(bar_id, 128);
    swiglu_write<FRAGS, NJ>(acc, staging, t);
    named_sync(bar_id, 128);
    swiglu_store<FRAGS, NJ>(staging, tmap_out, row0, col0, t);
}

// End of the kernel: the issuer's stores have completed.
__device__ __forceinline__ void epilogue_drain(unsigned t) {
    if (t == 0) {
        bulk_wait0();
    }
}

}  // namespace gs
