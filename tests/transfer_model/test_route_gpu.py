"""Generated routes run on a GPU (sm_90a) and deliver every element; skipped without one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .harness import harness_source
from .test_route_lowering import CASES, SEAMS

GPU_CASES = sorted(name for name, program in CASES.items() if program.route != "tmem-load")


def _gpu_available() -> bool:
    if shutil.which("nvcc") is None or shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True, check=False).returncode == 0


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu_available(), reason="needs nvcc and an NVIDIA GPU")]


@pytest.mark.parametrize("name", GPU_CASES)
def test_route_runs_on_the_gpu(name: str, tmp_path: Path) -> None:
    export, imp, _, _ = SEAMS[name]
    source = tmp_path / f"{name}.cu"
    source.write_text(harness_source(name, CASES[name], export, imp))
    binary = tmp_path / name
    subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90a", "-o", str(binary), str(source)], check=True)
    run = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout.startswith("OK"), run.stdout + run.stderr
