// demo.loader — defines a helper with external linkage, as demo.store does (contract: loader.kc).
extern "C" __device__ unsigned demo_clamp(unsigned x) { return x < 7u ? x : 7u; }

extern "C" __device__ void loader_main(const void* /*params*/, unsigned char* /*smem*/) {
    asm volatile("" ::"r"(demo_clamp(blockIdx.x)));
}
