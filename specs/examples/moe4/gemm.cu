// moe.gemm — role `expert` (8 warps, two warpgroups): the grouped expert GEMM (contract: gemm.kc).
//
// In the `expert` phase, the expert tiles (expert e, rows j * tile_rows .. + tile_rows of its
// buffer, tiles_per_expert = capacity / tile_rows) are dealt to blocks round-robin. For each
// tile with kept rows (rows = min(load(e), capacity) - j * tile_rows, at most tile_rows; a
// tile without rows is skipped, and `moe.act` skips it the same way):
//  1. every thread waits until counter `tokens_ready` slot e * tiles_per_expert + j reaches
//     the tile's row groups, ceil(rows / tokens_per_signal) (an acquire per thread);
//  2. the tile's rows of `xe` (f16) are staged in the `operands` claim;
//  3. in chunks of `slot_elems / hidden` rows (the ring slot holds `slot_elems` f32), thread
//     n computes column n of y = x @ weights[e] (f16 weights, hidden x hidden, row k = input
//     feature k; f32 FMAs in order of k) into a slot of ring `h`, then each warp arrives on
//     the slot's full barrier (`full arrive per_warp(expert)`).
//
// The facts of `moe.comm` (tile_rows, capacity, tokens_per_signal) and of `moe.interp`
// (num_experts, top_k) arrive in the params; slot_elems is this stage's, read through its
// handle. elem_bits is compiled in (`assumes fact elem_bits: u32 == 16`): `xe` is read as f16.

#include "kl_moe_gemm.h"

// bar.sync on a named barrier from its handles (what the header's `kl_..._sync()` macros expand to).
static __device__ __forceinline__ void bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static constexpr unsigned kExpert = 2;
static constexpr unsigned kThreads = 256;  // role expert warps 8
static constexpr unsigned kOperandBytes = 65536;  // claim smem operands bytes 64KiB
static constexpr unsigned kBarrierBytes = 8;

static __device__ __forceinline__ float half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

static __device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

static __device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Kept rows of expert e: its assignments, at most `capacity`.
static __device__ unsigned kept_rows(const unsigned* routing, unsigned n, unsigned e, unsigned cap) {
    unsigned load = 0;
    for (unsigned a = 0; a < n; ++a) {
        load += __ldg(routing + a) == e;
    }
    return load < cap ? load : cap;
}

static __device__ void expert_phase(const GemmParams* p, unsigned char* smem, unsigned tid, unsigned& slot,
                             unsigned& phase) {
    const unsigned lane = tid & 31;
    const unsigned hidden = p->hidden;
    const unsigned n = p->tokens * p->top_k;
    const unsigned tile = p->tile_rows;
    const unsigned cap = p->capacity;
    const unsigned rows_per_slot = kl_moe_gemm_fact_slot_elems() / hidden;
    if (kl_moe_gemm_fact_elem_bits() != 16 || hidden % 8 != 0 || rows_per_slot == 0 ||
        tile * hidden * 2 > kOperandBytes) {
        __trap();
    }
    const unsigned tiles_per_expert = cap / tile;
    const unsigned tiles = p->num_experts * tiles_per_expert;
    const unsigned depth = kl_moe_gemm_h_depth();
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const unsigned short* xs = reinterpret_cast<const unsigned short*>(smem + kl_moe_gemm_operands_smem());
    uint4* xs4 = reinterpret_cast<uint4*>(smem + kl_moe_gemm_operands_smem());
    const uint4* xe4 = static_cast<const uint4*>(p->xe);
    const unsigned short* w = static_cast<const unsigned short*>(p->weights);
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
        const unsigned e = t / tiles_per_expert;
        const unsigned j = t % tiles_per_expert;
        const unsigned kept = kept_rows(static_cast<const unsigned*>(p->routing), n, e, cap);
        if (kept <= j * tile) {
            continue;
        }
        const unsigned rows = kept - j * tile < tile ? kept - j * tile : tile;
        kl_moe_gemm_tokens_ready_counter_wait(t, (rows + p->tokens_per_signal - 1) / p->tokens_per_signal);
        bar_sync(kl_moe_gemm_expert_sync_bar_id(), kl_moe_gemm_expert_sync_threads());  // the previous tile's readers are done with the operands
        const unsigned long long first = (static_cast<unsigned long long>(e) * cap + j * tile) * (hidden / 8);
        for (unsigned v = tid; v < rows * (hidden / 8); v += kThreads) {
            xs4[v] = __ldcg(xe4 + first + v);  // written by other blocks: not through L1
        }
        bar_sync(kl_moe_gemm_expert_sync_bar_id(), kl_moe_gemm_expert_sync_threads());
        const unsigned short* we = w + static_cast<unsigned long long>(e) * hidden * hidden;
        for (unsigned r0 = 0; r0 < rows; r0 += rows_per_slot) {
            const unsigned count = rows - r0 < rows_per_slot ? rows - r0 : rows_per_slot;
            kl_moe_gemm_h_empty_wait(slot, phase ^ 1);
            float* out = reinterpret_cast<float*>(smem + kl_moe_gemm_h_act_in_smem() + kl_moe_gemm_h_act_in_stride() * slot);
            for (unsigned col = tid; col < hidden; col += kThreads) {
                for (unsigned r = 0; r < count; ++r) {
                    const unsigned short* xrow = xs + (r0 + r) * hidden;
                    float acc = 0.0f;
                    for (unsigned k = 0; k < hidden; ++k) {
                        acc = fmaf(half_to_float(xrow[k]), half_to_float(__ldg(we + k * hidden + col)), acc);
                    }
                    out[r * hidden + col] = acc;
                }
            }
            __syncwarp();
            if (lane == 0) {
                mbarrier_arrive(base + kl_moe_gemm_h_full_bar() + kBarrierBytes * slot);  // `full arrive per_warp(expert)`
            }
            if (++slot == depth) {
                slot = 0;
                phase ^= 1;
            }
        }
    }
}

// Ring init (`init by expert`), run by one thread before any role starts.
extern "C" __device__ void moe_gemm_h_init(const GemmParams* /*params*/, unsigned char* smem) {
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    for (unsigned s = 0; s < kl_moe_gemm_h_depth(); ++s) {
        mbarrier_init(base + kl_moe_gemm_h_full_bar() + kBarrierBytes * s, kl_moe_gemm_h_full_count());
        mbarrier_init(base + kl_moe_gemm_h_empty_bar() + kBarrierBytes * s, kl_moe_gemm_h_empty_count());
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

extern "C" __device__ void moe_expert_main(const GemmParams* params, unsigned char* smem) {
    const unsigned tid = threadIdx.x - 32 * kl_moe_gemm_expert_warp0();
    const unsigned* program = static_cast<const unsigned*>(params->program);
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned i = 0; i < params->num_instrs; ++i) {
        bar_sync(kl_moe_gemm_phase_bar_id(), kl_moe_gemm_phase_threads());  // begin instruction i
        if ((program[i] & 0xffu) == kExpert) {
            expert_phase(params, smem, tid, slot, phase);
        }
        bar_sync(kl_moe_gemm_phase_bar_id(), kl_moe_gemm_phase_threads());  // end instruction i
    }
}
