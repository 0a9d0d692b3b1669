// Kernels that only read a buffer: the floor of any kernel that must read it once (bench/weight_read_floor.py).
//
// read_ldg<U>: every thread streams 16-byte non-coherent loads that do not allocate in L1 (ld.global.nc
//   .L1::no_allocate.L2::256B.v4), U loads in flight per thread, grid-stride; an exact 64-bit sum of the
//   buffer's 32-bit words (as signed integers) per block, added into *out, checks that every byte was read.
// read_bulk: one thread per CTA streams CHUNK-byte cp.async.bulk copies global -> shared through a ring of
//   DEPTH slots, completing on one mbarrier per slot (the path the linked kernel reads W by); the first
//   word of each chunk is summed into *out, which checks the copies landed.
#include <cstdint>

__device__ __forceinline__ uint4 ldg_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ long long words(uint4 v) {
    return (long long)(int)v.x + (int)v.y + (int)v.z + (int)v.w;
}

__device__ __forceinline__ void block_add(long long acc, unsigned long long* out) {
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, (unsigned long long)acc);
}

template <int U>
__device__ void read_ldg(const uint4* __restrict__ w, unsigned long long n16, unsigned long long* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long acc = 0;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ldg_stream(w + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += words(v[u]);
    }
    for (; i < n16; i += stride) acc += words(ldg_stream(w + i));
    block_add(acc, out);
}

extern "C" __global__ void read_ldg1(const uint4* w, unsigned long long n16, unsigned long long* out) { read_ldg<1>(w, n16, out); }
extern "C" __global__ void read_ldg2(const uint4* w, unsigned long long n16, unsigned long long* out) { read_ldg<2>(w, n16, out); }
extern "C" __global__ void read_ldg4(const uint4* w, unsigned long long n16, unsigned long long* out) { read_ldg<4>(w, n16, out); }
extern "C" __global__ void read_ldg8(const uint4* w, unsigned long long n16, unsigned long long* out) { read_ldg<8>(w, n16, out); }

constexpr int kMaxDepth = 8;

// dynamic shared memory: depth * chunk bytes (1024-aligned); chunks of this CTA: blockIdx.x + j * gridDim.x
extern "C" __global__ void read_bulk(const char* w, unsigned long long chunks, unsigned chunk, unsigned depth,
                                     unsigned evict_first, unsigned long long* out) {
    extern __shared__ __align__(1024) char ring[];
    __shared__ __align__(8) unsigned long long full[kMaxDepth];
    if (threadIdx.x != 0) return;
    const unsigned ring_base = (unsigned)__cvta_generic_to_shared(ring);
    const unsigned bar_base = (unsigned)__cvta_generic_to_shared(full);
    for (unsigned s = 0; s < depth; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_base + 8 * s));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const unsigned long long mine = chunks > blockIdx.x ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto issue = [&](unsigned long long j) {
        const unsigned s = (unsigned)(j % depth);
        const char* src = w + (blockIdx.x + j * gridDim.x) * (unsigned long long)chunk;
        // the slot's earlier generic read is ordered before the async proxy's write into it
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_base + 8 * s), "r"(chunk)
                     : "memory");
        if (evict_first)  // CUTLASS's CacheHintSm90::EVICT_FIRST policy word
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                ::"r"(ring_base + s * chunk), "l"(src), "r"(chunk), "r"(bar_base + 8 * s), "l"(0x12f0000000000000ull)
                : "memory");
        else
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(ring_base + s * chunk), "l"(src), "r"(chunk), "r"(bar_base + 8 * s)
                         : "memory");
    };
    for (unsigned long long j = 0; j < mine && j < depth; ++j) issue(j);
    long long acc = 0;
    for (unsigned long long j = 0; j < mine; ++j) {
        const unsigned s = (unsigned)(j % depth), parity = (unsigned)((j / depth) & 1);
        asm volatile(
            "{\n .reg .pred p;\n wait_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
            " @!p bra wait_%=;\n}" ::"r"(bar_base + 8 * s), "r"(parity) : "memory");
        acc += *(const volatile int*)(ring + s * chunk);
        if (j + depth < mine) issue(j + depth);
    }
    atomicAdd(out, (unsigned long long)acc);
}
