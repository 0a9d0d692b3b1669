// load_blocksparse.cu — package `attn.load.blocksparse` (contract load_blocksparse.kc): load_blocksparse.cuh behind the
// kernlink ABI. The role entry computes the tile on all 128 threads (the mask's range query),
// then thread 0 runs the producer; the ring init hooks initialise the barriers with the counts
// the linker gives; the exports serve the kv-block sequence. Placement comes from the handles of
// kl_attn_load_blocksparse.h, the parameters from the kernel's block (kp) at this stage's offset.
#define ATTN_LINKED
#include "kl_attn_load_blocksparse.h"
#include "load_blocksparse.cuh"
#include "attn_tile.cuh"

static_assert(sizeof(LoadParams) == sizeof(LoadBlock) && alignof(LoadParams) == alignof(LoadBlock), "LoadBlock");
static_assert(__builtin_offsetof(LoadParams, seq_q) == __builtin_offsetof(LoadBlock, seq_q), "LoadBlock: seq_q");
static_assert(__builtin_offsetof(LoadParams, seq_k) == __builtin_offsetof(LoadBlock, seq_k), "LoadBlock: seq_k");

namespace {
__device__ __forceinline__ const LoadParams* load_params(void* kp) {
    return reinterpret_cast<const LoadParams*>(static_cast<const char*>(kp) + kl_attn_load_blocksparse_params_offset());
}
__device__ __forceinline__ void* kernel_params(const LoadBlock* block) {
    return const_cast<char*>(reinterpret_cast<const char*>(block) - kl_attn_load_blocksparse_params_offset());
}
__device__ __forceinline__ void init_ring(unsigned full, unsigned empty, unsigned depth, unsigned full_count,
                                          unsigned empty_count) {
    for (unsigned i = 0; i < depth; ++i) {
        attn::mbar_init(full + 8u * i, full_count);
        attn::mbar_init(empty + 8u * i, empty_count);
    }
    attn::fence_mbar_init();
}
}  // namespace

extern "C" __device__ int attn_load_blocksparse_kv_count(void* kp, void* t) {
    return attn_load_kv_count(load_params(kp), static_cast<const attn::Tile*>(t));
}

extern "C" __device__ int attn_load_blocksparse_kv_block(void* kp, void* t, int i) {
    return attn_load_kv_block(load_params(kp), static_cast<const attn::Tile*>(t), i);
}

extern "C" __device__ void attn_load_blocksparse_main(const LoadBlock* params, unsigned char* smem) {
    void* const kp = kernel_params(params);
    const LoadParams* p = reinterpret_cast<const LoadParams*>(params);
    attn::Tile t = attn::attn_tile(kp, p->seq_q, p->seq_k);
    if (threadIdx.x != 32u * kl_attn_load_blocksparse_load_warp0()) {
        return;
    }
    const unsigned base = attn::smem_u32(smem);
    attn::Smem s;
    s.q = base + kl_attn_load_blocksparse_q_q_tile_smem();
    s.k = base + kl_attn_load_blocksparse_k_k_tiles_smem();
    s.v = base + kl_attn_load_blocksparse_v_v_tiles_smem();
    s.k_stride = kl_attn_load_blocksparse_k_k_tiles_stride();
    s.v_stride = kl_attn_load_blocksparse_v_v_tiles_stride();
    s.k_depth = kl_attn_load_blocksparse_k_depth();
    s.v_depth = kl_attn_load_blocksparse_v_depth();
    s.q_full = base + kl_attn_load_blocksparse_q_full_bar();
    s.q_empty = base + kl_attn_load_blocksparse_q_empty_bar();
    s.k_full = base + kl_attn_load_blocksparse_k_full_bar();
    s.k_empty = base + kl_attn_load_blocksparse_k_empty_bar();
    s.v_full = base + kl_attn_load_blocksparse_v_full_bar();
    s.v_empty = base + kl_attn_load_blocksparse_v_empty_bar();
    attn_load_main(p, kp, &t, &s);
}

extern "C" __device__ void attn_load_blocksparse_q_init(const LoadBlock*, unsigned char* smem) {
    const unsigned base = attn::smem_u32(smem);
    init_ring(base + kl_attn_load_blocksparse_q_full_bar(), base + kl_attn_load_blocksparse_q_empty_bar(),
              kl_attn_load_blocksparse_q_depth(), kl_attn_load_blocksparse_q_full_count(), kl_attn_load_blocksparse_q_empty_count());
}

extern "C" __device__ void attn_load_blocksparse_k_init(const LoadBlock*, unsigned char* smem) {
    const unsigned base = attn::smem_u32(smem);
    init_ring(base + kl_attn_load_blocksparse_k_full_bar(), base + kl_attn_load_blocksparse_k_empty_bar(),
              kl_attn_load_blocksparse_k_depth(), kl_attn_load_blocksparse_k_full_count(), kl_attn_load_blocksparse_k_empty_count());
}

extern "C" __device__ void attn_load_blocksparse_v_init(const LoadBlock*, unsigned char* smem) {
    const unsigned base = attn::smem_u32(smem);
    init_ring(base + kl_attn_load_blocksparse_v_full_bar(), base + kl_attn_load_blocksparse_v_empty_bar(),
              kl_attn_load_blocksparse_v_depth(), kl_attn_load_blocksparse_v_full_count(), kl_attn_load_blocksparse_v_empty_count());
}
