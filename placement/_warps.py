"""Solving the warp layout and the register budgets.

Semantics:

- Roles take disjoint runs of warps in ``[0, W)`` in the problem's role order (the
  composition's declaration order, as L-WARPS packs them); warps no role takes are idle
  padding (only when the problem allows it). ``W`` is the launch's warp count when
  the problem fixes it, else placement chooses it (at most the block limit).
- Register groups are warpgroups: group ``k`` is warps ``[4k, 4k + 4)`` within the
  block. ``setmaxnreg`` sets one budget per group; a role touching several groups
  gets the smallest of their budgets, and every group a role touches has a budget
  of at least the role's minimum (``regs`` rounded up to the step, else the
  setmaxnreg minimum). Groups with idle warps only sit at the minimum.
- The groups must fit the block's register pool: Σ_k budget_k × threads_k ≤
  entry(W) × threads(W) (specs/hardware.md §3.2; :meth:`Capacities.entry_regs`).

The objective, in priority order: (1) the most registers at the roles' disposal,
Σ_r warps_r × budget_r; (2) the surplus spread evenly: the largest minimum of
budget_r − minimum_r; (3) the fewest block warps. (1) and (2) apply only when some
role declares ``regs``: without one the kernel runs no ``setmaxnreg``, and idle warps
would buy registers no role can take (two one-warp roles stay a block of 2 warps).
Tie-break: each role's offset lowest in the problem's role order (the composition's
declaration order), then each role's budget highest in that order, then each group's
budget lowest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import z3

from checker.memo import Memo
from diagnostics.symbols import Code
from placement._budget import Budget, search_max, search_min
from placement.problem import Problem, Role, round_up
from solver import UNSAT, Verdict, minimise_core


@dataclass(frozen=True)
class Layout:
    """Role offsets (the problem's role order), block warps and group budgets (a role's budget is
    the smallest budget of the groups it touches)."""

    offsets: tuple[int, ...]
    block_warps: int
    group_budgets: tuple[int, ...]
    proven: bool
    canonical: bool


@dataclass(frozen=True)
class WarpConflict:
    """Roles (indices in the problem's role order) that cannot be laid out (``L-WARPS``) or given
    registers (``L-REGS``) together; ``needs``/``offers`` are warps or registers."""

    code: str
    roles: tuple[int, ...]
    minimal: bool
    needs: int
    offers: int
    exact: bool
    warps: int


@dataclass(frozen=True)
class WarpsUndecided:
    """The budget ran out before a layout or a proof of infeasibility was found."""


def overlaps(offset: int, warps: int, group: int, width: int) -> bool:
    return offset < (group + 1) * width and offset + warps > group * width


class WarpModel:
    """The Z3 encoding of the layout and, with ``registers``, of the register groups."""

    def __init__(
        self,
        problem: Problem,
        roles: Sequence[Role],
        *,
        registers: bool,
        limit: int,
        exact: int | None,
        pool: bool = True,
    ) -> None:
        caps = problem.capacities
        g = caps.warpgroup_warps
        self.problem = problem
        self.roles = roles
        # a context of its own, as in placement._storage.PackModel
        self.ctx = ctx = z3.Context()
        self.solver = s = z3.Solver(ctx=ctx)
        self.guards: list[z3.BoolRef] = []
        self.off = [z3.Int(f"o{r}", ctx) for r in range(len(roles))]
        self.lits = [z3.Bool(f"t{r}", ctx) for r in range(len(roles))]
        self.warps = z3.Int("W", ctx)
        self.groups = -(-limit // g)
        self.budget = [z3.Int(f"g{k}", ctx) for k in range(self.groups)]
        self.role_budget = [z3.Int(f"B{r}", ctx) for r in range(len(roles))]
        s.add(self.warps >= 1, self.warps <= limit)
        if exact is not None:
            s.add(self.warps == exact)
        present = z3.Sum([z3.If(lit, r.warps, 0) for lit, r in zip(self.lits, roles, strict=True)])
        s.add(present <= self.warps)
        for r, role in enumerate(roles):
            o = self.off[r]
            own = [o >= 0, o + role.warps <= self.warps]
            if role.warpgroup:
                own.append(o == g * z3.Int(f"q{r}", ctx))
            s.add(z3.Implies(self.lits[r], z3.And(own)))
        for r in range(len(roles)):
            for t in range(r + 1, len(roles)):
                a, b = roles[r], roles[t]
                s.add(z3.Or(self.off[r] + a.warps <= self.off[t], self.off[t] + b.warps <= self.off[r]))
                # declaration order: a role never starts before one declared earlier
                s.add(z3.Implies(z3.And(self.lits[r], self.lits[t]), self.off[r] + a.warps <= self.off[t]))
        if not registers:
            return
        lo_b, hi_b, step = caps.setmaxnreg_min, caps.setmaxnreg_max, caps.setmaxnreg_step
        for k, b in enumerate(self.budget):
            s.add(b >= lo_b, b <= hi_b, b == step * z3.Int(f"c{k}", ctx))
            s.add(z3.Implies(self.warps <= g * k, b == lo_b))
        for r, role in enumerate(roles):
            need = problem.role_regs(role)
            o, br = self.off[r], self.role_budget[r]
            s.add(br <= hi_b, z3.Implies(self.lits[r], br >= need))
            for k, b in enumerate(self.budget):
                touches = z3.And(o < g * (k + 1), o + role.warps > g * k)
                s.add(z3.Implies(touches, br <= b))
                s.add(z3.Implies(z3.And(self.lits[r], touches), b >= need))
        self.demand_at = {w: self._demand(w) for w in range(1, limit + 1)}
        if pool:
            for w, demand in self.demand_at.items():
                s.add(z3.Implies(self.warps == w, demand <= caps.register_pool(w)))

    def _demand(self, w: int) -> z3.ArithRef:
        caps = self.problem.capacities
        g = caps.warpgroup_warps
        terms = [self.budget[k] * (caps.warp_size * min(g, w - g * k)) for k in range(-(-w // g))]
        return z3.Sum(terms) if terms else z3.IntVal(0, self.ctx)

    def value(self, model: z3.ModelRef, expr: z3.ArithRef) -> int:
        return int(model.eval(expr, model_completion=True).as_long())

    def probe(self, budget: Budget, *extra: z3.BoolRef) -> tuple[Verdict, z3.ModelRef | None]:
        guard = z3.Bool(f"probe{len(self.guards)}", self.ctx)
        self.guards.append(guard)
        self.solver.add(z3.Implies(guard, z3.And(*extra)))
        result = budget.check(self.solver, guard)
        model = self.solver.model() if result.sat else None
        return result, model


def greedy_layout(problem: Problem, order: Sequence[int]) -> tuple[list[int], int] | None:
    """Roles packed in ``order``, each after the previous one (warpgroup roles aligned, the warps
    skipped idle): offsets and block warps. The problem's own order is L-WARPS' packing."""
    caps = problem.capacities
    g = caps.warpgroup_warps
    roles = problem.roles
    limit = problem.block_warps or caps.max_warps_per_block
    offsets = [0] * len(roles)
    cursor = 0
    for r in order:
        role = roles[r]
        start = round_up(cursor, g) if role.warpgroup else cursor
        if start + role.warps > limit:
            return None
        offsets[r] = start
        cursor = start + role.warps
    end = max((o + r.warps for o, r in zip(offsets, roles, strict=True)), default=0)
    warps = problem.block_warps or end
    if not problem.allow_idle_warps and sum(r.warps for r in roles) != warps:
        return None
    return offsets, warps


def group_minimums(problem: Problem, offsets: Sequence[int], warps: int) -> list[int]:
    """Each group's smallest legal budget: the largest minimum of the roles touching it."""
    caps = problem.capacities
    g = caps.warpgroup_warps
    mins = [caps.setmaxnreg_min] * (-(-warps // g))
    for o, role in zip(offsets, problem.roles, strict=True):
        for k in range(len(mins)):
            if overlaps(o, role.warps, k, g):
                mins[k] = max(mins[k], problem.role_regs(role))
    return mins


def group_threads(problem: Problem, warps: int) -> list[int]:
    caps = problem.capacities
    g = caps.warpgroup_warps
    return [caps.warp_size * min(g, warps - g * k) for k in range(-(-warps // g))]


def solve_warps(problem: Problem, budget: Budget, memo: Memo | None = None) -> Layout | WarpConflict | WarpsUndecided:
    """Lay out the roles and choose register budgets (module docstring).

    The answer reads only the capacities, the roles' widths, warpgroup flags and register
    minimums, the block's warps and the budget, and its models have contexts of their own:
    on a fresh budget it is a function of those, kept in ``memo`` with what it spent (charged
    to ``budget`` again on a hit), so compositions that differ elsewhere share it.
    """
    if memo is None or budget.used or budget.checks or budget.unknowns:
        return _solve_warps(problem, budget)
    key = (
        problem.capacities,
        tuple((r.warps, r.warpgroup, r.regs) for r in problem.roles),
        problem.block_warps,
        problem.allow_idle_warps,
        budget.total,
        budget.per_check,
    )

    def compute() -> tuple[object, int, int, int]:
        fresh = Budget(budget.total, budget.per_check)
        return _solve_warps(problem, fresh), fresh.used, fresh.checks, fresh.unknowns

    answer, used, checks, unknowns = memo.warps.get(key, compute)
    assert isinstance(answer, Layout | WarpConflict | WarpsUndecided)
    budget.used += used
    budget.checks += checks
    budget.unknowns += unknowns
    return answer


def _solve_warps(problem: Problem, budget: Budget) -> Layout | WarpConflict | WarpsUndecided:
    caps = problem.capacities
    roles = problem.roles
    limit = problem.block_warps or caps.max_warps_per_block
    everyone = tuple(range(len(roles)))
    total = sum(r.warps for r in roles)
    if not roles:
        return Layout((), problem.block_warps or 0, (), True, True)
    if total > limit:
        kept = list(everyone)
        for r in everyone:
            if sum(roles[t].warps for t in kept if t != r) > limit:
                kept.remove(r)
        needs = sum(roles[t].warps for t in kept)
        return WarpConflict(Code.L_WARPS, tuple(kept), True, needs, limit, True, needs)
    if not problem.allow_idle_warps and problem.block_warps is not None and total != limit:
        return WarpConflict(Code.L_WARPS, everyone, True, total, limit, True, total)
    exact = problem.block_warps if problem.allow_idle_warps else total
    if greedy_layout(problem, everyone) is None:
        layout_model = WarpModel(problem, roles, registers=False, limit=limit, exact=exact)
        result = budget.check(layout_model.solver, *layout_model.lits, decisive=True)
        if result.unknown:
            return WarpsUndecided()
        if result.unsat:
            core, minimal = _shrink(layout_model, budget)
            needs, ok = _warps_needed(problem, [roles[r] for r in core], budget)
            return WarpConflict(Code.L_WARPS, core, minimal, needs, limit, ok, needs)
    model = WarpModel(problem, roles, registers=True, limit=limit, exact=exact)
    result = budget.check(model.solver, *model.lits, decisive=True)
    if result.unknown:
        return WarpsUndecided()
    if result.unsat:
        core, minimal = _shrink(model, budget)
        return _regs_conflict(problem, core, minimal, limit, exact, budget)
    current = model.solver.model()
    model.solver.add(*model.lits)
    return _optimise(problem, model, current, budget)


def _optimise(problem: Problem, m: WarpModel, current: z3.ModelRef, budget: Budget) -> Layout:
    caps = problem.capacities
    roles = m.roles
    s = m.solver
    proven = canonical = True

    def maximise(expr: z3.ArithRef, upper: int, step: int = 1) -> bool:
        nonlocal current
        value, ok, found = search_max(
            lambda v: m.probe(budget, expr >= v), lambda mod: m.value(mod, expr), m.value(current, expr), upper, step
        )
        current = found if found is not None else current
        s.add(expr == value)
        return ok

    def minimise(expr: z3.ArithRef, lower: int, step: int = 1) -> bool:
        nonlocal current
        value, ok, found = search_min(
            lambda v: m.probe(budget, expr <= v), lambda mod: m.value(mod, expr), m.value(current, expr), lower, step
        )
        current = found if found is not None else current
        s.add(expr == value)
        return ok

    hi_b = caps.setmaxnreg_max
    needs = [problem.role_regs(r) for r in roles]
    at_disposal = z3.Sum([r.warps * b for r, b in zip(roles, m.role_budget, strict=True)])
    limit = problem.block_warps or caps.max_warps_per_block
    most = max(caps.register_pool(w) for w in range(1, limit + 1)) // caps.warp_size
    if any(r.regs is not None for r in roles):
        proven &= maximise(at_disposal, min(most, sum(r.warps * hi_b for r in roles)))
        headroom = z3.Int("headroom", m.ctx)
        s.add([headroom <= b - n for b, n in zip(m.role_budget, needs, strict=True)])
        proven &= maximise(headroom, hi_b - max(needs))
    if problem.block_warps is None:
        proven &= minimise(m.warps, sum(r.warps for r in roles))
    g = caps.warpgroup_warps
    for r, role in enumerate(roles):
        canonical &= minimise(m.off[r], 0, g if role.warpgroup else 1)
    for r in range(len(roles)):
        canonical &= maximise(m.role_budget[r], hi_b, caps.setmaxnreg_step)
    warps = m.value(current, m.warps)
    for k in range(-(-warps // g)):
        canonical &= minimise(m.budget[k], caps.setmaxnreg_min, caps.setmaxnreg_step)
    return Layout(
        offsets=tuple(m.value(current, o) for o in m.off),
        block_warps=warps,
        group_budgets=tuple(m.value(current, m.budget[k]) for k in range(-(-warps // g))),
        proven=proven,
        canonical=canonical,
    )


def _shrink(m: WarpModel, budget: Budget) -> tuple[tuple[int, ...], bool]:
    """A minimal unsat core of role literals (deletion-based)."""
    index = {str(lit): r for r, lit in enumerate(m.lits)}

    def roles_of(core: list[z3.BoolRef]) -> list[int]:
        return sorted(index[str(lit)] for lit in core)

    def check(trial: Sequence[int]) -> tuple[Verdict, list[int] | None]:
        result = budget.check(m.solver, *[m.lits[t] for t in trial])
        return (UNSAT, roles_of(m.solver.unsat_core())) if result.unsat else (result, None)

    return minimise_core(roles_of(m.solver.unsat_core()), check)


def _warps_needed(problem: Problem, roles: Sequence[Role], budget: Budget) -> tuple[int, bool]:
    """The fewest block warps that lay out these roles, with no block limit."""
    g = problem.capacities.warpgroup_warps
    limit = sum(round_up(r.warps, g) + g for r in roles)
    m = WarpModel(problem, roles, registers=False, limit=limit, exact=None)
    m.solver.add(*m.lits)
    result = budget.check(m.solver)
    if not result.sat:
        return sum(r.warps for r in roles), False
    value, ok, _ = search_min(
        lambda v: m.probe(budget, m.warps <= v),
        lambda mod: m.value(mod, m.warps),
        m.value(m.solver.model(), m.warps),
        sum(r.warps for r in roles),
    )
    return value, ok


def _regs_conflict(
    problem: Problem, core: tuple[int, ...], minimal: bool, limit: int, exact: int | None, budget: Budget
) -> WarpConflict:
    """L-REGS for a core: the layout with the smallest register shortfall, and its numbers."""
    caps = problem.capacities
    roles = [problem.roles[r] for r in core]
    m = WarpModel(problem, roles, registers=True, limit=limit, exact=exact, pool=False)
    m.solver.add(*m.lits)
    pool = z3.IntVal(0, m.ctx)
    for w in range(limit, 0, -1):
        pool = z3.If(m.warps == w, caps.register_pool(w), pool)
    demand = z3.IntVal(0, m.ctx)
    for w in range(limit, 0, -1):
        demand = z3.If(m.warps == w, m.demand_at[w], demand)
    short = demand - pool
    result = budget.check(m.solver)
    if not result.sat:
        return _packed_shortfall(problem, core, minimal, exact)
    first = m.solver.model()
    _, ok, found = search_min(
        lambda v: m.probe(budget, short <= v), lambda mod: m.value(mod, short), m.value(first, short), 1
    )
    best = found if found is not None else first
    return WarpConflict(
        Code.L_REGS, core, minimal, m.value(best, demand), m.value(best, pool), ok, m.value(best, m.warps)
    )


def _packed_shortfall(problem: Problem, core: tuple[int, ...], minimal: bool, exact: int | None) -> WarpConflict:
    """L-REGS by arithmetic, when the budget ran out after the proof but before a layout's numbers.

    The core's roles packed in order (the tightest layout in declaration order, which the
    layout check found room for), each group at its smallest budget: since the solver proved
    that no layout fits the pool, its groups overflow it, and its numbers are the diagnostic's
    (not shown the smallest shortfall).
    """
    roles = tuple(problem.roles[r] for r in core)
    alone = dataclasses.replace(problem, roles=roles, block_warps=exact, allow_idle_warps=True)
    packed = greedy_layout(alone, range(len(roles)))
    if packed is None:
        raise RuntimeError("the roles of a register core have no layout, though the layout check found one")
    offsets, warps = packed
    groups = zip(group_minimums(alone, offsets, warps), group_threads(alone, warps), strict=True)
    demand = sum(budget * threads for budget, threads in groups)
    pool = problem.capacities.register_pool(warps)
    if demand <= pool:
        raise RuntimeError("a register core fits its pool, though the solver proved that it cannot")
    return WarpConflict(Code.L_REGS, core, minimal, demand, pool, False, warps)
