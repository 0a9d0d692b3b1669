"""Tensor memory on sm_100a: the dispatch kernel allocates it, the claims' handles fold, and it is freed.

Linked on the CPU only (no Blackwell GPU here): a warpgroup that stores to and loads from
its tensor-memory claim through `kl_<stage>_<claim>_tmem()`. The dispatch kernel's warp 0
runs `tcgen05.alloc` (a power of two of at least 32 columns covering every claim) into a
word after the placed shared memory and relinquishes the allocation permit before any role
starts; every handle is a column counted from 0, so an allocation that starts elsewhere
traps; after every role has returned, warp 0 frees it (`tcgen05.dealloc`), each side of
the block barrier fenced with `tcgen05.fence`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlink.api import link
from packing.pack import pack
from toolchain.cubin import read_cubin

CONTRACT = """stage "demo.tm" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role mma entry tm_main warps 4 warpgroup
    launch fixed threads 128
    params OutParams size 8 align 8 {
        out: ptr @ 0
    }
    claim tmem acc columns 128
}
"""
SOURCE = """// Each thread stores its lane's first column of `acc` (tensor memory) and reads it back.
extern "C" __device__ unsigned kl_demo_tm_acc_tmem();
extern "C" __device__ unsigned kl_demo_tm_mma_warp0();
struct OutParams { unsigned* out; };
extern "C" __device__ void tm_main(const OutParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32u * kl_demo_tm_mma_warp0();
    const unsigned addr = ((32u * (t / 32u)) << 16) + kl_demo_tm_acc_tmem();  // lane 32 w, the claim's column
    unsigned v = t * 3u + 1u, back;
    asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {%1};" :: "r"(addr), "r"(v) : "memory");
    asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];" : "=r"(back) : "r"(addr) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
    params->out[blockIdx.x * 128u + t] = back;
}
"""
PIPELINE = """pipeline "tm" {
    target sm_100a
    use "demo.tm" version ^1.0 from "build/tm.kpkg"
}
"""


def _build(root: Path, contract: str = CONTRACT) -> Path:
    root.mkdir(parents=True)
    (root / "tm.kc").write_text(contract)
    (root / "tm.cu").write_text(SOURCE)
    pack(root / "tm.cu", root / "tm.kc", root / "build" / "tm.kpkg")
    (root / "tm.kp").write_text(PIPELINE)
    return root / "tm.kp"


@pytest.mark.toolchain
def test_the_dispatch_kernel_allocates_and_frees_the_tensor_memory(tmp_path: Path) -> None:
    result = link([_build(tmp_path / "src")], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    generated = result.output.generated
    assert (generated.dispatch.tmem_columns, generated.dispatch.tmem_slot) == (128, 0)
    assert [(h.symbol, h.value) for h in generated.handles if h.kind == "tmem"] == [("kl_demo_tm_acc_tmem", 0)]
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    order = [m.group(0) for m in re.finditer(r"tcgen05\.(alloc|relinquish_alloc_permit|st|ld|dealloc)\b", ptx)]
    assert order == ["tcgen05.alloc", "tcgen05.relinquish_alloc_permit", "tcgen05.st", "tcgen05.ld", "tcgen05.dealloc"]
    assert ptx.count("tcgen05.fence::before_thread_sync") == 2 and "trap;" in ptx
    assert not re.search(r"\bcall(\.uni)?\b", ptx)
    [kernel] = read_cubin((tmp_path / "out" / "kernel.cubin").read_bytes()).kernels
    assert (kernel.name, kernel.static_smem) == ("kl_dispatch", 0)
    assert "16 B dynamic shared memory" in (tmp_path / "out" / "link.map").read_text()


@pytest.mark.toolchain
def test_claims_past_32_columns_round_the_allocation_up_to_a_power_of_two(tmp_path: Path) -> None:
    acc = "claim tmem acc columns 128"
    contract = CONTRACT.replace(acc, acc + "\n    claim tmem aux columns 64")
    result = link([_build(tmp_path / "src", contract)], tmp_path / "out")
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    assert result.output.generated.dispatch.tmem_columns == 256
