// ring.loader — the producer warpgroup of the `ring` example (contract: loader.kc).
//
// Role `load` (entry `ring_load_main`, 4 warps, a warpgroup): one elected thread
// streams `tiles` tiles of 32 KiB from global memory into the slots of the
// mbarrier ring `kv` with `cp.async.bulk`; the other three warps return at once.
// The dispatch kernel, not this component, lowers the warpgroup's registers
// (`regs 40`, setmaxnreg.dec) before it calls the entry.
//
// The stage initialises the ring (`init by load fenced`): the dispatch kernel calls
// `ring_loader_kv_init` from one thread of `load` before its block-wide barrier,
// and only then enters any role.
//
// Every placement comes from a handle (specs/handles.md): the ring's depth, the
// shared-memory offsets of its barriers, the arrival counts, the slot storage of
// the claim `stage`, and the role's first warp. Offsets are bytes from the dynamic
// shared memory base the dispatch kernel passes in `smem`.
//
// Tiles are dealt to blocks round-robin: block b loads tiles b, b + gridDim.x, …

// ---- handles (defined by the linker; LTO folds each to an immediate)
extern "C" {
__device__ unsigned kl_ring_loader_load_warp0();       // role load: first warp
__device__ unsigned kl_ring_loader_kv_depth();         // ring kv: depth chosen at link time
__device__ unsigned kl_ring_loader_kv_full_bar();      // ring kv: full barrier of slot 0
__device__ unsigned kl_ring_loader_kv_empty_bar();     // ring kv: empty barrier of slot 0
__device__ unsigned kl_ring_loader_kv_full_count();    // `full init 1`
__device__ unsigned kl_ring_loader_kv_empty_count();   // `empty init per_warp(reduce)`
__device__ unsigned kl_ring_loader_stage_smem();       // claim stage: slot 0
__device__ unsigned kl_ring_loader_stage_stride();     // claim stage: bytes between slots
}

// params LoaderParams size 16 align 8
struct LoaderParams {
    const float* src;  // @ 0: tiles * 8192 floats, 16-byte aligned
    unsigned tiles;    // @ 8
};

namespace {

// owns fact tile_elems: u32 = 8192
constexpr unsigned kTileElems = 8192;
constexpr unsigned kTileBytes = kTileElems * sizeof(float);  // 32 KiB: `full arrive 1 tx 32KiB`
constexpr unsigned kBarrierBytes = 8;                          // slot i's barrier: slot 0's + 8 * i

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

// Global → shared bulk copy whose bytes complete on `bar` (16-byte aligned, size % 16 == 0).
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
        "l"(src), "r"(bytes), "r"(bar)
        : "memory");
}

}  // namespace

// Ring init, run by one thread before any role starts: `depth` full barriers
// (count `full init`) and `depth` empty barriers (count `empty init`), then the
// fences that publish the inits to the other threads and to the async proxy.
extern "C" __device__ void ring_loader_kv_init(const LoaderParams* /*params*/, unsigned char* smem) {
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_ring_loader_kv_full_bar();
    const unsigned empty = base + kl_ring_loader_kv_empty_bar();
    const unsigned depth = kl_ring_loader_kv_depth();
    for (unsigned slot = 0; slot < depth; ++slot) {
        mbarrier_init(full + kBarrierBytes * slot, kl_ring_loader_kv_full_count());
        mbarrier_init(empty + kBarrierBytes * slot, kl_ring_loader_kv_empty_count());
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

extern "C" __device__ void ring_load_main(const LoaderParams* params, unsigned char* smem) {
    const unsigned warp = (threadIdx.x >> 5) - kl_ring_loader_load_warp0();
    if (warp != 0 || (threadIdx.x & 31) != 0) {
        return;  // one elected thread issues every copy
    }
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_ring_loader_kv_full_bar();
    const unsigned empty = base + kl_ring_loader_kv_empty_bar();
    const unsigned slots = base + kl_ring_loader_stage_smem();
    const unsigned stride = kl_ring_loader_stage_stride();
    const unsigned depth = kl_ring_loader_kv_depth();
    const char* src = reinterpret_cast<const char*>(params->src);
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned tile = blockIdx.x; tile < params->tiles; tile += gridDim.x) {
        // `empty wait`: in the first round parity 1 passes on a fresh barrier;
        // later rounds wait until every consumer warp has released the slot.
        mbarrier_wait(empty + kBarrierBytes * slot, phase ^ 1);
        // `full arrive 1 tx 32KiB`, then `full copy 32KiB` completes the bytes.
        mbarrier_arrive_expect_tx(full + kBarrierBytes * slot, kTileBytes);
        bulk_copy(slots + stride * slot, src + static_cast<unsigned long long>(tile) * kTileBytes, kTileBytes,
                  full + kBarrierBytes * slot);
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
}
