// racecheck probe: a generic shared-memory store handed over by mbarrier.arrive (release) /
// mbarrier.try_wait.parity (acquire), the ordering the ring-fed hand-off uses; no other sync.
#include <cstdio>
#include <cstdlib>
__device__ __forceinline__ void wait(unsigned bar, unsigned parity) {
    unsigned ok;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    } while (!ok);
}
// mode 0: every writer arrives (count 128); 1: __syncwarp, then lane 0 of each warp arrives (count 4);
// 2: the 128 writers meet on named barrier 1, then thread 0 arrives (count 1).
__global__ void k(int* out, int mode) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ int data[128];
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned count = mode == 0 ? 128 : (mode == 1 ? 4 : 1);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(count));
    __syncthreads();
    if (threadIdx.x < 128) {
        data[threadIdx.x] = threadIdx.x * 3;
        if (mode == 0) {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        } else if (mode == 1) {
            __syncwarp();
            if ((threadIdx.x & 31) == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        } else {
            asm volatile("barrier.sync 1, 128;" ::: "memory");
            if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
        }
    } else {
        wait(b, 0);
        out[threadIdx.x - 128] = data[255 - threadIdx.x];
    }
}
int main(int argc, char** argv) {
    int* d; cudaMalloc(&d, 128 * sizeof(int));
    int mode = argc > 1 ? atoi(argv[1]) : 0; {
        k<<<1, 256>>>(d, mode);
        int h[128]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
        int bad = 0; for (int i = 0; i < 128; ++i) bad += h[i] != 3 * (127 - i);
        printf("mode %d bad %d\n", mode, bad);
    }
    return 0;
}
