"""The solver against exhaustive enumeration on tiny problems: the same optimum, the same
canonical placement, and every placement accepted by the verifier."""

from __future__ import annotations

import pytest
from hypothesis import given

from diagnostics.model import DiagnosticError
from placement import DOMAINS, Problem, solve, verify
from tests.tiers import examples

from .helpers import brute_storage, brute_warps, role_problems, storage_problems


def check_storage(problem: Problem) -> None:
    expected = {d.value: brute_storage(problem, d.value) for d in DOMAINS}
    if any(v is None for v in expected.values()):
        with pytest.raises(DiagnosticError) as info:
            solve(problem)
        codes = {d.code for d in info.value.diagnostics}
        assert codes <= {"L-OVERLAP", "L-DEPTH", "L-BARRIER"} and codes
        return
    p = solve(problem)
    assert verify(problem, p) == []
    assert p.optimal and p.canonical
    for domain in DOMAINS:
        found = expected[domain.value]
        assert found is not None
        depths, end, bases = found
        assert p.use(domain).end == end
        placed = sorted(p.in_domain(domain), key=lambda s: (s.owner, s.name))
        assert tuple(s.offset for s in placed) == bases
        if depths:
            assert {r.name: r.depth for r in p.rings} == depths


def check_warps(problem: Problem) -> None:
    expected = brute_warps(problem)
    if expected is None:
        with pytest.raises(DiagnosticError) as info:
            solve(problem)
        assert {d.code for d in info.value.diagnostics} <= {"L-WARPS", "L-REGS"}
        return
    _, offsets, warps, groups, role_budgets = expected
    p = solve(problem)
    assert verify(problem, p) == []
    assert p.optimal and p.canonical
    assert tuple(r.first_warp for r in p.roles) == offsets
    assert p.block_warps == warps
    assert tuple(g.budget for g in p.groups) == groups
    assert tuple(r.budget for r in p.roles) == role_budgets


@given(storage_problems())
@examples(0.6)
def test_storage_matches_exhaustive_optimum(problem: Problem) -> None:
    check_storage(problem)


@given(role_problems())
@examples(0.3)
def test_warps_and_registers_match_exhaustive_optimum(problem: Problem) -> None:
    check_warps(problem)


@pytest.mark.slow
@given(storage_problems(max_smem=4))
@examples(0.06)
def test_storage_matches_exhaustive_optimum_campaign(problem: Problem) -> None:
    check_storage(problem)


@pytest.mark.slow
@given(role_problems(max_roles=4))
@examples(0.02)
def test_warps_match_exhaustive_optimum_campaign(problem: Problem) -> None:
    check_warps(problem)


@given(storage_problems(), role_problems())
@examples(0.25)
def test_every_solver_placement_passes_the_verifier(storage: Problem, roles: Problem) -> None:
    problem = Problem(
        storage.capacities,
        smem=storage.smem,
        rings=storage.rings,
        tmem=storage.tmem,
        barriers=storage.barriers,
        counters=storage.counters,
        roles=roles.roles,
        timeline=storage.timeline,
        block_warps=roles.block_warps,
        allow_idle_warps=roles.allow_idle_warps,
    )
    try:
        placement = solve(problem)
    except DiagnosticError as err:
        assert all(d.code.startswith("L-") for d in err.diagnostics)
        return
    assert verify(problem, placement) == []
