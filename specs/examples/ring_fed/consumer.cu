// ring_fed.consumer — the consumer of the `ring_fed` example (contract: consumer.kc).
//
// Role `sum` (entry `ring_fed_sum_main`, one warpgroup of 128 threads) walks the same tiles as
// the producer, tile = blockIdx.x + g * gridDim.x, and imports generation g of `tile` in four
// chunks of 8 columns; thread t takes row 127 - t
// (`demand regs(t: 128, p: 8, c: 4) -> (m, n) { m = 127 - t  n = 8 * c + p }`) and writes
//
//     dst[4096 * tile + 32 * (127 - t) + 8 * c + p] = value + 1
//
// so dst = 2 * src + 1, element for element, in float32. The import handle (linker/ring_fed.py)
// waits until slot g % depth of ring `tiles` is full before chunk 0 and releases the slot after
// chunk 3: the producer fills the next slot while this role still reads this one.

// ---- handles, the params struct and the entry declaration: generated from consumer.kc (with
// producer.kc for the ring) by `kernlink header consumer.kc --peer producer.kc -o kl_ring_fed_consumer.h`
#include "kl_ring_fed_consumer.h"

namespace {

constexpr unsigned kRows = 128;
constexpr unsigned kCols = 32;
constexpr unsigned kChunk = 8;  // chunk n 8: registers per import call
constexpr unsigned kChunks = kCols / kChunk;

}  // namespace

extern "C" __device__ void ring_fed_sum_main(const ConsumerParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32u * kl_ring_fed_consumer_sum_warp0();
    float* dst = static_cast<float*>(params->dst);
    unsigned got[kChunk];
    unsigned generation = 0;
    for (unsigned tile = blockIdx.x; tile < params->tiles; tile += gridDim.x, ++generation) {
        float* row = dst + static_cast<unsigned long long>(tile) * (kRows * kCols) + kCols * (kRows - 1u - t);
#pragma unroll
        for (unsigned c = 0; c < kChunks; ++c) {
            kl_ring_fed_consumer_tile_import(nullptr, got, static_cast<int>(c), generation);
#pragma unroll
            for (unsigned p = 0; p < kChunk; ++p) {
                row[kChunk * c + p] = __uint_as_float(got[p]) + 1.0f;
            }
        }
    }
}
