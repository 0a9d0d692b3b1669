// The producer reads its barrier ID from the params: the analysis cannot tell
// whether that is the claim's ID, so it reports the site (an error under --strict).
extern "C" {
__device__ unsigned kl_fx_bar_handoff_bar_id();
__device__ unsigned kl_fx_bar_handoff_threads();
}
struct P { unsigned id; };
extern "C" __device__ void fx_prod(const P* p, unsigned char*) {
    asm volatile("bar.arrive %0, %1;" ::"r"(p->id), "r"(kl_fx_bar_handoff_threads()) : "memory");
}
extern "C" __device__ void fx_cons(const P*, unsigned char*) {
    asm volatile("bar.sync %0, %1;" ::"r"(kl_fx_bar_handoff_bar_id()), "r"(kl_fx_bar_handoff_threads()) : "memory");
}
