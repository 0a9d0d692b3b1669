/* ring_host.c: the `ring` example launched from C through the generated kernel.h.
 *
 *   kernlink link specs/examples/ring/ring.kp -o out/ring
 *   cc -std=c99 -O2 -I out/ring -I "$CUDA_HOME/include" specs/examples/ring/host/ring_host.c -lcuda -o ring_host
 *   ./ring_host 37 4        # 37 tiles on 4 blocks
 *
 * It fills the loader's input with a deterministic pattern, launches the linked kernel,
 * and compares every partial sum with the order reduce.cu documents (float32, bit for
 * bit). Exit status 0 when every value matches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define CHECK(call)                                                              \
    do {                                                                         \
        CUresult err_ = (call);                                                  \
        if (err_ != CUDA_SUCCESS) {                                              \
            const char* name_ = "?";                                             \
            cuGetErrorName(err_, &name_);                                        \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, name_); \
            return 2;                                                            \
        }                                                                        \
    } while (0)

enum { TILE = 8192, WARPS = 8, THREADS = 32 * WARPS };

static float value_at(unsigned long long i) {
    return (float)((int)((i * 2654435761ull) % 2001ull) - 1000) / 256.0f;
}

static void reference(const float* data, unsigned tiles, float* out) {
    for (unsigned tile = 0; tile < tiles; ++tile) {
        float sums[THREADS];
        for (unsigned t = 0; t < THREADS; ++t) {
            float s = 0.0f;
            for (unsigned k = 0; k < TILE; k += THREADS) s = s + data[(unsigned long long)tile * TILE + k + t];
            sums[t] = s;
        }
        for (unsigned w = 0; w < WARPS; ++w) {
            float* lanes = sums + 32 * w;
            for (unsigned m = 16; m >= 1; m /= 2) {
                float next[32];
                for (unsigned l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ m];
                memcpy(lanes, next, sizeof next);
            }
            out[WARPS * tile + w] = lanes[0];
        }
    }
}

int main(int argc, char** argv) {
    unsigned tiles = argc > 1 ? (unsigned)atoi(argv[1]) : 37;
    unsigned grid = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
    size_t in_bytes = (size_t)tiles * TILE * sizeof(float), out_bytes = (size_t)tiles * WARPS * sizeof(float);
    float* host = (float*)malloc(in_bytes);
    float* got = (float*)malloc(out_bytes);
    float* want = (float*)malloc(out_bytes);
    for (size_t i = 0; i < (size_t)tiles * TILE; ++i) host[i] = value_at(i);

    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction function;
    CUdeviceptr src, dst;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(kl_ring_load(&module, &function));
    CHECK(cuMemAlloc(&src, in_bytes));
    CHECK(cuMemAlloc(&dst, out_bytes));
    CHECK(cuMemcpyHtoD(src, host, in_bytes));
    CHECK(cuMemsetD8(dst, 0xff, out_bytes));

    kl_ring_params params;
    kl_ring_params_init(&params);
    params.ring_loader_src = src;
    params.ring_loader_tiles = tiles;
    params.ring_reduce_dst = dst;
    params.ring_reduce_tiles = tiles;
    CHECK(kl_ring_launch(module, function, NULL, grid, &params));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(got, dst, out_bytes));

    reference(host, tiles, want);
    unsigned differ = 0;
    for (unsigned i = 0; i < tiles * WARPS; ++i) differ += memcmp(&got[i], &want[i], sizeof(float)) != 0;
    printf("ring from C: %u tiles on %u blocks of %u threads, %u B dynamic shared memory: %u of %u values differ\n",
           tiles, grid, KL_RING_THREADS, KL_RING_DYNAMIC_SMEM, differ, tiles * WARPS);
    CHECK(cuMemFree(src));
    CHECK(cuMemFree(dst));
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    free(host);
    free(got);
    free(want);
    return differ == 0 ? 0 : 1;
}
