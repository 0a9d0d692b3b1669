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

from checker.clauses import l_barrier, l_overlap, l_regs, l_warps
from checker.clauses._core import Core, Member
from diagnostics.model import Diagnostic, Severity
from diagnostics.symbols import Code
from placement._model import Item
from placement._storage import Conflict
from placement._warps import WarpConflict
from placement.lifetime import Lifetime, Timeline, lifetime_key
from placement.problem import Domain, Problem, Role

REGS_HELP = "lower a role's `regs`, or let roles with small budgets share a warpgroup"


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
    """The diagnostic of a storage domain whose minimal core cannot be placed (worded by its clause)."""
    caps = problem.capacities
    domain = conflict.domain
    lo, hi = caps.bounds(domain)
    depths = dict(conflict.depths)
    sizes = [it.size(depths) for it in conflict.items]
    core = Core(
        tuple(
            Member(it.span, it.display, _item_need(it, sizes[k], depths), it.lifetime.text())
            for k, it in enumerate(conflict.items)
        ),
        max(range(len(sizes)), key=lambda k: (sizes[k], -k)),
        conflict.needs,
        conflict.needs_exact,
        hi - lo,
        conflict.minimal,
        tuple(_co_live_notes(problem.timeline, [it.lifetime for it in conflict.items])),
    )
    if domain is Domain.BARRIER:
        return l_barrier.placement_core(core, caps.target, lo, hi - 1)
    rings = tuple((r, depths[r]) for r in sorted({it.ring for it in conflict.items if it.ring is not None}))
    # every capacity overflow is L-OVERLAP, rings or not (L-DEPTH is for depth ranges)
    return l_overlap.placement_core(
        core, domain.value, caps.target, caps.blocks_per_sm, rings if domain is Domain.SMEM else ()
    )


def warps_diagnostic(problem: Problem, conflict: WarpConflict) -> Diagnostic:
    """The diagnostic of roles that cannot be laid out or given their registers (worded by its clause)."""
    roles = [problem.roles[r] for r in conflict.roles]
    if conflict.code != Code.L_WARPS:
        return _pool_diagnostic(problem, conflict, roles)
    total = sum(r.warps for r in problem.roles)
    if problem.block_warps is not None and not problem.allow_idle_warps and total < conflict.offers:
        shape = l_warps.Shortfall.UNCOVERED
    elif not problem.allow_idle_warps and conflict.needs <= conflict.offers:
        shape = l_warps.Shortfall.PADDING
    elif problem.block_warps is not None:
        shape = l_warps.Shortfall.LAUNCH
    else:
        shape = l_warps.Shortfall.BLOCK
    return l_warps.placement_core(
        l_warps.LayoutCore(
            shape,
            tuple((r.span, r.display, r.warps, r.warpgroup) for r in roles),
            total,
            conflict.needs,
            conflict.exact,
            conflict.offers,
            conflict.minimal,
        )
    )


def budget_diagnostic(what: str, rlimit: int) -> Diagnostic:
    """``E-SOLVER-BUDGET``: neither a placement nor a proof that none exists within the budget."""
    return Diagnostic(
        Code.E_SOLVER_BUDGET,
        f"placement of {what} was not decided within its budget of {rlimit} rlimit units",
        Severity.ERROR,
        (),
        ("the solver found no placement and could not prove that none exists",),
        (
            "raise the placement budget (`rlimit` of `placement.solve`: the check that decides whether "
            "a placement exists may spend all of it), or simplify the lifetimes of the claims",
        ),
        (("rlimit", str(rlimit)),),
    )


def _pool_diagnostic(problem: Problem, conflict: WarpConflict, roles: Sequence[Role]) -> Diagnostic:
    """L-REGS as placement decides it, in the clause's one shape (checker/clauses/l_regs.py)."""
    caps = problem.capacities
    threads = conflict.warps * caps.warp_size
    notes = [
        f"setmaxnreg budgets are per warpgroup of {caps.warpgroup_warps * caps.warp_size} threads",
        f"short by {conflict.needs - conflict.offers} registers",
    ]
    if not conflict.exact:
        notes.append(
            "the solver budget ran out before the smallest shortfall was found: another layout may need fewer registers"
        )
    if not conflict.minimal:
        notes.append("the solver budget ran out before this set was shown minimal")
    return l_regs.pool_overflow(
        l_regs.PoolOverflow(
            conflict.needs,
            caps.entry_regs(conflict.warps) if conflict.warps else 0,
            threads,
            tuple(
                (r.span, f"`{r.display}` needs {problem.role_regs(r)} registers per thread on {r.warps} warps")
                for r in roles
            ),
            notes=tuple(notes),
            helps=(REGS_HELP,),
            data=(
                ("capacity", str(conflict.offers)),
                ("core", ", ".join(r.display for r in roles)),
                ("minimal", str(conflict.minimal).lower()),
                ("shortfall", str(conflict.needs - conflict.offers)),
            ),
        )
    )
