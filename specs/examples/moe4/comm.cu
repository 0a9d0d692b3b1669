// moe.comm — role `comm` (3 warps): the token dispatch (contract: comm.kc).
//
// In the `dispatch` phase of the instruction list (see interp.cu), every block:
//  1. stages the routing table (`routing[t * top_k + k]`, the expert of assignment
//     a = t * top_k + k) in its `staging` claim;
//  2. writes the row map: assignment a goes to row `rank(a)` of its expert's buffer, its
//     rank among that expert's assignments in order of a; a rank >= capacity is dropped
//     (`slots[a] = 0xffffffff`). Assignments are dealt round-robin over the grid's threads;
//  3. copies token rows: the expert's rows form groups of `tokens_per_signal` rows; the
//     grid's warps take groups round-robin, copy each kept row's token from `x` (f16,
//     `hidden` per row) to `xe[expert][row]` and then add 1 to the tile's slot of counter
//     `tokens_ready` (slot expert * (capacity / tile_rows) + row / tile_rows), a release
//     of the warp's copies. A group without kept rows is not signalled.
//
// The four facts this stage owns (tile_rows, capacity, tokens_per_signal, elem_bits) are read
// through their handles: the linker folds them, and relinking after a change carries them to
// `moe.gemm` and `moe.act` (params fields) in the same link.

#include "kl_moe_comm.h"

// bar.sync on a named barrier from its handles (what the header's `kl_..._sync()` macros expand to).
static __device__ __forceinline__ void bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static constexpr unsigned kDispatch = 1;
static constexpr unsigned kThreads = 96;  // role comm warps 3
static constexpr unsigned kWarps = 3;
static constexpr unsigned kStagingWords = 16384 / 4;  // claim smem staging bytes 16KiB
static constexpr unsigned kDropped = 0xffffffffu;

static __device__ void dispatch(const CommParams* p, unsigned char* smem, unsigned tid) {
    const unsigned lane = tid & 31;
    const unsigned warp = tid >> 5;
    const unsigned n = p->tokens * p->top_k;
    const unsigned cap = kl_moe_comm_fact_capacity();
    const unsigned tile = kl_moe_comm_fact_tile_rows();
    const unsigned per_signal = kl_moe_comm_fact_tokens_per_signal();
    static_assert(sizeof(unsigned short) * 8 == 16, "elem_bits 16: rows are copied as 16-bit elements");
    if (n > kStagingWords || kl_moe_comm_fact_elem_bits() != 16 || p->hidden % 8 != 0) {
        __trap();
    }
    unsigned* route = reinterpret_cast<unsigned*>(smem + kl_moe_comm_staging_smem());
    const unsigned* routing = static_cast<const unsigned*>(p->routing);
    for (unsigned i = tid; i < n; i += kThreads) {
        route[i] = routing[i];
    }
    bar_sync(kl_moe_comm_comm_sync_bar_id(), kl_moe_comm_comm_sync_threads());
    // 2. the row map
    unsigned* slots = static_cast<unsigned*>(p->slots);
    for (unsigned a = blockIdx.x * kThreads + tid; a < n; a += gridDim.x * kThreads) {
        const unsigned e = route[a];
        unsigned rank = 0;
        for (unsigned b = 0; b < a; ++b) {
            rank += route[b] == e;
        }
        slots[a] = rank < cap ? rank : kDropped;
    }
    // 3. row groups
    const unsigned groups_per_expert = cap / per_signal;
    const unsigned groups = p->num_experts * groups_per_expert;
    const unsigned vecs = p->hidden / 8;  // 16-byte vectors per row
    const uint4* x = static_cast<const uint4*>(p->x);
    uint4* xe = static_cast<uint4*>(p->xe);
    for (unsigned g = blockIdx.x * kWarps + warp; g < groups; g += gridDim.x * kWarps) {
        const unsigned e = g / groups_per_expert;
        const unsigned r0 = (g % groups_per_expert) * per_signal;
        const unsigned r1 = r0 + per_signal;
        unsigned rank = 0;  // rows of expert e seen so far, in assignment order
        for (unsigned base = 0; base < n && rank < r1 && rank < cap; base += 32) {
            const bool hit = base + lane < n && route[base + lane] == e;
            unsigned mask = __ballot_sync(0xffffffffu, hit);
            while (mask != 0 && rank < r1 && rank < cap) {
                const unsigned bit = __ffs(mask) - 1;
                mask &= mask - 1;
                const unsigned row = rank++;
                if (row < r0) {
                    continue;
                }
                const unsigned token = (base + bit) / p->top_k;
                const uint4* src = x + static_cast<unsigned long long>(token) * vecs;
                uint4* dst = xe + (static_cast<unsigned long long>(e) * cap + row) * vecs;
                for (unsigned v = lane; v < vecs; v += 32) {
                    dst[v] = src[v];
                }
            }
        }
        __syncwarp();
        if (rank > r0 && lane == 0) {  // the group holds kept rows: signal its tile
            kl_moe_comm_tokens_ready_counter_add(e * (cap / tile) + r0 / tile, 1);
        }
    }
    __threadfence();  // `slots` is read by other blocks in the combine phase
}

extern "C" __device__ void moe_comm_main(const CommParams* params, unsigned char* smem) {
    const unsigned tid = threadIdx.x - 32 * kl_moe_comm_comm_warp0();
    const unsigned* program = static_cast<const unsigned*>(params->program);
    for (unsigned i = 0; i < params->num_instrs; ++i) {
        bar_sync(kl_moe_comm_phase_bar_id(), kl_moe_comm_phase_threads());  // begin instruction i
        if ((program[i] & 0xffu) == kDispatch) {
            dispatch(params, smem, tid);
        }
        bar_sync(kl_moe_comm_phase_bar_id(), kl_moe_comm_phase_threads());  // end instruction i
    }
}
