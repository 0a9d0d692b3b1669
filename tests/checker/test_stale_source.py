"""A component source (or a header its package carries) edited since it was packed is reported.

The package's code is the one checked and linked; the edit is W-STALE-SOURCE, a warning naming
each edited file, an error with `--strict` (as W-STALE-CONTRACT for a `.kc`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic, Severity
from kernlink.api import check
from kernlink.cli import main
from packing.pack import CompileFlags, pack
from tests.link.examples import EXAMPLES

PACKAGED = Path(__file__).resolve().parent / "clauses" / "L-LINK" / "pass_linked"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGED, tmp_path / "p")
    return tmp_path / "p"


def _stale(pipeline: Path, *, strict: bool = False) -> list[Diagnostic]:
    return [d for d in check([pipeline], strict=strict).diagnostics if d.code == "W-STALE-SOURCE"]


def test_an_unchanged_source_is_quiet(folder: Path) -> None:
    assert _stale(folder / "pipeline.kp") == []


def test_an_edited_source_beside_the_package_is_a_warning_and_the_package_is_still_checked(folder: Path) -> None:
    source = folder / "loader.cu"
    source.write_text(source.read_text() + "\n// edited\n")
    [diag] = _stale(folder / "pipeline.kp")
    assert diag.severity is Severity.WARNING
    assert diag.labels[0].span.file.endswith("loader.cu") and diag.labels[1].span.file.endswith("pipeline.kp")
    assert "loader.kpkg" in diag.message
    assert check([folder / "pipeline.kp"]).accepted


def test_strict_makes_it_an_error(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = folder / "loader.cu"
    source.write_text(source.read_text().replace("{", "{ ", 1))
    [diag] = _stale(folder / "pipeline.kp", strict=True)
    assert diag.severity is Severity.ERROR
    assert main(["check", str(folder / "pipeline.kp"), "--color", "never"]) == 0
    assert "warning[W-STALE-SOURCE]" in capsys.readouterr().out
    assert main(["check", str(folder / "pipeline.kp"), "--strict", "--color", "never"]) == 1


@pytest.mark.toolchain
def test_link_warns_for_an_edited_source_and_a_carried_header_in_the_build_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`<folder>/build/reduce.kpkg` was packed from `<folder>/reduce.cu`, carrying `kl_ring_reduce.h`."""
    folder = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host"))
    for stem in ("loader", "reduce"):
        pack(folder / f"{stem}.cu", folder / f"{stem}.kc", folder / "build" / f"{stem}.kpkg")
    pipeline = folder / "ring.kp"
    assert _stale(pipeline) == []
    source, header = folder / "reduce.cu", folder / "kl_ring_reduce.h"
    source.write_text(source.read_text().replace("sum += data[k];", "sum += 2.0f * data[k];"))
    header.write_text(header.read_text() + "\n")
    [diag] = _stale(pipeline)
    assert "reduce.cu" in diag.message and "kl_ring_reduce.h" in diag.message and "build/reduce.kpkg" in diag.message
    assert main(["link", str(pipeline), "-o", str(tmp_path / "out"), "--color", "never"]) == 0
    assert "warning[W-STALE-SOURCE]" in capsys.readouterr().out


@pytest.mark.toolchain
def test_a_binary_only_package_carries_no_source_to_compare(tmp_path: Path) -> None:
    folder = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host"))
    for stem in ("loader", "reduce"):
        pack(
            folder / f"{stem}.cu",
            folder / f"{stem}.kc",
            folder / "build" / f"{stem}.kpkg",
            flags=CompileFlags(source=False),
        )
    source = folder / "reduce.cu"
    source.write_text(source.read_text() + "\n// edited\n")
    assert _stale(folder / "ring.kp") == []
