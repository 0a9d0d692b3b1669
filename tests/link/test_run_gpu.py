"""The linked examples run on the GPU from the generated code and match their host references bit for bit.

Linking runs on the CPU; running needs a GPU (``gpu``; skipped cleanly without one).
``bench/gpu/run_examples.sh`` runs these on the H200, then compute-sanitizer on ring.
"""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from kernlink.api import LinkResult, link
from runtime.launch import GpuSession
from runtime.run import LinkedKernel, run_linked
from tests.link.examples import build_example, floats, hello_reference, ring_reference
from tests.link.test_registers import SMALL_BUDGETS

pytestmark = pytest.mark.gpu

Linked = dict[str, tuple[LinkResult, Path]]


def run_ring(out: Path, tiles: int, blocks: int) -> list[float]:
    """Run a linked ring on ``tiles`` tiles of seeded data; the partial sums it wrote."""
    data = floats(tiles * 8192, tiles)
    with GpuSession() as gpu:
        src, dst = gpu.upload(data.tobytes()), gpu.alloc(tiles * 8 * 4)
        run_linked(out, gpu=gpu, grid=blocks, values={"src": src, "dst": dst, "tiles": tiles})
        got = array("f", gpu.download(dst)).tolist()
    assert got == ring_reference(data, tiles)
    return got


@pytest.mark.parametrize(("tiles", "blocks"), [(37, 4), (3, 1), (264, 132)])
def test_ring_runs_and_matches_its_reference_bit_for_bit(linked: Linked, tiles: int, blocks: int) -> None:
    run_ring(linked["ring"][1], tiles, blocks)


def test_ring_placed_for_two_blocks_per_sm_runs_too(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path, SMALL_BUDGETS)
    result = link([pipeline], tmp_path / "out")
    # placement predicts the 80-register entry of two blocks per SM: no re-solve
    assert result.ok and result.output is not None and not result.output.record.resolved
    run_ring(tmp_path / "out", 40, 264)


@pytest.mark.parametrize(("n", "blocks"), [(1000, 3), (128, 1), (100_000, 132)])
def test_hello_runs_and_scales_through_the_provider(linked: Linked, n: int, blocks: int) -> None:
    kernel = LinkedKernel.load(linked["hello"][1])
    data = floats(n + 7, n)
    with GpuSession() as gpu:
        buf = gpu.upload(data.tobytes())
        run_linked(kernel, gpu=gpu, grid=blocks, values={"data": buf, "n": n})
        got = array("f", gpu.download(buf)).tolist()
    assert got == hello_reference(data, n)
