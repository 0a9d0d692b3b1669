"""The persistent, ring-fed GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent/ringfed): the mainloop
hands each tile's accumulator to another owner's SwiGLU epilogue through a ring of two accumulator
buffers. `kernlink build` packs, checks, places and links it; its link map is a snapshot, and
`kernlink parity` proves the link the one-unit build of the same sources."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from cuda.bindings import driver

from kernlink.cli import main
from linker.sass import find_disassembler
from runtime.launch import GpuSession
from runtime.session import Session
from tests.link.test_providers import _bf16, _floats
from tests.snapshots import assert_text_snapshot, stable_link_map

pytestmark = pytest.mark.toolchain

FOLDER = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent" / "ringfed"
PIPELINE = "gemm_swiglu_ringfed.kp"
SNAPSHOT = Path(__file__).parent / "snapshots" / "gemm_swiglu_ringfed.link.map"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example copied without its build/ folder and built as a user would: its output folder."""
    root = tmp_path_factory.mktemp("ringfed")
    folder = root / "ringfed"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("build"))
    out = root / "out"
    assert main(["build", str(folder / PIPELINE), "-o", str(out), "--no-server"]) == 0
    return out


def test_the_mainloop_hands_each_tile_to_the_epilogue_through_the_ring(built: Path) -> None:
    plan = json.loads((built / "link.json").read_text())
    assert plan["status"] == "linked" and plan["diagnostics"] == []
    [transfer] = plan["generated"]["transfers"] if "generated" in plan else plan["transfers"]
    assert (transfer["ring"], transfer["depth"], transfer["slot_stride"]) == ("accs", 2, 66560)
    # one named barrier per arriving warpgroup: the mainloop's two, then the epilogue's
    assert len(transfer["barrier_ids"]) == 3 and transfer["barrier_threads"] == 128
    ptx = (built / "kernel.ptx").read_text()
    assert re.findall(r"^\s*call", ptx, re.M) == []
    synced = re.findall(r"\bbarrier\.sync\s+(\d+), 128;", ptx)
    assert sorted(set(synced)) == sorted(map(str, transfer["barrier_ids"]))


def test_the_link_map_is_the_snapshot(built: Path) -> None:
    assert_text_snapshot(SNAPSHOT, stable_link_map((built / "link.map").read_text()))


def test_parity_proves_the_link_the_one_unit_build(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = built.parent / "ringfed"
    out = tmp_path / "parity"
    argv = ["parity", str(folder / PIPELINE), "-o", str(out), "-I", str(folder), "--format", "json"]
    capsys.readouterr()
    assert main(argv) == 0
    said = json.loads(capsys.readouterr().out)
    report = said["report"]
    assert said["proved"] is True and report["verdict"] == "identical" and report["folded"] is True
    assert report["calls"] == [] and all(r["equal"] for r in report["resources"])
    if find_disassembler() is not None:
        assert report["sass"]["identical"] is True


@pytest.mark.gpu
@pytest.mark.parametrize(("m", "ctas"), [(200, 1), (200, 3), (16, 2)])
def test_the_linked_kernel_computes_swiglu_across_generations_on_the_gpu(built: Path, m: int, ctas: int) -> None:
    """silu(X Wg^T) * (X Wu^T) within bf16's tolerance, with a 1-D grid of `ctas` CTAs: at M = 200,
    N = 512 one CTA runs all 8 tiles (the ring `accs` wraps four times), three CTAs 3, 3 and 2."""
    n, k = 512, 128
    x = _floats(_bf16([((i * 37) % 19 - 9) / 9 for i in range(m * k)]))
    w = _floats(_bf16([((i * 23) % 17 - 8) / (8 * 11.3) for i in range(n * k)]))
    want = []
    for r in range(m):
        row = x[r * k : (r + 1) * k]
        for j in range(n // 2):
            g = 32 * (j // 16) + j % 16  # gate rows 32g' .. 32g' + 15, their up rows 16 further
            gate = sum(a * b for a, b in zip(row, w[g * k : (g + 1) * k], strict=True))
            up = sum(a * b for a, b in zip(row, w[(g + 16) * k : (g + 17) * k], strict=True))
            want.append(gate / (1 + math.exp(-gate)) * up)
    with GpuSession() as gpu, Session(built) as session:
        dx, dw, out = gpu.upload(_bf16(x)), gpu.upload(_bf16(w)), gpu.upload(b"\xff" * (m * n))
        session.bind(a=dx, b=dw, k_tiles=k // 64, n=n, out=out, ldo=n // 2, rows=m)
        (err,) = driver.cuLaunchKernel(
            session._function,
            ctas,
            1,
            1,
            session.linked.threads,
            1,
            1,
            session.linked.dynamic_smem,
            session.stream,
            session._params,
            0,
        )
        assert err == driver.CUresult.CUDA_SUCCESS
        session.synchronize()
        got = _floats(gpu.download(out))
    assert not any(math.isnan(v) for v in got)  # every output written
    diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(got, want, strict=True)))
    assert diff / math.sqrt(sum(v * v for v in want)) <= 1e-2
