// hand.prod — role `prod` (one warp) writes tile k of its block, then adds the fact `adds`
// (which this stage owns; the linker folds it) to counter slot k (contract: prod.kc). data[(k * gridDim.x + block) * 32 + lane] = 1000 * k + 10 * block + lane.

extern "C" __device__ unsigned kl_hand_prod_prod_warp0();
extern "C" __device__ void kl_hand_prod_ready_counter_add(unsigned slot, unsigned n);
extern "C" __device__ unsigned kl_hand_prod_fact_adds();

struct ProdParams {
    unsigned* data;   // @ 0
    unsigned tiles;   // @ 8 (at most the claim's 4 slots)
};

extern "C" __device__ void hand_prod_main(const ProdParams* params, unsigned char* /*smem*/) {
    const unsigned lane = threadIdx.x - 32 * kl_hand_prod_prod_warp0();
    for (unsigned k = 0; k < params->tiles; ++k) {
        params->data[(k * gridDim.x + blockIdx.x) * 32 + lane] = 1000 * k + 10 * blockIdx.x + lane;
        __syncwarp();
        if (lane == 0) {
            kl_hand_prod_ready_counter_add(k, kl_hand_prod_fact_adds());  // release: the warp's stores above are visible first
        }
    }
}
