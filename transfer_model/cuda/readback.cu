// readback.cu: read accumulator fragment layouts back from the GPU (sm_90a).
//
// For mma.sync m16n8k16 (f16 in, f32 accumulate) and wgmma m64nNk16 (f16 in,
// f32 accumulate, N in {8, 32, 64, 128, 256}) it fills A and B so that the
// accumulator element at (row, col) equals 256 * row + col:
//   A[row][0] = row, A[row][1] = 1, A[row][k >= 2] = 0
//   B[0][col] = 256, B[1][col] = col, B[k >= 2][col] = 0
// Every product and sum is exact in f16/f32, so each (thread, register) value
// decodes to the (row, col) it holds. Operands reach the tensor cores without
// any register-layout assumption: ldmatrix for mma.sync, shared-memory
// descriptors (no swizzle, K-major core matrices, LBO 128 B, SBO 256 B) for
// wgmma. The host checks that every element appears exactly once and prints
// JSON on stdout in the format of tests/transfer_model/data/accumulator_readback.json:
//   layouts.<name>.row[t * registers + r], layouts.<name>.col[t * registers + r]
//
// Build and run on an H200 (from the repository root):
//   nvcc -std=c++17 -arch=sm_90a -o /tmp/kl_readback transfer_model/cuda/readback.cu
//   /tmp/kl_readback > tests/transfer_model/data/accumulator_readback.json

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kScale = 256;  // accumulator value = kScale * row + col

#define KL_CHECK(call)                                                              \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        if (err_ != cudaSuccess) {                                                  \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                 \
                         cudaGetErrorString(err_));                                 \
            std::exit(1);                                                           \
        }                                                                           \
    } while (0)

__device__ __forceinline__ float a_value(int row, int k) {
    return k == 0 ? static_cast<float>(row) : (k == 1 ? 1.0f : 0.0f);
}

__device__ __forceinline__ float b_value(int k, int col) {
    return k == 0 ? static_cast<float>(kScale) : (k == 1 ? static_cast<float>(col) : 0.0f);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One warp; out[lane * 4 + i] = c_i of that lane.
__global__ void mma_m16n8k16_readback(float* out) {
    __shared__ __align__(16) __half a_tile[16 * 16];  // [row][k]
    __shared__ __align__(16) __half bt_tile[8 * 16];  // [col][k] (B transposed, "col" operand)
    const int lane = threadIdx.x;
    for (int i = lane; i < 16 * 16; i += 32) a_tile[i] = __float2half(a_value(i / 16, i % 16));
    for (int i = lane; i < 8 * 16; i += 32) bt_tile[i] = __float2half(b_value(i % 16, i / 16));
    __syncwarp();

    // ldmatrix: lanes 8q..8q+7 give the row addresses of 8x8 matrix q.
    // A: matrix q covers rows 8 * (q % 2) .. +7 and k 8 * (q / 2) .. +7 (a0a1, a2a3, a4a5, a6a7).
    const int q = lane / 8, row = lane % 8;
    uint32_t a[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(smem_addr(&a_tile[(row + 8 * (q % 2)) * 16 + 8 * (q / 2)])));
    // B^T: matrix q (q < 2) covers cols 0..7 and k 8 * q .. +7 (b0b1, b2b3).
    uint32_t b[2];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(b[0]), "=r"(b[1])
                 : "r"(smem_addr(&bt_tile[row * 16 + 8 * (q % 2)])));
    float d[4];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
    for (int i = 0; i < 4; ++i) out[lane * 4 + i] = d[i];
}

// No-swizzle K-major core-matrix layout: 8 rows x 16 B per core matrix, core
// matrices adjacent in K are LBO = 128 B apart, 8-row groups SBO = 256 B apart.
__device__ __forceinline__ int core_offset(int row, int k) {
    return (row / 8) * 128 + (k / 8) * 64 + (row % 8) * 8 + (k % 8);  // in halves
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint64_t smem_descriptor(const void* p) {
    const uint64_t start = (smem_addr(p) & 0x3FFFF) >> 4;
    const uint64_t lbo = 128 >> 4, sbo = 256 >> 4;
    return start | (lbo << 16) | (sbo << 32);  // base offset 0, no swizzle
}

template <int N>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[N / 2], uint64_t da, uint64_t db);

template <>
__device__ __forceinline__ void wgmma_m64nNk16<8>(float (&d)[4], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {"
        "%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "l"(da), "l"(db), "r"(0));
}

template <>
__device__ __forceinline__ void wgmma_m64nNk16<32>(float (&d)[16], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(0));
}

template <>
__device__ __forceinline__ void wgmma_m64nNk16<64>(float (&d)[32], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(0));
}

template <>
__device__ __forceinline__ void wgmma_m64nNk16<128>(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(0));
}

template <>
__device__ __forceinline__ void wgmma_m64nNk16<256>(float (&d)[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(0));
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// One warpgroup; out[t * (N / 2) + i] = d_i of thread t.
template <int N>
__global__ void wgmma_readback(float* out) {
    __shared__ __align__(1024) __half a_tile[64 * 16];
    __shared__ __align__(1024) __half b_tile[N * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += 128) a_tile[core_offset(i / 16, i % 16)] = __float2half(a_value(i / 16, i % 16));
    for (int i = t; i < N * 16; i += 128) b_tile[core_offset(i / 16, i % 16)] = __float2half(b_value(i % 16, i / 16));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    float d[N / 2];
    for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma_m64nNk16<N>(d, smem_descriptor(a_tile), smem_descriptor(b_tile));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#else
    __trap();  // nvcc -arch=sm_90a also emits compute_90 PTX, which has no wgmma
#endif
    for (int i = 0; i < N / 2; ++i) out[t * (N / 2) + i] = d[i];
}

struct Layout {
    const char* name;
    int threads, registers, rows, cols;
    std::vector<int> row, col;
};

Layout decode(const char* name, int threads, int registers, int rows, int cols,
              const std::vector<float>& values) {
    Layout layout{name, threads, registers, rows, cols, {}, {}};
    std::vector<int> seen(static_cast<size_t>(rows) * cols, 0);
    for (float v : values) {
        const int iv = static_cast<int>(v);
        const int row = iv / kScale, col = iv % kScale;
        if (static_cast<float>(iv) != v || iv < 0 || row >= rows || col >= cols) {
            std::fprintf(stderr, "%s: value %f does not decode to an element\n", name, v);
            std::exit(1);
        }
        if (seen[row * cols + col]++) {
            std::fprintf(stderr, "%s: element (%d, %d) read back twice\n", name, row, col);
            std::exit(1);
        }
        layout.row.push_back(row);
        layout.col.push_back(col);
    }
    return layout;
}

std::vector<float> run_mma() {
    float* dev = nullptr;
    KL_CHECK(cudaMalloc(&dev, 32 * 4 * sizeof(float)));
    mma_m16n8k16_readback<<<1, 32>>>(dev);
    KL_CHECK(cudaGetLastError());
    std::vector<float> host(32 * 4);
    KL_CHECK(cudaMemcpy(host.data(), dev, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    KL_CHECK(cudaFree(dev));
    return host;
}

template <int N>
std::vector<float> run_wgmma() {
    float* dev = nullptr;
    const size_t count = 128 * (N / 2);
    KL_CHECK(cudaMalloc(&dev, count * sizeof(float)));
    wgmma_readback<N><<<1, 128>>>(dev);
    KL_CHECK(cudaGetLastError());
    std::vector<float> host(count);
    KL_CHECK(cudaMemcpy(host.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost));
    KL_CHECK(cudaFree(dev));
    return host;
}

void print_ints(const std::vector<int>& v) {
    std::printf("[");
    for (size_t i = 0; i < v.size(); ++i) std::printf(i ? ",%d" : "%d", v[i]);
    std::printf("]");
}

}  // namespace

int main() {
    cudaDeviceProp prop{};
    KL_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::vector<Layout> layouts;
    layouts.push_back(decode("mma_m16n8k16_f32", 32, 4, 16, 8, run_mma()));
    layouts.push_back(decode("wgmma_m64n8k16_f32", 128, 4, 64, 8, run_wgmma<8>()));
    layouts.push_back(decode("wgmma_m64n32k16_f32", 128, 16, 64, 32, run_wgmma<32>()));
    layouts.push_back(decode("wgmma_m64n64k16_f32", 128, 32, 64, 64, run_wgmma<64>()));
    layouts.push_back(decode("wgmma_m64n128k16_f32", 128, 64, 64, 128, run_wgmma<128>()));
    layouts.push_back(decode("wgmma_m64n256k16_f32", 128, 128, 64, 256, run_wgmma<256>()));

    int runtime = 0, driver = 0;
    KL_CHECK(cudaRuntimeGetVersion(&runtime));
    KL_CHECK(cudaDriverGetVersion(&driver));
    std::printf("{\n  \"source\": \"gpu-readback\",\n");
    std::printf("  \"device\": \"%s\",\n  \"compute_capability\": \"%d.%d\",\n", prop.name,
                prop.major, prop.minor);
    std::printf("  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n", runtime, driver);
    std::printf("  \"index\": \"row[t * registers + r], col[t * registers + r]\",\n");
    std::printf("  \"layouts\": {\n");
    for (size_t i = 0; i < layouts.size(); ++i) {
        const Layout& l = layouts[i];
        std::printf("    \"%s\": {\"threads\": %d, \"registers\": %d, \"rows\": %d, \"cols\": %d,\n",
                    l.name, l.threads, l.registers, l.rows, l.cols);
        std::printf("      \"row\": ");
        print_ints(l.row);
        std::printf(",\n      \"col\": ");
        print_ints(l.col);
        std::printf("}%s\n", i + 1 < layouts.size() ? "," : "");
    }
    std::printf("  }\n}\n");
    return 0;
}
