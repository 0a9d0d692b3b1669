"""The packed examples link with hand-placed handles and a dispatch kernel, and compute what they say.

The link runs on the CPU (nvJitLink); running the result needs the H200 (``gpu``).
"""

from __future__ import annotations

import random
import re
import struct
from array import array

import pytest

from linker.launch import GpuSession
from linker.pack import PackResult
from tests.pack.harness import (
    HELLO_DISPATCH,
    HELLO_HANDLES,
    KERNEL,
    RING_DISPATCH,
    RING_HANDLES,
    RING_SMEM,
    Linked,
    link_example,
)

pytestmark = pytest.mark.toolchain


def _ring(packed: dict[str, PackResult], emit_ptx: bool = False) -> Linked:
    return link_example([packed["ring/loader"].path, packed["ring/reduce"].path], RING_HANDLES, RING_DISPATCH,
                        emit_ptx=emit_ptx)


def _hello(packed: dict[str, PackResult], emit_ptx: bool = False) -> Linked:
    return link_example([packed["hello/provider"].path, packed["hello/caller"].path], HELLO_HANDLES,
                        HELLO_DISPATCH, emit_ptx=emit_ptx)


@pytest.mark.parametrize("which", ["ring", "hello"])
def test_examples_link_and_fold_their_handles_and_trampolines(packed: dict[str, PackResult], which: str) -> None:
    linked = (_ring if which == "ring" else _hello)(packed, emit_ptx=True)
    assert linked.link.kernels == (KERNEL,)
    ptx = linked.link.ptx or ""
    calls = re.findall(r"^\s*call(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)", ptx, re.M)
    assert calls == [], f"calls left after LTO: {calls}"
    if which == "ring":
        assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
        assert "setmaxnreg.inc.sync.aligned.u32 232" in ptx


def _floats(count: int, seed: int) -> array[float]:
    rng = random.Random(seed)
    return array("f", (rng.gauss(0.0, 1.0) for _ in range(count)))


def _f32(value: float) -> float:
    """Round to float32; a double sum of two float32 values rounds to the float32 sum exactly."""
    return array("f", [value])[0]


def _ring_reference(data: array[float], tiles: int) -> list[float]:
    """reduce.cu's documented order: per thread, strided sums from 0; then an xor butterfly per warp."""
    out = []
    for tile in range(tiles):
        base = tile * 8192
        sums = [0.0] * 256
        for k in range(0, 8192, 256):
            sums = [_f32(s + data[base + k + t]) for t, s in enumerate(sums)]
        for w in range(8):
            lanes = sums[32 * w:32 * w + 32]
            for mask in (16, 8, 4, 2, 1):
                lanes = [_f32(lanes[lane] + lanes[lane ^ mask]) for lane in range(32)]
            out.append(lanes[0])
    return out


@pytest.mark.gpu
@pytest.mark.parametrize(("tiles", "blocks"), [(37, 4), (3, 1), (264, 132)])
def test_ring_runs_and_matches_its_reference_bit_for_bit(packed: dict[str, PackResult], tiles: int,
                                                         blocks: int) -> None:
    cubin = _ring(packed).link.cubin
    data = _floats(tiles * 8192, tiles)
    with GpuSession() as gpu:
        kernel = gpu.load(cubin).kernel(KERNEL)
        src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 8 * 4)
        loader = struct.pack("<QI4x", src.ptr, tiles)
        reduce = struct.pack("<QII", dst.ptr, 8192, tiles)  # tile_elems (the fact), then tiles at @ 12
        gpu.launch(kernel, grid=blocks, block=384, args=[loader + reduce], dynamic_smem=RING_SMEM)
        got = array("f", gpu.download(dst))
    assert got.tolist() == _ring_reference(data, tiles)


@pytest.mark.gpu
def test_hello_runs_and_scales_through_the_provider(packed: dict[str, PackResult]) -> None:
    cubin = _hello(packed).link.cubin
    n = 1000
    data = _floats(n + 7, 1)
    with GpuSession() as gpu:
        kernel = gpu.load(cubin).kernel(KERNEL)
        buf = gpu.upload(data.tobytes())
        params = struct.pack("<QII8x", buf.ptr, n, 3)  # data, n, factor = fact scale_factor
        gpu.launch(kernel, grid=3, block=128, args=[params])
        got = array("f", gpu.download(buf))
    expected = [_f32(_f32(x * 3.0) + 3.0) for x in data[:n]] + data[n:].tolist()
    assert got.tolist() == expected
