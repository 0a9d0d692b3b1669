"""A persistent Python session over a linked kernel: load once, bind buffers, launch many times.

``run_linked`` builds everything per call (module, params block, argument array) and
waits; that is right for a test and wrong for a serving loop. A :class:`Session` does
the work once:

    with Session("out/ring") as s:
        s.bind(src=x, dst=y, tiles=37)        # torch tensors, DeviceBuffers or addresses
        s.launch(grid=4)                      # one cuLaunchKernelEx, no synchronisation
        graph = s.capture(launches=10, grid=4)
        graph.replay()                        # one cuGraphLaunch for all ten
        s.synchronize()

The link's host providers (``host provider … fn F``) are compiled with the system C
compiler and run at ``bind`` (runtime/host_providers.py).

``bind`` takes any object with ``__cuda_array_interface__`` (PyTorch, CuPy, Numba) or
``__dlpack__`` for a ``ptr`` field and keeps a reference to it, so the memory outlives
every launch that reads it. Launches go to the session's own stream; after ``bind``,
``launch`` is the driver call and nothing else (the params block and the argument array
are built at bind time, the launch's driver configuration once per grid). Launches take the
link's launch configuration (linker/launch_config.py), as ``kernel.h`` does: the grid the
pipeline states, the cluster and cooperative attributes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cuda.bindings import driver

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from linker.launch_config import Launch
from runtime.host_providers import Providers
from runtime.launch import DeviceBuffer, GpuSession, check_cuda, driver_config, enqueue, prepare
from runtime.run import LinkedKernel, Value, params_block

_DLPACK_CUDA = 2  # kDLCUDA


class Graph:
    """A captured sequence of launches, replayed with one driver call."""

    def __init__(self, session: Session, graph: Any, executable: Any, launches: int) -> None:
        self._session, self._graph, self._exec, self.launches = session, graph, executable, launches

    def replay(self) -> None:
        (err,) = driver.cuGraphLaunch(self._exec, self._session.stream)
        check_cuda(err, "cuGraphLaunch")

    def close(self) -> None:
        driver.cuGraphExecDestroy(self._exec)
        driver.cuGraphDestroy(self._graph)


class Session:
    """One linked kernel loaded on one device, with its own stream and bound arguments."""

    def __init__(self, link_dir: str | Path, *, device: int = 0) -> None:
        self.linked = LinkedKernel.load(link_dir)
        self.gpu = GpuSession(device)
        try:
            module = self.gpu.load(self.linked.cubin)
            self._function = module.kernel(self.linked.kernel).function
            self._counters = _counter_array(module.module, self.linked.map)
            self._sms = self.gpu.sms
            launch = self.linked.launch
            prepare(self._function, launch.dynamic_smem, launch.nonportable_cluster)
            err, self.stream = driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
            check_cuda(err, "cuStreamCreate")
        except BaseException:
            self.gpu.close()
            raise
        self._configs: dict[int | None, tuple[Launch, Any]] = {}  # by grid: a launch is then one driver call
        self._what = f"kernel `{self.linked.kernel}`"
        self._keep: list[object] = []
        self._args: tuple[ctypes.Array[ctypes.c_char], ctypes.Array[ctypes.c_void_p]] | None = None
        self._params = 0
        self._graphs: list[Graph] = []
        try:
            self.providers = Providers(link_dir, self.linked.map)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- arguments

    def bind(self, **values: object) -> None:
        """Build the params block once from ``values`` (fields by name or ``stage.field``).

        Then the link's host providers run on it, in stage order (``kernel.h``'s
        ``kl_<pipeline>_provide``): the fields they fill take no value here. They run at
        bind, not per launch, because the block is built here once and every launch and
        captured graph reuses it.
        """
        resolved: dict[str, Value] = {}
        keep: list[object] = []
        filled = self.providers.filled
        for key, value in values.items():
            if key in filled or any(f.endswith(f".{key}") for f in filled):
                raise DiagnosticError(
                    [
                        Diagnostic(
                            Code.E_RUN, f"`{key}` is filled by a host provider of the link", helps=(f"drop `{key}`",)
                        )
                    ]
                )
            resolved[key] = _value(key, value)
            keep.append(value)
        for qualified in filled:
            resolved[qualified] = 0  # written by its provider below
        block = params_block(self.linked.map, resolved)
        self._keep = keep
        if block:
            data = ctypes.create_string_buffer(block, len(block))
            pointers = (ctypes.c_void_p * 1)(ctypes.addressof(data))
            self._args = (data, pointers)
            self._params = ctypes.addressof(pointers)
            self.providers.call(ctypes.addressof(data), int(self.stream))
        else:
            self._args, self._params = None, 0
            self.providers.call(0, int(self.stream))

    # ------------------------------------------------------------- launches

    def launch(self, grid: int | None = None) -> None:
        """Enqueue one launch on the session's stream (no synchronisation).

        A link with counters gets them zeroed first on the same stream (the reset rule of
        linker/counters.py), so every launch, replayed graphs too, starts from zero.
        """
        if self._counters is not None:
            (err,) = driver.cuMemsetD32Async(self._counters[0], 0, self._counters[1], self.stream)
            check_cuda(err, "cuMemsetD32Async", "zeroing the kernel's counters")
        found = self._configs.get(grid)
        if found is None:
            plan = self.linked.plan(grid, self._sms)
            found = self._configs[grid] = (plan, driver_config(plan, self.stream))
        enqueue(self._function, found[0], self._params, self.stream, self._what, found[1])

    def capture(self, launches: int = 1, grid: int | None = None) -> Graph:
        """Capture ``launches`` launches with the current arguments into a CUDA graph."""
        if launches < 1:
            raise DiagnosticError(
                [Diagnostic(Code.E_RUN, "a graph captures at least one launch", helps=("pass `launches=1` or more",))]
            )
        (err,) = driver.cuStreamBeginCapture(
            self.stream, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        )
        check_cuda(err, "cuStreamBeginCapture")
        try:
            for _ in range(launches):
                self.launch(grid)
        finally:
            err, graph = driver.cuStreamEndCapture(self.stream)
        check_cuda(err, "cuStreamEndCapture")
        err, executable = driver.cuGraphInstantiate(graph, 0)
        check_cuda(err, "cuGraphInstantiate")
        captured = Graph(self, graph, executable, launches)
        self._graphs.append(captured)
        return captured

    def synchronize(self) -> None:
        (err,) = driver.cuStreamSynchronize(self.stream)
        check_cuda(err, "cuStreamSynchronize")

    def close(self) -> None:
        for graph in self._graphs:
            graph.close()
        self._graphs = []
        driver.cuStreamDestroy(self.stream)
        self.gpu.close()


def _counter_array(module: Any, link_map: Mapping[str, Any]) -> tuple[int, int] | None:
    """(address, words) of the link's counter array, or None when it has no counters."""
    counters = link_map.get("counters")
    if not counters or not counters.get("words"):
        return None
    err, address, size = driver.cuModuleGetGlobal(module, str(counters["symbol"]).encode())
    check_cuda(err, "cuModuleGetGlobal", f"the counter array `{counters['symbol']}`")
    words = int(counters["words"])
    if int(size) < 4 * words:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_CUDA,
                    f"the counter array `{counters['symbol']}` holds {size} B, the link map says {words} words",
                )
            ]
        )
    return int(address), words


def device_pointer(obj: object) -> int:
    """The device address of a CUDA array (``__cuda_array_interface__`` or ``__dlpack__``)."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, Mapping):
        return int(cai["data"][0])
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        kind, _ = obj.__dlpack_device__()
        if int(kind) != _DLPACK_CUDA:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_RUN,
                        f"a `{type(obj).__name__}` on DLPack device {kind} is not CUDA memory",
                        helps=("move it to the GPU first",),
                    )
                ]
            )
        return _dlpack_data(obj.__dlpack__())
    raise DiagnosticError(
        [
            Diagnostic(
                Code.E_RUN,
                f"a `{type(obj).__name__}` is not CUDA memory",
                helps=("pass a DeviceBuffer, an address, or an array with __cuda_array_interface__ or __dlpack__",),
            )
        ]
    )


def _value(key: str, value: object) -> Value:
    if isinstance(value, (bool, int, float, DeviceBuffer)):
        return value
    return device_pointer(value)


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_uint32),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    ]


def _dlpack_data(capsule: object) -> int:
    """``data + byte_offset`` of a DLPack capsule (left unconsumed: its deleter still runs)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor")
    tensor = _DLTensor.from_address(address)
    return int(tensor.data or 0) + int(tensor.byte_offset)
