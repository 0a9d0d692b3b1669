// The twin: both sides read the ID from the claim's handle.
extern "C" {
__device__ unsigned kl_fx_bar_handoff_bar_id();
__device__ unsigned kl_fx_bar_handoff_threads();
__device__ unsigned kl_fx_bar_prod_warp0();
__device__ unsigned kl_fx_bar_cons_warp0();
}
extern "C" __device__ void fx_prod(const void*, unsigned char*) {
    asm volatile("bar.arrive %0, %1;" ::"r"(kl_fx_bar_handoff_bar_id()), "r"(kl_fx_bar_handoff_threads()) : "memory");
}
extern "C" __device__ void fx_cons(const void*, unsigned char*) {
    asm volatile("bar.sync %0, %1;" ::"r"(kl_fx_bar_handoff_bar_id()), "r"(kl_fx_bar_handoff_threads()) : "memory");
}
