// moe.act — role `act` (4 warps, a warpgroup): activation and combine (contract: act.kc).
//
// `expert` phase: walks the expert tiles exactly as moe.gemm deals them (same blocks, same
// skipped tiles, chunks of `slot_elems / hidden` rows) and for each chunk waits on the full
// barrier of its ring `h` slot, writes GELU(y) (erf form) of the chunk's rows to
// `ye[expert][row]` (f32, `hidden` per row) and releases the slot (one arrival per warp).
// `combine` phase (GRID_SYNC: every thread first waits until `phase_done` slot i - 1 shows the
// whole grid done with the expert phase): tokens are dealt to blocks round-robin and
//   out[t, n] = sum over k = 0 .. top_k - 1 of gate[t, k] * ye[expert(t, k)][slots[t, k], n]
// in order of k, starting from 0, with a dropped assignment (slots = 0xffffffff) adding 0.

#include "kl_moe_act.h"

// bar.sync on a named barrier from its handles (what the header's `kl_..._sync()` macros expand to).
static __device__ __forceinline__ void bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static constexpr unsigned kExpert = 2;
static constexpr unsigned kCombine = 3;
static constexpr unsigned kGridSync = 0x100;
static constexpr unsigned kThreads = 128;  // role act warps 4
static constexpr unsigned kBarrierBytes = 8;  // slot i's barrier: slot 0's + 8 * i
static constexpr unsigned kDropped = 0xffffffffu;

static __device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

static __device__ unsigned kept_rows(const unsigned* routing, unsigned n, unsigned e, unsigned cap) {
    unsigned load = 0;
    for (unsigned a = 0; a < n; ++a) {
        load += __ldg(routing + a) == e;
    }
    return load < cap ? load : cap;
}

static __device__ void activation(const ActParams* p, unsigned char* smem, unsigned tid, unsigned& slot, unsigned& phase) {
    const unsigned lane = tid & 31;
    const unsigned hidden = p->hidden;
    const unsigned n = p->tokens * p->top_k;
    const unsigned tile = p->tile_rows;
    const unsigned cap = p->capacity;
    const unsigned rows_per_slot = p->slot_elems / hidden;
    const unsigned tiles_per_expert = cap / tile;
    const unsigned tiles = p->num_experts * tiles_per_expert;
    const unsigned depth = kl_moe_act_h_depth();
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    float* ye = static_cast<float*>(p->ye);
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
        const unsigned e = t / tiles_per_expert;
        const unsigned j = t % tiles_per_expert;
        const unsigned kept = kept_rows(static_cast<const unsigned*>(p->routing), n, e, cap);
        if (kept <= j * tile) {
            continue;
        }
        const unsigned rows = kept - j * tile < tile ? kept - j * tile : tile;
        for (unsigned r0 = 0; r0 < rows; r0 += rows_per_slot) {
            const unsigned count = rows - r0 < rows_per_slot ? rows - r0 : rows_per_slot;
            kl_moe_act_h_full_wait(slot, phase);
            const float* in = reinterpret_cast<const float*>(smem + kl_moe_act_h_act_in_smem() + kl_moe_act_h_act_in_stride() * slot);
            float* dst = ye + (static_cast<unsigned long long>(e) * cap + j * tile + r0) * hidden;
            for (unsigned i = tid; i < count * hidden; i += kThreads) {
                const float y = in[i];
                dst[i] = 0.5f * y * (1.0f + erff(y * 0.70710678118654752f));
            }
            __syncwarp();
            if (lane == 0) {
                mbarrier_arrive(base + kl_moe_act_h_empty_bar() + kBarrierBytes * slot);  // `empty arrive per_warp(act)`
            }
            if (++slot == depth) {
                slot = 0;
                phase ^= 1;
            }
        }
    }
    __threadfence();  // ye is read by other blocks in the combine phase
}

static __device__ void combine(const ActParams* p, unsigned tid) {
    const unsigned hidden = p->hidden;
    const unsigned k_max = p->top_k;
    const unsigned cap = p->capacity;
    const unsigned* routing = static_cast<const unsigned*>(p->routing);
    const unsigned* slots = static_cast<const unsigned*>(p->slots);
    const float* gate = static_cast<const float*>(p->gate);
    const float* ye = static_cast<const float*>(p->ye);
    float* out = static_cast<float*>(p->out);
    for (unsigned t = blockIdx.x; t < p->tokens; t += gridDim.x) {
        for (unsigned col = tid; col < hidden; col += kThreads) {
            float acc = 0.0f;
            for (unsigned k = 0; k < k_max; ++k) {
                const unsigned a = t * k_max + k;
                const unsigned row = __ldcg(slots + a);  // written by other blocks in the dispatch phase
                if (row != kDropped) {
                    const unsigned long long at = (static_cast<unsigned long long>(routing[a]) * cap + row) * hidden;
                    acc = fmaf(gate[a], __ldcg(ye + at + col), acc);
                }
            }
            out[static_cast<unsigned long long>(t) * hidden + col] = acc;
        }
    }
}

extern "C" __device__ void moe_act_main(const ActParams* params, unsigned char* smem) {
    const unsigned tid = threadIdx.x - 32 * kl_moe_act_act_warp0();
    const unsigned* program = static_cast<const unsigned*>(params->program);
    unsigned slot = 0;
    unsigned phase = 0;  // flips each time the slot index wraps
    for (unsigned i = 0; i < params->num_instrs; ++i) {
        bar_sync(kl_moe_act_phase_bar_id(), kl_moe_act_phase_threads());  // begin instruction i
        const unsigned op = program[i];
        if ((op & kGridSync) && i > 0) {
            kl_moe_act_phase_done_counter_wait(i - 1, gridDim.x);  // every block is done with instruction i - 1
        }
        if ((op & 0xffu) == kExpert) {
            activation(params, smem, tid, slot, phase);
        } else if ((op & 0xffu) == kCombine) {
            combine(params, tid);
        }
        bar_sync(kl_moe_act_phase_bar_id(), kl_moe_act_phase_threads());  // end instruction i
    }
}
