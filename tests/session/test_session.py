"""`kernlink.Session`: CUDA arrays bind by address; on a GPU, launches and graph replays match the reference."""

from __future__ import annotations

import ctypes
from array import array
from pathlib import Path

import pytest
from cuda.bindings import driver

from diagnostics import DiagnosticError
from kernlink.api import LinkResult
from runtime.launch import GpuSession
from runtime.session import Session, device_pointer
from tests.link.examples import floats, ring_reference

Linked = dict[str, tuple[LinkResult, Path]]


class _Cai:
    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        return {"data": (0x7F00_0000_1000, False), "shape": (4,), "typestr": "<f4", "version": 3}


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


class _DLPack:
    """A producer of an unversioned DLPack capsule, as ``torch`` hands one out."""

    def __init__(self, data: int, offset: int, device: int = 2) -> None:
        self.tensor = _DLTensor(data=data, device_type=device, byte_offset=offset)
        self.device = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device, 0)

    def __dlpack__(self) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


def test_cuda_array_interface_gives_the_address() -> None:
    assert device_pointer(_Cai()) == 0x7F00_0000_1000


def test_dlpack_gives_data_plus_offset() -> None:
    assert device_pointer(_DLPack(0x5000_0000, 256)) == 0x5000_0100


def test_host_memory_and_plain_objects_are_refused() -> None:
    with pytest.raises(DiagnosticError, match="not CUDA memory"):
        device_pointer(_DLPack(0x1000, 0, device=1))
    with pytest.raises(DiagnosticError, match="is not CUDA memory"):
        device_pointer(object())


@pytest.mark.gpu
def test_session_launches_and_graph_replays_match_the_reference(linked: Linked) -> None:
    tiles, blocks = 37, 4
    data = floats(tiles * 8192, tiles)
    want = ring_reference(data, tiles)
    with GpuSession() as gpu, Session(linked["ring"][1]) as session:
        src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 8 * 4)
        session.bind(src=src, dst=dst, tiles=tiles)
        session.launch(grid=blocks)
        session.synchronize()
        assert array("f", gpu.download(dst)).tolist() == want
        graph = session.capture(launches=5, grid=blocks)
        (err,) = driver.cuMemsetD8(dst.ptr, 0, dst.nbytes)
        assert err == driver.CUresult.CUDA_SUCCESS
        graph.replay()
        session.synchronize()
        assert array("f", gpu.download(dst)).tolist() == want
