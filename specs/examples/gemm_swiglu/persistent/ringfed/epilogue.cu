// swiglu.epilogue (persistent, ring-fed) — the SwiGLU epilogue of the `gemm_swiglu.ringfed`
// example (contract: epilogue.kc beside this file). The code of ../../epilogue.cu, made persistent:
// CTA b walks the same tiles as the mainloop (tiles b, b + C, … of `tile_of` for CTA b of C, over
// tiles_m = ceil(rows / 128) x tiles_n = ldo / (tile_n / 2) tiles) and imports the tile of
// generation g = 0, 1, … through the ring-fed import: the linker's hand-off waits until slot
// g % 2 of its scratch (ring `accs`) is full before chunk 0, and releases the slot (one arrival
// per warpgroup) after chunk 3, so the mainloop fills the other slot meanwhile.
//
// Per tile, as in the one-tile epilogue: thread t (row t of the tile) computes, for chunk c and
// q < 16, out[m0 + t, n0 + 16c + q] = bf16(silu(g) * u), g = acc[t, 32c + q],
// u = acc[t, 32c + 16 + q], silu(g) = __fdividef(g, 1 + __expf(-g)), with m0 = 128 tm and
// n0 = (tile_n / 2) tn, as two 16-byte stores (rows at or past `rows` are neither computed nor
// written; every thread still takes each chunk, the import being collective).

extern "C" {
__device__ unsigned kl_swiglu_epilogue_epilogue_warp0();  // role epilogue: first warp
__device__ unsigned kl_swiglu_epilogue_fact_tile_n();     // fact tile_n: accumulator columns per tile (folded)
__device__ unsigned kl_swiglu_epilogue_fact_raster_m();   // fact raster_m: the tile order (folded)
// import acc, generation g of the ring-fed accumulator (slot g % 2 of `accs`)
__device__ void kl_swiglu_epilogue_acc_import(const unsigned int* held, unsigned int* dst, int chunk,
                                              unsigned generation);
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

// Tile `pid` of the order every owner shares (the mainloop's `tile_of`; the fact `raster_m`).
__device__ __forceinline__ void tile_of(unsigned raster_m, unsigned pid, unsigned tiles_m, unsigned tiles_n,
                                        unsigned& tm, unsigned& tn) {
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
    const unsigned out_n = kl_swiglu_epilogue_fact_tile_n() / 2u;  // gate and up -> one output each
    const unsigned tiles_m = (params->rows + kTileM - 1u) / kTileM, tiles_n = params->ldo / out_n;
    unsigned generation = 0;  // this CTA's tiles: 0, 1, … (the mainloop's generations)
#pragma unroll 1
    const unsigned ctas = gridDim.x * gridDim.y;
    for (unsigned pid = blockIdx.x + gridDim.x * blockIdx.y; pid < tiles_m * tiles_n; pid += ctas, ++generation) {
        unsigned tm, tn;
        tile_of(kl_swiglu_epilogue_fact_raster_m(), pid, tiles_m, tiles_n, tm, tn);
        const unsigned row = tm * kTileM + t;
        const bool live = row < params->rows;
        unsigned short* out = params->out + static_cast<unsigned long long>(row) * params->ldo + tn * out_n;
#pragma unroll 1
        for (int c = 0; c < kChunks; ++c) {
            unsigned int held[32];
            kl_swiglu_epilogue_acc_import(nullptr, held, c, generation);
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
}
