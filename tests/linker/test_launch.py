"""Launching linked cubins (on a GPU), and a clean failure everywhere else."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator

import pytest

from diagnostics import DiagnosticError
from hardware.targets import target_for_sm
from runtime.launch import GpuSession, gpu_available
from toolchain.cuda import compile_nvrtc, link

SOURCE = r"""
extern "C" __device__ float scale(float x);

extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * scale(x[i]) + y[i];
}

extern "C" __global__ void big_smem(unsigned* out, int words) {
    extern __shared__ unsigned dyn[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = i * 3u;
    __syncthreads();
    unsigned sum = 0;
    for (int i = threadIdx.x; i < words; i += blockDim.x) sum += dyn[words - 1 - i];
    atomicAdd(out, sum);
}

extern "C" __global__ void cluster_rank(unsigned* out) {
    unsigned rank, size;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    if (threadIdx.x == 0) out[blockIdx.x] = rank | (size << 16);
}
"""
SCALE = 'extern "C" __device__ float scale(float x) { return 2.0f * x; }\n'


@pytest.fixture(scope="module")
def cubin() -> bytes:
    parts = [("kernels", compile_nvrtc(SOURCE, "kernels.cu").ltoir), ("scale", compile_nvrtc(SCALE, "scale.cu").ltoir)]
    return link(parts, kernels=["axpy", "big_smem", "cluster_rank"]).cubin


@pytest.fixture()
def gpu() -> Iterator[GpuSession]:
    session = GpuSession()
    yield session
    session.close()


def test_gpu_available_never_raises() -> None:
    assert gpu_available() in (True, False)


def test_session_without_gpu_is_a_diagnostic() -> None:
    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(DiagnosticError) as excinfo:
        GpuSession()
    assert excinfo.value.diagnostics[0].code == "E-CUDA"


@pytest.mark.gpu
def test_axpy(cubin: bytes, gpu: GpuSession) -> None:
    n = 1000
    xs = [float(i) for i in range(n)]
    with gpu:
        kernel = gpu.load(cubin).kernel("axpy")
        y = gpu.upload(struct.pack(f"<{n}f", *[1.0] * n))
        x = gpu.upload(struct.pack(f"<{n}f", *xs))
        gpu.launch(kernel, grid=(n + 255) // 256, block=256, args=[y, x, ctypes.c_float(0.5), ctypes.c_int32(n)])
        got = struct.unpack(f"<{n}f", gpu.download(y))
    assert list(got) == [0.5 * 2.0 * v + 1.0 for v in xs]


@pytest.mark.gpu
def test_dynamic_shared_memory_above_the_default(cubin: bytes, gpu: GpuSession) -> None:
    with gpu:
        assert gpu.spec is not None
        kernel = gpu.load(cubin).kernel("big_smem")
        nbytes = gpu.spec.smem_per_block_optin
        words = nbytes // 4
        out = gpu.alloc(4)
        gpu.launch(kernel, grid=1, block=256, args=[out, ctypes.c_int32(words)], dynamic_smem=nbytes)
        assert struct.unpack("<I", gpu.download(out))[0] == sum(i * 3 for i in range(words)) % 2**32
        with pytest.raises(DiagnosticError) as excinfo:
            gpu.launch(kernel, grid=1, block=256, args=[out, ctypes.c_int32(words)], dynamic_smem=nbytes + 1)
    (diag,) = excinfo.value.diagnostics
    assert diag.code == "E-CUDA" and "CUDA_ERROR_INVALID_VALUE" in diag.message


@pytest.mark.gpu
@pytest.mark.parametrize("size", [2, 16])
def test_cluster_launch(cubin: bytes, gpu: GpuSession, size: int) -> None:
    with gpu:
        assert gpu.spec is not None
        if size > gpu.spec.cluster_nonportable_max:
            pytest.skip(f"{gpu.spec.name} allows clusters of {gpu.spec.cluster_nonportable_max}")
        kernel = gpu.load(cubin).kernel("cluster_rank")
        out = gpu.alloc(4 * 2 * size)
        gpu.launch(kernel, grid=2 * size, block=32, args=[out], cluster=size)
        got = struct.unpack(f"<{2 * size}I", gpu.download(out))
    assert list(got) == [(i % size) | (size << 16) for i in range(2 * size)]


@pytest.mark.gpu
def test_errors_are_named(cubin: bytes, gpu: GpuSession) -> None:
    with gpu:
        loaded = gpu.load(cubin)
        kernel = loaded.kernel("axpy")
        out = gpu.alloc(16)
        spec = gpu.spec
        assert spec is not None
        with pytest.raises(DiagnosticError) as excinfo:
            gpu.launch(
                kernel,
                grid=1,
                block=spec.max_threads_per_block + 32,
                args=[out, out, ctypes.c_float(1), ctypes.c_int32(0)],
            )
        assert "CUDA_ERROR_INVALID_VALUE" in excinfo.value.diagnostics[0].message
        with pytest.raises(DiagnosticError) as excinfo:
            gpu.launch(kernel, grid=1, block=32, args=[out, out, ctypes.c_double(1), ctypes.c_int32(0)])
        assert "argument 2 of kernel `axpy` is 8 bytes" in excinfo.value.diagnostics[0].message
        with pytest.raises(DiagnosticError) as excinfo:
            loaded.kernel("missing")
        assert "CUDA_ERROR_NOT_FOUND" in excinfo.value.diagnostics[0].message


@pytest.mark.gpu
def test_hardware_table_matches_the_device(gpu: GpuSession) -> None:
    from cuda.bindings import driver

    with gpu:
        spec = gpu.spec
        assert spec is not None and spec is target_for_sm(spec.sm)
        attr = driver.CUdevice_attribute
        expect = {
            attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: spec.smem_per_block_optin,
            attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: spec.smem_per_sm,
            attr.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: spec.smem_reserved_per_block,
            attr.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: spec.regs_per_block,
            attr.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: spec.regs_per_sm,
            attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: spec.max_threads_per_block,
            attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: spec.max_threads_per_sm,
            attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: spec.max_ctas_per_sm,
            attr.CU_DEVICE_ATTRIBUTE_WARP_SIZE: spec.warp_size,
        }
        for attribute, value in expect.items():
            assert gpu.attribute(attribute) == value, attribute
