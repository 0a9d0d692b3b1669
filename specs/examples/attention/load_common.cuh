// load_common.cuh — the producer loop shared by the load components (owner: the load team; each
// load_*.cuh includes it): Q once on q_full, then K and V blocks in the order K0, (K_i, V_{i-1})
// for i = 1 .. N - 1, V_{N-1}, so that the core's next QK^T never waits behind a V copy. Each
// block: wait empty[slot] (parity phase ^ 1), arrive.expect_tx full[slot] with kKVBytes, then the
// load's copies of that block (`copy(map, n_block, dst, bar)`), which must complete exactly
// kKVBytes on `bar`.
#pragma once

#include "attn_abi.cuh"
#include "attn_common.cuh"

// Q once: the slot was never filled (its first empty wait, parity 1, passes at once).
__device__ __forceinline__ void attn_load_q(const CUtensorMap* q, const attn::Tile* t, const attn::Smem* s) {
    attn::mbar_wait(s->q_empty, 1u);
    attn::mbar_arrive_expect_tx(s->q_full, attn::kQBytes);
#pragma unroll
    for (int sub = 0; sub < attn::kSubs; ++sub) {
        attn::tma_load_3d(s->q + sub * attn::kSubBytes, q, 64 * sub, t->m0, t->bh, s->q_full);
    }
}

// kp: the kernel's parameter block (for the kv-block sequence callables); t, s: the caller's.
template <class Copy>
__device__ __forceinline__ void attn_produce_kv(void* kp, const CUtensorMap* kmap, const CUtensorMap* vmap,
                                                attn::Tile* t, const attn::Smem* s, Copy&& copy) {
    const int n = kl_load_kv_count(kp, t);
    attn::RingPos kpos(s->k_depth), vpos(s->v_depth);
    auto put = [&](attn::RingPos& pos, unsigned slots, unsigned stride, unsigned full, unsigned empty,
                   const CUtensorMap* map, int i) {
        const int n_block = kl_load_kv_block(kp, t, i);
        attn::mbar_wait(empty + 8u * pos.slot, pos.phase ^ 1u);
        attn::mbar_arrive_expect_tx(full + 8u * pos.slot, attn::kKVBytes);
        copy(map, n_block, slots + pos.slot * stride, full + 8u * pos.slot);
        pos.advance();
    };
    if (n <= 0) {
        return;
    }
    put(kpos, s->k, s->k_stride, s->k_full, s->k_empty, kmap, 0);
    for (int i = 1; i < n; ++i) {
        put(kpos, s->k, s->k_stride, s->k_full, s->k_empty, kmap, i);
        put(vpos, s->v, s->v_stride, s->v_full, s->v_empty, vmap, i - 1);
    }
    put(vpos, s->v, s->v_stride, s->v_full, s->v_empty, vmap, n - 1);
}
