"""The storage domains as packing problems: items, co-live pairs, cliques, first fit.

Shared by the solver and the greedy baseline (the verifier reads the problem on
its own). An :class:`Item` is anything placed in a storage domain: a claim, the
slot storage of a per-slot claim, or a ring's mbarrier array. Items are listed in
canonical order: by (owner, name) within their domain.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from diagnostics.span import Span
from hardware import residency
from placement.lifetime import Lifetime, Timeline, lifetime_key
from placement.problem import Domain, Problem, round_up

MAX_CLIQUES = 256
"""Capacity cuts added per domain (they are redundant; more only slow the solver)."""

MAX_CLIQUE_SCAN = 65_536
"""Maximal cliques of the lifetime graph looked at for those cuts: a timeline can have
exponentially many (phases exclusive in disjoint pairs: 2^pairs), and the cuts only
strengthen bounds, so the scan stops here (deterministically: the enumeration order is)."""


@dataclass(frozen=True)
class Item:
    """One thing to place in a storage domain.

    Its size is ``unit`` when ``ring`` is None, else ``unit × depth(ring)``. ``demand`` is
    the amount the contract declared (before slot rounding or power-of-two allocation),
    ``kind`` one of ``claim``, ``slots`` (per-slot storage) and ``mbarriers``.
    """

    index: int
    domain: Domain
    owner: str
    name: str
    lifetime: Lifetime
    span: Span
    unit: int
    align: int
    ring: str | None
    kind: str
    demand: int

    def size(self, depths: Mapping[str, int]) -> int:
        return self.unit if self.ring is None else self.unit * depths[self.ring]

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"

    @property
    def shape(self) -> tuple[object, ...]:
        """Items of equal shape are interchangeable: any placement may swap them."""
        return (self.unit, self.align, self.ring, self.kind, lifetime_key(self.lifetime))


def domain_items(problem: Problem, domain: Domain) -> tuple[Item, ...]:
    """The items of one domain in canonical order."""
    caps = problem.capacities
    raw: list[tuple[str, str, Lifetime, Span, int, int, str | None, str, int]] = []
    if domain is Domain.SMEM:
        for c in problem.smem:
            if c.per_slot_ring is None:
                raw.append((c.owner, c.name, c.lifetime, c.span, c.bytes, c.align, None, "claim", c.bytes))
            else:
                raw.append(
                    (
                        c.owner,
                        c.name,
                        c.lifetime,
                        c.span,
                        problem.slot_stride(c),
                        c.align,
                        c.per_slot_ring,
                        "slots",
                        c.bytes,
                    )
                )
        for r in problem.rings:
            unit = problem.ring_barrier_bytes(r, 1)
            raw.append(
                (
                    r.owner,
                    r.barrier_claim_name,
                    r.lifetime,
                    r.span,
                    unit,
                    caps.mbarrier_align,
                    r.name,
                    "mbarriers",
                    unit,
                )
            )
    elif domain is Domain.TMEM:
        for t in problem.tmem:
            alloc = residency.tmem_alloc_columns(caps, t.columns)
            raw.append((t.owner, t.name, t.lifetime, t.span, alloc, alloc, None, "claim", t.columns))
    elif domain is Domain.BARRIER:
        for b in problem.barriers:
            raw.append((b.owner, b.name, b.lifetime, b.span, 1, 1, None, "claim", b.threads))
    else:
        for k in problem.counters:
            raw.append((k.owner, k.name, k.lifetime, k.span, k.slots, 1, None, "claim", k.slots))
    raw.sort(key=lambda r: (r[0], r[1]))
    return tuple(Item(i, domain, *r) for i, r in enumerate(raw))


@dataclass(frozen=True)
class Structure:
    """Who may not overlap whom in one domain.

    ``neighbours[i]`` lists the items co-live with item ``i``; ``chains`` lists runs of
    interchangeable co-live items (equal shape) in canonical order, which placement
    keeps in ascending address order (symmetry breaking); ``cliques`` are sets of
    pairwise co-live items (maximal cliques of the lifetime graph), heaviest first.
    """

    neighbours: tuple[tuple[int, ...], ...]
    pairs: tuple[tuple[int, int], ...]
    chains: tuple[tuple[int, ...], ...]
    cliques: tuple[tuple[int, ...], ...]


def structure(items: Sequence[Item], timeline: Timeline) -> Structure:
    """Who may not overlap whom, in time linear in the co-live pairs (plus sorting).

    Items are grouped by lifetime and only co-live lifetime groups are paired
    (:meth:`Timeline.co_live_pairs`), never every pair of items.
    """
    lifetimes = sorted({it.lifetime for it in items}, key=lifetime_key)
    position = {life: x for x, life in enumerate(lifetimes)}
    members: list[list[int]] = [[] for _ in lifetimes]
    for it in items:
        members[position[it.lifetime]].append(it.index)
    live = timeline.co_live_pairs(lifetimes)
    neighbours: list[list[int]] = [[] for _ in items]
    pairs: list[tuple[int, int]] = []
    for x, y in live:
        if x == y:
            group = members[x]
            for k, i in enumerate(group):
                pairs.extend((i, j) if i < j else (j, i) for j in group[k + 1 :])
        else:
            pairs.extend((i, j) if i < j else (j, i) for i in members[x] for j in members[y])
    pairs.sort()
    for i, j in pairs:
        neighbours[i].append(j)
        neighbours[j].append(i)
    for n in neighbours:
        n.sort()
    shapes: dict[tuple[object, ...], list[int]] = {}
    for it in items:
        shapes.setdefault(it.shape, []).append(it.index)
    chains = tuple(tuple(v) for v in shapes.values() if len(v) > 1)
    found = []
    for clique in itertools.islice(maximal_cliques(len(lifetimes), live), MAX_CLIQUE_SCAN):
        found.append(tuple(sorted(i for x in clique for i in members[x])))
    found.sort(key=lambda c: (-sum(items[i].unit for i in c), c))
    return Structure(tuple(tuple(n) for n in neighbours), tuple(pairs), chains, tuple(found[:MAX_CLIQUES]))


def maximal_cliques(size: int, edges: Iterable[tuple[int, int]]) -> Iterator[tuple[int, ...]]:
    """Every maximal clique of the graph on ``range(size)`` (loops ignored), each in increasing order.

    Bron–Kerbosch with Tomita's pivot: the pivot is the vertex of P ∪ X with the most neighbours
    in P (the smallest on a tie) and the branches are taken in increasing vertex order, so the
    cliques come in one fixed order: the first ``MAX_CLIQUE_SCAN`` of a huge graph are always the
    same ones. Our own code, so that placing needs no graph library.
    """
    neighbours: list[set[int]] = [set() for _ in range(size)]
    for x, y in edges:
        if x != y:
            neighbours[x].add(y)
            neighbours[y].add(x)

    def extend(chosen: tuple[int, ...], candidates: set[int], excluded: set[int]) -> Iterator[tuple[int, ...]]:
        if not candidates and not excluded:
            yield tuple(sorted(chosen))
            return
        pivot = max(sorted(candidates | excluded), key=lambda u: len(candidates & neighbours[u]))
        for v in sorted(candidates - neighbours[pivot]):
            yield from extend((*chosen, v), candidates & neighbours[v], excluded & neighbours[v])
            candidates = candidates - {v}
            excluded = excluded | {v}

    if size:
        yield from extend((), set(range(size)), set())


def lower_bound(items: Sequence[Item], st: Structure, sizes: Sequence[int], lo: int) -> int:
    """A footprint no placement beats: the heaviest clique, or the worst-aligned single item."""
    best = lo
    for clique in st.cliques:
        best = max(best, lo + sum(sizes[i] for i in clique))
    for it in items:
        best = max(best, round_up(lo, it.align) + sizes[it.index])
    return best


def first_fit(
    items: Sequence[Item],
    st: Structure,
    sizes: Sequence[int],
    lo: int,
    hi: int,
    order: Sequence[int],
    fixed: Mapping[int, int] | None = None,
    keep_chains: bool = True,
) -> list[int] | None:
    """Place items in ``order`` at the lowest aligned address free of co-live placed items.

    ``fixed`` items keep their addresses. With ``keep_chains`` an item of a chain never
    goes below an earlier member of its chain. None when an item does not fit below ``hi``.
    """
    base: list[int | None] = [None] * len(items)
    for i, v in (fixed or {}).items():
        base[i] = v
    before: dict[int, int] = {}
    for chain in st.chains if keep_chains else ():
        for a, b in itertools.pairwise(chain):
            before[b] = a
    for i in order:
        if base[i] is not None:
            continue
        it = items[i]
        floor = lo
        prev = before.get(i)
        if prev is not None:
            placed = base[prev]
            if placed is not None:
                floor = max(floor, placed + sizes[prev])
        v = round_up(floor, it.align)
        busy = sorted((at, at + sizes[j]) for j in st.neighbours[i] if (at := base[j]) is not None)
        for start, end in busy:
            if start >= v + sizes[i]:
                break
            if end > v:
                v = round_up(end, it.align)
        if v + sizes[i] > hi:
            return None
        base[i] = v
    if any(b is None for b in base):
        return None
    return [b for b in base if b is not None]


def footprint(sizes: Sequence[int], bases: Sequence[int], lo: int) -> int:
    """The highest end address of a placement (``lo`` when nothing is placed)."""
    return max((b + s for b, s in zip(bases, sizes, strict=True)), default=lo)


def greedy_orders(items: Sequence[Item], sizes: Sequence[int]) -> dict[str, list[int]]:
    """The orders first fit is tried in: lexical (canonical) and decreasing size."""
    lexical = [it.index for it in items]
    by_size = sorted(lexical, key=lambda i: (-sizes[i], i))
    return {"lexical": lexical, "size": by_size}


def tie_order(items: Sequence[Item], sizes: Sequence[int]) -> list[int]:
    """The order of the canonical tie-break: decreasing alignment, then size, then (owner, name).

    First fit in this order is the tie-break's answer whenever it reaches the optimal
    footprint, so the solver tries it first.
    """
    return sorted((it.index for it in items), key=lambda i: (-items[i].align, -sizes[i], i))


def seed_orders(items: Sequence[Item], st: Structure, sizes: Sequence[int]) -> list[list[int]]:
    """First-fit orders the solver tries for a starting placement, the tie-break order first."""
    lexical = [it.index for it in items]
    degree = [sum(sizes[j] for j in st.neighbours[i]) for i in lexical]
    return [
        tie_order(items, sizes),
        sorted(lexical, key=lambda i: (-sizes[i], i)),
        sorted(lexical, key=lambda i: (-(degree[i] + sizes[i]), -items[i].align, i)),
        sorted(lexical, key=lambda i: (lifetime_key(items[i].lifetime), -items[i].align, -sizes[i], i)),
        lexical,
    ]


def grow_depths(
    ranges: Mapping[str, tuple[int, int]],
    fits: Callable[[dict[str, int]], list[int] | None],
) -> tuple[dict[str, int], list[int] | None]:
    """Ring depths that a packing heuristic accepts, grown greedily, and its placement.

    First the largest common level (every ring at ``clamp(level, min, max)``), then each
    ring in name order as deep as ``fits`` still accepts with the others fixed; both by
    bisection, so unbounded-looking ranges cost logarithmic time. ``fits`` need not be
    monotone: this is a heuristic start, not a proof. The placement is None when not even
    the minimum depths fit.
    """
    names = sorted(ranges)
    low = {n: ranges[n][0] for n in names}

    def at(level: int) -> dict[str, int]:
        return {n: min(max(level, ranges[n][0]), ranges[n][1]) for n in names}

    placed = fits(low)
    if placed is None:
        return low, None
    depths = low
    lo_level, hi_level = max(low.values(), default=0), max((r[1] for r in ranges.values()), default=0)
    while lo_level < hi_level:
        mid = (lo_level + hi_level + 1) // 2
        found = fits(at(mid))
        if found is not None:
            lo_level, depths, placed = mid, at(mid), found
        else:
            hi_level = mid - 1
    for n in names:
        a, b = depths[n], ranges[n][1]
        while a < b:
            mid = (a + b + 1) // 2
            found = fits({**depths, n: mid})
            if found is not None:
                a, placed = mid, found
                depths = {**depths, n: mid}
            else:
                b = mid - 1
    return depths, placed
