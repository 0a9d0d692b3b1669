"""Calls that pass 16-bit floats: the trampoline passes each component's own C type.

The provider defines `scale (bf16) -> bf16` over a 2-byte struct (as `__nv_bfloat16` is);
the caller declares its call site with `unsigned short` bits. The packages' PTX prototypes
say which is which (`.b8[2]` against `.b32`), the trampoline takes the caller's type, copies
the bits into the provider's and back, and LTO inlines it all: no call is left. A provider
that passes the value as 4 bytes is rejected before the link (L-SYMBOL).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlink.api import check, link
from linker.artifacts import HALF_STRUCT
from packing.pack import pack

PROVIDER_KC = """stage "half.provider" version "1.0.0" {
    target sm_90a
    export callable scale (bf16) -> bf16 = half_scale requires converged
}
"""
PROVIDER_CU = """// Doubles a finite, normal bf16 by adding one to its exponent.
struct __align__(2) Bf16 { unsigned short bits; };
extern "C" __device__ Bf16 half_scale(Bf16 x) {
    Bf16 out;
    out.bits = static_cast<unsigned short>(x.bits + 0x80u);
    return out;
}
"""
WIDE_CU = PROVIDER_CU.replace(
    "struct __align__(2) Bf16 { unsigned short bits; };",
    "struct __align__(4) Bf16 { unsigned short bits; unsigned short pad; };",
)
CALLER_KC = """stage "half.caller" version "1.0.0" {
    target sm_90a
    role main entry half_caller_main warps 4
    launch fixed threads 128
    params CallerParams size 16 align 8 {
        data: ptr @ 0
        n: u32 @ 8
    }
    call scale (bf16) -> bf16 as kl_call_hscale from role main guarantees converged, full_warps
}
"""
CALLER_CU = """extern "C" __device__ unsigned kl_half_caller_main_warp0();
extern "C" __device__ unsigned short kl_call_hscale(unsigned short x);  // call scale (bf16) -> bf16
struct CallerParams {
    unsigned short* data;
    unsigned n;
};
extern "C" __device__ void half_caller_main(const CallerParams* params, unsigned char* /*smem*/) {
    const unsigned t = threadIdx.x - 32 * kl_half_caller_main_warp0();
    for (unsigned i = blockIdx.x * 128 + t; i < params->n; i += gridDim.x * 128) {
        params->data[i] = kl_call_hscale(params->data[i]);
    }
}
"""
PIPELINE = """pipeline "half" {
    target sm_90a
    use "half.provider" version ^1.0 from "build/provider.kpkg"
    use "half.caller" version ^1.0 from "build/caller.kpkg"
}
"""


def _build(root: Path, provider: str) -> Path:
    root.mkdir(parents=True)
    for name, kc, cu in (("provider", PROVIDER_KC, provider), ("caller", CALLER_KC, CALLER_CU)):
        (root / f"{name}.kc").write_text(kc)
        (root / f"{name}.cu").write_text(cu)
        pack(root / f"{name}.cu", root / f"{name}.kc", root / "build" / f"{name}.kpkg")
    (root / "half.kp").write_text(PIPELINE)
    return root / "half.kp"


@pytest.mark.toolchain
def test_a_bf16_call_links_with_each_side_passing_its_own_c_type(tmp_path: Path) -> None:
    result = link([_build(tmp_path / "src", PROVIDER_CU)], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    [tramp] = result.output.generated.trampolines
    assert (tramp.caller_ctypes, tramp.export_ctypes) == (
        ("unsigned short", "unsigned short"),
        (HALF_STRUCT, HALF_STRUCT),
    )
    source = result.output.generated.source
    assert f'extern "C" __device__ {HALF_STRUCT} half_scale({HALF_STRUCT});' in source
    assert (
        'extern "C" __device__ unsigned short kl_call_hscale(unsigned short a0) { return kl_bit_cast<unsigned '
        f"short>(half_scale(kl_bit_cast<{HALF_STRUCT}>(a0))); }}"
    ) in source
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert not re.search(r"\bcall(\.uni)?\b", ptx) and ".func" not in ptx  # inlined through the struct types
    assert re.search(r"add\.s16\s+%rs\d+, %rs\d+, 128;", ptx)  # the provider's body, in the caller's loop


@pytest.mark.toolchain
def test_a_bf16_passed_as_four_bytes_is_rejected_before_the_link(tmp_path: Path) -> None:
    pipeline = _build(tmp_path / "src", WIDE_CU)
    result = check([pipeline])
    assert {d.code for d in result.diagnostics if d.is_error} == {"L-SYMBOL"}
    assert any("`half_scale` is `.func (b8[4]) -> b8[4]` in the object" in d.message for d in result.diagnostics)
