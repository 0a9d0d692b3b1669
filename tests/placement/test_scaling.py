"""Placement stays near-linear in the co-live pairs: the sweeps agree with the pairwise rules.

``Timeline.co_live_pairs`` and ``structure`` replace tests of every pair of items; the
sharing notes of a placement come from an O(n log n) sweep. Each is checked against the
pairwise definition on generated timelines and placements, and the large cases against
a bound on CPU time.
"""

from __future__ import annotations

import itertools
import time

from hypothesis import given
from hypothesis import strategies as st

from diagnostics.span import UNKNOWN_SPAN
from placement import KERNEL, Connection, Interval, Phase, Problem, Ring, SmemClaim, Timeline, solve
from placement._assemble import _first_overlaps
from placement._model import Item, domain_items, structure
from placement._storage import Packed
from placement.lifetime import Lifetime
from placement.problem import Domain
from placement.result import Slot
from placement.verify import _co_live_overlaps

from .helpers import caps

EVENTS = ("a", "b", "c")


@st.composite
def timelines(draw: st.DrawFn) -> tuple[Timeline, list[Lifetime]]:
    phases = [f"p{i}" for i in range(draw(st.integers(0, 6)))]
    groups = (
        draw(st.lists(st.lists(st.sampled_from(phases), min_size=2, max_size=4, unique=True), max_size=4))
        if len(phases) >= 2
        else []
    )
    conns = [Connection(f"c{k}", EVENTS) for k in range(draw(st.integers(0, 2)))]
    pool: list[Lifetime] = [KERNEL, *(Phase(p) for p in phases)]
    for c in conns:
        for start, end in ((None, "a"), ("a", "b"), ("b", "c"), ("a", "c"), ("c", None), ("b", None)):
            pool.append(Interval(c.name, start, end))
    chosen = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
    return Timeline(tuple(phases), tuple(tuple(g) for g in groups), tuple(conns)), chosen


@given(timelines())
def test_co_live_pairs_is_the_pairwise_rule(case: tuple[Timeline, list[Lifetime]]) -> None:
    timeline, lifetimes = case
    expected = [
        (x, y)
        for x in range(len(lifetimes))
        for y in range(x, len(lifetimes))
        if timeline.co_live(lifetimes[x], lifetimes[y])
    ]
    assert timeline.co_live_pairs(lifetimes) == expected


@given(timelines(), st.lists(st.integers(0, 20), min_size=1, max_size=12))
def test_structure_pairs_every_co_live_item_pair(case: tuple[Timeline, list[Lifetime]], picks: list[int]) -> None:
    timeline, lifetimes = case
    if not lifetimes:
        return
    smem = tuple(SmemClaim("s", f"c{i:02}", 128, 128, lifetimes[k % len(lifetimes)]) for i, k in enumerate(picks))
    problem = Problem(caps(), smem=smem, timeline=timeline)
    items = domain_items(problem, Domain.SMEM)
    got = structure(items, timeline)
    pairs = tuple(
        (a.index, b.index) for a, b in itertools.combinations(items, 2) if timeline.co_live(a.lifetime, b.lifetime)
    )
    assert got.pairs == pairs
    for it in items:
        assert got.neighbours[it.index] == tuple(sorted(j for p in pairs for j in p if it.index in p and j != it.index))


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12)), min_size=1, max_size=30))
def test_sharing_sweep_is_the_pairwise_overlap(spans: list[tuple[int, int]]) -> None:
    items = tuple(
        Item(i, Domain.COUNTER, "s", f"k{i:02}", KERNEL, UNKNOWN_SPAN, size, 1, None, "claim", size)
        for i, (_, size) in enumerate(spans)
    )
    packed = Packed(
        Domain.COUNTER, items, tuple(b for b, _ in spans), tuple(s for _, s in spans), {}, 0, 0, True, True, True
    )
    got = _first_overlaps(packed)
    for i, (lo, size) in enumerate(spans):
        hits = [j for j, (b, s) in enumerate(spans) if j != i and b < lo + size and lo < b + s]
        assert got[i] == (hits[:2], len(hits))


def test_four_thousand_exclusive_claims_place_within_a_cpu_bound() -> None:
    # one exclusive group of 1000 phases, four claims each: quadratic pairing took ~9 s here
    phases = tuple(f"op{i:04}" for i in range(1000))
    smem = tuple(SmemClaim(f"mk.{p}", f"s{k}", 1024 * (1 + k), 128, Phase(p)) for p in phases for k in range(4))
    problem = Problem(caps(), smem=smem, timeline=Timeline(phases=phases, exclusive=(phases,)))
    start = time.process_time()
    placed = solve(problem)
    assert time.process_time() - start < 5  # 0.8 s here; 11 s before the sweeps
    assert placed.optimal and placed.use(Domain.SMEM).used == 1024 * (1 + 2 + 3 + 4)
    first = next(s for s in placed.slots if s.name == "s0")
    assert "and with 997 more claims never live at the same time" in first.why


@given(
    timelines(), st.lists(st.tuples(st.integers(0, 20), st.integers(0, 30), st.integers(1, 8)), min_size=1, max_size=16)
)
def test_the_verifier_finds_every_overlapping_co_live_pair(
    case: tuple[Timeline, list[Lifetime]], spans: list[tuple[int, int, int]]
) -> None:
    timeline, lifetimes = case
    if not lifetimes:
        return
    slots = sorted(
        (
            Slot(
                Domain.COUNTER, "s", f"k{i:02}", offset, size, 1, lifetimes[k % len(lifetimes)], "claim", None, size, ""
            )
            for i, (k, offset, size) in enumerate(spans)
        ),
        key=lambda s: s.offset,
    )
    expected = [
        (i, j)
        for i, j in itertools.combinations(range(len(slots)), 2)
        if slots[j].offset < slots[i].end and timeline.co_live(slots[i].lifetime, slots[j].lifetime)
    ]
    assert _co_live_overlaps(timeline, slots) == expected


def test_sixty_four_rings_deepen_within_a_cpu_bound() -> None:
    # 64 equal rings that cannot all be deepest: every probe of the full model cost seconds
    # (the checks of a 128-item disjunctive packing); the capacity cut and first fit settle them
    smem = tuple(SmemClaim("r", f"st{k:02}", 1024, 128, KERNEL, f"q{k:02}") for k in range(64))
    rings = tuple(Ring("r", f"q{k:02}", 2, 4) for k in range(64))
    problem = Problem(caps(), smem=smem, rings=rings)
    start = time.process_time()
    placed = solve(problem)
    assert time.process_time() - start < 20
    assert placed.optimal and placed.canonical
    depths = [r.depth for r in placed.rings]  # name order: the deepest first, as the objective says
    assert depths == sorted(depths, reverse=True) and depths[0] == 4 and depths[-1] == 2
    one_more = placed.use(Domain.SMEM).used + 1024 + 16
    assert one_more > placed.use(Domain.SMEM).limit - placed.use(Domain.SMEM).start


def test_exponentially_many_cliques_are_not_all_enumerated() -> None:
    # 44 phases exclusive in 22 disjoint pairs: 2^22 maximal cliques of co-live phases
    phases = tuple(f"p{i:02}" for i in range(44))
    pairs = tuple((phases[2 * k], phases[2 * k + 1]) for k in range(22))
    smem = tuple(SmemClaim("s", f"c{i:02}", 1024, 128, Phase(p)) for i, p in enumerate(phases))
    problem = Problem(caps(), smem=smem, timeline=Timeline(phases=phases, exclusive=pairs))
    start = time.process_time()
    placed = solve(problem)
    assert time.process_time() - start < 10  # 0.5 s here; 26 s when every clique was listed
    assert placed.optimal and placed.use(Domain.SMEM).used == 22 * 1024
