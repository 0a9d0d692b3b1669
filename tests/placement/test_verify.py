"""The independent verifier accepts solver placements and catches every kind of mistake."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from placement import Domain, Placement, solve, verify

from .helpers import gemm_swiglu

PROBLEM = gemm_swiglu()
GOOD = solve(PROBLEM)


def _slot(p: Placement, name: str, **changes: Any) -> Placement:
    slots = tuple(replace(s, **changes) if s.name == name else s for s in p.slots)
    return replace(p, slots=slots)


def _role(p: Placement, name: str, **changes: Any) -> Placement:
    return replace(p, roles=tuple(replace(r, **changes) if r.name == name else r for r in p.roles))


def _group(p: Placement, index: int, budget: int) -> Placement:
    return replace(p, groups=tuple(replace(g, budget=budget) if g.index == index else g for g in p.groups))


MUTATIONS: dict[str, tuple[Callable[[Placement], Placement], str]] = {
    "overlap": (lambda p: _slot(p, "kv.mbarriers", offset=197632 - 64), "overlaps co-live"),
    "misaligned": (lambda p: _slot(p, "operands", offset=2048 - 128, align=128), "is not aligned to 1024"),
    "outside": (lambda p: _slot(p, "kv.mbarriers", offset=233472), "is outside"),
    "wrong size": (lambda p: _slot(p, "scratch", size=8192), "has size 8192"),
    "missing": (lambda p: replace(p, slots=tuple(s for s in p.slots if s.name != "scratch")), "is not placed"),
    "duplicate": (lambda p: replace(p, slots=(*p.slots, p.slots[-1])), "is placed twice"),
    "depth": (lambda p: replace(p, rings=(replace(p.rings[0], depth=3),)), "has size"),
    "warp clash": (lambda p: _role(p, "producer", first_warp=4), "belongs to"),
    "warpgroup": (lambda p: _role(p, "epilogue", first_warp=11), "starts at warp 11"),
    "budget low": (lambda p: _group(p, 3, 64), "needs 72 registers"),
    "pool": (lambda p: _group(p, 0, 40), "the pool holds 65536"),
    "illegal budget": (lambda p: _group(p, 2, 28), "illegal budget 28"),
    "idle": (lambda p: replace(p, idle_warps=(3,)), "idle warps are"),
    "footprint": (lambda p: replace(p, uses=(replace(p.uses[0], end=5000), *p.uses[1:])), "misreports"),
    "block": (lambda p: replace(p, block_warps=20, idle_warps=(16, 17, 18, 19)), "the launch 16"),
}


def test_solver_placement_is_valid() -> None:
    assert verify(PROBLEM, GOOD) == []


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught(name: str) -> None:
    mutate, expected = MUTATIONS[name]
    errors = verify(PROBLEM, mutate(GOOD))
    assert any(expected in e for e in errors), errors


def test_offsets_are_absolute_shared_addresses() -> None:
    smem = GOOD.in_domain(Domain.SMEM)
    assert min(s.offset for s in smem) >= PROBLEM.capacities.smem_user_base
