"""`kernlink pack --no-source`: a binary-only package links; what needs the source says why it cannot run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernlink.api import link
from kernlink.cli import main
from package.kpkg import read_package

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
pytestmark = pytest.mark.toolchain


@pytest.fixture
def ring(tmp_path: Path) -> Path:
    folder = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host"))
    assert (
        main(
            [
                "pack",
                str(folder / "loader.cu"),
                "--contract",
                str(folder / "loader.kc"),
                "--no-source",
                "-o",
                str(folder / "build" / "loader.kpkg"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "pack",
                str(folder / "reduce.cu"),
                "--contract",
                str(folder / "reduce.kc"),
                "-o",
                str(folder / "build" / "reduce.kpkg"),
            ]
        )
        == 0
    )
    return folder


def test_the_package_carries_no_source_and_inspect_says_so(ring: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = read_package(ring / "build" / "loader.kpkg")
    assert "source.cu" not in pkg.payloads and "lto.ir" in pkg.payloads
    capsys.readouterr()
    assert main(["inspect", str(ring / "build" / "loader.kpkg"), "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["binary_only"] is True and view["compile"]["binary_only"] is True


def test_a_binary_only_package_links_bound_by_its_lto_ir(ring: Path, tmp_path: Path) -> None:
    """No source to rebuild, but its PTX is its LTO IR's lowering: bound, even under `--require-binding`."""
    result = link([ring / "ring.kp"], tmp_path / "out", require_binding=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert [d for d in result.diagnostics if d.code == "I-BINDING"] == []


def test_the_one_unit_control_says_why_it_cannot_be_built(
    ring: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", str(ring / "ring.kp"), "-o", str(tmp_path / "parity"), "--color", "never"]) == 1
    text = capsys.readouterr().out
    assert "E-PARITY" in text and "binary-only" in text
