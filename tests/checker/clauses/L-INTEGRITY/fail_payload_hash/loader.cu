// demo.loader — a one-warp component for clause fixtures (contract: loader.kc).
extern "C" __device__ void loader_main(const void* /*params*/, unsigned char* /*smem*/) {}
