// The role elects "thread 0" of the block: once the linker places the role at
// warp 4, no thread of the role is thread 0 and nothing is written.
extern "C" __device__ unsigned kl_fx_tid_work_warp0();
extern "C" __device__ void fx_work(const void* params, unsigned char*) {
    unsigned* out = *static_cast<unsigned* const*>(params);
    if (threadIdx.x == 0) {
        out[blockIdx.x] = 1;
    }
}
