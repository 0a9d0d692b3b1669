"""The joint placement solve.

The problem is one constraint system over the base of every claim in every domain,
every ring depth, every role's warp offset and every register budget. It falls
into components that share no variable: shared memory with the ring depths, tensor
memory, named-barrier IDs, counter slots, and the warps with the register groups.
The objective is lexicographic and each level lives in one component:

1. ring depths: the largest sum, then the depth spread evenly (the smallest maximum
   depth), then each ring deepest in name order (shared memory);
2. register budgets: the most registers at the roles' disposal, then the surplus
   spread evenly (warps);
3. footprints: the smallest highest-end address of every storage domain, and the
   fewest block warps;
4. the canonical tie-break: lowest addresses and warp offsets in (owner, name)
   order (:mod:`placement._storage`, :mod:`placement._warps`).

so solving the components one after another under one rlimit budget gives the
joint optimum. Every level's search is a sequence of bounded Z3 checks; a level
whose search ran out of budget keeps the best placement found and the result says
``optimal=False`` (or ``canonical=False`` for a tie-break) with an
``I-PLACE-BUDGET`` note. Every returned placement has passed the independent
verifier (:mod:`placement.verify`).
"""

from __future__ import annotations

from checker.memo import Memo
from diagnostics.model import Diagnostic, DiagnosticError, Severity, sort_diagnostics
from diagnostics.symbols import Code
from placement._assemble import assemble
from placement._budget import DEFAULT_CHECK_RLIMIT, DEFAULT_RLIMIT, Budget
from placement._model import domain_items
from placement._storage import Conflict, Packed, solve_domain
from placement._warps import Layout, WarpConflict, solve_warps
from placement.conflicts import budget_diagnostic, storage_diagnostic, warps_diagnostic
from placement.problem import DOMAINS, Domain, Problem
from placement.result import Placement
from placement.verify import verify

SOLVE_ORDER: tuple[Domain, ...] = (Domain.BARRIER, Domain.COUNTER, Domain.TMEM, Domain.SMEM)


def solve(
    problem: Problem,
    *,
    rlimit: int = DEFAULT_RLIMIT,
    check_rlimit: int = DEFAULT_CHECK_RLIMIT,
    memo: Memo | None = None,
) -> Placement:
    """Place every claim, ring depth, role and register budget of the problem.

    Raises :class:`~diagnostics.model.DiagnosticError` carrying one ``L-…`` diagnostic per
    domain without a placement (minimal conflicting set, capacity and shortfall), or
    ``E-SOLVER-BUDGET`` when the budget ran out before either answer. ``memo`` keeps warp
    layouts for the caller's later placements (:func:`placement._warps.solve_warps`).
    """
    budget = Budget(rlimit, check_rlimit)
    errors: list[Diagnostic] = []
    layout = solve_warps(problem, budget, memo)
    if isinstance(layout, WarpConflict):
        errors.append(warps_diagnostic(problem, layout))
    elif not isinstance(layout, Layout):
        errors.append(budget_diagnostic("the warps and registers", rlimit))
    packed: dict[Domain, Packed] = {}
    for domain in SOLVE_ORDER:
        out = solve_domain(problem, domain, domain_items(problem, domain), budget)
        if isinstance(out, Packed):
            packed[domain] = out
        elif isinstance(out, Conflict):
            errors.append(storage_diagnostic(problem, out))
        else:
            errors.append(budget_diagnostic(domain.title, rlimit))
    if errors:
        raise DiagnosticError(sort_diagnostics(errors))
    assert isinstance(layout, Layout)
    optimal = layout.proven and all(p.depth_proven and p.footprint_proven for p in packed.values())
    canonical = layout.canonical and all(p.canonical for p in packed.values())
    notes: list[Diagnostic] = []
    if not (optimal and canonical):
        notes.append(_budget_note(packed, layout, optimal, budget))
    placement = assemble(
        problem,
        packed,
        layout,
        method="solver",
        optimal=optimal,
        canonical=canonical,
        notes=tuple(notes),
        rlimit_used=budget.used,
        checks=budget.checks,
    )
    violations = verify(problem, placement)
    if violations:
        raise RuntimeError("the solver's placement fails verification: " + "; ".join(violations))
    return placement


def _budget_note(packed: dict[Domain, Packed], layout: Layout, optimal: bool, budget: Budget) -> Diagnostic:
    """``I-PLACE-BUDGET``: which levels were not proven within the budget, and which limit bound."""
    open_levels = []
    for domain in DOMAINS:
        p = packed[domain]
        if not p.depth_proven:
            open_levels.append("ring depths")
        if not p.footprint_proven:
            open_levels.append(f"{domain.title} footprint")
        if not p.canonical:
            open_levels.append(f"{domain.title} tie-break")
    if not layout.proven:
        open_levels.append("register budgets and block warps")
    if not layout.canonical:
        open_levels.append("warp and register tie-break")
    what = "optimal" if not optimal else "canonical"
    if budget.left == 0:
        help_text = (
            f"raise the placement budget (`rlimit`, {budget.total} units, all spent) to prove the remaining levels"
        )
    else:
        help_text = (
            f"raise the per-check limit (`check_rlimit`, {budget.per_check} units): a check hit "
            f"it with {budget.left} of the {budget.total} units of `rlimit` left"
        )
    return Diagnostic(
        Code.I_PLACE_BUDGET,
        f"placement is valid but not proven {what} within its budget of {budget.total} rlimit units",
        Severity.NOTE,
        (),
        (f"not proven: {', '.join(open_levels)}",),
        (help_text,),
        (("rlimit", str(budget.total)), ("check_rlimit", str(budget.per_check)), ("open", ", ".join(open_levels))),
    )
