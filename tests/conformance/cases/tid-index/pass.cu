// The twin: the role elects its own first thread, relative to its first warp.
extern "C" __device__ unsigned kl_fx_tid_work_warp0();
extern "C" __device__ void fx_work(const void* params, unsigned char*) {
    unsigned* out = *static_cast<unsigned* const*>(params);
    if (threadIdx.x - 32 * kl_fx_tid_work_warp0() == 0) {
        out[blockIdx.x] = 1;
    }
}
