"""Pack-time conformance: one realistic violation per check, each beside its conforming twin.

A case folder is one of two kinds:

- ``stage.kc`` with two components, ``fail.cu`` and ``pass.cu`` (and ``fail.kc``, the failing
  variant's contract, when the mistake is the contract's; a ``case.json`` without ``example``
  names the check of a second case);
- ``case.json``: an edit of one component of an example under ``specs/examples/``: ``fail``
  (and, when the twin differs from the example, ``pass``) maps a file of the example to the
  ``[old, new]`` replacements that make the variant, each of whose ``old`` occurs exactly
  once; ``check`` names the check when the folder is a second case of it, ``cuda_line:
  false`` marks a finding shown at a function (a step the code lacks) or at a line of a
  header the component includes (its CUDA line is then a note) rather than a line of the
  component's source.

The failing variant is built as `kernlink pack` builds it and must give exactly one
L-CONFORM finding, of the case's check, with both sides (the contract line and the PTX
line, and the CUDA line where ``-lineinfo`` has one) and no undecided site; the twin gives
none at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checker.conformance import CHECKS
from diagnostics.model import Diagnostic, DiagnosticError, Severity
from packing.pack import build, conformance_findings, pack

CASES = Path(__file__).parent / "cases"
EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
# Folders with tests of their own below.
SPECIAL = {"undecided", "complete-tx"}
FOLDERS = sorted(p.name for p in CASES.iterdir() if p.is_dir() and p.name not in SPECIAL)
# Checks whose fact is a declaration or directive, which -lineinfo gives no CUDA line.
NO_SOURCE_LINE = {"static-shared", "launch-directive"}


def _spec(case: str) -> dict[str, Any]:
    path = CASES / case / "case.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _check_of(case: str) -> str:
    return str(_spec(case).get("check", case))


def _variant(case: str, variant: str, tmp_path: Path) -> tuple[Path, Path]:
    """The component and contract of one variant of a case, written under ``tmp_path``."""
    spec = _spec(case)
    if "example" not in spec:
        folder = tmp_path / case
        shutil.copytree(CASES / case, folder)
        own = folder / f"{variant}.kc"
        return folder / f"{variant}.cu", own if own.exists() else folder / "stage.kc"
    folder = tmp_path / spec["example"]
    shutil.copytree(EXAMPLES / spec["example"], folder, ignore=shutil.ignore_patterns("build"))
    for name, edits in spec.get(variant, {}).items():
        text = (folder / name).read_text()
        for old, new in edits:
            assert text.count(old) == 1, f"{case}: {old!r} is not in {name} exactly once"
            text = text.replace(old, new)
        (folder / name).write_text(text)
    source = folder / f"{spec['component']}.cu"
    return source, source.with_suffix(".kc")


def _findings(case: str, variant: str, tmp_path: Path, *, strict: bool = False) -> list[Diagnostic]:
    source, contract = _variant(case, variant, tmp_path)
    return conformance_findings(build(source, contract), tmp_path / "out.kpkg", strict=strict)


def test_every_check_has_a_case() -> None:
    assert sorted({_check_of(c) for c in FOLDERS}) == sorted(CHECKS)


@pytest.mark.parametrize("case", FOLDERS)
def test_violation_is_reported_with_both_sides(case: str, tmp_path: Path) -> None:
    found = _findings(case, "fail", tmp_path)
    conform = [d for d in found if d.code == "L-CONFORM"]
    assert len(conform) == 1, [d.message for d in found]
    (diag,) = conform
    assert dict(diag.data)["check"] == _check_of(case)
    assert diag.severity is Severity.WARNING  # pack writes the package; check rejects it
    files = [lab.span.file for lab in diag.labels]
    assert any(f.endswith(".kc") for f in files), files
    assert any(f.endswith("!code.ptx") for f in files), files
    if case not in NO_SOURCE_LINE and _spec(case).get("cuda_line", True):
        assert any(f.endswith(".cu") for f in files), files
    assert not [d for d in found if d.code == "I-CONFORM"], [d.message for d in found]


@pytest.mark.parametrize("case", [*FOLDERS, "undecided"])
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


EXAMPLE_COMPONENTS: list[Any] = [
    "hello/caller",
    "hello/provider",
    "ring/loader",
    "ring/reduce",
    "gemm_swiglu/mainloop",
    "gemm_swiglu/epilogue",
    "gemm_swiglu/mma_sync",
    "gemm_swiglu/smem_acc",
    "gemm_swiglu/sm100/tcgen05",
    "moe4/interp",
    "moe4/comm",
    "moe4/gemm",
    "moe4/act",
    "gemm_swiglu/persistent/consumer",
]


@pytest.mark.parametrize("example", EXAMPLE_COMPONENTS)
def test_examples_conform_under_strict(example: str, tmp_path: Path) -> None:
    built = build(EXAMPLES / f"{example}.cu", EXAMPLES / f"{example}.kc")
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
        f'stage "fx.wg" version "1.0.0" {{\n    target sm_90a\n    role work entry fx_work warps 4{warpgroup}\n'
        "    params WgParams size 8 align 8 {\n        out: ptr @ 0\n    }\n}\n"
    )
    (tmp_path / "wg.cu").write_text(
        'extern "C" __device__ void fx_work(const void* params, unsigned char*) {\n'
        "    unsigned* out = *static_cast<unsigned* const*>(params);\n"
        "    out[blockIdx.x * 128 + threadIdx.x % 128] = 1;\n}\n"
    )
    built = build(tmp_path / "wg.cu", tmp_path / "wg.kc")
    found = conformance_findings(built, tmp_path / "wg.kpkg")
    assert [dict(d.data)["check"] for d in found] == expected
