"""Turning solved domains and a warp layout into a :class:`~placement.result.Placement`."""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.symbols import Code
from placement._storage import Packed
from placement._warps import Layout, overlaps
from placement.problem import DOMAINS, Domain, Problem
from placement.result import (
    DomainUse,
    Objective,
    Placement,
    RegisterGroup,
    RingDepth,
    RolePlacement,
    Slot,
)


def _item_why(problem: Problem, packed: Packed, i: int) -> str:
    it = packed.items[i]
    size = packed.sizes[i]
    if it.kind == "slots":
        depth = packed.depths[it.ring or ""]
        return f"{depth} slots × {it.unit} B of ring `{it.ring}`"
    if it.kind == "mbarriers":
        ring = problem.ring(it.ring or "")
        depth = packed.depths[ring.name]
        return f"{ring.barriers_per_slot} mbarriers × {depth} slots of ring `{ring.name}`"
    if it.domain is Domain.TMEM:
        if size != it.demand:
            return f"{it.demand} columns as a power-of-two allocation of {size}, aligned to its size"
        return "a power-of-two allocation, aligned to its size"
    if it.domain is Domain.BARRIER:
        return f"one ID for {it.demand} threads"
    return f"{it.demand} {it.domain.unit}"


def _first_overlaps(packed: Packed) -> list[tuple[list[int], int]]:
    """For each item, the two lowest-indexed other items sharing addresses with it and how many do.

    An offline sweep in O(n log n) rather than a test of every pair: queries in order of
    their end address, items inserted in order of their start address into a Fenwick
    tree over end addresses (descending) that keeps the three lowest item indices of
    each prefix. ``j`` overlaps ``[lo, hi)`` exactly when ``start_j < hi`` and
    ``end_j > lo``; the count is ``#(start < hi) − #(end ≤ lo)`` (items are not empty).
    """
    n = len(packed.items)
    starts = list(packed.bases)
    ends = [b + s for b, s in zip(packed.bases, packed.sizes, strict=True)]
    sorted_starts, sorted_ends = sorted(starts), sorted(ends)
    keys = sorted(set(ends), reverse=True)
    rank = {e: k + 1 for k, e in enumerate(keys)}  # 1-based, descending end
    negated = [-e for e in keys]  # ascending, for bisection
    tree: list[list[int]] = [[] for _ in range(len(keys) + 1)]

    def merge(a: list[int], b: list[int]) -> list[int]:
        return sorted(set(a) | set(b))[:3]

    by_start = sorted(range(n), key=lambda j: starts[j])
    out: list[tuple[list[int], int]] = [([], 0)] * n
    inserted = 0
    for i in sorted(range(n), key=lambda i: ends[i]):
        lo, hi = starts[i], ends[i]
        while inserted < n and starts[by_start[inserted]] < hi:
            j = by_start[inserted]
            k = rank[ends[j]]
            while k <= len(keys):
                tree[k] = merge(tree[k], [j])
                k += k & -k
            inserted += 1
        # ends > lo are the ranks 1 .. (number of distinct ends above lo)
        k = bisect.bisect_left(negated, -lo)  # how many distinct ends lie above lo
        found: list[int] = []
        while k > 0:
            found = merge(found, tree[k])
            k -= k & -k
        count = bisect.bisect_left(sorted_starts, hi) - bisect.bisect_right(sorted_ends, lo) - 1
        out[i] = ([j for j in found if j != i][:2], count)
    return out


def _sharing(problem: Problem, packed: Packed, i: int, first: list[int], count: int) -> str:
    """Which not-co-live items share addresses with item i, and why they may."""
    it = packed.items[i]
    lo, hi = packed.bases[i], packed.bases[i] + packed.sizes[i]
    shares = []
    for j in first:
        other = packed.items[j]
        olo, ohi = packed.bases[j], packed.bases[j] + packed.sizes[j]
        reason = problem.timeline.disjoint_reason(it.lifetime, other.lifetime)
        shares.append(f"shares [{max(lo, olo)}, {min(hi, ohi)}) with `{other.display}` ({reason})")
    if count > 2:
        more = count - 2
        shares.append(f"and with {more} more {'claim' if more == 1 else 'claims'} never live at the same time")
    return "; ".join(shares)


def slots_of(problem: Problem, packed: Packed) -> list[Slot]:
    out = []
    overlaps = _first_overlaps(packed)
    for i, it in enumerate(packed.items):
        parts = [_item_why(problem, packed, i), _sharing(problem, packed, i, *overlaps[i])]
        out.append(
            Slot(
                it.domain,
                it.owner,
                it.name,
                packed.bases[i],
                packed.sizes[i],
                it.align,
                it.lifetime,
                it.kind,
                it.ring,
                it.demand,
                "; ".join(p for p in parts if p),
                it.span,
            )
        )
    out.sort(key=lambda s: (s.offset, s.owner, s.name))
    return out


def assemble(
    problem: Problem,
    packed: Mapping[Domain, Packed],
    layout: Layout,
    *,
    method: str,
    optimal: bool,
    canonical: bool,
    notes: tuple[Diagnostic, ...] = (),
    rlimit_used: int = 0,
    checks: int = 0,
) -> Placement:
    """The placement record of solved domains and a layout, with every reason filled in."""
    caps = problem.capacities
    slots: list[Slot] = []
    uses = []
    for domain in DOMAINS:
        p = packed[domain]
        slots.extend(slots_of(problem, p))
        lo, hi = caps.bounds(domain)
        uses.append(DomainUse(domain, lo, p.end, hi, p.lower, p.footprint_proven))
    smem = packed[Domain.SMEM]
    rings = []
    notes_out = list(notes)
    for ring in problem.rings:
        depth = smem.depths[ring.name]
        low, high = problem.depth_range(ring)
        slot_bytes = sum(problem.slot_stride(c) for c in problem.smem if c.per_slot_ring == ring.name)
        slot_bytes += problem.ring_barrier_bytes(ring, 1)
        if depth == high:
            why = "its deepest allowed depth"
        else:
            why = (
                "deepest that shared memory holds (largest depth sum, then depths spread "
                "evenly, then rings in name order)"
            )
        rings.append(RingDepth(ring.owner, ring.name, depth, low, high, slot_bytes, why, ring.span))
        if depth == low < high and method == "solver":
            notes_out.append(
                Diagnostic(
                    Code.I_DEPTH_MIN,
                    f"ring `{ring.name}` stays at its minimum depth {depth} of {low}..{high}",
                    Severity.NOTE,
                    (Label(ring.span, f"depth {depth}: one more slot needs {slot_bytes} B more shared memory"),),
                    helps=("free shared memory (smaller or shorter-lived claims) to deepen the ring",),
                )
            )
    g = caps.warpgroup_warps
    roles = []
    for r, role in enumerate(problem.roles):
        o = layout.offsets[r]
        groups = tuple(k for k in range(len(layout.group_budgets)) if overlaps(o, role.warps, k, g))
        why = "lowest free warp in declaration order"
        if role.warpgroup:
            why = f"warpgroup-aligned; {why}"
        roles.append(
            RolePlacement(
                role.owner,
                role.name,
                o,
                role.warps,
                role.warpgroup,
                problem.role_regs(role),
                min((layout.group_budgets[k] for k in groups), default=0),
                groups,
                why,
                role.span,
            )
        )
    taken = {w for rp in roles for w in range(rp.first_warp, rp.end)}
    idle = tuple(w for w in range(layout.block_warps) if w not in taken)
    groups_out = []
    for k, budget in enumerate(layout.group_budgets):
        first = k * g
        width = min(g, layout.block_warps - first)
        members = tuple(rp.display for rp in roles if k in rp.groups)
        gidle = tuple(w for w in idle if first <= w < first + width)
        needs = [rp.minimum for rp in roles if k in rp.groups]
        if not members:
            why = "idle warps only: the setmaxnreg minimum"
        elif budget == max(needs):
            why = "the largest minimum of its roles"
        else:
            why = f"{budget - max(needs)} registers of surplus over its roles' minimum"
        groups_out.append(RegisterGroup(k, first, width, budget, members, gidle, why))
    objective = Objective(
        ring_depths=sum(r.depth for r in rings),
        role_registers=sum(rp.warps * caps.warp_size * rp.budget for rp in roles),
        register_headroom=min((rp.budget - rp.minimum for rp in roles), default=0),
        smem_bytes=packed[Domain.SMEM].end - caps.bounds(Domain.SMEM)[0],
        tmem_columns=packed[Domain.TMEM].end - caps.bounds(Domain.TMEM)[0],
        barrier_ids=packed[Domain.BARRIER].end - caps.bounds(Domain.BARRIER)[0],
        counter_slots=packed[Domain.COUNTER].end - caps.bounds(Domain.COUNTER)[0],
        block_warps=layout.block_warps,
    )
    order = {d: n for n, d in enumerate(DOMAINS)}
    slots.sort(key=lambda s: (order[s.domain], s.offset, s.owner, s.name))
    return Placement(
        target=caps.target,
        slots=tuple(slots),
        rings=tuple(rings),
        roles=tuple(roles),
        groups=tuple(groups_out),
        block_warps=layout.block_warps,
        idle_warps=idle,
        entry_regs=caps.entry_regs(layout.block_warps) if layout.block_warps else 0,
        register_pool=caps.register_pool(layout.block_warps) if layout.block_warps else 0,
        uses=tuple(uses),
        objective=objective,
        optimal=optimal,
        canonical=canonical,
        method=method,
        notes=tuple(notes_out),
        rlimit_used=rlimit_used,
        checks=checks,
    )
