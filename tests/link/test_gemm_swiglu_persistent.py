"""The persistent GEMM + SwiGLU (specs/examples/gemm_swiglu/persistent): five components that
`kernlink build` packs, checks, places and links into one cubin; its link map is a snapshot, and
`kernlink parity` proves the link the one-unit build of the same sources."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernlink.cli import main
from linker.sass import find_disassembler
from tests.snapshots import assert_text_snapshot

pytestmark = pytest.mark.toolchain

FOLDER = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
PIPELINE = "gemm_swiglu_persistent.kp"
STEMS = ("scheduler", "producer", "consumer", "fixup", "epilogue")
SNAPSHOT = Path(__file__).parent / "snapshots" / "gemm_swiglu_persistent.link.map"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example copied without its build/ folder and built as a user would: its output folder."""
    root = tmp_path_factory.mktemp("persistent")
    folder = root / "persistent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("build"))
    out = root / "out"
    assert main(["build", str(folder / PIPELINE), "-o", str(out), "--no-server"]) == 0
    return out


def test_every_component_is_packed_and_the_pipeline_links(built: Path) -> None:
    packages = built.parent / "persistent" / "build"
    assert sorted(p.name for p in packages.glob("*.kpkg")) == sorted(f"{s}.kpkg" for s in STEMS)
    assert (built / "kernel.cubin").stat().st_size > 0
    plan = json.loads((built / "link.json").read_text())
    assert plan["status"] == "linked" and plan["diagnostics"] == []
    assert plan["launch"]["dynamic_smem"] == 229456
    # the stream-K flags are the link's counter array, one word per CTA of a 132-SM grid x 2
    assert plan["counters"]["words"] == 264


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
    folder = built.parent / "persistent"
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
