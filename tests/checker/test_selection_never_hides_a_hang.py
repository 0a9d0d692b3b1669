"""`--select`/`--ignore` narrow what is reported, never what is accepted.

The protocol model runs whatever the selection: a composition that hangs shows the finding
that proves it (L-DEADLOCK) when no selected clause reports its root cause, and an undecided
model is E-SOLVER-UNKNOWN under any selection.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.pipeline import AnalysisContext
from checker.engine import ModelOptions, selected
from kernlink.api import check
from tests.checker.clauses.harness import check_captured

ROOT = Path(__file__).resolve().parents[2]
CLAUSES = ROOT / "tests" / "checker" / "clauses"
NEVER_RELEASED = CLAUSES / "L-ARRIVE" / "fail_never_released.kc"
LATE_RELEASE = CLAUSES / "L-DEADLOCK" / "fail_late_release_depth1.kc"
RING = ROOT / "specs" / "examples" / "ring" / "ring.kp"
LITERAL_ID = CLAUSES / "L-CONFORM" / "fail_literal_barrier_id"  # code naming a barrier the linker did not place


def _errors(path: Path, **kwargs: object) -> tuple[bool, list[str]]:
    result = check([path], **kwargs)  # type: ignore[arg-type]
    return result.accepted, sorted({str(d.code) for d in result.diagnostics if d.is_error})


@pytest.mark.parametrize("select", [["L-RACE"], ["L-PAIR"], ["L-PARITY", "L-TXBYTES"]])
def test_a_hang_is_shown_when_no_selected_clause_reports_it(select: list[str]) -> None:
    accepted, codes = _errors(NEVER_RELEASED, select=select)
    assert not accepted and codes == ["L-DEADLOCK"]


def test_ignoring_the_deadlock_clause_does_not_hide_the_deadlock() -> None:
    accepted, codes = _errors(LATE_RELEASE, ignore=["L-DEADLOCK"])
    assert not accepted and codes == ["L-DEADLOCK"]


def test_a_selected_root_cause_stays_the_one_diagnostic() -> None:
    assert _errors(NEVER_RELEASED, select=["L-ARRIVE"]) == (False, ["L-ARRIVE"])
    assert _errors(NEVER_RELEASED) == (False, ["L-ARRIVE"])


def test_an_undecided_model_is_reported_under_an_unrelated_selection() -> None:
    accepted, codes = _errors(RING, select=["L-PAIR"], options=ModelOptions(rlimit=1))
    assert not accepted and codes == ["E-SOLVER-UNKNOWN"]


def test_a_decided_composition_is_still_accepted_under_a_selection() -> None:
    assert _errors(RING, select=["L-PAIR"]) == (True, [])


@pytest.mark.parametrize(
    ("select", "ignore"), [(["L-OVERLAP"], None), (["L-DEADLOCK", "L-RACE"], None), (None, ["L-CONFORM"])]
)
def test_code_that_synchronises_otherwise_than_its_contract_is_shown_under_any_selection(
    select: list[str] | None, ignore: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model proved the contract, not the code: a protocol check's L-CONFORM voids its verdict."""
    monkeypatch.chdir(LITERAL_ID.parent)
    result = check_captured(LITERAL_ID, AnalysisContext(clauses=tuple(selected(select, ignore))))
    errs = [d for d in result.diagnostics if d.is_error]
    assert [(str(d.code), dict(d.data)["check"]) for d in errs] == [("L-CONFORM", "barrier-id")]
    assert "reported whatever the clause selection" in errs[0].notes[-1]
    unfiltered = check_captured(LITERAL_ID)
    assert [d.notes for d in unfiltered.diagnostics if d.is_error] == [errs[0].notes[:-1]]


def test_a_code_finding_outside_the_protocol_stays_filtered(monkeypatch: pytest.MonkeyPatch) -> None:
    """``params-read`` (the code reads params its contract does not declare) is not a protocol check."""
    from checker.conformance import CHECKS, PROTOCOL_CHECKS

    assert "params-read" in CHECKS and "params-read" not in PROTOCOL_CHECKS
    assert {"ring-step", "arrive-count", "wait-parity", "proxy-fence", "barrier-id"} <= PROTOCOL_CHECKS <= set(CHECKS)


@pytest.mark.parametrize("strict", [False, True])
def test_an_undecided_protocol_site_is_shown_under_any_selection(
    strict: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A barrier ID read from memory: whether the code keeps the proved protocol is open, under any selection."""
    folder = tmp_path / LITERAL_ID.name
    shutil.copytree(LITERAL_ID, folder)
    source = folder / "captured" / "fx.bar.cu"
    text = source.read_text()
    literal = '"bar.arrive 1, %0;" ::"r"(kl_fx_bar_handoff_threads())'
    assert text.count(literal) == 1
    source.write_text(
        text.replace(literal, '"bar.arrive %0, %1;" ::"r"(*(volatile unsigned*)p), "r"(kl_fx_bar_handoff_threads())')
    )
    source.write_text(
        source.read_text().replace("fx_prod(const void*, unsigned char*)", "fx_prod(const void*, unsigned char* p)")
    )
    monkeypatch.chdir(tmp_path)
    ctx = AnalysisContext(clauses=tuple(selected(["L-OVERLAP"])), strict=strict)
    found = [d for d in check_captured(folder, ctx).diagnostics if "conform" in str(d.code).lower()]
    assert [(str(d.code), dict(d.data)["check"]) for d in found] == [
        ("L-CONFORM" if strict else "I-CONFORM", "barrier-id")
    ]
    assert "whether this code keeps it is undecided" in found[0].notes[-1]
    assert found[0].is_error is strict


_UNCHECKED = """
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
}
"""


@pytest.mark.parametrize("strict", [False, True])
def test_a_package_without_ptx_is_named_under_a_selection(strict: bool) -> None:
    """A package from before the conformance analysis: whether its code keeps the proved protocol is open."""
    from checker.clauses import l_conform
    from checker.clauses.l_overlap import OverlapClause
    from checker.engine import run_clauses
    from checker.resolve import resolve
    from contract_lang.parser import parse_text
    from diagnostics.span import Span
    from package.captured import Captured
    from package.loader import StageEntry, implicit_pipeline

    source = parse_text(_UNCHECKED, "gemm.kc")
    captured = Captured(frozenset(), frozenset(), (), toolkit="nvcc 13.0", target="sm_90a")
    entry = StageEntry(source.stages[0], "gemm.kc", None, "build/gemm.kpkg", captured)
    comp = resolve(implicit_pipeline(source.stages, "gemm", Span("gemm.kc", 1, 1, 1, 1)), "gemm.kc", [entry])
    found = run_clauses(comp, [OverlapClause])
    if strict:
        found = l_conform.strict(found)
    (diag,) = found
    assert "`build/gemm.kpkg` carries no PTX" in diag.message
    assert "whether this code keeps it is undecided" in diag.notes[-1]
    assert diag.is_error is strict
