// moe.interp — the interpreter role `sched` (contract: interp.kc).
//
// Every role of the block walks the same instruction list `program` (one u32 per
// instruction: bits 0..7 the phase — 1 dispatch, 2 expert, 3 combine — and bit 8 GRID_SYNC)
// and meets the other roles at the rendezvous `phase` twice per instruction: once before
// it starts (the block's previous instruction is done) and once after it ends. So the
// phases of one block never overlap, which is what lets `moe.comm`'s staging (lifetime
// phase dispatch) and `moe.gemm`'s operands (lifetime phase expert) share storage.
//
// `sched` itself checks the program (a bad instruction, or more instructions than counter
// `phase_done` has slots, traps: no role may run a phase the contracts do not know), and
// once its block has finished instruction i adds 1 to slot i of `phase_done` (a release:
// every role's writes of instruction i came before the barrier). A role whose instruction
// carries GRID_SYNC waits until slot i - 1 reaches the grid size.

#include "kl_moe_interp.h"

// bar.sync on a named barrier from its handles (what the header's `kl_..._sync()` macros expand to).
static __device__ __forceinline__ void bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static constexpr unsigned kOps = 3;           // dispatch, expert, combine
static constexpr unsigned kGridSync = 0x100;  // bit 8
static constexpr unsigned kSlots = 8;         // claim counter phase_done slots 8

extern "C" __device__ void moe_sched_main(const InterpParams* params, unsigned char* /*smem*/) {
    const unsigned lane = threadIdx.x & 31;
    const unsigned* program = static_cast<const unsigned*>(params->program);
    for (unsigned i = 0; i < params->num_instrs; ++i) {
        bar_sync(kl_moe_interp_phase_bar_id(), kl_moe_interp_phase_threads());  // begin instruction i
        const unsigned op = program[i];
        if (params->num_instrs > kSlots || (op & 0xffu) == 0 || (op & 0xffu) > kOps || (op & ~(0xffu | kGridSync))) {
            __trap();
        }
        bar_sync(kl_moe_interp_phase_bar_id(), kl_moe_interp_phase_threads());  // end instruction i: every role of the block is done with it
        if (lane == 0) {
            kl_moe_interp_phase_done_counter_add(i, 1);
        }
    }
}
