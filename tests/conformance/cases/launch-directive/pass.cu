// The twin: the self-test kernel is bounded to the contract's 256 threads.
extern "C" __device__ unsigned kl_fx_launch_work_warp0();
extern "C" __device__ void fx_work(const void* params, unsigned char*) {
    unsigned* out = *static_cast<unsigned* const*>(params);
    out[threadIdx.x - 32 * kl_fx_launch_work_warp0()] = 1;
}
extern "C" __global__ void __launch_bounds__(256) fx_selftest(unsigned* out) {
    out[blockIdx.x] = 2;
}
