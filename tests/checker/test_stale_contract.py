"""A `.kc` beside the pipeline (or named) that differs from its package's embedded contract is reported.

The package's contract wins (it is what the object code was compiled against); the
edited file is a warning with both spans, an error with `--strict`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic, Severity
from kernlink.api import check
from kernlink.cli import main

PACKAGED = Path(__file__).resolve().parent / "clauses" / "L-LINK" / "pass_linked"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGED, tmp_path / "p")
    return tmp_path / "p"


def _stale(folder: Path, *, strict: bool = False, named: bool = False) -> list[Diagnostic]:
    paths = [folder / "pipeline.kp", *([folder / "loader.kc"] if named else [])]
    return [d for d in check(paths, strict=strict).diagnostics if d.code == "W-STALE-CONTRACT"]


def test_an_identical_contract_is_quiet(folder: Path) -> None:
    kc = folder / "loader.kc"
    kc.write_text("# only a comment changed\n" + kc.read_text())
    assert _stale(folder) == []


@pytest.mark.parametrize("named", [False, True], ids=["beside", "on the command line"])
def test_an_edited_contract_is_a_warning_with_both_spans(folder: Path, named: bool) -> None:
    kc = folder / "loader.kc"
    kc.write_text(kc.read_text().replace("warps 1", "warps 2"))
    [diag] = _stale(folder, named=named)
    assert diag.severity is Severity.WARNING
    files = [lab.span.file.rsplit("/", 1)[-1] for lab in diag.labels]
    assert files[0] == "loader.kc" and "pipeline.kp" in files and "loader.kpkg!contract.kc" in files
    assert diag.labels[0].span.line == 3  # the edited role line
    # the package's contract is the one checked: the composition is still accepted
    assert check([folder / "pipeline.kp"]).accepted


def test_strict_makes_it_an_error(folder: Path) -> None:
    kc = folder / "loader.kc"
    kc.write_text(kc.read_text().replace('version "1.0.0"', 'version "1.1.0"'))
    [diag] = _stale(folder, strict=True)
    assert diag.severity is Severity.ERROR
    assert main(["check", str(folder / "pipeline.kp"), "--color", "never"]) == 0
    assert main(["check", str(folder / "pipeline.kp"), "--strict", "--color", "never"]) == 1


def test_strict_still_checks_the_composition(folder: Path) -> None:
    """A stale contract under --strict is one error; the clauses still run on the package's contract."""
    kc = folder / "loader.kc"
    kc.write_text(kc.read_text().replace("warps 1", "warps 2"))
    pipeline = folder / "pipeline.kp"
    launch = "    target sm_90a\n    launch fixed threads 96\n"
    pipeline.write_text(pipeline.read_text().replace("    target sm_90a\n", launch))
    codes = sorted({d.code for d in check([pipeline], strict=True).diagnostics if d.is_error})
    assert codes == ["L-WARPS", "W-STALE-CONTRACT"]
