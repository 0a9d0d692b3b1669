// The twin: the tile is the claim `tile`, reached from the entry's smem pointer.
extern "C" __device__ unsigned kl_fx_smem_tile_smem();
extern "C" __device__ unsigned kl_fx_smem_work_warp0();
extern "C" __device__ void fx_work(const void* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32 * kl_fx_smem_work_warp0();
    float* out = *static_cast<float* const*>(params);
    float* staging = reinterpret_cast<float*>(smem + kl_fx_smem_tile_smem());
    staging[t] = static_cast<float>(t);
    __syncwarp();
    out[t] = staging[t ^ 1];
}
