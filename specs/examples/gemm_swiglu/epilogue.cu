// swiglu.epilogue — the SwiGLU epilogue of the `gemm_swiglu` example (contract: epilogue.kc).
//
// Owned apart from the mainloop: it knows the accumulator only through its import
// `acc` (a 128 x 128 f32 tile, one row per thread, 32 columns per chunk), never the
// producer's register layout; the linker's route delivers each chunk.
//
// Gate and up are interleaved in N by 16 columns: columns 32c .. 32c + 15 of the tile
// are gate, 32c + 16 .. 32c + 31 the matching up columns. Thread t (row t of the tile)
// computes, for chunk c and q < 16,
//
//   out[m0 + t, n0 + 16c + q] = bf16(silu(g) * u),  g = acc[t, 32c + q], u = acc[t, 32c + 16 + q],
//   silu(g) = g / (1 + exp(-g))   (f32: __expf and the approximate division __fdividef, two
//   MUFU operations; the IEEE division kept a slow-path CALL and cost 2-5 % of the whole
//   kernel at M >= 512, since this warpgroup's work follows the mainloop's)
//
// with (tm, tn) = tile_of(raster_m), m0 = 128 tm, n0 = (tile_n / 2) tn, and writes its 16
// outputs of the chunk
// as two 16-byte stores (rows at or past `rows` are neither computed nor written; every
// thread still takes each chunk, the import being collective). `out` is row-major with
// `ldo` elements per row; ldo and n0 are multiples of 8, so each store is 16-byte aligned.

extern "C" {
__device__ unsigned kl_swiglu_epilogue_epilogue_warp0();  // role epilogue: first warp
__device__ unsigned kl_swiglu_epilogue_fact_tile_n();     // fact tile_n: accumulator columns per tile (folded)
__device__ unsigned kl_swiglu_epilogue_fact_raster_m();   // fact raster_m: the tile order (folded)
__device__ void kl_swiglu_epilogue_acc_import(const unsigned int* held, unsigned int* dst, int chunk);
}

// params EpilogueParams size 16 align 8
struct EpilogueParams {
    unsigned short* out;  // @ 0: bf16 [rows, ldo]
    unsigned ldo;         // @ 8: elements per output row
    unsigned rows;        // @ 12: M
};

namespace {

constexpr unsigned kTileM = 128;
constexpr int kChunks = 4;        // `chunk n 32` of `tile n 128`

__device__ __forceinline__ float silu(float g) { return __fdividef(g, 1.0f + __expf(-g)); }

// Round-to-nearest-even f32 -> bf16, two at a time (low half = first).
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
    unsigned out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    return out;
}

__device__ __forceinline__ void store_16(void* dst, unsigned a, unsigned b, unsigned c, unsigned d) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
}

// The tile (m, n) a CTA computes, shared by every owner of the composition: CTAs start in
// the order pid = blockIdx.x + gridDim.x * blockIdx.y (the grid is m-tiles x n-tiles); groups
// of `raster_m` m-tiles sweep every n-tile, so the CTAs in flight share a few A and B tiles
// in L2 (the fact `raster_m`, folded to an immediate at link time).
__device__ __forceinline__ void tile_of(unsigned raster_m, unsigned& tm, unsigned& tn) {
    const unsigned tiles_m = gridDim.x, tiles_n = gridDim.y;
    const unsigned pid = blockIdx.x + tiles_m * blockIdx.y;
    const unsigned group = pid / (raster_m * tiles_n);
    const unsigned first = group * raster_m;
    const unsigned size = tiles_m - first < raster_m ? tiles_m - first : raster_m;
    const unsigned in_group = pid - group * raster_m * tiles_n;
    tm = first + in_group % size;
    tn = in_group / size;
}

}  // namespace

extern "C" __device__ void swiglu_epilogue_main(const EpilogueParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32u * kl_swiglu_epilogue_epilogue_warp0();
    unsigned tm, tn;
    tile_of(kl_swiglu_epilogue_fact_raster_m(), tm, tn);
    const unsigned row = tm * kTileM + t;
    const bool live = row < params->rows;
    const unsigned out_n = kl_swiglu_epilogue_fact_tile_n() / 2u;  // gate and up -> one output each
    unsigned short* out = params->out + static_cast<unsigned long long>(row) * params->ldo + tn * out_n;
#pragma unroll 1
    for (int c = 0; c < kChunks; ++c) {
        unsigned int held[32];
        kl_swiglu_epilogue_acc_import(nullptr, held, c);
        if (!live) {
            continue;  // a row past M (whole warps at small M): nothing to compute
        }
        unsigned packed[8];
#pragma unroll
        for (int q = 0; q < 16; q += 2) {
            const float g0 = __uint_as_float(held[q]), g1 = __uint_as_float(held[q + 1]);
            const float u0 = __uint_as_float(held[16 + q]), u1 = __uint_as_float(held[16 + q + 1]);
            packed[q / 2] = pack_bf16x2(silu(g0) * u0, silu(g1) * u1);
        }
        store_16(out + 16 * c, packed[0], packed[1], packed[2], packed[3]);
        store_16(out + 16 * c + 8, packed[4], packed[5], packed[6], packed[7]);
    }
}
