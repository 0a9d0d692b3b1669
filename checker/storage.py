"""Storage demand as the storage clauses read it: alignments, ring depths, slot storage, liveness.

L-ALIGN, L-DEPTH, L-OVERLAP and L-TMEM share these definitions so that one mistake
yields one code:

- the alignment a shared-memory claim needs is the largest that its declared uses need
  (:func:`needed_alignment`), every number read from the target's hardware table;
- a ring's depth is what every side's ``depth`` range allows (:func:`agreed_depth`);
  its *minimum depth* is the least of those, or 1 where no side bounds it;
- one slot of a ring holds its per-slot claims and two mbarriers (full and empty);
- two lifetimes are *certainly co-live* only when the contracts prove they overlap
  (:func:`certainly_colive`); the capacity bound sums the heaviest such set, so it
  is a lower bound of the peak and never rejects a composition that placement could
  fit (alignment padding is not counted either).

This module reads a :class:`~checker.composition.Composition` and the target table; it
reports nothing itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from checker.composition import Composition, Owned
from contract_lang import ast as A
from diagnostics.span import Span
from hardware.residency import tmem_allocation
from hardware.targets import TargetSpec

USE_ALIGN_FIELD: Mapping[str, str] = MappingProxyType(
    {
        "tma": "tma_smem_align",
        "swizzle128": "swizzle128_align",
        "swizzle64": "swizzle64_align",
        "swizzle32": "swizzle32_align",
        "wgmma": "wgmma_operand_align",
        "ldmatrix": "ldmatrix_align",
        "bulk_copy": "bulk_copy_align",
        "mbarrier": "mbarrier_align",
    }
)
"""The hardware-table field giving the shared-memory alignment each ``use`` needs."""

SIZED_USES = ("tma", "bulk_copy")
"""Uses whose transfer size must be a multiple of ``tma_size_multiple`` (PG-TMA; PTX §9.7.9.25)."""

BARRIERS_PER_SLOT = 2
"""Each ring slot has a full and an empty mbarrier."""


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def use_alignment(target: TargetSpec, use: str) -> int:
    """Alignment in bytes one use needs (1 for ``generic``)."""
    name = USE_ALIGN_FIELD.get(use)
    return int(getattr(target, name)) if name is not None else 1


def needed_alignment(target: TargetSpec, uses: Iterable[str]) -> tuple[int, str | None]:
    """The largest alignment the uses need, and the first use needing it."""
    best: tuple[int, str | None] = (1, None)
    for use in uses:
        align = use_alignment(target, use)
        if align > best[0]:
            best = (align, use)
    return best


# ----------------------------------------------------------------- ring depths


def depth_ranges(comp: Composition, ring: str) -> list[tuple[Owned[A.Ring], A.RingDepth]]:
    """Every ``depth`` line stated on a side of the ring, in stage then source order."""
    found = []
    for side in comp.rings.get(ring, ()):
        depth = side.item.depth
        if depth is not None:
            found.append((side, depth))
    return found


def valid_range(depth: A.RingDepth) -> bool:
    return 1 <= depth.lo <= depth.hi


def agreed_depth(comp: Composition, ring: str) -> tuple[int, int | None] | None:
    """The depths every side allows, ``(lo, hi)`` with ``hi`` None when unbounded.

    None when a side's range is empty or starts below 1, or the sides' ranges are
    disjoint (L-DEPTH reports those).
    """
    lo, hi = 1, None
    for _, depth in depth_ranges(comp, ring):
        if not valid_range(depth):
            return None
        lo = max(lo, depth.lo)
        hi = depth.hi if hi is None else min(hi, depth.hi)
    if hi is not None and lo > hi:
        return None
    return lo, hi


def min_depth(comp: Composition, ring: str) -> int:
    """The smallest depth the ring can take: the agreed minimum, else the least stated (≥ 1)."""
    agreed = agreed_depth(comp, ring)
    if agreed is not None:
        return agreed[0]
    return min((max(1, d.lo) for _, d in depth_ranges(comp, ring)), default=1)


def min_depth_span(comp: Composition, ring: str) -> Span | None:
    """The ``depth`` line that sets the ring's minimum depth, or the first side's span."""
    ranges = depth_ranges(comp, ring)
    if ranges:
        _, depth = max(ranges, key=lambda r: r[1].lo)
        return depth.span
    sides = comp.rings.get(ring, ())
    return sides[0].span if sides else None


def per_slot_claims(comp: Composition, ring: str) -> list[Owned[A.SmemClaim]]:
    return [c for c in comp.items(A.SmemClaim) if c.item.per_slot == ring]


def slot_bytes(comp: Composition, ring: str) -> int:
    """Shared memory one slot takes: its per-slot claims and, for a declared ring, two mbarriers."""
    total = sum(c.item.bytes or 0 for c in per_slot_claims(comp, ring))
    if ring in comp.rings and comp.target is not None:
        total += BARRIERS_PER_SLOT * comp.target.mbarrier_size
    return total


def overflowing_rings(comp: Composition) -> list[str]:
    """Rings with per-slot claims whose slots alone, at the minimum depth, exceed shared memory.

    L-OVERLAP reports each of these alone ("no depth fits the slot storage") and not the
    shared-memory sum while any exists, since the whole would overflow too.
    """
    target = comp.target
    if target is None:
        return []
    found = []
    for ring in sorted(comp.rings):
        if agreed_depth(comp, ring) is None or not per_slot_claims(comp, ring):
            continue
        if slot_bytes(comp, ring) * min_depth(comp, ring) > target.smem_per_block_optin:
            found.append(ring)
    return found


def crowded_rings(comp: Composition) -> list[str]:
    """Rings whose slots are in the shared-memory peak when that peak, every ring at its minimum
    depth, exceeds shared memory (L-OVERLAP's sum): no depth of them fits beside the rest.

    Empty while a ring overflows alone (:func:`overflowing_rings`) or a claim has no size, as
    L-OVERLAP then reports those and not the sum.
    """
    target = comp.target
    if target is None or overflowing_rings(comp) or any(not o.item.bytes for o in comp.items(A.SmemClaim)):
        return []
    total, members = peak(comp, smem_demands(comp))
    if total <= target.smem_per_block_optin:
        return []
    claims = {m.name for m in members}
    return [ring for ring in sorted(comp.rings) if any(c.item.name in claims for c in per_slot_claims(comp, ring))]


# ----------------------------------------------------------------- liveness


def _event_position(comp: Composition, event: A.EventRef) -> int | None:
    """Where an event sits on its connection: the export's ready (0) precedes the import's done (1)."""
    owner = comp.events.get(str(event))
    if owner is None:
        return None
    return 0 if isinstance(owner.item, A.ExportTensor) else 1


def event_interval(comp: Composition, life: A.Lifetime) -> tuple[str, float, float] | None:
    """An event lifetime as ``(connection, start, end)`` on its connection's timeline.

    None for kernel and phase lifetimes, unknown events, and ``between`` events of two
    connections (L-LIFETIME reports those).
    """
    inf = float("inf")
    if life.kind == "between" and life.start is not None and life.end is not None:
        if life.start.connection != life.end.connection:
            return None
        start, end = _event_position(comp, life.start), _event_position(comp, life.end)
        if start is None or end is None:
            return None
        return life.start.connection, start, end
    if life.kind == "until" and life.end is not None:
        end = _event_position(comp, life.end)
        return None if end is None else (life.end.connection, -inf, end)
    if life.kind == "from" and life.start is not None:
        start = _event_position(comp, life.start)
        return None if start is None else (life.start.connection, start, inf)
    return None


def _phases_concurrent(comp: Composition, a: str, b: str) -> bool:
    for decl in comp.items(A.Phases):
        if decl.item.mode == "concurrent" and a in decl.item.names and b in decl.item.names:
            return True
    return False


def certainly_colive(comp: Composition, a: A.Lifetime, b: A.Lifetime) -> bool:
    """Whether the contracts prove the two lifetimes overlap.

    A kernel lifetime overlaps everything; one phase overlaps itself and the phases the
    interpreter declares ``concurrent`` with it; event intervals of one connection
    overlap when they intersect; two ``until`` lifetimes overlap at the kernel's start
    and two ``from`` lifetimes at its end. Anything else (phases not declared
    concurrent, different connections, a phase against an event) is not certain.
    """
    if a.kind == "kernel" or b.kind == "kernel":
        return True
    if a.kind == "phase" and b.kind == "phase":
        assert a.phase is not None and b.phase is not None
        return a.phase == b.phase or _phases_concurrent(comp, a.phase, b.phase)
    if a.kind == b.kind and a.kind in ("until", "from"):
        return True
    ia, ib = event_interval(comp, a), event_interval(comp, b)
    if ia is None or ib is None or ia[0] != ib[0]:
        return False
    return max(ia[1], ib[1]) < min(ia[2], ib[2])


# ----------------------------------------------------------------- demand and peak


@dataclass(frozen=True)
class Demand:
    """One term of a domain's peak: a claim, or a ring's mbarriers, with its size."""

    name: str
    amount: int
    span: Span
    label: str
    lifetime: A.Lifetime
    order: tuple[int, int]


def _order(comp: Composition, owned: Owned[Any]) -> tuple[int, int]:
    stage_index = next((i for i, s in enumerate(comp.stages) if s is owned.stage), len(comp.stages))
    return stage_index, comp.item_index(owned.stage.stage, owned.item)


def smem_demands(comp: Composition) -> list[Demand]:
    """Every shared-memory claim at its size (per-slot claims × their ring's minimum depth),
    and every ring's mbarriers at its minimum depth."""
    target = comp.target
    if target is None:
        return []
    found = []
    for claim in comp.items(A.SmemClaim):
        size = claim.item.bytes
        if not size:
            continue
        name = f"`{claim.item.name}`"
        if claim.item.per_slot is not None:
            depth = min_depth(comp, claim.item.per_slot)
            label = f"{name}: {size} B × {depth} {'slot' if depth == 1 else 'slots'} = {size * depth} B"
            size *= depth
        else:
            label = f"{name}: {size} B"
        found.append(Demand(claim.item.name, size, claim.span, label, claim.item.lifetime, _order(comp, claim)))
    for ring in sorted(comp.rings):
        depth = min_depth(comp, ring)
        each = BARRIERS_PER_SLOT * target.mbarrier_size
        span = min_depth_span(comp, ring)
        assert span is not None
        label = f"ring `{ring}` mbarriers: {depth} × {BARRIERS_PER_SLOT} × {target.mbarrier_size} B = {each * depth} B"
        first = comp.rings[ring][0]
        found.append(Demand(f"ring {ring}", each * depth, span, label, A.KERNEL_LIFETIME, _order(comp, first)))
    return found


def tmem_demands(comp: Composition) -> list[Demand]:
    """Every tensor-memory claim at its power-of-two allocation.

    Claims with no columns or more than the target has are L-TMEM's and left out.
    """
    target = comp.target
    if target is None or target.tmem_columns == 0:
        return []
    found = []
    for claim in comp.items(A.TmemClaim):
        columns = claim.item.columns
        if columns is None or columns < 1:
            continue
        alloc = tmem_allocation(target, columns)
        if alloc is None:
            continue
        label = f"`{claim.item.name}`: {alloc} columns"
        if alloc != columns:
            label = f"`{claim.item.name}`: {columns} columns, allocated as {alloc}"
        found.append(Demand(claim.item.name, alloc, claim.span, label, claim.item.lifetime, _order(comp, claim)))
    return found


def peak(comp: Composition, demands: Iterable[Demand]) -> tuple[int, list[Demand]]:
    """The heaviest set of demands that are certainly live together, in source order.

    Kernel-lifetime demands are in every such set; among the others this is a maximum
    weight clique of the certainly-co-live graph. Co-liveness depends only on lifetimes
    and demands of one lifetime are co-live with each other, so the clique is taken over
    the distinct lifetimes, each weighing the sum of its demands.
    """
    demands = list(demands)
    always = [d for d in demands if d.lifetime.kind == "kernel"]
    classes: dict[A.Lifetime, list[Demand]] = {}
    for d in demands:
        if d.lifetime.kind != "kernel":
            classes.setdefault(d.lifetime, []).append(d)
    lifetimes = list(classes)
    weights = [sum(d.amount for d in classes[life]) for life in lifetimes]
    pairs = _certain_pairs(comp, lifetimes)
    graph = None
    if pairs:
        # networkx (~0.1 s to import) only for the clique search: with no two lifetimes
        # certainly co-live every component is one node, and most compositions are so
        import networkx as nx

        graph = nx.Graph()
        for i, weight in enumerate(weights):
            graph.add_node(i, weight=weight)
        graph.add_edges_from(pairs)
    # a clique lies within one connected component: search each alone (phases that are
    # never concurrent are single nodes, and the search over all of them was quadratic)
    clique: list[int] = []
    best = 0
    for component in _components(len(lifetimes), pairs):
        if len(component) == 1:
            found, weight = component, weights[component[0]]
        else:
            assert graph is not None, "a component of several lifetimes has an edge"
            found, weight = nx.max_weight_clique(graph.subgraph(component), weight="weight")
        if weight > best:
            clique, best = list(found), weight
    members = sorted([*always, *(d for i in clique for d in classes[lifetimes[i]])], key=lambda d: d.order)
    return sum(d.amount for d in members), members


def _components(size: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """The connected components of the graph on ``range(size)`` with edges ``pairs``, each sorted, in sorted order."""
    parent = list(range(size))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(size):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _certain_pairs(comp: Composition, lifetimes: list[A.Lifetime]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of non-kernel lifetimes that are certainly co-live.

    The same answer as :func:`certainly_colive` on every pair, without asking it of every
    pair of phases: a phase is certainly co-live only with itself and the phases declared
    ``concurrent`` with it, and never with an event lifetime.
    """
    phase_at: dict[str, int] = {}
    others: list[int] = []
    for i, life in enumerate(lifetimes):
        if life.kind == "phase" and life.phase is not None:
            phase_at[life.phase] = i
        else:
            others.append(i)
    pairs: set[tuple[int, int]] = set()
    for decl in comp.items(A.Phases):
        if decl.item.mode != "concurrent":
            continue
        present = sorted({phase_at[name] for name in decl.item.names if name in phase_at})
        pairs.update((i, j) for k, i in enumerate(present) for j in present[k + 1 :])
    for k, i in enumerate(others):
        pairs.update(
            (min(i, j), max(i, j)) for j in others[k + 1 :] if certainly_colive(comp, lifetimes[i], lifetimes[j])
        )
    return sorted(pairs)
