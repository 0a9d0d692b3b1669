// hand.cons — role `cons` (one warp) waits until all blocks wrote tile k (counter slot k reaches
// gridDim.x * adds, `adds` the fact the launch helper writes into the params), then copies the
// next block's tile k into `out` (contract: cons.kc). After the tiles, lane 0 writes what the
// counter slots hold and the counter's index in the array.

extern "C" __device__ unsigned kl_hand_cons_cons_warp0();
extern "C" __device__ unsigned kl_hand_cons_ready_counter();
extern "C" __device__ unsigned* kl_hand_cons_ready_counter_ptr();
extern "C" __device__ void kl_hand_cons_ready_counter_wait(unsigned slot, unsigned target);

struct ConsParams {
    const unsigned* data;  // @ 0
    unsigned* out;         // @ 8: tiles * gridDim.x * 32 words, then 2 per block
    unsigned tiles;        // @ 16
    unsigned adds;         // @ 20 = fact adds
};

extern "C" __device__ void hand_cons_main(const ConsParams* params, unsigned char* /*smem*/) {
    const unsigned lane = threadIdx.x - 32 * kl_hand_cons_cons_warp0();
    const unsigned next = (blockIdx.x + 1) % gridDim.x;
    for (unsigned k = 0; k < params->tiles; ++k) {
        if (lane == 0) {
            kl_hand_cons_ready_counter_wait(k, gridDim.x * params->adds);  // acquire
        }
        __syncwarp();
        const volatile unsigned* data = params->data;
        params->out[(k * gridDim.x + blockIdx.x) * 32 + lane] = data[(k * gridDim.x + next) * 32 + lane];
    }
    if (lane == 0) {
        const unsigned base = params->tiles * gridDim.x * 32 + 2 * blockIdx.x;
        const volatile unsigned* words = kl_hand_cons_ready_counter_ptr();
        params->out[base] = params->tiles ? words[params->tiles - 1] : 0u;
        params->out[base + 1] = kl_hand_cons_ready_counter();
    }
}
