"""A self-checking CUDA program that runs a lowered route on a GPU.

Producer threads load their placement registers with element IDs (``m * N + n``, as the
element's bit type), call the generated export function; consumer threads call the
import function for every chunk and count registers that differ from the demand. A
shared-memory placement is first filled by the producer threads. The route's shared
address is 1024, where dynamic shared memory starts on sm_90 with no static shared
memory (specs/hardware.md §1.2); the program checks that and prints ``OK <name>`` or ``FAIL``.
"""

from __future__ import annotations

import math

from transfer_model.lower import LinkConstants, export_symbol, import_symbol, lower
from transfer_model.program import Program, demand_slot
from transfer_model.tensors import TensorExport, TensorImport

SMEM_BASE = 1024


def _ids(values: list[int]) -> str:
    return ", ".join(f"{v}u" for v in values) or "0u"


def harness_source(name: str, program: Program, export: TensorExport, imp: TensorImport) -> str:
    if program.route == "tmem-load":
        raise ValueError("tensor-memory routes need sm_100a; the harness targets sm_90a")
    extents = dict(export.tile)

    def element_id(element: tuple[int, ...]) -> int:
        out = 0
        for value, (_, extent) in zip(element, export.tile, strict=True):
            out = out * extent + value
        return out

    placement = export.placement
    held: list[int] = []
    buffer: list[tuple[int, int]] = []
    if placement.kind == "regs":
        per_thread = program.held
        held = [0] * (placement.thread[1] * per_thread)
        for slot, element in placement.items():
            flat = 0
            for value, (_, extent) in zip(slot[1:], placement.params[1:], strict=True):
                flat = flat * extent + value
            held[slot[0] * per_thread + flat] = element_id(element)
    else:
        buffer = [(address, element_id(element)) for element, (address,) in placement.items()]
    wanted = [
        element_id(imp.demand.evaluate(demand_slot(imp, t, j, c)))
        for t in range(imp.threads.count)
        for c in range(program.chunks)
        for j in range(program.regs_per_call)
    ]
    constants = LinkConstants(
        smem_addr=SMEM_BASE if program.shared else None, barrier_ids=tuple(range(1, 1 + program.barriers))
    )
    word = "unsigned int" if program.elem_bytes == 4 else "unsigned short"
    smem_bytes = max(program.smem_bytes, max((a for a, _ in buffer), default=0) + program.elem_bytes)
    threads = max(program.producer.end, program.consumer.end)
    store = "st.shared.b32 [%0], %1;" if program.elem_bytes == 4 else "st.shared.b16 [%0], %1;"
    constraint = '"r"' if program.elem_bytes == 4 else '"h"'
    return f"""// harness for {name}: route {program.route}
#include <cstdio>
#include <cuda_runtime.h>

{lower(program, constants)}

__device__ const unsigned kl_held_table[] = {{{_ids(held)}}};
__device__ const unsigned kl_wanted[] = {{{_ids(wanted)}}};
__device__ const unsigned kl_buffer_addr[] = {{{_ids([a for a, _ in buffer])}}};
__device__ const unsigned kl_buffer_id[] = {{{_ids([i for _, i in buffer])}}};

__global__ void harness(unsigned* errors, unsigned* base) {{
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x;
    if (tid == 0) *base = (unsigned)__cvta_generic_to_shared(smem);
    {word} held[{max(1, program.held)}];
    const int held_count = {program.held}, buffer_count = {len(buffer)};
    const int producer_first = {program.producer.first}, consumer_first = {program.consumer.first};
    const bool producer = tid - producer_first >= 0 && tid < {program.producer.end};
    const bool consumer = tid - consumer_first >= 0 && tid < {program.consumer.end};
    if (producer) {{
        const int t = tid - producer_first;
        for (int r = 0; r < held_count; ++r) held[r] = ({word})kl_held_table[t * {max(1, program.held)} + r];
        for (int e = t; e < buffer_count; e += {program.producer.count}) {{
            const unsigned address = {SMEM_BASE}u + kl_buffer_addr[e];
            asm volatile("{store}" :: "r"(address), {constraint}(({word})kl_buffer_id[e]) : "memory");
        }}
        {export_symbol(program)}(held);
    }}
    if (consumer) {{
        const int t = tid - consumer_first;
        for (int c = 0; c < {program.chunks}; ++c) {{
            {word} dst[{program.regs_per_call}];
            {import_symbol(program)}(held, dst, c);
            for (int j = 0; j < {program.regs_per_call}; ++j) {{
                if (dst[j] != ({word})kl_wanted[(t * {program.chunks} + c) * {program.regs_per_call} + j]) {{
                    atomicAdd(errors, 1u);
                }}
            }}
        }}
    }}
}}

int main() {{
    unsigned *errors, *base;
    cudaMalloc(&errors, sizeof(unsigned));
    cudaMalloc(&base, sizeof(unsigned));
    cudaMemset(errors, 0, sizeof(unsigned));
    cudaFuncSetAttribute(harness, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem_bytes});
    harness<<<1, {threads}, {smem_bytes}>>>(errors, base);
    cudaError_t status = cudaDeviceSynchronize();
    unsigned host_errors = 0, host_base = 0;
    cudaMemcpy(&host_errors, errors, sizeof(unsigned), cudaMemcpyDeviceToHost);
    cudaMemcpy(&host_base, base, sizeof(unsigned), cudaMemcpyDeviceToHost);
    const bool ok = status == cudaSuccess && host_errors == 0 && host_base == {SMEM_BASE}u;
    std::printf("%s {name} route={program.route} errors=%u base=%u status=%s elements={math.prod(extents.values())}\\n",
                ok ? "OK" : "FAIL", host_errors, host_base, cudaGetErrorString(status));
    return ok ? 0 : 1;
}}
"""
