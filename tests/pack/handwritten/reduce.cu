// ring.reduce — the consumer of the `ring` example (contract: reduce.kc).
//
// Role `reduce` (entry `ring_reduce_main`, 8 warps = two warpgroups) waits for
// each full slot of the ring `kv`, sums its 8192 floats, releases the slot (one
// arrival per warp: `empty arrive per_warp(reduce)`), and writes one partial sum
// per warp, so the result is deterministic and a host reference can match it
// bit for bit:
//
//   for warp w (0..7), lane l (0..31), thread t = 32 * w + l:
//     s[t]  = data[t] + data[t + 256] + … + data[t + 256 * (tile_elems/256 - 1)]
//             (float32, added in that order, starting from 0.0f)
//     then a butterfly over the warp: for m in 16, 8, 4, 2, 1: s[l] = s[l] + s[l ^ m]
//     dst[8 * tile + w] = s[lane 0]
//
// The slot storage is the producer's per-slot claim `stage`, reached through the
// ring's slot handles; `tile_elems` is the fact the linker writes into the params.

// ---- handles (defined by the linker; LTO folds each to an immediate)
extern "C" {
__device__ unsigned kl_ring_reduce_reduce_warp0();    // role reduce: first warp
__device__ unsigned kl_ring_reduce_kv_depth();        // ring kv: depth chosen at link time
__device__ unsigned kl_ring_reduce_kv_full_bar();     // ring kv: full barrier of slot 0
__device__ unsigned kl_ring_reduce_kv_empty_bar();    // ring kv: empty barrier of slot 0
__device__ unsigned kl_ring_reduce_kv_stage_smem();   // slot 0 of the ring's per-slot claim `stage`
__device__ unsigned kl_ring_reduce_kv_stage_stride(); // bytes between its slots
}

// params ReduceParams size 16 align 8
struct ReduceParams {
    float* dst;           // @ 0: 8 partial sums per tile
    unsigned tile_elems;  // @ 8 = fact tile_elems (a multiple of 256)
    unsigned tiles;       // @ 12: tiles in the stream, the same count as the loader's `tiles`
};

namespace {

constexpr unsigned kWarps = 8;  // role reduce warps 8
constexpr unsigned kThreads = 32 * kWarps;
constexpr unsigned kBarrierBytes = 8;

__device__ __forceinline__ unsigned shared_address(const void* generic) {
    return static_cast<unsigned>(__cvta_generic_to_shared(generic));
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

}  // namespace

extern "C" __device__ void ring_reduce_main(const ReduceParams* params, unsigned char* smem) {
    const unsigned warp = (threadIdx.x >> 5) - kl_ring_reduce_reduce_warp0();
    const unsigned lane = threadIdx.x & 31;
    const unsigned t = 32 * warp + lane;
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_ring_reduce_kv_full_bar();
    const unsigned empty = base + kl_ring_reduce_kv_empty_bar();
    const unsigned char* slots = smem + kl_ring_reduce_kv_stage_smem();
    const unsigned stride = kl_ring_reduce_kv_stage_stride();
    const unsigned depth = kl_ring_reduce_kv_depth();
    const unsigned elems = params->tile_elems;
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned tile = blockIdx.x; tile < params->tiles; tile += gridDim.x) {
        mbarrier_wait(full + kBarrierBytes * slot, phase);  // `full wait`: the bulk copy has landed
        const float* data = reinterpret_cast<const float*>(slots + stride * slot);
        float sum = 0.0f;
        for (unsigned k = t; k < elems; k += kThreads) {
            sum += data[k];
        }
        // `fence proxy_async`: these generic loads are ordered before the async-proxy bulk copy
        // that refills the slot once it is released
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncwarp();  // the whole warp has read the slot
        if (lane == 0) {
            mbarrier_arrive(empty + kBarrierBytes * slot);  // `empty arrive per_warp(reduce)`
        }
        for (unsigned mask = 16; mask > 0; mask >>= 1) {
            sum += __shfl_xor_sync(0xffffffffu, sum, mask);
        }
        if (lane == 0) {
            params->dst[kWarps * tile + warp] = sum;
        }
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
}
