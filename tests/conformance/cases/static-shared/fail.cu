// The tile lives in a static __shared__ array: it moves the dynamic base every
// claim counts from, and no claim accounts for its 4 KiB.
extern "C" __device__ unsigned kl_fx_smem_tile_smem();
extern "C" __device__ unsigned kl_fx_smem_work_warp0();
__shared__ float staging[1024];
extern "C" __device__ void fx_work(const void* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32 * kl_fx_smem_work_warp0();
    float* out = *static_cast<float* const*>(params);
    staging[t] = static_cast<float>(t);
    __syncwarp();
    out[t] = staging[t ^ 1];
}
