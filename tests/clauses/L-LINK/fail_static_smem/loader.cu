// demo.loader — keeps a scratch array in static shared memory instead of claiming it (contract: loader.kc).
__shared__ unsigned char demo_scratch[100];

extern "C" __device__ void loader_main(const void* /*params*/, unsigned char* smem) {
    demo_scratch[threadIdx.x % 100] = static_cast<unsigned char>(threadIdx.x);
    __syncwarp();
    smem[threadIdx.x] = demo_scratch[(threadIdx.x + 1) % 100];
}
