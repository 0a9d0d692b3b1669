// gemm.mainloop — the GEMM mainloop of the `gemm_swiglu` example (contract: mainloop.kc).
//
// One CTA computes one 128 x 128 tile of C = A * B^T in f32, A [M, K] and B [N, K] both
// bf16 and K-major (row-major with K contiguous), tiles of K = 64:
//
// - role `producer` (entry `gemm_producer_main`, a warpgroup, `regs 24`): one elected
//   thread issues, per K tile, two TMA loads (`cp.async.bulk.tensor.2d`) into a slot of
//   the mbarrier ring `kv`: A's 128 x 64 box and B's 128 x 64 box (16 KiB each), both
//   128B-swizzled, completing on the slot's full barrier (`full arrive 1 tx 32KiB`); when
//   A has fewer than 128 rows the host sizes A's box to `a_box_rows` rows (M rounded up to
//   8) and the thread credits the box's missing rows' bytes itself (`mbarrier.complete_tx`,
//   see `a_box_credit`), so each phase still completes on 32 KiB;
// - role `mma` (entry `gemm_mma_main`, two warpgroups, `regs 208`): warpgroup g runs
//   `wgmma.mma_async.m64n128k16` on rows 64 g .. 64 g + 63 of the A box and all of the B
//   box, four K steps of 16 per slot, keeping one wgmma group in flight; it releases a
//   slot (`empty arrive per_warpgroup(mma)`) once the group that read it has retired.
//   At the end each thread holds its 64 f32 accumulators in the wgmma layout
//   (`placement library wgmma_m64nNk16_f32(n: 128, warpgroups: 2)`) and calls the
//   export handle once (`ready event acc.ready`): the linker's route takes it from there.
//
// The tile (m, n) of a CTA is `tile_of` below (grouped raster, the fact `raster_m`). The tensor maps are built on the
// host by the stage's host provider, mainloop_host.c, from `a`, `b`, `rows`, `n` and
// `k_tiles` (cuTensorMapEncodeTiled: bf16, 2-D, box {64, a_box_rows} for A and {64, 128}
// for B, CU_TENSOR_MAP_SWIZZLE_128B, out-of-bounds elements filled with zeros) and stored in
// global memory; params hold their addresses, and `a_box_rows` the rows of A's box.
//
// Every placement comes from a handle (specs/handles.md): the ring's depth, its barriers
// and arrival counts, the slots of the claim `operands`, and the roles' first warps.
//
// Built with GEMM_MMA_EPILOGUE (contract tilelang/mainloop_regs.kc), the `mma` role exports no
// tensor: each warpgroup calls the epilogue callable `gemm_mma_epilogue` on its accumulator in
// registers with the output (params `out`, `ldo`), M and its 64 rows' and 64 output columns' origin.

// ---- handles (defined by the linker; LTO folds each to an immediate)
extern "C" {
__device__ unsigned kl_gemm_mainloop_producer_warp0();   // role producer: first warp
__device__ unsigned kl_gemm_mainloop_mma_warp0();        // role mma: first warp
__device__ unsigned kl_gemm_mainloop_fact_raster_m();  // owns fact raster_m (folded)
__device__ unsigned kl_gemm_mainloop_kv_depth();         // ring kv: depth chosen at link time
__device__ unsigned kl_gemm_mainloop_kv_full_bar();      // ring kv: full barrier of slot 0
__device__ unsigned kl_gemm_mainloop_kv_empty_bar();     // ring kv: empty barrier of slot 0
__device__ unsigned kl_gemm_mainloop_kv_full_count();    // `full init 1`
__device__ unsigned kl_gemm_mainloop_kv_empty_count();   // `empty init per_warpgroup(mma)`
__device__ unsigned kl_gemm_mainloop_operands_smem();    // claim operands: slot 0 (1024-aligned)
__device__ unsigned kl_gemm_mainloop_operands_stride();  // claim operands: bytes between slots
#ifdef GEMM_MMA_EPILOGUE
// call swiglu_regs: the epilogue on this warpgroup's accumulator (acc, out, ldo, rows, row0, col0)
__device__ void gemm_mma_epilogue(void* acc, void* out, int ldo, int rows, int row0, int col0);
#else
__device__ void kl_gemm_mainloop_accumulator_export(const unsigned int* held);  // export accumulator
#endif
}

// params GemmParams size 56 align 8
struct GemmParams {
    const void* tmap_a;  // @ 0: CUtensorMap of A [M, K], box {64, a_box_rows}, 128B swizzle (64-byte aligned)
    const void* tmap_b;  // @ 8: CUtensorMap of B [N, K], box {64, 128}, 128B swizzle
    unsigned k_tiles;    // @ 16: K / 64
    unsigned tile_n;     // @ 20 = fact tile_n (128)
    const void* a;       // @ 24: A [M, K] bf16, row-major (the host provider's input for tmap_a)
    const void* b;       // @ 32: B [N, K] bf16, row-major (its input for tmap_b)
    unsigned rows;       // @ 40: M
    unsigned n;          // @ 44: N
    unsigned a_box_rows; // @ 48: rows of tmap_a's box: min(128, M rounded up to 8)
#ifdef GEMM_MMA_EPILOGUE
    void* out;           // @ 56: bf16 [rows, ldo], the epilogue's output
    unsigned ldo;        // @ 64: elements per output row
#endif
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

// Completes `bytes` of the barrier's current phase's transactions without a copy (no arrival).
__device__ __forceinline__ void mbarrier_complete_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// The bytes of A's 16 KiB slot half that its TMA box does not deliver: A's box holds
// `a_box_rows` rows (params: `box 64, a_box_rows`) of 128 bytes each. A box of
// fewer rows than the tile skips the rows at or past M that TMA would fill with zeros (at
// M = 16, 112 of 128 rows per k-tile: that fill made TMA the bottleneck). The producer
// completes the missing bytes on the slot's full barrier itself, so the phase completes
// on exactly `full arrive 1 tx 32KiB` = A's 16 KiB + B's 16 KiB, as the contract declares.
//
// Rows a_box_rows .. 127 of the slot's A half then hold whatever shared memory held (no
// copy writes them, so no write races the wgmma reads). That is sound because wgmma's
// row r of D reads only row r of A: accumulator rows >= a_box_rows >= M (possibly NaN or
// Inf) never mix into rows < M, and the epilogue neither computes nor stores rows >= M
// (epilogue.cu: `live`), the route only moves their bits. A box smaller than the rows the
// tile needs would drop real rows: a value below min(M, 128), 0, or above 128, traps. A whole
// box (128 rows) leaves no credit.
__device__ __forceinline__ unsigned a_box_credit(unsigned a_box_rows, unsigned rows) {
    if (a_box_rows == 0 || a_box_rows > kTileM || a_box_rows < (rows < kTileM ? rows : kTileM)) {
        __trap();
    }
    return kBytesA - a_box_rows * kTileK * 2u;
}

// A 2-D TMA box load at (inner, outer), its bytes completing on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, int inner, int outer, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(tmap), "r"(inner), "r"(outer), "r"(bar)
        : "memory");
}

// wgmma shared-memory descriptor of a K-major, 128B-swizzled operand at shared address
// `addr`: 8-row core groups 1024 B apart (stride byte offset), leading offset unused (1).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
    return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) |
           (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across an asynchronous wgmma.
__device__ __forceinline__ void fence_operands(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        asm volatile("" : "+f"(d[i])::"memory");
    }
}

// D += A * B^T for one m64n128k16 step; A and B from shared memory, f32 accumulate.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a, unsigned long long desc_b) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.u32 p, 1, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n\t}"
        :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b));
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
extern "C" __device__ void gemm_mainloop_kv_init(const GemmParams* /*params*/, unsigned char* smem) {
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mainloop_kv_full_bar();
    const unsigned empty = base + kl_gemm_mainloop_kv_empty_bar();
    const unsigned depth = kl_gemm_mainloop_kv_depth();
    for (unsigned slot = 0; slot < depth; ++slot) {
        mbarrier_init(full + kBarrierBytes * slot, kl_gemm_mainloop_kv_full_count());
        mbarrier_init(empty + kBarrierBytes * slot, kl_gemm_mainloop_kv_empty_count());
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

extern "C" __device__ void gemm_producer_main(const GemmParams* params, unsigned char* smem) {
    const unsigned warp = (threadIdx.x >> 5) - kl_gemm_mainloop_producer_warp0();
    if (warp != 0 || (threadIdx.x & 31) != 0) {
        return;  // one elected thread issues every copy
    }
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mainloop_kv_full_bar();
    const unsigned empty = base + kl_gemm_mainloop_kv_empty_bar();
    const unsigned slots = base + kl_gemm_mainloop_operands_smem();
    const unsigned stride = kl_gemm_mainloop_operands_stride();
    const unsigned depth = kl_gemm_mainloop_kv_depth();
    unsigned tm, tn;
    tile_of(kl_gemm_mainloop_fact_raster_m(), tm, tn);
    const int m0 = static_cast<int>(tm * kTileM);
    const int n0 = static_cast<int>(tn * kTileN);
    const unsigned credit = a_box_credit(params->a_box_rows, params->rows);
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned kt = 0; kt < params->k_tiles; ++kt) {
        mbarrier_wait(empty + kBarrierBytes * slot, phase ^ 1);  // `empty wait`
        const unsigned bar = full + kBarrierBytes * slot;
        const unsigned dst = slots + stride * slot;
        mbarrier_arrive_expect_tx(bar, kBytesA + kBytesB);  // `full arrive 1 tx 32KiB`
        if (credit != 0) {
            mbarrier_complete_tx(bar, credit);  // A's rows past its box: part of `full copy 16KiB`
        }
        tma_load_2d(dst, params->tmap_a, static_cast<int>(kt * kTileK), m0, bar);
        tma_load_2d(dst + kBytesA, params->tmap_b, static_cast<int>(kt * kTileK), n0, bar);
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
}

extern "C" __device__ void gemm_mma_main(const GemmParams* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32u * kl_gemm_mainloop_mma_warp0();
    const unsigned group = t / 128u;  // this warpgroup's 64 rows of the tile
    const bool leader = (t % 128u) == 0;
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_mainloop_kv_full_bar();
    const unsigned empty = base + kl_gemm_mainloop_kv_empty_bar();
    const unsigned slots = base + kl_gemm_mainloop_operands_smem();
    const unsigned stride = kl_gemm_mainloop_operands_stride();
    const unsigned depth = kl_gemm_mainloop_kv_depth();
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        acc[i] = 0.0f;
    }
    unsigned slot = 0;
    unsigned phase = 0;
    unsigned previous = 0;  // the slot the group still in flight reads
    const unsigned k_tiles = params->k_tiles;
    for (unsigned kt = 0; kt < k_tiles; ++kt) {
        mbarrier_wait(full + kBarrierBytes * slot, phase);  // `full wait`: both boxes have landed
        const unsigned a = slots + stride * slot + group * (64u * kTileK * 2u);
        const unsigned b = slots + stride * slot + kBytesA;
        fence_operands(acc);
        wgmma_fence();
#pragma unroll
        for (unsigned ks = 0; ks < kTileK / 16u; ++ks) {
            // K step ks: 16 bf16 = 32 bytes further along the 128-byte swizzled row
            wgmma_m64n128k16(acc, smem_desc(a + 32u * ks), smem_desc(b + 32u * ks));
        }
        wgmma_commit();
        fence_operands(acc);
        if (kt > 0) {
            wgmma_wait<1>();  // the group of tile kt - 1 has retired: its slot may be refilled
            if (leader) {
                mbarrier_arrive(empty + kBarrierBytes * previous);  // `empty arrive per_warpgroup(mma)`
            }
        }
        previous = slot;
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
    wgmma_wait<0>();
    fence_operands(acc);
    if (k_tiles > 0 && leader) {
        mbarrier_arrive(empty + kBarrierBytes * previous);
    }
#ifdef GEMM_MMA_EPILOGUE
    unsigned tm, tn;
    tile_of(kl_gemm_mainloop_fact_raster_m(), tm, tn);
    gemm_mma_epilogue(acc, params->out, static_cast<int>(params->ldo), static_cast<int>(params->rows),
                      static_cast<int>(tm * kTileM + 64u * group), static_cast<int>(tn * (kTileN / 2u)));
#else
    // `ready event acc.ready`: every accumulator is final.
    kl_gemm_mainloop_accumulator_export(reinterpret_cast<const unsigned int*>(acc));
#endif
}
