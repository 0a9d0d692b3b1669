"""A hand-placed stand-in for the linker's generated code, to link and run the example packages.

It defines what specs/handles.md says the linker defines — one function per handle
the packages need, the call trampolines, and a dispatch kernel that runs the ring
inits, ``__syncthreads()``, sets each warpgroup's register budget and enters the
roles with ``(params, smem)`` — with placements fixed by hand instead of solved.
Tests use it to show that the packed components link, fold their handles, and
compute what their sources say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contract_lang.parser import parse_text
from linker.handles import resolve_handles
from linker.manifest import StagePackage, read_stage_package
from linker.toolchain import LinkResult, compile_nvrtc, link

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
KERNEL = "kl_dispatch"

# ring: load = warps 0..3 (WG0), reduce = warps 4..11 (WG1, WG2); depth 4.
# Dynamic shared memory: full barriers at 0, empty at 64, the 4 slots of `stage` from 1024.
RING_DEPTH = 4
RING_SLOT0 = 1024
RING_SLOT_BYTES = 32 * 1024
RING_SMEM = RING_SLOT0 + RING_DEPTH * RING_SLOT_BYTES
RING_HANDLES = {
    "kl_ring_loader_load_warp0": 0, "kl_ring_loader_kv_depth": RING_DEPTH,
    "kl_ring_loader_kv_full_bar": 0, "kl_ring_loader_kv_empty_bar": 64,
    "kl_ring_loader_kv_full_count": 1, "kl_ring_loader_kv_empty_count": 8,
    "kl_ring_loader_stage_smem": RING_SLOT0, "kl_ring_loader_stage_stride": RING_SLOT_BYTES,
    "kl_ring_reduce_reduce_warp0": 4, "kl_ring_reduce_kv_depth": RING_DEPTH,
    "kl_ring_reduce_kv_full_bar": 0, "kl_ring_reduce_kv_empty_bar": 64,
    "kl_ring_reduce_kv_stage_smem": RING_SLOT0, "kl_ring_reduce_kv_stage_stride": RING_SLOT_BYTES,
}
RING_DISPATCH = r'''
extern "C" __device__ void ring_loader_kv_init(const void*, unsigned char*);
extern "C" __device__ void ring_load_main(const void*, unsigned char*);
extern "C" __device__ void ring_reduce_main(const void*, unsigned char*);
struct alignas(8) KlParams { unsigned char loader[16]; unsigned char reduce[16]; };

extern "C" __global__ void __launch_bounds__(384, 1) kl_dispatch(const __grid_constant__ KlParams params) {
    extern __shared__ __align__(1024) unsigned char kl_smem[];
    if (threadIdx.x == 32 * kl_ring_loader_load_warp0()) {
        ring_loader_kv_init(params.loader, kl_smem);
    }
    __syncthreads();
    if (threadIdx.x / 128 == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        ring_load_main(params.loader, kl_smem);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        ring_reduce_main(params.reduce, kl_smem);
    }
}
'''

HELLO_HANDLES = {"kl_hello_caller_main_warp0": 0}
HELLO_DISPATCH = r'''
extern "C" __device__ float hello_scale(float);
extern "C" __device__ float kl_call_scale(float x) { return hello_scale(x); }
extern "C" __device__ void hello_caller_main(const void*, unsigned char*);
struct alignas(8) KlParams { unsigned char caller[24]; };

extern "C" __global__ void __launch_bounds__(128) kl_dispatch(const __grid_constant__ KlParams params) {
    extern __shared__ __align__(1024) unsigned char kl_smem[];
    hello_caller_main(params.caller, kl_smem);
}
'''


@dataclass(frozen=True)
class Linked:
    link: LinkResult
    packages: tuple[StagePackage, ...]


def handle_stubs(values: Mapping[str, int]) -> str:
    return "".join(f'extern "C" __device__ unsigned {name}() {{ return {value}u; }}\n'
                   for name, value in sorted(values.items()))


def needed_handles(package: StagePackage) -> set[str]:
    """The package's needed symbols that its contract binds as handles."""
    stage = parse_text(package.contract_text, package.path, "contract").stages[0]
    return set(resolve_handles(stage, package.captured.needed_symbols))


def link_example(packages: list[Path], values: Mapping[str, int], dispatch: str, *,
                 emit_ptx: bool = False) -> Linked:
    """Link packages with handle stubs for ``values`` and a dispatch kernel, for sm_90a."""
    loaded = tuple(read_stage_package(p) for p in packages)
    wanted = set().union(*(needed_handles(p) for p in loaded))
    missing = wanted - set(values)
    if missing:
        raise AssertionError(f"no value for handles {sorted(missing)}")
    glue = compile_nvrtc(handle_stubs(values) + dispatch, "kl_generated.cu").ltoir
    inputs = [(Path(p.path).name, p.lto_ir) for p in loaded] + [("kl_generated.ltoir", glue)]
    return Linked(link(inputs, kernels=[KERNEL], emit_ptx=emit_ptx), loaded)
