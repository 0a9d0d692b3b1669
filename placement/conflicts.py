"""Rejections explained: a minimal conflicting set of claims as one clause diagnostic.

Codes: shared memory, tensor memory and counter slots that do not fit are
``L-OVERLAP``, also when a ring's slots or mbarriers take part (the ring cannot reach
its minimum depth; L-DEPTH is only about depth ranges); named-barrier IDs running
out is ``L-BARRIER``; a warp layout that does not fit is ``L-WARPS``; register groups
over the pool are ``L-REGS``. Every member of the core is a label ("needs N B"),
the message states what the core needs, what the target offers and the shortfall.
"""

from __future__ import annotations

from collections.abc import Sequence

from diagnostics.model import Diagnostic, Label, Severity
from placement._model import Item
from placement._storage import Conflict
from placement._warps import WarpConflict
from placement.lifetime import Lifetime, Timeline, lifetime_key
from placement.problem import Domain, Problem

# The help of a shared-memory conflict a ring takes part in.
RING_HELP = "lower the ring's minimum depth or its slot size, or free shared memory around it"
HELPS: dict[str, str] = {
    "L-OVERLAP": "make a claim smaller, or give claims that are not used together exclusive phases "
                 "or event lifetimes so that they can share storage",
    "L-BARRIER": "give barriers that are not used together exclusive phases or event lifetimes, "
                 "or merge barriers with the same participants",
    "L-WARPS": "use fewer or narrower roles, or a launch geometry with as many warps as the roles "
               "take",
    "L-REGS": "lower a role's `regs`, or let roles with small budgets share a warpgroup",
}


def _item_need(item: Item, size: int, depths: dict[str, int]) -> str:
    unit = item.domain.unit
    if item.kind == "slots":
        depth = depths[item.ring or ""]
        return f"needs {depth} × {item.unit} B = {size} B"
    if item.kind == "mbarriers":
        depth = depths[item.ring or ""]
        return f"needs {depth} slots × {item.unit} B of mbarriers = {size} B"
    if item.domain is Domain.TMEM and size != item.demand:
        return f"needs {item.demand} columns, allocated as {size}"
    if item.domain is Domain.BARRIER:
        return "needs one ID"
    return f"needs {size} {unit}"


def _co_live_notes(timeline: Timeline, lifetimes: Sequence[Lifetime]) -> list[str]:
    distinct = sorted(set(lifetimes), key=lifetime_key)
    reasons = []
    for x, a in enumerate(distinct):
        for b in distinct[x:]:
            if a == b and lifetimes.count(a) < 2:
                continue
            reasons.append(timeline.co_live_reason(a, b))
    return reasons


def storage_diagnostic(problem: Problem, conflict: Conflict) -> Diagnostic:
    """The diagnostic of a storage domain whose minimal core cannot be placed."""
    caps = problem.capacities
    domain = conflict.domain
    lo, hi = caps.bounds(domain)
    offers = hi - lo
    depths = dict(conflict.depths)
    sizes = [it.size(depths) for it in conflict.items]
    rings = sorted({it.ring for it in conflict.items if it.ring is not None})
    needs = conflict.needs if conflict.needs_exact else None
    needs_text = str(conflict.needs) if conflict.needs_exact else f"at least {conflict.needs}"
    target = caps.target
    if domain is Domain.SMEM:
        code = "L-OVERLAP"  # every capacity overflow, rings or not (L-DEPTH is for depth ranges)
        per = f" per block at `blocks_per_sm {caps.blocks_per_sm}`" if caps.blocks_per_sm > 1 else ""
        what = f"shared memory needs {needs_text} B, {target} offers {offers} B{per}"
        if len(rings) == 1:
            what = (f"ring `{rings[0]}` does not fit at its minimum depth {depths[rings[0]]}: "
                    f"{what}")
        elif rings:
            names = ", ".join(f"`{r}`" for r in rings)
            mins = ", ".join(str(depths[r]) for r in rings)
            what = f"rings {names} do not fit at their minimum depths {mins}: {what}"
    elif domain is Domain.TMEM:
        code = "L-OVERLAP"
        per = f" per block at `blocks_per_sm {caps.blocks_per_sm}`" if caps.blocks_per_sm > 1 else ""
        what = f"tensor memory needs {needs_text} columns, {target} offers {offers} columns{per}"
    elif domain is Domain.BARRIER:
        code = "L-BARRIER"
        what = (f"named barriers need {needs_text} IDs, {target} offers {offers} "
                f"(IDs {lo}..{hi - 1}; ID 0 is the block-wide barrier)")
    else:
        code = "L-OVERLAP"
        what = f"counter slots need {needs_text}, the counter array holds {offers}"
    primary = max(range(len(sizes)), key=lambda k: (sizes[k], -k))
    labels = tuple(
        Label(it.span, f"`{it.display}` {_item_need(it, sizes[k], depths)} ({it.lifetime.text()})",
              k == primary)
        for k, it in enumerate(conflict.items))
    members = ", ".join(f"`{it.display}` ({it.lifetime.text()})" for it in conflict.items)
    notes = [f"these claims may be live at the same time: {members}"]
    reasons = _co_live_notes(problem.timeline, [it.lifetime for it in conflict.items])
    if reasons:
        notes.append("live together because " + "; ".join(reasons))
    if needs is not None:
        notes.append(f"short by {needs - offers} {domain.unit}")
    if caps.blocks_per_sm > 1 and domain in (Domain.SMEM, Domain.TMEM):
        notes.append(f"`blocks_per_sm {caps.blocks_per_sm}`: {caps.blocks_per_sm} blocks share one SM, so each "
                     f"gets {offers} {domain.unit} of {domain.title} (hardware/residency.py)")
    if not conflict.needs_exact:
        notes.append("the solver budget ran out before the exact need was found; "
                     "the figure is a lower bound")
    if not conflict.minimal:
        notes.append("the solver budget ran out before this set was shown minimal")
    data = (("domain", domain.value), ("capacity", str(offers)), ("needs", str(conflict.needs)),
            ("needs_exact", str(conflict.needs_exact).lower()),
            ("shortfall", str(conflict.needs - offers)),
            ("core", ", ".join(it.display for it in conflict.items)),
            ("minimal", str(conflict.minimal).lower()))
    help_text = RING_HELP if domain is Domain.SMEM and rings else HELPS[code]
    return Diagnostic(code, what, Severity.ERROR, labels, tuple(notes), (help_text,), data)


def warps_diagnostic(problem: Problem, conflict: WarpConflict) -> Diagnostic:
    """The diagnostic of roles that cannot be laid out or given their registers."""
    caps = problem.capacities
    roles = [problem.roles[r] for r in conflict.roles]
    needs_text = str(conflict.needs) if conflict.exact else f"at least {conflict.needs}"
    if conflict.code == "L-WARPS":
        total = sum(r.warps for r in problem.roles)
        if problem.block_warps is not None and not problem.allow_idle_warps and total < conflict.offers:
            what = f"roles cover {total} warps, the launch has {conflict.offers} and no idle warps"
        elif not problem.allow_idle_warps and conflict.needs <= conflict.offers:
            what = (f"roles packed in declaration order need {needs_text} warps, {conflict.needs - total} "
                    "of them idle padding, and the block allows no idle warps")
        elif problem.block_warps is not None:
            what = f"roles need {needs_text} warps, the launch has {conflict.offers}"
        else:
            what = f"roles need {needs_text} warps, a block has at most {conflict.offers}"
        labels = tuple(
            Label(r.span, f"`{r.display}` needs {r.warps} warps"
                          f"{', warpgroup-aligned' if r.warpgroup else ''}", k == 0)
            for k, r in enumerate(roles))
        notes = [f"roles in conflict: {', '.join(f'`{r.display}`' for r in roles)}"]
    else:
        pool = conflict.offers
        what = (f"register groups need {conflict.needs} registers, a block of {conflict.warps} "
                f"warps holds {pool}")
        labels = tuple(
            Label(r.span, f"`{r.display}` needs {problem.role_regs(r)} registers per thread "
                          f"on {r.warps} warps", k == 0)
            for k, r in enumerate(roles))
        entry = caps.entry_regs(conflict.warps) if conflict.warps else 0
        notes = [f"the pool is {entry} registers per thread at entry × "
                 f"{conflict.warps * caps.warp_size} threads; setmaxnreg budgets are per "
                 f"warpgroup of {caps.warpgroup_warps * caps.warp_size} threads",
                 f"short by {conflict.needs - pool} registers"]
        if not conflict.exact:
            notes.append("the solver budget ran out before the smallest shortfall was found")
    if not conflict.minimal:
        notes.append("the solver budget ran out before this set was shown minimal")
    data = (("capacity", str(conflict.offers)), ("needs", str(conflict.needs)),
            ("shortfall", str(conflict.needs - conflict.offers)),
            ("core", ", ".join(r.display for r in roles)),
            ("minimal", str(conflict.minimal).lower()))
    return Diagnostic(conflict.code, what, Severity.ERROR, labels, tuple(notes),
                      (HELPS[conflict.code],), data)


def budget_diagnostic(what: str, rlimit: int) -> Diagnostic:
    """``E-SOLVER-BUDGET``: neither a placement nor a proof that none exists within the budget."""
    return Diagnostic(
        "E-SOLVER-BUDGET",
        f"placement of {what} was not decided within its budget of {rlimit} rlimit units",
        Severity.ERROR, (),
        ("the solver found no placement and could not prove that none exists",),
        ("raise the placement budget (`rlimit` of `placement.solve`: the check that decides whether "
         "a placement exists may spend all of it), or simplify the lifetimes of the claims",),
        (("rlimit", str(rlimit)),))
