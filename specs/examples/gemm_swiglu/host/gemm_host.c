/* gemm_host.c: the `gemm_swiglu` example launched from C through the generated kernel.h.
 *
 *   kernlink build specs/examples/gemm_swiglu/gemm_swiglu.kp -o out/gemm
 *   (cd out/gemm && sed -n 's/^ \* sha256 //p' kernel.h | sha256sum --check --strict)
 *   cc -std=c99 -O2 -I out/gemm -I "$CUDA_HOME/include" specs/examples/gemm_swiglu/host/gemm_host.c \
 *      out/gemm/provider_gemm_mainloop_mainloop_host.c -lcuda -lm -o gemm_host
 *   ./gemm_host 300 512 1024        # M N K (N a multiple of 128, K of 64)
 *
 * The second line checks that the provider is the source the link recorded (kernel.h lists
 * its SHA-256) before it is compiled. The caller sets only the plain fields (a, b, rows, n,
 * k_tiles, out, ldo, rows): the
 * mainloop's host provider (mainloop_host.c, linked from the link directory) builds the
 * TMA descriptors tmap_a and tmap_b, and A's box rows a_box_rows (min(128, M rounded up to
 * 8)), when kl_gemm_swiglu_launch_grid calls it. The output
 * out [M, N/2] = silu(X Wg^T) * (X Wu^T), with W's gate and up rows interleaved by 16, is
 * checked against a double-precision reference: ||out - ref|| / ||ref|| <= 1e-2 and no NaN
 * (the output is poisoned with 0xFFFF first). It launches twice (the second launch reuses
 * the provider's descriptors). Exit status 0 when both launches pass. */
#include <math.h>
#include <stdint.h>
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

static uint16_t to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float pattern(unsigned long long i, float scale) {
    return scale * (float)((int)((i * 2654435761ull) % 2001ull) - 1000) / 1000.0f;
}

int main(int argc, char** argv) {
    unsigned m = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 512;
    unsigned k = argc > 3 ? (unsigned)atoi(argv[3]) : 1024;
    if (m == 0 || n == 0 || n % 128 || k == 0 || k % 64) {
        fprintf(stderr, "usage: gemm_host M N K (N a multiple of 128, K of 64)\n");
        return 2;
    }
    size_t xs = (size_t)m * k, ws = (size_t)n * k, os = (size_t)m * (n / 2);
    uint16_t* x = (uint16_t*)malloc(xs * 2);
    uint16_t* w = (uint16_t*)malloc(ws * 2);
    uint16_t* got = (uint16_t*)malloc(os * 2);
    float* xf = (float*)malloc(xs * sizeof(float));
    float* wf = (float*)malloc(ws * sizeof(float));
    for (size_t i = 0; i < xs; ++i) xf[i] = from_bf16(x[i] = to_bf16(pattern(i, 1.0f)));
    for (size_t i = 0; i < ws; ++i) wf[i] = from_bf16(w[i] = to_bf16(pattern(i + 7919, 1.0f / sqrtf((float)k))));

    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction function;
    CUdeviceptr dx, dw, dout;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(kl_gemm_swiglu_load(&module, &function));
    CHECK(cuMemAlloc(&dx, xs * 2));
    CHECK(cuMemAlloc(&dw, ws * 2));
    CHECK(cuMemAlloc(&dout, os * 2));
    CHECK(cuMemcpyHtoD(dx, x, xs * 2));
    CHECK(cuMemcpyHtoD(dw, w, ws * 2));

    kl_gemm_swiglu_params params;
    kl_gemm_swiglu_params_init(&params);
    params.gemm_mainloop_a = dx;
    params.gemm_mainloop_b = dw;
    params.gemm_mainloop_rows = m;
    params.gemm_mainloop_n = n;
    params.gemm_mainloop_k_tiles = k / 64;
    params.swiglu_epilogue_out = dout;
    params.swiglu_epilogue_ldo = n / 2;
    params.swiglu_epilogue_rows = m;

    int failed = 0;
    for (int round = 0; round < 2; ++round) {
        CHECK(cuMemsetD16(dout, 0xFFFF, os));
        CHECK(kl_gemm_swiglu_launch_grid(module, function, NULL, (m + 127) / 128, n / 128, 1, &params));
        CHECK(cuCtxSynchronize());
        CHECK(cuMemcpyDtoH(got, dout, os * 2));
        double diff = 0.0, norm = 0.0;
        unsigned nan = 0;
        for (unsigned r = 0; r < m; ++r) {
            for (unsigned j = 0; j < n / 2; ++j) {
                const float* xr = xf + (size_t)r * k;
                const float* gr = wf + (size_t)(32 * (j / 16) + j % 16) * k;
                const float* ur = gr + (size_t)16 * k;
                double gate = 0.0, up = 0.0;
                for (unsigned i = 0; i < k; ++i) {
                    gate += (double)xr[i] * gr[i];
                    up += (double)xr[i] * ur[i];
                }
                double want = gate / (1.0 + exp(-gate)) * up;
                float have = from_bf16(got[(size_t)r * (n / 2) + j]);
                if (isnan(have)) {
                    ++nan;
                    continue;
                }
                diff += (have - want) * (have - want);
                norm += want * want;
            }
        }
        double rel = sqrt(diff / (norm > 0 ? norm : 1.0));
        int ok = nan == 0 && rel <= 1e-2;
        printf("gemm_swiglu from C, launch %d: M %u N %u K %u, tmap_a 0x%llx tmap_b 0x%llx a_box_rows %u (host provider): "
               "relative error %.3e, %u NaN: %s\n", round + 1, m, n, k, (unsigned long long)params.gemm_mainloop_tmap_a,
               (unsigned long long)params.gemm_mainloop_tmap_b, (unsigned)params.gemm_mainloop_a_box_rows, rel, nan,
               ok ? "ok" : "FAILED");
        failed |= !ok;
    }
    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dw));
    CHECK(cuMemFree(dout));
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    free(x);
    free(w);
    free(got);
    free(xf);
    free(wf);
    return failed;
}
