/* mainloop_host.c: the host provider of `gemm.mainloop` (mainloop.kc: `host provider ... fills tmap_a, tmap_b`).
 *
 * Before each launch, kernel.h's kl_<pipeline>_launch (and kernlink.Session.bind) calls
 * kl_gemm_mainloop_provide on this stage's params block, with the caller's fields set:
 * `a` (A [rows, K] bf16, row-major), `b` (B [n, K] bf16, row-major) and `k_tiles` (K / 64).
 * It writes `tmap_a` and `tmap_b`: the device addresses of the two TMA descriptors the
 * producer loads through (cuTensorMapEncodeTiled: bf16, 2-D, box 64 x a_box_rows for A and
 * 64 x 128 for B, 128B swizzle, L2 promotion 256 B, out-of-bounds elements read as zero),
 * the same descriptors bench/gemm_swiglu.py builds in Python, and `a_box_rows`: 128, or
 * rows rounded up to 8 when A has fewer than 128 rows (a box past A's last row costs TMA
 * an out-of-bounds fill per k-tile; the producer credits the rows the box leaves out to
 * the ring's barrier itself, mainloop.cu `a_box_credit`).
 *
 * A descriptor lives in device memory (the kernel reads it through a pointer), so each
 * is encoded, allocated and copied once per (context, address, shape) and kept for the
 * life of the context: a launch in flight keeps reading an unchanged descriptor. Contexts
 * are told apart by cuCtxGetId, which is never reused (a handle can be, after a destroy). The
 * table holds KL_GEMM_MAINLOOP_DESCRIPTORS of them; one more is CUDA_ERROR_OUT_OF_MEMORY.
 * Not thread-safe: call it from one host thread (or serialise the launches). */
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* params GemmParams size 48 align 8 (mainloop.kc) */
typedef struct {
    CUdeviceptr tmap_a; /* @ 0: filled here */
    CUdeviceptr tmap_b; /* @ 8: filled here */
    uint32_t k_tiles;   /* @ 16 */
    uint32_t tile_n;    /* @ 20 = fact tile_n */
    CUdeviceptr a;      /* @ 24 */
    CUdeviceptr b;      /* @ 32 */
    uint32_t rows;      /* @ 40 */
    uint32_t n;         /* @ 44 */
    uint32_t a_box_rows; /* @ 48: filled here */
} GemmParams;

_Static_assert(sizeof(GemmParams) == 56, "params GemmParams: size");
_Static_assert(offsetof(GemmParams, k_tiles) == 16, "params GemmParams: k_tiles at 16");
_Static_assert(offsetof(GemmParams, a) == 24, "params GemmParams: a at 24");
_Static_assert(offsetof(GemmParams, n) == 44, "params GemmParams: n at 44");
_Static_assert(offsetof(GemmParams, a_box_rows) == 48, "params GemmParams: a_box_rows at 48");

#define KL_GEMM_MAINLOOP_DESCRIPTORS 64
enum { TILE_M = 128, TILE_K = 64 };

typedef struct {
    unsigned long long context;
    CUdeviceptr address;
    uint64_t rows, cols;
    uint32_t box_rows;
    CUdeviceptr descriptor;
} Entry;

static Entry entries[KL_GEMM_MAINLOOP_DESCRIPTORS];
static unsigned used;

/* The device address of the descriptor of a row-major bf16 [rows, cols] matrix at `address`. */
static CUresult descriptor(CUdeviceptr address, uint64_t rows, uint64_t cols, uint32_t box_rows, CUdeviceptr* out) {
    CUcontext current;
    unsigned long long context;
    CUresult err = cuCtxGetCurrent(&current);
    if (err != CUDA_SUCCESS) return err;
    if (current == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    err = cuCtxGetId(current, &context);
    if (err != CUDA_SUCCESS) return err;
    for (unsigned i = 0; i < used; ++i) {
        Entry* e = &entries[i];
        if (e->context == context && e->address == address && e->rows == rows && e->cols == cols &&
            e->box_rows == box_rows) {
            *out = e->descriptor;
            return CUDA_SUCCESS;
        }
    }
    if (used == KL_GEMM_MAINLOOP_DESCRIPTORS) return CUDA_ERROR_OUT_OF_MEMORY;
    CUtensorMap map;
    cuuint64_t dims[2] = {cols, rows};
    cuuint64_t strides[1] = {cols * 2u};
    cuuint32_t box[2] = {TILE_K, box_rows};
    cuuint32_t steps[2] = {1, 1};
    err = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void*)(uintptr_t)address, dims, strides,
                                 box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (err != CUDA_SUCCESS) return err;
    CUdeviceptr device;
    err = cuMemAlloc(&device, sizeof map);
    if (err != CUDA_SUCCESS) return err;
    err = cuMemcpyHtoD(device, &map, sizeof map);
    if (err != CUDA_SUCCESS) {
        cuMemFree(device);
        return err;
    }
    entries[used].context = context;
    entries[used].address = address;
    entries[used].rows = rows;
    entries[used].cols = cols;
    entries[used].box_rows = box_rows;
    entries[used].descriptor = device;
    ++used;
    *out = device;
    return CUDA_SUCCESS;
}

CUresult kl_gemm_mainloop_provide(void* params, CUstream stream) {
    GemmParams* p = (GemmParams*)params;
    (void)stream; /* the descriptors are copied synchronously, once */
    if (p == NULL || p->a == 0 || p->b == 0 || p->rows == 0 || p->n == 0 || p->k_tiles == 0 || p->tile_n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t k = (uint64_t)p->k_tiles * TILE_K;
    uint32_t box_rows = p->rows >= TILE_M ? TILE_M : (p->rows + 7u) & ~7u;
    CUresult err = descriptor(p->a, p->rows, k, box_rows, &p->tmap_a);
    if (err != CUDA_SUCCESS) return err;
    p->a_box_rows = box_rows;
    return descriptor(p->b, p->n, k, p->tile_n, &p->tmap_b);
}
