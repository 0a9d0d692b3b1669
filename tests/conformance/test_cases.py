"""Pack-time conformance: one realistic violation per check, each beside its conforming twin.

Every case folder holds ``stage.kc`` and two components, ``fail.cu`` and ``pass.cu``.
The failing one is built as `kernlink pack` builds it and must give exactly one
L-CONFORM finding, of the folder's check, with both sides (the contract line and the
PTX line, and the CUDA line where ``-lineinfo`` has one); the twin gives none.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checker.conformance import CHECKS
from diagnostics.model import Diagnostic, DiagnosticError, Severity
from linker.pack import build, conformance_findings, pack

CASES = Path(__file__).parent / "cases"
VIOLATIONS = sorted(p.name for p in CASES.iterdir() if p.is_dir() and p.name in CHECKS)
# Checks whose fact is a declaration or directive, which -lineinfo gives no CUDA line.
NO_SOURCE_LINE = {"static-shared", "launch-directive"}


def _findings(case: str, variant: str, tmp_path: Path, *, strict: bool = False) -> list[Diagnostic]:
    folder = tmp_path / case
    shutil.copytree(CASES / case, folder)
    built = build(folder / f"{variant}.cu", folder / "stage.kc")
    return conformance_findings(built, tmp_path / "out.kpkg", strict=strict)


def test_every_check_has_a_case() -> None:
    assert sorted(VIOLATIONS) == sorted(CHECKS)


@pytest.mark.parametrize("case", VIOLATIONS)
def test_violation_is_reported_with_both_sides(case: str, tmp_path: Path) -> None:
    found = _findings(case, "fail", tmp_path)
    conform = [d for d in found if d.code == "L-CONFORM"]
    assert len(conform) == 1, [d.message for d in found]
    (diag,) = conform
    assert dict(diag.data)["check"] == case
    assert diag.severity is Severity.WARNING  # pack writes the package; check rejects it
    files = [lab.span.file for lab in diag.labels]
    assert any(f.endswith("stage.kc") for f in files), files
    assert any(f.endswith("!code.ptx") for f in files), files
    if case not in NO_SOURCE_LINE:
        assert any(f.endswith("fail.cu") for f in files), files
    assert not [d for d in found if d.code == "I-CONFORM"], [d.message for d in found]


@pytest.mark.parametrize("case", [*VIOLATIONS, "undecided"])
def test_conforming_twin_is_accepted(case: str, tmp_path: Path) -> None:
    assert _findings(case, "pass", tmp_path) == []


def test_undecided_site_is_a_note_not_a_pass(tmp_path: Path) -> None:
    (note,) = _findings("undecided", "fail", tmp_path)
    assert note.code == "I-CONFORM" and note.severity is Severity.NOTE
    assert "`bar.arrive`" in note.message and dict(note.data)["check"] == "barrier-id"


def test_strict_makes_undecided_sites_errors(tmp_path: Path) -> None:
    (diag,) = _findings("undecided", "fail", tmp_path, strict=True)
    assert diag.code == "L-CONFORM" and diag.severity is Severity.ERROR
    folder = tmp_path / "undecided"
    with pytest.raises(DiagnosticError) as err:
        pack(folder / "fail.cu", folder / "stage.kc", tmp_path / "strict.kpkg", strict=True)
    assert [d.code for d in err.value.diagnostics] == ["L-CONFORM"]
    assert not (tmp_path / "strict.kpkg").exists()


@pytest.mark.parametrize("example", ["hello/caller", "hello/provider", "ring/loader", "ring/reduce"])
def test_examples_conform(example: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2] / "specs" / "examples"
    built = build(root / f"{example}.cu", root / f"{example}.kc")
    assert conformance_findings(built, tmp_path / "x.kpkg", strict=True) == []


def test_check_reports_an_undecided_site_and_strict_rejects_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernlink.cli import main

    folder = tmp_path / "undecided"
    shutil.copytree(CASES / "undecided", folder)
    pack(folder / "fail.cu", folder / "stage.kc", folder / "build" / "bar.kpkg")
    (folder / "fx.kp").write_text(
        'pipeline "fx" {\n    target sm_90a\n    use "fx.bar" version ^1.0 from "build/bar.kpkg"\n}\n'
    )
    assert main(["check", str(folder / "fx.kp"), "--color", "never"]) == 0
    assert "note[I-CONFORM]: cannot decide the barrier ID of `bar.arrive` in `fx_prod`" in capsys.readouterr().out
    assert main(["check", str(folder / "fx.kp"), "--color", "never", "--strict"]) == 1
    assert "error[L-CONFORM]: cannot decide the barrier ID" in capsys.readouterr().out


@pytest.mark.parametrize(("warpgroup", "expected"), [(" warpgroup", []), ("", ["tid-index"])])
def test_thread_of_warpgroup_is_relative_only_in_an_aligned_role(
    tmp_path: Path, warpgroup: str, expected: list[str]
) -> None:
    (tmp_path / "wg.kc").write_text(
        f'stage "fx.wg" version "1.0.0" {{\n    target sm_90a\n    role work entry fx_work warps 4{warpgroup}\n}}\n'
    )
    (tmp_path / "wg.cu").write_text(
        'extern "C" __device__ void fx_work(const void* params, unsigned char*) {\n'
        "    unsigned* out = *static_cast<unsigned* const*>(params);\n"
        "    out[blockIdx.x * 128 + threadIdx.x % 128] = 1;\n}\n"
    )
    built = build(tmp_path / "wg.cu", tmp_path / "wg.kc")
    found = conformance_findings(built, tmp_path / "wg.kpkg")
    assert [dict(d.data)["check"] for d in found] == expected
