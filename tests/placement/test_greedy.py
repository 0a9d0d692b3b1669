"""The greedy baseline against the solver."""

from __future__ import annotations

import pytest
from hypothesis import given

from diagnostics.model import DiagnosticError
from placement import DOMAINS, Domain, Interval, Phase, Problem, SmemClaim, greedy, solve, verify
from tests.tiers import examples

from .helpers import caps, storage_problems

KIB = 1024


def packing_case() -> Problem:
    """An interpreter's scratch (phase `q`, so co-live with everything), two operand tiles
    live until `acc.ready` and an epilogue stage live between `acc.ready` and `acc.done`."""
    from placement import Connection, Timeline

    tl = Timeline(phases=("q",), connections=(Connection("acc", ("ready", "done")),))
    until = Interval("acc", None, "ready")
    return Problem(
        caps(),
        timeline=tl,
        smem=(
            SmemClaim("epilogue", "stage", 4 * KIB, 1024, Interval("acc", "ready", "done")),
            SmemClaim("interp", "scratch", 3 * KIB, 1024, Phase("q")),
            SmemClaim("mainloop", "a_tile", 3 * KIB, 1024, until),
            SmemClaim("mainloop", "b_tile", 3 * KIB, 1024, until),
        ),
    )


def test_greedy_misses_a_lifetime_packing_the_solver_finds() -> None:
    problem = packing_case()
    best = solve(problem)
    assert best.optimal
    # the tiles stack (6 KiB) under the stage's lifetime; the scratch goes above both
    assert best.use(Domain.SMEM).used == 9 * KIB
    assert best.slot("epilogue", "stage").offset == best.slot("mainloop", "a_tile").offset
    for order in ("lexical", "size"):
        g = greedy(problem, order)
        assert g is not None and verify(problem, g) == []
        # first fit puts the scratch right above the stage, and b_tile must then go above it
        assert g.use(Domain.SMEM).used == 10 * KIB


def test_unknown_order_is_rejected() -> None:
    with pytest.raises(ValueError):
        greedy(packing_case(), "random")


@given(storage_problems())
@examples(0.4)
def test_greedy_is_never_better_than_the_solver(problem: Problem) -> None:
    try:
        best = solve(problem)
    except DiagnosticError:
        for order in ("lexical", "size"):
            assert greedy(problem, order) is None
        return
    depths = {r.name: r.depth for r in best.rings}
    for order in ("lexical", "size"):
        grown = greedy(problem, order)
        if grown is not None:
            assert verify(problem, grown) == []
            assert grown.objective.ring_depths <= best.objective.ring_depths
        same = greedy(problem, order, depths)
        if same is None:
            continue
        assert verify(problem, same) == []
        for domain in DOMAINS:
            assert best.use(domain).end <= same.use(domain).end
