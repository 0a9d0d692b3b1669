"""Run a linked cubin on a GPU through the CUDA driver API (``cuda.bindings.driver``).

Importing this module never touches the driver, so it imports on machines without
a GPU; :func:`gpu_available` answers False there instead of raising. Every failing
driver call becomes a ``DiagnosticError`` with code ``E-CUDA`` naming the call and
the CUDA error (``CUDA_ERROR_INVALID_VALUE``, ``CUDA_ERROR_MISALIGNED_ADDRESS``, …).

Usage::

    with GpuSession() as gpu:
        kernel = gpu.load(cubin).kernel("k")
        out = gpu.alloc(4096)
        gpu.launch(kernel, grid=4, block=256, args=[out, ctypes.c_int32(1024)])
        data = gpu.download(out)

Every launch goes through :func:`enqueue`: ``cuLaunchKernelEx`` with a :class:`Launch`
plan's dimensions and attributes (cluster dimension, cooperative), after :func:`prepare`
set the function attributes it needs. A linked kernel's plan comes from its link's
launch configuration (linker/launch_config.py), the one ``kernel.h`` launches with too.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from cuda.bindings import driver

from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from hardware.targets import TargetSpec, target_for_sm
from linker.launch_config import Launch
from toolchain.cubin import KernelInfo, read_cubin

Dim3 = int | tuple[int, int, int]


@dataclass(frozen=True)
class DeviceBuffer:
    """A device allocation made by a :class:`GpuSession`."""

    ptr: int
    nbytes: int


KernelArg: TypeAlias = (
    "DeviceBuffer | bytes | bytearray | ctypes.Structure | ctypes.Array[Any] | ctypes._SimpleCData[Any]"
)


@dataclass(frozen=True)
class Kernel:
    name: str
    function: Any = field(repr=False)
    info: KernelInfo | None


@dataclass(frozen=True)
class LoadedCubin:
    module: Any = field(repr=False)
    kernels: tuple[KernelInfo, ...]

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name`` of this cubin (``E-CUDA`` if the cubin lacks it)."""
        err, function = driver.cuModuleGetFunction(self.module, name.encode())
        _check(err, "cuModuleGetFunction", f"kernel `{name}`")
        info = next((k for k in self.kernels if k.name == name), None)
        return Kernel(name, function, info)


@functools.cache
def gpu_available() -> bool:
    """True when a CUDA driver and at least one device are present; never raises."""
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return bool(err == driver.CUresult.CUDA_SUCCESS and count > 0)
    except Exception:
        return False


class GpuSession:
    """The primary context of one device, with the modules and buffers made through it."""

    def __init__(self, device: int = 0) -> None:
        try:
            (err,) = driver.cuInit(0)
        except Exception as exc:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_CUDA,
                        "no CUDA driver is available",
                        notes=(str(exc),),
                        helps=("run GPU work on a machine with an NVIDIA driver",),
                    )
                ]
            ) from exc
        _check(err, "cuInit")
        err, self._device = driver.cuDeviceGet(device)
        _check(err, "cuDeviceGet", f"device {device}")
        err, self._context = driver.cuDevicePrimaryCtxRetain(self._device)
        _check(err, "cuDevicePrimaryCtxRetain")
        (err,) = driver.cuCtxSetCurrent(self._context)
        _check(err, "cuCtxSetCurrent")
        self._buffers: list[DeviceBuffer] = []
        self._modules: list[Any] = []
        self._closed = False
        self.spec: TargetSpec | None = target_for_sm(
            self.attribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10
            + self.attribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        )

    def __enter__(self) -> GpuSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, cubin: bytes) -> LoadedCubin:
        kernels = read_cubin(cubin).kernels
        err, module = driver.cuModuleLoadData(cubin)
        _check(err, "cuModuleLoadData")
        self._modules.append(module)
        return LoadedCubin(module, kernels)

    def alloc(self, nbytes: int) -> DeviceBuffer:
        err, ptr = driver.cuMemAlloc(max(nbytes, 1))
        _check(err, "cuMemAlloc", f"{nbytes} bytes")
        buf = DeviceBuffer(int(ptr), nbytes)
        self._buffers.append(buf)
        (err,) = driver.cuMemsetD8(buf.ptr, 0, max(nbytes, 1))
        _check(err, "cuMemsetD8")
        return buf

    def upload(self, data: bytes | bytearray) -> DeviceBuffer:
        buf = self.alloc(len(data))
        if data:
            (err,) = driver.cuMemcpyHtoD(buf.ptr, bytes(data), len(data))
            _check(err, "cuMemcpyHtoD")
        return buf

    def download(self, buf: DeviceBuffer, nbytes: int | None = None) -> bytes:
        size = buf.nbytes if nbytes is None else nbytes
        out = bytearray(size)
        if size:
            (err,) = driver.cuMemcpyDtoH(out, buf.ptr, size)
            _check(err, "cuMemcpyDtoH")
        return bytes(out)

    def launch(
        self,
        kernel: Kernel,
        *,
        grid: Dim3,
        block: Dim3,
        args: Sequence[KernelArg] = (),
        dynamic_smem: int = 0,
        cluster: Dim3 | None = None,
    ) -> None:
        """Launch and wait for completion; errors of the kernel surface here as ``E-CUDA``."""
        size = _volume(_dim3(cluster)) if cluster is not None else 1
        portable = self.spec.cluster_portable_max if self.spec is not None else size
        plan = Launch(
            _dim3(grid), _dim3(block), dynamic_smem, _dim3(cluster) if cluster else None, False, size > portable
        )
        self.run(kernel, plan, args)

    def run(self, kernel: Kernel, plan: Launch, args: Sequence[KernelArg] = ()) -> None:
        """Launch ``plan`` (a linked kernel's: linker/launch_config.py) and wait; errors surface as ``E-CUDA``."""
        packed = [_pack(a) for a in args]
        if kernel.info is not None:
            _check_args(kernel.info, packed)
        prepare(
            kernel.function, plan.dynamic_smem, plan.nonportable_cluster, self._smem_note(kernel, plan.dynamic_smem)
        )
        buffers = [ctypes.create_string_buffer(p, max(len(p), 1)) for p in packed]
        pointers = (ctypes.c_void_p * max(len(buffers), 1))(*[ctypes.addressof(b) for b in buffers])
        enqueue(kernel.function, plan, ctypes.addressof(pointers) if buffers else 0, 0, f"kernel `{kernel.name}`")
        self.synchronize()

    @property
    def sms(self) -> int:
        """The device's SM count."""
        return self.attribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    def synchronize(self) -> None:
        (err,) = driver.cuCtxSynchronize()
        _check(err, "cuCtxSynchronize")

    def close(self) -> None:
        """Free buffers, unload modules, release the context; errors here are ignored."""
        if self._closed:
            return
        self._closed = True
        for buf in self._buffers:
            driver.cuMemFree(buf.ptr)
        for module in self._modules:
            driver.cuModuleUnload(module)
        driver.cuDevicePrimaryCtxRelease(self._device)

    def attribute(self, attribute: Any) -> int:
        """A ``CU_DEVICE_ATTRIBUTE_*`` value of the session's device."""
        err, value = driver.cuDeviceGetAttribute(attribute, self._device)
        _check(err, "cuDeviceGetAttribute")
        return int(value)

    def _smem_note(self, kernel: Kernel, dynamic: int) -> str:
        static = kernel.info.static_smem if kernel.info else 0
        note = f"kernel `{kernel.name}`: {static} B static + {dynamic} B dynamic shared memory"
        if self.spec is not None:
            note += f"; {self.spec.name} allows {self.spec.smem_per_block_optin} B per block"
        return note


def prepare(function: Any, dynamic_smem: int, nonportable_cluster: bool, note: str = "") -> None:
    """The function attributes a launch needs before it runs: its dynamic shared memory above the default,
    and a cluster above the portable size."""
    if dynamic_smem:
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        (err,) = driver.cuFuncSetAttribute(function, attribute, dynamic_smem)
        _check(err, "cuFuncSetAttribute", note or f"{dynamic_smem} B dynamic shared memory")
    if nonportable_cluster:
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
        (err,) = driver.cuFuncSetAttribute(function, attribute, 1)
        _check(err, "cuFuncSetAttribute", "non-portable cluster size")


def driver_config(plan: Launch, stream: Any) -> Any:
    """The ``CUlaunchConfig`` of ``plan`` on ``stream``: its dimensions and its attributes (the cluster
    dimension, cooperative), what ``kernel.h`` passes to ``cuLaunchKernelEx`` for the same plan."""
    attrs = []
    if plan.cluster is not None:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = plan.cluster
        attrs.append(attr)
    if plan.cooperative:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attr.value.cooperative = 1
        attrs.append(attr)
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = plan.grid
    config.blockDimX, config.blockDimY, config.blockDimZ = plan.block
    config.sharedMemBytes = plan.dynamic_smem
    config.hStream = stream
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config


def enqueue(function: Any, plan: Launch, params: int, stream: Any, what: str = "", config: Any = None) -> None:
    """Queue one launch of ``plan`` (``config``: its :func:`driver_config`, built once by a caller that
    launches it often); ``params`` is the address of the kernel's argument array (0: none)."""
    (err,) = driver.cuLaunchKernelEx(config or driver_config(plan, stream), function, params, 0)
    _check(err, "cuLaunchKernelEx", what)


def _pack(arg: KernelArg) -> bytes:
    if isinstance(arg, DeviceBuffer):
        return bytes(ctypes.c_uint64(arg.ptr))
    if isinstance(arg, (bytes, bytearray)):
        return bytes(arg)
    if isinstance(arg, (ctypes._SimpleCData, ctypes.Structure, ctypes.Array)):
        return bytes(arg)
    raise TypeError(f"kernel arguments are ctypes values, bytes or DeviceBuffer, not {type(arg).__name__}")


def _check_args(info: KernelInfo, packed: list[bytes]) -> None:
    if not info.params:
        return
    if len(packed) != len(info.params):
        raise DiagnosticError(
            [Diagnostic(Code.E_CUDA, f"kernel `{info.name}` takes {len(info.params)} parameters, {len(packed)} given")]
        )
    for param, data in zip(info.params, packed, strict=True):
        if len(data) != param.size:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_CUDA,
                        f"argument {param.ordinal} of kernel `{info.name}` is "
                        f"{len(data)} bytes; the kernel's parameter is {param.size} bytes",
                    )
                ]
            )


def _dim3(value: Dim3) -> tuple[int, int, int]:
    return (value, 1, 1) if isinstance(value, int) else value


def _volume(shape: tuple[int, int, int]) -> int:
    return shape[0] * shape[1] * shape[2]


def _check(err: Any, call: str, context: str = "") -> None:
    if err == driver.CUresult.CUDA_SUCCESS:
        return
    name = getattr(err, "name", str(err))
    notes = [context] if context else []
    try:
        status, text = driver.cuGetErrorString(err)
        if status == driver.CUresult.CUDA_SUCCESS and text:
            notes.append(text.decode() if isinstance(text, bytes) else str(text))
    except Exception as exc:
        notes.append(f"no description: {exc}")
    raise DiagnosticError(
        [
            Diagnostic(
                Code.E_CUDA, f"`{call}` failed: {name}", notes=tuple(notes), data=(("call", call), ("error", name))
            )
        ]
    )


#: Raise ``E-CUDA`` for a failed driver call (for callers that drive the CUDA API themselves).
check_cuda = _check
