// The twin: fence.proxy.async between the generic writes and the bulk store.
extern "C" __device__ unsigned kl_fx_store_epi_warp0();
extern "C" __device__ unsigned kl_fx_store_out_smem();
extern "C" __device__ void fx_epi(const void* params, unsigned char* smem) {
    const unsigned t = threadIdx.x - 32 * kl_fx_store_epi_warp0();
    float* dst = *static_cast<float* const*>(params);
    float* out = reinterpret_cast<float*>(smem + kl_fx_store_out_smem());
    out[t] = static_cast<float>(t) * 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 0, 128;" ::: "memory");
    if (t == 0) {
        const unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(out));
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 512;" ::"l"(dst), "r"(src) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}
