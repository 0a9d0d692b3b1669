// The twin: it reads the claim's first column from its handle and stores it for the role.
extern "C" __device__ unsigned kl_fx_tmem_slot_smem();
extern "C" __device__ unsigned kl_fx_tmem_acc_tmem();
extern "C" __device__ void fx_mma(const void*, unsigned char* smem) {
    *reinterpret_cast<unsigned*>(smem + kl_fx_tmem_slot_smem()) = kl_fx_tmem_acc_tmem();
}
