"""The solver layer: verdicts (unknown is an answer), budgets, the core minimiser, E-SOLVER-UNKNOWN."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from checker.protocol.check import ModelOptions
from diagnostics.model import Label, Severity
from diagnostics.span import Span
from kernlink.api import check
from solver import SAT, UNKNOWN, UNSAT, Budget, Solver, Tracked, Verdict, minimise_core, unknown_diagnostic
from solver import text as T
from tests.tiers import examples

CLAUSES = Path(__file__).resolve().parents[1] / "checker" / "clauses"


def _hard(solver: Solver) -> None:
    """Fermat's cubes: no solver finishes this within a small budget."""
    x, y, w = z3.Ints("x y w", solver.ctx)
    solver.add(x * x * x + y * y * y == w * w * w, x > 1, y > 1, w > 1)


def test_sat_unsat_and_unknown_are_verdicts() -> None:
    solver = Solver(rlimit=10_000_000)
    x = z3.Int("x", solver.ctx)
    solver.add(x > 3)
    assert solver.check().sat
    assert solver.check(x < 2).unsat
    tiny = Solver(rlimit=1)
    _hard(tiny)
    verdict = tiny.check()
    assert verdict.unknown and not verdict.sat and not verdict.unsat
    assert verdict.reason  # the solver's own words, for the diagnostic


def test_a_spent_budget_answers_unknown_without_asking() -> None:
    budget = Budget(total=2_000_000, per_check=1_000_000)
    solver = Solver()
    _hard(solver)
    assert budget.check(solver.z3).unknown
    assert budget.used >= 1_000_000 and budget.unknowns == 1
    budget.used = budget.total
    assert budget.check(solver.z3).unknown and budget.checks == 1  # no check was run


def test_tracked_labels_read_back_from_a_core() -> None:
    solver = Solver()
    tracked: Tracked[str] = Tracked(solver.ctx)
    x = z3.Int("x", solver.ctx)
    span = Span("a.kc", 3, 1, 3, 9)
    for label, fact in (("low", x < 0), ("high", x > 5), ("free", x != 2)):
        solver.add(z3.Implies(tracked.add(label, f"t:{label}", span if label == "low" else None), fact))
    assert solver.check(*tracked.literals(["low", "high", "free"])).unsat
    assert sorted(tracked.labels(solver.core())) == ["high", "low"]
    assert tracked.span == {"low": span}


def test_text_terms_parse_into_the_same_constants() -> None:
    ctx = z3.Context()
    script = T.Script(ctx)
    a, n = script.bool("step:load#0"), script.int("count:x")
    solver = z3.Solver(ctx=ctx)
    script.parse(solver, [T.Implies(a, T.And(n >= 2, n * 3 == 12 - n, T.Not(n == -1))).text])
    script.parse(solver, [T.Implies(a, T.Sum([n, 1, T.If(a, 1, 0)]) <= 6).text])
    assert solver.check(script.handle("step:load#0")) == z3.sat
    assert solver.model().eval(script.handle("count:x")).as_long() == 3


# -- the core minimiser -------------------------------------------------------------------------


Check = Callable[[Sequence[int]], tuple[Verdict, list[int] | None]]


def _oracle(conflicts: Sequence[frozenset[int]], flaky: frozenset[int] = frozenset()) -> Check:
    """Unsat iff the trial contains a conflict; ``unknown`` when a flaky member is left out."""

    def check(trial: Sequence[int]) -> tuple[Verdict, list[int] | None]:
        kept = set(trial)
        if flaky - kept:
            return UNKNOWN, None
        hit = next((c for c in conflicts if c <= kept), None)
        return (UNSAT, sorted(hit | (kept & flaky))) if hit is not None else (SAT, None)

    return check


conflict_sets = st.lists(st.frozensets(st.integers(0, 9), min_size=1, max_size=4), min_size=1, max_size=5)


@examples(2)
@given(conflicts=conflict_sets)
def test_the_minimised_core_is_unsat_and_minimal(conflicts: list[frozenset[int]]) -> None:
    everything = sorted(set().union(*conflicts))
    core, minimal = minimise_core(everything, _oracle(conflicts))
    check = _oracle(conflicts)
    assert minimal
    assert check(core)[0].unsat
    for member in core:
        assert check([m for m in core if m != member])[0].sat, (core, member)
    assert list(core) == sorted(core)  # the order of the input is kept


@examples(2)
@given(conflicts=conflict_sets, flaky=st.frozensets(st.integers(0, 9), max_size=2))
def test_an_unknown_keeps_the_member_and_is_not_minimal(conflicts: list[frozenset[int]], flaky: frozenset[int]) -> None:
    everything = sorted(set().union(*conflicts, flaky))
    core, minimal = minimise_core(everything, _oracle(conflicts, flaky))
    assert flaky <= set(core)
    assert any(c <= set(core) for c in conflicts)
    if not minimal:
        assert flaky


@examples(0.4)
@given(conflicts=conflict_sets)
def test_the_minimiser_on_z3_cores(conflicts: list[frozenset[int]]) -> None:
    solver = Solver(rlimit=10_000_000)
    tracked: Tracked[int] = Tracked(solver.ctx)
    labels = sorted(set().union(*conflicts))
    for i in labels:
        tracked.add(i, f"l{i}")
    for conflict in conflicts:
        solver.add(z3.Not(z3.And(*tracked.literals(sorted(conflict)))))

    def ask(trial: Sequence[int]) -> tuple[Verdict, list[int] | None]:
        verdict = solver.check(*tracked.literals(trial))
        return (verdict, tracked.labels(solver.core())) if verdict.unsat else (verdict, None)

    first, found = ask(labels)
    assert first.unsat and found is not None
    core, minimal = minimise_core([k for k in labels if k in found], ask)
    assert minimal and frozenset(core) in {frozenset(c) for c in conflicts} | {frozenset(core)}
    assert ask(core)[0].unsat
    for member in core:
        assert ask([m for m in core if m != member])[0].sat


# -- E-SOLVER-UNKNOWN ---------------------------------------------------------------------------


def test_solver_unknown_needs_a_span() -> None:
    with pytest.raises(ValueError, match="needs a span"):
        unknown_diagnostic("L-DEADLOCK", "undecided", ())
    diag = unknown_diagnostic("L-DEADLOCK", "undecided", (Label(Span("a.kc", 1, 1, 1, 4), "here"),))
    assert diag.code == "E-SOLVER-UNKNOWN" and diag.severity is Severity.ERROR
    assert diag.primary is not None and dict(diag.data)["clause"] == "L-DEADLOCK"


@pytest.mark.parametrize(
    "select, ignore",
    [
        (None, None),
        (["L-DEADLOCK"], None),
        (["L-RACE"], None),
        (["L-ARRIVE", "L-PARITY"], None),
        (None, ["L-DEADLOCK"]),
        (None, ["L-DEADLOCK", "L-RACE"]),
        (None, ["L-ARRIVE", "L-TXBYTES", "L-PARITY"]),
    ],
)
def test_solver_unknown_survives_select_and_ignore(select: list[str] | None, ignore: list[str] | None) -> None:
    fixture = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    result = check([str(fixture)], select=select, ignore=ignore, options=ModelOptions(rlimit=1))
    unknown = [d for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
    assert unknown and not result.accepted
    assert all(d.primary is not None for d in unknown)
