"""Kernel facts read from cubins agree with what ptxas reports for the same link."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from diagnostics import DiagnosticError
from toolchain.cubin import read_cubin
from toolchain.cuda import compile_nvrtc, link

pytestmark = pytest.mark.toolchain

KERNELS = r"""
extern "C" __global__ void light(int* o) { o[threadIdx.x] = threadIdx.x; }

extern "C" __global__ void heavy(float* o, int n) {
    float acc[48];
    for (int i = 0; i < 48; ++i) acc[i] = o[i * n + threadIdx.x];
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + j) % 48] + 1.0f;
    for (int i = 0; i < 48; ++i) o[i * n + threadIdx.x] = acc[i];
}

extern "C" __global__ void __launch_bounds__(1024, 1) bounded(float* o, int n) {
    float acc[48];
    for (int i = 0; i < 48; ++i) acc[i] = o[i * n + threadIdx.x];
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + j) % 48] + 1.0f;
    for (int i = 0; i < 48; ++i) o[i * n + threadIdx.x] = acc[i];
}

extern "C" __global__ void __launch_bounds__(384, 1) mid(float* o, int n) {
    float acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = o[i * n + threadIdx.x];
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < 16; ++i) acc[i] = acc[i] * acc[(i + j) & 15] + 1.0f;
    for (int i = 0; i < 16; ++i) o[i * n + threadIdx.x] = acc[i];
}

extern "C" __global__ void smem4096(int* o) {
    __shared__ int buf[1024];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    o[threadIdx.x] = buf[1023 - threadIdx.x];
}

extern "C" __global__ void smem100(int* o) {
    __shared__ char buf[100];
    buf[threadIdx.x % 100] = 1;
    __syncthreads();
    o[threadIdx.x] = buf[(threadIdx.x + 1) % 100];
}

extern "C" __global__ void dynamic_only(int* o) {
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = 1;
    __syncthreads();
    o[threadIdx.x] = dyn[threadIdx.x ^ 1];
}

extern "C" __device__ __noinline__ int helper(int* o, int x) { o[x] = x; return o[x + 1]; }

extern "C" __global__ void params(int* o, double d, char c) {
    o[threadIdx.x] = helper(o, threadIdx.x) + d + c;
}
"""


@pytest.fixture(scope="module", params=["sm_90a", "sm_100a", "sm_120a"])
def linked(request: pytest.FixtureRequest) -> tuple[bytes, dict[str, tuple[int, int, int]]]:
    arch = request.param
    ltoir = compile_nvrtc(KERNELS, "kernels.cu", arch=arch).ltoir
    result = link([("kernels", ltoir)], arch=arch, verbose=True)
    usage = {k: (u.registers, u.static_smem, u.barriers) for k, u in result.ptxas_usage().items()}
    return result.cubin, usage


def test_facts_match_ptxas(linked: tuple[bytes, dict[str, tuple[int, int, int]]]) -> None:
    cubin, usage = linked
    info = read_cubin(cubin)
    assert set(info.kernel_names) == set(usage)
    for kernel in info.kernels:
        assert (kernel.registers, kernel.static_smem, kernel.barriers) == usage[kernel.name]


def test_register_pressures_differ(linked: tuple[bytes, dict[str, tuple[int, int, int]]]) -> None:
    info = read_cubin(linked[0])
    regs = {k.name: k.registers for k in info.kernels}
    assert regs["light"] < regs["mid"] < regs["heavy"]
    assert regs["bounded"] <= 64  # 65536 registers / 1024 threads
    bounded, mid = info.kernel("bounded"), info.kernel("mid")
    assert bounded is not None and bounded.max_threads == (1024, 1, 1)
    assert mid is not None and mid.max_threads == (384, 1, 1) and mid.max_registers == 168
    light = info.kernel("light")
    assert light is not None and light.max_threads is None and light.max_registers is None


def test_static_shared_memory_excludes_the_reserved_kilobyte(
    linked: tuple[bytes, dict[str, tuple[int, int, int]]],
) -> None:
    info = read_cubin(linked[0])
    smem = {k.name: k.static_smem for k in info.kernels}
    assert smem["smem4096"] == 4096
    assert smem["smem100"] == 112  # rounded up to 16 bytes by ptxas
    assert smem["dynamic_only"] == 0 and smem["light"] == 0


def test_parameters(linked: tuple[bytes, dict[str, tuple[int, int, int]]]) -> None:
    info = read_cubin(linked[0])
    params = info.kernel("params")
    assert params is not None
    assert params.param_bytes == 17
    assert [(p.ordinal, p.offset, p.size) for p in params.params] == [(0, 0, 8), (1, 8, 8), (2, 16, 1)]
    assert "helper" not in info.kernel_names


def test_sm_number() -> None:
    ltoir = compile_nvrtc(KERNELS, "kernels.cu", arch="sm_120a").ltoir
    assert read_cubin(link([("k", ltoir)], arch="sm_120a").cubin).sm == 120


def test_unreadable_inputs() -> None:
    for data in (b"", b"garbage", b"\x7fELF" + bytes(60), Path(sys.executable).read_bytes()):
        with pytest.raises(DiagnosticError) as excinfo:
            read_cubin(data, name="x.cubin")
        assert excinfo.value.diagnostics[0].code == "E-CUBIN"
