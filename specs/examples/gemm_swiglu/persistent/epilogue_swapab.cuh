// The code of the swap-AB epilogue packages (swiglu.epilogue_swapab: epilogue_swapab.cu, x_rows 32;
// swiglu.epilogue_swapab64: epilogue_swapab64.cu, x_rows 64): SwiGLU of a swap-AB tile and its store
// (arithmetic: epilogue.cuh's swiglu2, GS_EPI 1 unless the flags say otherwise). The consumer
// warpgroup calls it once per unit with its two f32 fragments of wgmma m64nNk16, N = x_rows (gate,
// up). Thread t (warp q, lane l) holds d[4j + 2h + e] of each at output column col0 + r,
// r = 16q + l / 4 + 8h, and row (of X) 8j + 2 (l % 4) + e. Lanes l and l ^ 4 hold the adjacent
// columns r and r ^ 1: the even one (l / 4 even) takes its partner's e = 0 value and stores columns
// (r, r + 1) of row 8j + 2 (l % 4); the odd one takes its partner's e = 1 value and stores (r - 1, r)
// of the next row. One 4-byte store per pair, rows at or past m skipped.
#pragma once
#include "epilogue.cuh"

namespace gs {
template <unsigned N>
__device__ __forceinline__ void store_swapab(const float (&acc)[2][N / 2], unsigned* out, unsigned ld, unsigned m,
                                             unsigned col0) {
    const unsigned t = threadIdx.x & 127u;
    const unsigned q = t >> 5, l = t & 31u;
    const bool odd = ((l >> 2) & 1u) != 0u;
#pragma unroll
    for (unsigned j = 0; j < N / 8u; ++j) {
#pragma unroll
        for (unsigned h = 0; h < 2u; ++h) {
            const unsigned i = 4u * j + 2u * h;
            const float g0 = acc[0][i], g1 = acc[0][i + 1], u0 = acc[1][i], u1 = acc[1][i + 1];
            const float gp = __shfl_xor_sync(0xFFFFFFFFu, odd ? g0 : g1, 4);
            const float up = __shfl_xor_sync(0xFFFFFFFFu, odd ? u0 : u1, 4);
            const unsigned packed = odd ? gs::swiglu2(gp, g1, up, u1) : gs::swiglu2(g0, gp, u0, up);
            const unsigned col = col0 + 16u * q + (l >> 2) + 8u * h - (odd ? 1u : 0u);  // even
            const unsigned row = 8u * j + 2u * (l & 3u) + (odd ? 1u : 0u);
            if (row < m) {
                out[(row * ld + col) >> 1] = packed;
            }
        }
    }
}
}  // namespace gs
