"""The persistent, ring-fed GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent/ringfed): the mainloop
hands each tile's accumulator to another owner's SwiGLU epilogue through a ring of two accumulator
buffers. `kernlink build` packs, checks, places and links it; its link map is a snapshot, and
`kernlink parity` proves the link the one-unit build of the same sources."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kernlink.cli import main
from linker.sass import find_disassembler
from tests.snapshots import assert_text_snapshot

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


def _stable(link_map: str) -> str:
    """The map without what names the toolkit's bytes (package and cubin hashes, sizes of LTO IR)."""
    keep = []
    section = ""
    for line in link_map.splitlines():
        if line and not line.startswith(" ") and not line.startswith("#"):
            section = line.split()[0]
        if section == "inputs" and line.startswith(" "):
            continue
        if line.startswith("# toolkit") or "sha256" in line:
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"


def test_the_link_map_is_the_snapshot(built: Path) -> None:
    assert_text_snapshot(SNAPSHOT, _stable((built / "link.map").read_text()))


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
