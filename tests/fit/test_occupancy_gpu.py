"""Issue 18: the placement's blocks per SM for `ring` at `blocks_per_sm 2` against the CUDA occupancy API.

Linking runs on the CPU; the occupancy query needs a GPU (``gpu``; skipped cleanly without
one). ``bench/gpu/occupancy_check.py`` runs the same comparison, and a matrix of kernels, on
the H200 and records the figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cuda.bindings import driver

from kernlink.api import link
from placement.adapter import placed_residency
from runtime.launch import GpuSession, gpu_available
from tests.link.examples import build_example
from tests.link.test_registers import SMALL_BUDGETS

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_gpu() -> None:
    if not gpu_available():
        pytest.skip("no GPU")


def test_ring_two_blocks_per_sm_matches_the_occupancy_api(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path, SMALL_BUDGETS)
    result = link([pipeline], tmp_path / "out")
    assert result.ok and result.output is not None and result.output.cubin is not None
    record = result.output.record
    assert record.placement is not None
    dispatch = json.loads((tmp_path / "out" / "link.json").read_text())["dispatch"]
    with GpuSession() as gpu:
        assert gpu.spec is not None
        claimed = placed_residency(gpu.spec, record.placement).blocks
        kernel = gpu.load(result.output.cubin).kernel(dispatch["kernel"])
        (err,) = driver.cuFuncSetAttribute(
            kernel.function,
            driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            dispatch["dynamic_smem"],
        )
        assert err == driver.CUresult.CUDA_SUCCESS
        err, api = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            kernel.function, dispatch["threads"], dispatch["dynamic_smem"]
        )
        assert err == driver.CUresult.CUDA_SUCCESS
    assert claimed == api >= 2
