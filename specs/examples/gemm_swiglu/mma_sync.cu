// gemm.mma_sync — a GEMM producer for the `gemm_swiglu` example on the mma.sync path
// (contract: mma_sync.kc). It exports the same tensor `accumulator` (128 x 128 f32) as
// gemm.mainloop, so the same SwiGLU epilogue links against either.
//
// - role `producer`: gemm.mainloop's TMA producer (one elected thread, two 128 x 64 bf16
//   boxes per K tile, 128B-swizzled, into the ring `kv`);
// - role `mma` (8 warps, 4 x 2): warp w computes rows 32 (w / 2) .. + 31 and columns
//   64 (w % 2) .. + 63 of the tile as 2 x 8 `mma.sync.m16n8k16` atoms (f32 accumulate),
//   loading A and B fragments from the swizzled slots with `ldmatrix.x4` (16-byte chunk c
//   of row r sits at chunk c ^ (r % 8)); each warp releases a slot once it has read it
//   (`empty arrive per_warp(mma)`). Its 64 accumulators are exported in the mma layout
//   (`placement library mma_m16n8k16_f32(warps_m: 4, warps_n: 2, atoms_m: 2, atoms_n: 8)`).
//
// The tile (m, n) of a CTA is gemm.mainloop's `tile_of` (the fact `raster_m`); tensor maps as for gemm.mainloop.

// ---- handles (defined by the linker; LTO folds each to an immediate)
extern "C" {
__device__ unsigned kl_gemm_mma_sync_producer_warp0();   // role producer: first warp
__device__ unsigned kl_gemm_mma_sync_mma_warp0();        // role mma: first warp
__device__ unsigned kl_gemm_mma_sync_fact_raster_m();  // owns fact raster_m (folded)
__device__ unsigned kl_gemm_mma_sync_kv_depth();         // ring kv: depth chosen at link time
__device__ unsigned kl_gemm_mma_sync_kv_full_bar();      // ring kv: full barrier of slot 0
__device__ unsigned kl_gemm_mma_sync_kv_empty_bar();     // ring kv: empty barrier of slot 0
__device__ unsigned kl_gemm_mma_sync_kv_full_count();    // `full init 1`
__device__ unsigned kl_gemm_mma_sync_kv_empty_count();   // `empty init per_warpgroup(mma)`
__device__ unsigned kl_gemm_mma_sync_operands_smem();    // claim operands: slot 0 (1024-aligned)
__device__ unsigned kl_gemm_mma_sync_operands_stride();  // claim operands: bytes between slots
__device__ void kl_gemm_mma_sync_accumulator_export(const unsigned int* held);  // export accumulator
}

// params MmaSyncParams size 24 align 8
struct MmaSyncParams {
    const void* tmap_a;  // @ 0: CUtensorMap of A [M, K], box {64, 128}, 128B swizzle (64-byte aligned)
    const void* tmap_b;  // @ 8: CUtensorMap of B [N, K], box {64, 128}, 128B swizzle
    unsigned k_tiles;    // @ 16: K / 64
    unsigned tile_n;     // @ 20 = fact tile_n (128)
};

namespace {

// owns fact tile_n: u32 = 128; owns fact tile_k: u32 = 64
constexpr unsigned kTileM = 128;
constexpr unsigned kTileN = 128;
constexpr unsigned kTileK = 64;
constexpr unsigned kBytesA = kTileM * kTileK * 2;  // 16 KiB: `full copy 16KiB`
constexpr unsigned kBytesB = kTileN * kTileK * 2;  // 16 KiB: `full copy 16KiB`
constexpr unsigned kBarrierBytes = 8;              // slot i's barrier: slot 0's + 8 * i

__device__ __forceinline__ unsigned shared_address(const void* generic) {
    return static_cast<unsigned>(__cvta_generic_to_shared(generic));
}

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Returns once the phase with parity `parity` of the barrier has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    }
}

__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}

// A 2-D TMA box load at (inner, outer), its bytes completing on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, int inner, int outer, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(tmap), "r"(inner), "r"(outer), "r"(bar)
        : "memory");
}

// Four 8x8 b16 matrices from shared memory; lane l gives the row address of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// D += A * B for one m16n8k16 atom (bf16 operands, f32 accumulators c0..c3).
__device__ __forceinline__ void mma_m16n8k16(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Shared address of 16-byte chunk `chunk` of row `row` in a 128B-swizzled box at `base`.
__device__ __forceinline__ unsigned swizzled(unsigned base, unsigned row, unsigned chunk) {
    return base + row * 128u + ((chunk ^ (row & 7u)) << 4);
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

// Ring init, run by one thread before any role starts.
extern "C" __device__ void gemm_mma_sync_kv_init(const MmaSyncParams* /*params*/, unsigned char* smem) {
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mma_sync_kv_full_bar();
    const unsigned empty = base + kl_gemm_mma_sync_kv_empty_bar();
    const unsigned depth = kl_gemm_mma_sync_kv_depth();
    for (unsigned slot = 0; slot < depth; ++slot) {
        mbarrier_init(full + kBarrierBytes * slot, kl_gemm_mma_sync_kv_full_count());
        mbarrier_init(empty + kBarrierBytes * slot, kl_gemm_mma_sync_kv_empty_count());
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

extern "C" __device__ void gemm_mma_sync_producer_main(const MmaSyncParams* params, unsigned char* smem) {
    const unsigned warp = (threadIdx.x >> 5) - kl_gemm_mma_sync_producer_warp0();
    if (warp != 0 || (threadIdx.x & 31) != 0) {
        return;  // one elected thread issues every copy
    }
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mma_sync_kv_full_bar();
    const unsigned empty = base + kl_gemm_mma_sync_kv_empty_bar();
    const unsigned slots = base + kl_gemm_mma_sync_operands_smem();
    const unsigned stride = kl_gemm_mma_sync_operands_stride();
    const unsigned depth = kl_gemm_mma_sync_kv_depth();
    unsigned tm, tn;
    tile_of(kl_gemm_mma_sync_fact_raster_m(), tm, tn);
    const int m0 = static_cast<int>(tm * kTileM);
    const int n0 = static_cast<int>(tn * kTileN);
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned kt = 0; kt < params->k_tiles; ++kt) {
        mbarrier_wait(empty + kBarrierBytes * slot, phase ^ 1);  // `empty wait`
        const unsigned bar = full + kBarrierBytes * slot;
        const unsigned dst = slots + stride * slot;
        mbarrier_arrive_expect_tx(bar, kBytesA + kBytesB);  // `full arrive 1 tx 32KiB`
        tma_load_2d(dst, params->tmap_a, static_cast<int>(kt * kTileK), m0, bar);
        tma_load_2d(dst + kBytesA, params->tmap_b, static_cast<int>(kt * kTileK), n0, bar);
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
}

extern "C" __device__ void gemm_mma_sync_main(const MmaSyncParams* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32u * kl_gemm_mma_sync_mma_warp0();
    const unsigned warp = t / 32u, lane = t % 32u;
    const unsigned row0 = 32u * (warp / 2u);  // this warp's rows of the tile (A rows)
    const unsigned col0 = 64u * (warp % 2u);  // this warp's columns (B rows)
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mma_sync_kv_full_bar();
    const unsigned empty = base + kl_gemm_mma_sync_kv_empty_bar();
    const unsigned slots = base + kl_gemm_mma_sync_operands_smem();
    const unsigned stride = kl_gemm_mma_sync_operands_stride();
    const unsigned depth = kl_gemm_mma_sync_kv_depth();
    // ldmatrix.x4 lanes: A matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) in a0..a3 order;
    // B matrices (k 0-7 | 8-15) x (n 0-7 | 8-15) giving b0, b1 of two n atoms.
    const unsigned a_row = (lane / 8u % 2u) * 8u + lane % 8u, a_half = lane / 16u;
    const unsigned b_row = (lane / 16u) * 8u + lane % 8u, b_half = lane / 8u % 2u;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        acc[i] = 0.0f;
    }
    unsigned slot = 0;
    unsigned phase = 0;
    for (unsigned kt = 0; kt < params->k_tiles; ++kt) {
        mbarrier_wait(full + kBarrierBytes * slot, phase);  // `full wait`: both boxes have landed
        const unsigned a = slots + stride * slot;
        const unsigned b = a + kBytesA;
#pragma unroll
        for (unsigned ks = 0; ks < kTileK / 16u; ++ks) {
            unsigned af[2][4];
#pragma unroll
            for (unsigned am = 0; am < 2; ++am) {
                ldmatrix_x4(swizzled(a, row0 + 16u * am + a_row, 2u * ks + a_half), af[am]);
            }
#pragma unroll
            for (unsigned an = 0; an < 8; an += 2) {
                unsigned bf[4];
                ldmatrix_x4(swizzled(b, col0 + 8u * an + b_row, 2u * ks + b_half), bf);
#pragma unroll
                for (unsigned am = 0; am < 2; ++am) {
                    mma_m16n8k16(&acc[4 * (8 * am + an)], af[am], bf[0], bf[1]);
                    mma_m16n8k16(&acc[4 * (8 * am + an + 1)], af[am], bf[2], bf[3]);
                }
            }
        }
        // ldmatrix reads through the generic proxy and the next TMA copy refills the slot
        // through the async proxy: each lane fences its reads before the warp releases it
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // `fence proxy_async`
        __syncwarp();  // every lane's ldmatrix of this slot has returned
        if (lane == 0) {
            mbarrier_arrive(empty + kBarrierBytes * slot);  // `empty arrive per_warp(mma)`
        }
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
    // `ready event acc.ready`
    kl_gemm_mma_sync_accumulator_export(reinterpret_cast<const unsigned int*>(acc));
}
