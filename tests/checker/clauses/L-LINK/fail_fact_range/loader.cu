// demo.loader — reads its fact `tile` through the fold handle (contract: loader.kc).
extern "C" __device__ unsigned kl_demo_loader_fact_tile();
extern "C" __device__ unsigned kl_demo_loader_out_smem();

extern "C" __device__ void loader_main(const void* /*params*/, unsigned char* smem) {
    smem[kl_demo_loader_out_smem() + threadIdx.x] = static_cast<unsigned char>(kl_demo_loader_fact_tile());
}
