// ring_fed.producer — the persistent producer of the `ring_fed` example (contract: producer.kc).
//
// Role `make` (entry `ring_fed_make_main`, one warpgroup of 128 threads) loops over its CTA's
// tiles, tile = blockIdx.x + g * gridDim.x for g = 0, 1, … while tile < tiles: thread t holds
// row t of the 128x32 f32 tile (`placement regs(t: 128, r: 32) -> (m, n) { m = t  n = r }`),
//
//     held[r] = 2 * src[4096 * tile + 32 * t + r]
//
// and hands it over as generation g of the ring-fed export `rows`. The export handle, generated
// by the linker (linker/ring_fed.py), waits until slot g % depth of ring `tiles` was released,
// stores the registers into it and signals it full: this component never touches the slots.
//
// The stage initialises the ring (`init by make`): the dispatch kernel calls
// `ring_fed_producer_tiles_init` from one thread of `make` before its block-wide barrier.

// ---- handles, the params struct and the entry/hook declarations: generated from producer.kc by
// `kernlink header producer.kc -o kl_ring_fed_producer.h`
#include "kl_ring_fed_producer.h"

namespace {

constexpr unsigned kRows = 128;  // tile m 128: one row per thread of `make`
constexpr unsigned kCols = 32;   // tile n 32: the thread's registers
constexpr unsigned kBarrierBytes = 8;

__device__ __forceinline__ unsigned shared_address(const void* generic) {
    return static_cast<unsigned>(__cvta_generic_to_shared(generic));
}

}  // namespace

// `depth` full barriers (count `full init`) and `depth` empty barriers (count `empty init`); the
// dispatch kernel's __syncthreads() publishes them before any role starts.
extern "C" __device__ void ring_fed_producer_tiles_init(const ProducerParams* /*params*/, unsigned char* smem) {
    const unsigned base = shared_address(smem);
    const unsigned full = base + kl_ring_fed_producer_tiles_full_bar();
    const unsigned empty = base + kl_ring_fed_producer_tiles_empty_bar();
    for (unsigned slot = 0; slot < kl_ring_fed_producer_tiles_depth(); ++slot) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(full + kBarrierBytes * slot),
                     "r"(kl_ring_fed_producer_tiles_full_count())
                     : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(empty + kBarrierBytes * slot),
                     "r"(kl_ring_fed_producer_tiles_empty_count())
                     : "memory");
    }
}

extern "C" __device__ void ring_fed_make_main(const ProducerParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32u * kl_ring_fed_producer_make_warp0();
    const float* src = static_cast<const float*>(params->src);
    unsigned held[kCols];
    unsigned generation = 0;
    for (unsigned tile = blockIdx.x; tile < params->tiles; tile += gridDim.x, ++generation) {
        const float* row = src + static_cast<unsigned long long>(tile) * (kRows * kCols) + kCols * t;
#pragma unroll
        for (unsigned r = 0; r < kCols; ++r) {
            held[r] = __float_as_uint(2.0f * row[r]);
        }
        kl_ring_fed_producer_rows_export(held, generation);  // generation g of `rows`: slot g % depth
    }
}
