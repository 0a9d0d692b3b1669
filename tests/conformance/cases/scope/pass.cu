// The twin: a device-scope atomic, as declared.
extern "C" __device__ unsigned kl_fx_scope_work_warp0();
extern "C" __device__ unsigned kl_fx_scope_progress_counter();
extern "C" __device__ void fx_work(const void* params, unsigned char*) {
    unsigned* counters = *static_cast<unsigned* const*>(params);
    if (threadIdx.x - 32 * kl_fx_scope_work_warp0() == 0) {
        atomicAdd(counters + kl_fx_scope_progress_counter(), 1u);
    }
}
