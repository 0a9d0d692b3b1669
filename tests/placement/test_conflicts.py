"""Rejections: minimal conflicting sets mapped to clause codes, with capacity and shortfall."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given

from diagnostics.model import Diagnostic, DiagnosticError
from placement import (
    BarrierClaim,
    CounterClaim,
    Phase,
    Problem,
    Ring,
    Role,
    SmemClaim,
    Timeline,
    TmemClaim,
    solve,
)
from placement._warps import _regs_conflict
from solver import Budget
from tests.tiers import examples

from .helpers import caps, span, storage_problems


def rejection(problem: Problem, **kw: int) -> Diagnostic:
    with pytest.raises(DiagnosticError) as info:
        solve(problem, **kw)
    assert len(info.value.diagnostics) == 1
    return info.value.diagnostics[0]


def test_tmem_544_columns_is_l_overlap() -> None:
    problem = Problem(
        caps("sm_100a"), tmem=(TmemClaim("mma", "acc", 512, span=span(3)), TmemClaim("epi", "stage", 32, span=span(9)))
    )
    d = rejection(problem)
    assert d.code == "L-OVERLAP"
    assert d.message == "tensor memory needs 544 columns, sm_100a offers 512 columns"
    assert [lab.text for lab in d.labels] == [
        "`epi.stage` needs 32 columns (kernel)",
        "`mma.acc` needs 512 columns (kernel)",
    ]
    assert [lab.primary for lab in d.labels] == [False, True]
    assert "short by 32 columns" in d.notes
    assert dict(d.data)["shortfall"] == "32"


def test_one_tmem_claim_of_544_columns_is_l_overlap() -> None:
    d = rejection(Problem(caps("sm_100a"), tmem=(TmemClaim("mma", "acc", 544, span=span(3)),)))
    assert d.code == "L-OVERLAP"
    assert d.message == "tensor memory needs 1024 columns, sm_100a offers 512 columns"
    assert d.labels[0].text == "`mma.acc` needs 544 columns, allocated as 1024 (kernel)"


def test_smem_message_states_need_capacity_and_shortfall() -> None:
    problem = Problem(
        caps("sm_120a"),
        smem=(SmemClaim("load", "a", 51200, 1024, span=span(4)), SmemClaim("mma", "b", 51200, 1024, span=span(7))),
    )
    d = rejection(problem)
    assert d.code == "L-OVERLAP"
    assert d.message == "shared memory needs 102400 B, sm_120a offers 101376 B"
    assert {lab.span.line for lab in d.labels} == {4, 7}
    assert "short by 1024 B" in d.notes
    assert any("both live for the whole kernel" in n for n in d.notes)
    assert d.helps


def test_core_is_minimal() -> None:
    tl = Timeline(phases=("p", "q"), exclusive=(("p", "q"),))
    smem = [SmemClaim("s", f"k{i}", 8 * 1024, 1024) for i in range(4)]
    smem += [
        SmemClaim("s", "big_p", 70 * 1024, 1024, Phase("p")),
        SmemClaim("s", "big_q", 60 * 1024, 1024, Phase("q")),
        SmemClaim("s", "small_q", 8 * 1024, 128, Phase("q")),
    ]
    problem = Problem(caps("sm_120a"), smem=tuple(smem), timeline=tl)
    d = rejection(problem)
    core = dict(d.data)["core"].split(", ")
    assert dict(d.data)["minimal"] == "true"
    members = [c for c in problem.smem if c.display in core]
    assert len(members) == len(core) < len(problem.smem)
    with pytest.raises(DiagnosticError):
        solve(Problem(problem.capacities, smem=tuple(members), timeline=tl))
    for drop in members:
        rest = tuple(c for c in members if c is not drop)
        solve(Problem(problem.capacities, smem=rest, timeline=tl))


def test_ring_that_cannot_reach_its_minimum_depth_is_l_overlap() -> None:
    """Every capacity overflow is L-OVERLAP (L-DEPTH is for depth ranges), with the ring's help."""
    problem = Problem(
        caps("sm_120a"),
        smem=(
            SmemClaim("load", "tiles", 32 * 1024, 1024, per_slot_ring="kv", span=span(5)),
            SmemClaim("epi", "out", 8 * 1024, 128, span=span(8)),
        ),
        rings=(Ring("load", "kv", 3, 6, span=span(6)),),
    )
    d = rejection(problem)
    assert d.code == "L-OVERLAP" and "minimum depth" in d.helps[0]
    assert d.message.startswith("ring `kv` does not fit at its minimum depth 3: shared memory needs ")
    assert "`load.tiles` needs 3 × 32768 B = 98304 B (kernel)" in [lab.text for lab in d.labels]


def test_barrier_ids_run_out_is_l_barrier() -> None:
    barriers = tuple(BarrierClaim("s", f"b{i:02}", 128) for i in range(16))
    d = rejection(Problem(caps(), barriers=barriers))
    assert d.code == "L-BARRIER"
    assert d.message == ("named barriers need 16 IDs, sm_90a offers 15 (IDs 1..15; ID 0 is the block-wide barrier)")
    assert len(d.labels) == 16
    tl = Timeline(phases=("p", "q"), exclusive=(("p", "q"),))
    shared = tuple(BarrierClaim("s", f"b{i:02}", 128, Phase("pq"[i % 2])) for i in range(20))
    p = solve(Problem(caps(), barriers=shared, timeline=tl))
    assert p.objective.barrier_ids == 10


def test_counter_slots_overflow_is_l_overlap() -> None:
    d = rejection(Problem(caps(counter_slots=8), counters=(CounterClaim("a", "x", 5), CounterClaim("b", "y", 4))))
    assert (d.code, d.message) == ("L-OVERLAP", "counter slots need 9, the counter array holds 8")


def test_too_many_warps_is_l_warps_with_a_minimal_set() -> None:
    roles = (
        Role("a", "big", 20, span=span(1)),
        Role("b", "big", 16, True, span=span(2)),
        Role("c", "one", 1, span=span(3)),
    )
    d = rejection(Problem(caps(), roles=roles))
    assert d.code == "L-WARPS"
    assert d.message == "roles need 36 warps, a block has at most 32"
    assert [lab.span.line for lab in d.labels] == [1, 2]


def test_roles_not_covering_the_launch_is_l_warps() -> None:
    roles = (Role("a", "x", 4, True), Role("b", "y", 2))
    d = rejection(Problem(caps(), roles=roles, block_warps=8, allow_idle_warps=False))
    assert d.code == "L-WARPS"
    assert d.message == "roles cover 6 warps, the launch has 8 and no idle warps"


def test_register_groups_over_the_pool_is_l_regs() -> None:
    # specs/hardware.md §3.2: 40 / 240 / 240 at 384 threads blocks forever on an H200
    roles = (Role("k", "producer", 4, True, 40, span(1)), Role("k", "mma", 8, True, 240, span(2)))
    d = rejection(Problem(caps(), roles=roles, block_warps=12))
    assert d.code == "L-REGS"
    assert d.message == (
        "register groups need 66 560 registers, the CTA pool holds 64 512 (168 per thread × 384 threads)"
    )
    assert "short by 2048 registers" in d.notes
    assert sorted(lab.span.line for lab in d.labels) == [1, 2]


def test_a_budget_spent_after_the_register_proof_still_gives_the_numbers() -> None:
    # the groups of test_register_groups_over_the_pool_is_l_regs: 3 000 rlimit units prove them
    # over the pool, and nothing is left to find a layout's numbers (it said "need 0, pool 0")
    roles = (Role("k", "producer", 4, True, 40, span(1)), Role("k", "mma", 8, True, 240, span(2)))
    d = rejection(Problem(caps(), roles=roles, block_warps=12), rlimit=3_000)
    assert d.code == "L-REGS"
    assert d.message == (
        "register groups need 66 560 registers, the CTA pool holds 64 512 (168 per thread × 384 threads)"
    )
    assert (
        "the solver budget ran out before the smallest shortfall was found: another layout may need fewer registers"
        in d.notes
    )


def test_a_spent_budget_packs_the_register_core_in_order() -> None:
    # with no budget left the numbers come from arithmetic alone: the roles packed in order
    # (warps 0-3, 4-11, 12-15), each group at its smallest budget, over the pool of 16 warps
    roles = (
        Role("k", "producer", 4, True, 40),
        Role("k", "mma", 8, True, 240),
        Role("k", "epilogue", 4, True, 200),
    )
    problem = Problem(caps(), roles=roles, block_warps=16)
    found = _regs_conflict(problem, (0, 1, 2), True, 16, 16, Budget(1, 1, used=1))
    assert (found.code, found.roles, found.exact, found.warps) == ("L-REGS", (0, 1, 2), False, 16)
    assert (found.needs, found.offers) == ((40 + 240 + 240 + 200) * 128, 128 * 512)


def test_a_capacity_cut_decides_what_the_budget_could_not() -> None:
    # the solver check runs out at once, but 512 + 32 co-live columns exceed 512 by arithmetic
    problem = Problem(caps("sm_100a"), tmem=(TmemClaim("mma", "acc", 512), TmemClaim("epi", "stage", 32)))
    d = rejection(problem, rlimit=1)
    assert d.code == "L-OVERLAP"
    assert d.message == "tensor memory needs 544 columns, sm_100a offers 512 columns"


def test_undecided_within_budget_is_e_solver_budget() -> None:
    # 114 × 1152 B fit by their sum, but each takes 2048 B at 1024-byte alignment: first fit
    # fails, no capacity cut proves it, and one rlimit unit decides nothing
    smem = tuple(SmemClaim("s", f"c{i:03}", 1152, 1024) for i in range(114))
    d = rejection(Problem(caps("sm_100a"), smem=smem), rlimit=1)
    assert d.code == "E-SOLVER-BUDGET"
    assert "may spend all of it" in d.helps[0]


def test_every_failing_domain_is_reported() -> None:
    problem = Problem(
        caps("sm_100a"),
        tmem=(TmemClaim("a", "x", 1024),),
        barriers=tuple(BarrierClaim("s", f"b{i:02}", 32) for i in range(16)),
    )
    with pytest.raises(DiagnosticError) as info:
        solve(problem)
    assert sorted(d.code for d in info.value.diagnostics) == ["L-BARRIER", "L-OVERLAP"]


def _only(problem: Problem, names: set[str]) -> Problem:
    return replace(
        problem,
        rings=(),
        smem=tuple(c for c in problem.smem if c.display in names),
        tmem=tuple(c for c in problem.tmem if c.display in names),
        barriers=tuple(c for c in problem.barriers if c.display in names),
        counters=tuple(c for c in problem.counters if c.display in names),
    )


@given(storage_problems())
@examples(0.4)
def test_every_reported_core_is_minimal(problem: Problem) -> None:
    problem = replace(problem, smem=tuple(c for c in problem.smem if c.per_slot_ring is None), rings=())
    try:
        solve(problem)
    except DiagnosticError as err:
        for d in err.diagnostics:
            core = set(dict(d.data)["core"].split(", "))
            with pytest.raises(DiagnosticError):
                solve(_only(problem, core))
            for member in core:
                solve(_only(problem, core - {member}))
