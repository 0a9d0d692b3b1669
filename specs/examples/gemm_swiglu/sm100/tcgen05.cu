// gemm.tcgen05 — a GEMM mainloop for sm_100a whose accumulator stays in tensor memory
// (contract: tcgen05.kc). Linked on the CPU only: no Blackwell GPU here has run it.
//
// One CTA computes one 128 x 128 tile of C = A * B^T in f32, A [M, K] and B [N, K] both
// bf16 and K-major, tiles of K = 64, K >= 64 (the first MMA initialises the accumulator):
//
// - role `producer` (a warpgroup, `regs 24`): one elected thread issues, per K tile, the
//   two TMA loads of gemm.mainloop (A's and B's 128 x 64 boxes, 128B-swizzled) into a
//   slot of the ring `kv`;
// - role `mma` (a warpgroup, `regs 48`): thread 0 waits for each slot, issues four
//   `tcgen05.mma.cta_group::1.kind::f16` (M = 128, N = 128, K = 16 each) accumulating into
//   the tensor-memory claim `accumulator` (row m in lane m, column n in column n), and
//   `tcgen05.commit`s the slot's empty barrier, which arrives once those MMAs complete
//   (`empty arrive 1`). After the last slot it commits the mbarrier in the claim
//   `mma_done` (which it initialised); warp 0 waits for it, so at its export call
//   (`ready event acc.ready`) the accumulator is complete. Warps 1-3 touch no tensor
//   memory and export at once. The linker's route orders the consumer's
//   `tcgen05.ld` after this point (`tcgen05.fence::before_thread_sync`, a named barrier,
//   `tcgen05.fence::after_thread_sync`).
//
// The dispatch kernel allocates the tensor memory before any role starts and frees it
// after every role has returned; `kl_gemm_tcgen05_accumulator_tmem()` is the claim's
// first column.

extern "C" {
__device__ unsigned kl_gemm_tcgen05_producer_warp0();    // role producer: first warp
__device__ unsigned kl_gemm_tcgen05_mma_warp0();         // role mma: first warp
__device__ unsigned kl_gemm_tcgen05_fact_raster_m();     // owns fact raster_m (folded)
__device__ unsigned kl_gemm_tcgen05_kv_depth();          // ring kv: depth chosen at link time
__device__ unsigned kl_gemm_tcgen05_kv_full_bar();       // ring kv: full barrier of slot 0
__device__ unsigned kl_gemm_tcgen05_kv_empty_bar();      // ring kv: empty barrier of slot 0
__device__ unsigned kl_gemm_tcgen05_kv_full_count();     // `full init 1`
__device__ unsigned kl_gemm_tcgen05_kv_empty_count();    // `empty init 1`
__device__ unsigned kl_gemm_tcgen05_operands_smem();     // claim operands: slot 0 (1024-aligned)
__device__ unsigned kl_gemm_tcgen05_operands_stride();   // claim operands: bytes between slots
__device__ unsigned kl_gemm_tcgen05_mma_done_smem();     // claim mma_done: the accumulator's mbarrier
__device__ unsigned kl_gemm_tcgen05_accumulator_tmem();  // claim tmem accumulator: first column
__device__ void kl_gemm_tcgen05_accumulator_export(const unsigned int* held);  // export accumulator (tmem)
}

// params Tcgen05Params size 24 align 8
struct Tcgen05Params {
    const void* tmap_a;  // @ 0: CUtensorMap of A [M, K], box {64, 128}, 128B swizzle
    const void* tmap_b;  // @ 8: CUtensorMap of B [N, K], box {64, 128}, 128B swizzle
    unsigned k_tiles;    // @ 16: K / 64, at least 1
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

// Instruction descriptor of tcgen05.mma .kind::f16 (PTX ISA, "Instruction descriptor"):
// D f32 (bits 4-5 = 1), A and B bf16 (bits 7-9 = 1, 10-12 = 1), both K-major (bits 15, 16
// = 0), N >> 3 in bits 17-22, M >> 4 in bits 24-28; dense, no negation, no saturation.
constexpr unsigned kInstrDesc = (1u << 4) | (1u << 7) | (1u << 10) | ((kTileN >> 3) << 17) | ((kTileM >> 4) << 24);

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

// tcgen05 shared-memory descriptor of a K-major, 128B-swizzled operand at shared address
// `addr`: start address >> 4 (bits 0-13), leading byte offset unused (16 B, bits 16-29),
// 8-row core groups 1024 B apart (stride byte offset, bits 32-45), the fixed version 1
// (bits 46-48), base offset 0, swizzle mode 2 = 128B (bits 61-63).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
    return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) |
           (1ull << 46) | (2ull << 61);
}

// D[tmem] (+)= A * B^T for one K = 16 step; `accumulate` false overwrites D.
__device__ __forceinline__ void mma_bf16(unsigned tmem, unsigned long long desc_a, unsigned long long desc_b,
                                         bool accumulate) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.u32 p, %4, 0;\n\t"
        "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}" ::"r"(tmem),
        "l"(desc_a), "l"(desc_b), "r"(static_cast<unsigned>(kInstrDesc)), "r"(static_cast<unsigned>(accumulate))
        : "memory");
}

// The mbarrier arrives once every tcgen05 operation this thread issued before completes.
__device__ __forceinline__ void commit(unsigned bar) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar)
                 : "memory");
}

// The tile (m, n) a CTA computes, shared by every owner of the composition (gemm.mainloop's).
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
extern "C" __device__ void gemm_tcgen05_kv_init(const Tcgen05Params* /*params*/, unsigned char* smem) {
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_tcgen05_kv_full_bar();
    const unsigned empty = base + kl_gemm_tcgen05_kv_empty_bar();
    const unsigned depth = kl_gemm_tcgen05_kv_depth();
    for (unsigned slot = 0; slot < depth; ++slot) {
        mbarrier_init(full + kBarrierBytes * slot, kl_gemm_tcgen05_kv_full_count());
        mbarrier_init(empty + kBarrierBytes * slot, kl_gemm_tcgen05_kv_empty_count());
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

extern "C" __device__ void gemm_tcgen05_producer_main(const Tcgen05Params* params, unsigned char* smem) {
    const unsigned warp = (threadIdx.x >> 5) - kl_gemm_tcgen05_producer_warp0();
    if (warp != 0 || (threadIdx.x & 31) != 0) {
        return;  // one elected thread issues every copy
    }
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_gemm_tcgen05_kv_full_bar();
    const unsigned empty = base + kl_gemm_tcgen05_kv_empty_bar();
    const unsigned slots = base + kl_gemm_tcgen05_operands_smem();
    const unsigned stride = kl_gemm_tcgen05_operands_stride();
    const unsigned depth = kl_gemm_tcgen05_kv_depth();
    unsigned tm, tn;
    tile_of(kl_gemm_tcgen05_fact_raster_m(), tm, tn);
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

extern "C" __device__ void gemm_tcgen05_mma_main(const Tcgen05Params* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32u * kl_gemm_tcgen05_mma_warp0();
    if (t >= 32u) {
        // warps 1-3 of the role touch no tensor memory: they export at once (the route's
        // barrier still waits for warp 0)
        kl_gemm_tcgen05_accumulator_export(nullptr);
        return;
    }
    const unsigned base = shared_address(smem);
    const unsigned done = base + kl_gemm_tcgen05_mma_done_smem();
    if (t == 0) {
        mbarrier_init(done, 1);  // one tcgen05.commit arrives
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
    if (t == 0) {
        const unsigned full = base + kl_gemm_tcgen05_kv_full_bar();
        const unsigned empty = base + kl_gemm_tcgen05_kv_empty_bar();
        const unsigned slots = base + kl_gemm_tcgen05_operands_smem();
        const unsigned stride = kl_gemm_tcgen05_operands_stride();
        const unsigned depth = kl_gemm_tcgen05_kv_depth();
        const unsigned tmem = kl_gemm_tcgen05_accumulator_tmem();  // lane 0, the claim's first column
        unsigned slot = 0;
        unsigned phase = 0;
        for (unsigned kt = 0; kt < params->k_tiles; ++kt) {
            mbarrier_wait(full + kBarrierBytes * slot, phase);  // `full wait`: both boxes have landed
            asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
            const unsigned a = slots + stride * slot;
            const unsigned b = a + kBytesA;
#pragma unroll
            for (unsigned ks = 0; ks < kTileK / 16u; ++ks) {
                // K step ks: 16 bf16 = 32 bytes further along the 128-byte swizzled row
                mma_bf16(tmem, smem_desc(a + 32u * ks), smem_desc(b + 32u * ks), kt > 0 || ks > 0);
            }
            commit(empty + kBarrierBytes * slot);  // `empty arrive 1`, once these MMAs have read the slot
            if (++slot == depth) {
                slot = 0;
                phase ^= 1;
            }
        }
        commit(done);  // every MMA of the tile
    }
    __syncwarp();
    mbarrier_wait(done, 0);  // every lane of warp 0: the accumulator is complete
    // `ready event acc.ready`: the tile is in tensor memory; the route orders the loads.
    kl_gemm_tcgen05_accumulator_export(nullptr);
}
