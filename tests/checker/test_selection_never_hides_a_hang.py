"""`--select`/`--ignore` narrow what is reported, never what is accepted.

The protocol model runs whatever the selection: a composition that hangs shows the finding
that proves it (L-DEADLOCK) when no selected clause reports its root cause, and an undecided
model is E-SOLVER-UNKNOWN under any selection.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engine import ModelOptions
from kernlink.api import check

ROOT = Path(__file__).resolve().parents[2]
CLAUSES = ROOT / "tests" / "checker" / "clauses"
NEVER_RELEASED = CLAUSES / "L-ARRIVE" / "fail_never_released.kc"
LATE_RELEASE = CLAUSES / "L-DEADLOCK" / "fail_late_release_depth1.kc"
RING = ROOT / "specs" / "examples" / "ring" / "ring.kp"


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
