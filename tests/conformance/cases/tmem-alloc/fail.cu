// The warp allocates its accumulator's 128 columns itself, although the dispatch kernel
// already allocated every `claim tmem`: two allocations at different bases.
extern "C" __device__ unsigned kl_fx_tmem_slot_smem();
extern "C" __device__ void fx_mma(const void*, unsigned char* smem) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem + kl_fx_tmem_slot_smem()));
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 128;" ::"r"(dst) : "memory");
}
