"""An independent check of a placement against its problem, in plain Python (no Z3).

It recomputes every size, alignment and range from the problem's own numbers and
checks: each claim (and each ring's mbarrier array) placed exactly once at its size,
aligned, inside its domain's range; no two co-live claims overlapping; every ring
depth within its range; the roles covering the block's warps exactly (idle warps
only where allowed), warpgroup roles aligned; one legal setmaxnreg budget per
warpgroup, at least every member role's minimum, and the groups fitting the
register pool. It shares only the lifetime rule (:meth:`Timeline.co_live`, the
definition of the problem, through :meth:`Timeline.co_live_pairs`, its sweep over
distinct lifetimes, which the tests hold equal to it) with the solver.
"""

from __future__ import annotations

import heapq

from placement.lifetime import Timeline, lifetime_key
from placement.problem import Capacities, Domain, Problem
from placement.result import Placement, Slot


def _pow2_at_least(value: int) -> int:
    size = 1
    while size < value:
        size *= 2
    return size


def _expected(
    problem: Problem,
    placement: Placement,
    errors: list[str],
) -> dict[tuple[Domain, str, str], tuple[int, int, object]]:
    """Every storage item's (size, alignment, lifetime), keyed by (domain, owner, name)."""
    caps = problem.capacities
    depths = {r.name: r.depth for r in placement.rings}
    out: dict[tuple[Domain, str, str], tuple[int, int, object]] = {}
    for ring in problem.rings:
        depth = depths.get(ring.name)
        if depth is None:
            errors.append(f"ring `{ring.name}` has no depth")
            continue
        low, high = problem.depth_range(ring)
        if not low <= depth <= high:
            errors.append(f"ring `{ring.name}` depth {depth} outside {low}..{high}")
        size = ring.barriers_per_slot * caps.mbarrier_size * depth
        out[(Domain.SMEM, ring.owner, f"{ring.name}.mbarriers")] = (size, caps.mbarrier_align, ring.lifetime)
    for c in problem.smem:
        if c.per_slot_ring is None:
            size = c.bytes
        else:
            stride = -(-c.bytes // c.align) * c.align
            size = stride * depths.get(c.per_slot_ring, 0)
        out[(Domain.SMEM, c.owner, c.name)] = (size, c.align, c.lifetime)
    for t in problem.tmem:
        alloc = _pow2_at_least(max(t.columns, caps.tmem_min_alloc_columns))
        out[(Domain.TMEM, t.owner, t.name)] = (alloc, alloc, t.lifetime)
    for b in problem.barriers:
        out[(Domain.BARRIER, b.owner, b.name)] = (1, 1, b.lifetime)
    for k in problem.counters:
        out[(Domain.COUNTER, k.owner, k.name)] = (k.slots, 1, k.lifetime)
    if len({r.name for r in placement.rings}) != len(placement.rings) or {r.name for r in placement.rings} != {
        r.name for r in problem.rings
    }:
        errors.append("the placed rings differ from the problem's rings")
    return out


def _range(problem: Problem, domain: Domain) -> tuple[int, int]:
    caps = problem.capacities
    if domain is Domain.SMEM:
        return caps.smem_user_base, caps.smem_user_base + caps.smem_per_block_optin
    if domain is Domain.TMEM:
        return 0, caps.tmem_columns
    if domain is Domain.BARRIER:
        return 1, caps.named_barriers_per_cta
    return 0, caps.counter_slots


def _storage(problem: Problem, placement: Placement, errors: list[str]) -> None:
    expected = _expected(problem, placement, errors)
    seen: dict[tuple[Domain, str, str], Slot] = {}
    for s in placement.slots:
        key = (s.domain, s.owner, s.name)
        if key in seen:
            errors.append(f"{s.domain.value} `{s.display}` is placed twice")
        seen[key] = s
        if key not in expected:
            errors.append(f"{s.domain.value} `{s.display}` is not a claim of the problem")
            continue
        size, align, lifetime = expected[key]
        lo, hi = _range(problem, s.domain)
        if s.size != size:
            errors.append(f"`{s.display}` has size {s.size}, the problem says {size}")
        if s.offset % align:
            errors.append(f"`{s.display}` at {s.offset} is not aligned to {align}")
        if s.offset < lo or s.offset + s.size > hi:
            errors.append(f"`{s.display}` at [{s.offset}, {s.offset + s.size}) is outside [{lo}, {hi})")
        if s.lifetime != lifetime:
            errors.append(f"`{s.display}` has lifetime {s.lifetime.text()}, not the problem's")
    for key in expected:
        if key not in seen:
            errors.append(f"{key[0].value} `{key[1]}.{key[2]}` is not placed")
    by_domain: dict[Domain, list[Slot]] = {}
    for s in seen.values():
        by_domain.setdefault(s.domain, []).append(s)
    for domain, slots in by_domain.items():
        slots.sort(key=lambda s: s.offset)
        for i, j in _co_live_overlaps(problem.timeline, slots):
            a, b = slots[i], slots[j]
            errors.append(
                f"{domain.value} `{a.display}` [{a.offset}, {a.end}) overlaps "
                f"co-live `{b.display}` [{b.offset}, {b.end})"
            )
    for use in placement.uses:
        ends = [s.end for s in seen.values() if s.domain is use.domain]
        lo, hi = _range(problem, use.domain)
        if use.end != max(ends, default=lo) or use.start != lo or use.limit != hi:
            errors.append(f"{use.domain.value} use [{use.start}, {use.end}) of {use.limit} misreports the slots")


def _co_live_overlaps(timeline: Timeline, slots: list[Slot]) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of overlapping co-live slots (positions in ``slots``).

    Not a test of every overlapping pair (slots of exclusive phases overlap by the
    thousand): for each lifetime, a sweep by address over its slots and those of the
    lifetimes co-live with it, which in a valid placement meets no active conflict.
    """
    lifetimes = sorted({s.lifetime for s in slots}, key=lifetime_key)
    position = {life: x for x, life in enumerate(lifetimes)}
    members: list[list[int]] = [[] for _ in lifetimes]
    for i, s in enumerate(slots):
        members[position[s.lifetime]].append(i)
    partners: list[list[int]] = [[] for _ in lifetimes]
    for x, y in timeline.co_live_pairs(lifetimes):
        partners[x].append(y)
    found: set[tuple[int, int]] = set()
    for x, ys in enumerate(partners):
        mine = set(members[x])
        others = {i for y in ys for i in members[y]}
        active_mine: list[tuple[int, int]] = []
        active_other: list[tuple[int, int]] = []
        for i in sorted(mine | others, key=lambda i: (slots[i].offset, i)):
            start = slots[i].offset
            for heap in (active_mine, active_other):
                while heap and heap[0][0] <= start:
                    heapq.heappop(heap)
            if i in mine:
                found.update((min(i, j), max(i, j)) for _, j in active_other)
                heapq.heappush(active_mine, (slots[i].end, i))
            if i in others:
                found.update((min(i, j), max(i, j)) for _, j in active_mine if j != i)
                heapq.heappush(active_other, (slots[i].end, i))
    return sorted(found)


def _warps(problem: Problem, placement: Placement, errors: list[str]) -> None:
    caps = problem.capacities
    g = caps.warpgroup_warps
    w = placement.block_warps
    placed = {(r.owner, r.name): r for r in placement.roles}
    if len(placed) != len(placement.roles) or set(placed) != {(r.owner, r.name) for r in problem.roles}:
        errors.append("the placed roles differ from the problem's roles")
        return
    if problem.roles and not 1 <= w <= caps.max_warps_per_block:
        errors.append(f"a block of {w} warps is outside 1..{caps.max_warps_per_block}")
    if problem.block_warps is not None and w != problem.block_warps:
        errors.append(f"the block has {w} warps, the launch {problem.block_warps}")
    owner: list[str | None] = [None] * max(w, 0)
    for role in problem.roles:
        rp = placed[(role.owner, role.name)]
        if rp.warps != role.warps:
            errors.append(f"role `{rp.display}` has {rp.warps} warps, not {role.warps}")
        if role.warpgroup and rp.first_warp % g:
            errors.append(f"warpgroup role `{rp.display}` starts at warp {rp.first_warp}")
        if rp.first_warp < 0 or rp.first_warp + role.warps > w:
            errors.append(f"role `{rp.display}` at warps [{rp.first_warp}, {rp.end}) is outside the block's {w}")
            continue
        for x in range(rp.first_warp, rp.first_warp + role.warps):
            if owner[x] is not None:
                errors.append(f"warp {x} belongs to `{owner[x]}` and `{rp.display}`")
            owner[x] = rp.display
    idle = tuple(x for x, o in enumerate(owner) if o is None)
    if idle != placement.idle_warps:
        errors.append(f"idle warps are {idle}, the placement says {placement.idle_warps}")
    if idle and not problem.allow_idle_warps:
        errors.append(f"warps {idle} are idle but the problem allows no idle warps")
    if not problem.roles:
        return
    groups = -(-w // g)
    if [k.index for k in placement.groups] != list(range(groups)):
        errors.append(f"the block's {groups} warpgroups are not its register groups")
        return
    entry = _oracle_entry(caps, w)
    pool = entry * w * caps.warp_size
    if (placement.entry_regs, placement.register_pool) != (entry, pool):
        errors.append(
            f"entry registers {placement.entry_regs} and pool {placement.register_pool} should be {entry} and {pool}"
        )
    used = 0
    for grp in placement.groups:
        b = grp.budget
        if not caps.setmaxnreg_min <= b <= caps.setmaxnreg_max or b % caps.setmaxnreg_step:
            errors.append(f"register group {grp.index} has an illegal budget {b}")
        width = min(g, w - grp.index * g)
        if grp.warps != width or grp.first_warp != grp.index * g:
            errors.append(f"register group {grp.index} misstates its warps")
        used += b * width * caps.warp_size
    if used > pool:
        errors.append(f"register groups take {used} registers, the pool holds {pool}")
    for role in problem.roles:
        rp = placed[(role.owner, role.name)]
        need = caps.setmaxnreg_min if role.regs is None else max(role.regs, caps.setmaxnreg_min)
        touched = [grp for grp in placement.groups if rp.first_warp < (grp.index + 1) * g and rp.end > grp.index * g]
        for grp in touched:
            if grp.budget < need:
                errors.append(f"role `{rp.display}` needs {need} registers, its group {grp.index} has {grp.budget}")
        if touched and rp.budget != min(grp.budget for grp in touched):
            errors.append(
                f"role `{rp.display}` reports budget {rp.budget}, its groups give {min(grp.budget for grp in touched)}"
            )


def _oracle_entry(caps: Capacities, warps: int) -> int:
    """Entry registers for ``blocks_per_sm`` resident blocks of ``warps`` warps.

    A deliberate oracle: an independent copy of ``hardware.residency.entry_registers``,
    written as a simulation (deal every resident warp to the sub-partitions in turn and
    check each one's register file) rather than by its closed form.
    """
    unit = caps.reg_alloc_unit_per_warp // caps.warp_size
    share = caps.regs_per_sm // caps.sub_partitions
    for regs in range(caps.max_regs_per_thread // unit * unit, 0, -unit):
        per_warp = -(-regs * caps.warp_size // caps.reg_alloc_unit_per_warp) * caps.reg_alloc_unit_per_warp
        rounded = -(-warps // caps.reg_warp_rounding) * caps.reg_warp_rounding
        if per_warp * rounded > caps.regs_per_block:
            continue
        used = [0] * caps.sub_partitions
        for n in range(warps * caps.blocks_per_sm):
            used[n % caps.sub_partitions] += per_warp
        if max(used) <= share:
            return regs
    return 0


def verify(problem: Problem, placement: Placement) -> list[str]:
    """Every way the placement breaks the problem; empty when it is valid."""
    errors: list[str] = []
    if placement.target != problem.capacities.target:
        errors.append(f"placement for {placement.target}, problem for {problem.capacities.target}")
    _storage(problem, placement, errors)
    _warps(problem, placement, errors)
    return errors
