"""The greedy baseline: first fit, for comparison with the solver.

Each storage domain is packed by first fit (every item at the lowest aligned address
free of the co-live items placed before it) in one of two orders: ``lexical``
(canonical owner, name order) or ``size`` (decreasing size). Ring depths are either
given or grown greedily (:func:`placement._model.grow_depths`): the deepest common
level first fit accepts, then each ring in name order as deep as first fit allows. Roles are laid out by first fit
in the same order (``size``: widest first), the block takes the fewest warps (idle
warps added at the end) whose register pool holds every group at the largest minimum
of its roles. No search, no proof: ``optimal`` and ``canonical`` are False.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement._assemble import assemble
from placement._model import (
    Item,
    Structure,
    domain_items,
    first_fit,
    footprint,
    greedy_orders,
    grow_depths,
    lower_bound,
    structure,
)
from placement._storage import Packed
from placement._warps import Layout, greedy_layout, group_minimums, group_threads
from placement.problem import DOMAINS, Domain, Problem
from placement.result import Placement

ORDERS = ("lexical", "size")


def _fit(
    items: tuple[Item, ...], st: Structure, depths: Mapping[str, int], lo: int, hi: int, order: str
) -> list[int] | None:
    sizes = [it.size(depths) for it in items]
    return first_fit(items, st, sizes, lo, hi, greedy_orders(items, sizes)[order], keep_chains=False)


def _layout(problem: Problem, order: str) -> Layout | None:
    caps = problem.capacities
    idx = list(range(len(problem.roles)))
    if order == "size":
        idx.sort(key=lambda r: (-problem.roles[r].warps, r))
    found = greedy_layout(problem, idx)
    if found is None:
        return None
    offsets, end = found
    if not problem.roles:
        return Layout((), end, (), False, False)
    last = end if problem.block_warps or not problem.allow_idle_warps else caps.max_warps_per_block
    for warps in range(end, last + 1):
        mins = group_minimums(problem, offsets, warps)
        used = sum(b * t for b, t in zip(mins, group_threads(problem, warps), strict=True))
        if used <= caps.register_pool(warps):
            break
    else:
        return None
    return Layout(tuple(offsets), warps, tuple(mins), False, False)


def greedy(problem: Problem, order: str = "lexical", depths: Mapping[str, int] | None = None) -> Placement | None:
    """The first-fit placement in ``order`` (``lexical`` or ``size``), or None if it fails.

    ``depths`` fixes the ring depths (e.g. the solver's, to compare footprints); by default
    they are grown greedily.
    """
    if order not in ORDERS:
        raise ValueError(f"unknown greedy order {order!r}; expected one of {ORDERS}")
    caps = problem.capacities
    smem_items = domain_items(problem, Domain.SMEM)
    smem_st = structure(smem_items, problem.timeline)
    lo, hi = caps.bounds(Domain.SMEM)
    if depths is None:
        ranges = {r.name: problem.depth_range(r) for r in problem.rings}
        chosen, _ = grow_depths(ranges, lambda d: _fit(smem_items, smem_st, d, lo, hi, order))
    else:
        chosen = dict(depths)
    packed: dict[Domain, Packed] = {}
    for domain in DOMAINS:
        items = smem_items if domain is Domain.SMEM else domain_items(problem, domain)
        st = smem_st if domain is Domain.SMEM else structure(items, problem.timeline)
        dlo, dhi = caps.bounds(domain)
        bases = _fit(items, st, chosen, dlo, dhi, order)
        if bases is None:
            return None
        sizes = [it.size(chosen) for it in items]
        packed[domain] = Packed(
            domain,
            items,
            tuple(bases),
            tuple(sizes),
            chosen,
            footprint(sizes, bases, dlo),
            lower_bound(items, st, sizes, dlo),
            False,
            False,
            False,
        )
    layout = _layout(problem, order)
    if layout is None:
        return None
    return assemble(problem, packed, layout, method=f"greedy-{order}", optimal=False, canonical=False)
