"""Solving one storage domain (shared memory with its rings, tensor memory, barrier IDs, counters).

The objective, in priority order, for one domain:

1. the ring depths (shared memory only): the largest sum of depths, then the
   smallest maximum depth (the depth spread evenly), then each ring as deep as
   possible in canonical (name) order;
2. the smallest footprint (highest end address) at those depths;
3. the canonical tie-break: the lexicographically smallest vector of base addresses,
   items in canonical order, among placements with that footprint.

Each level is searched by bounded Z3 checks (:mod:`placement._budget`), started from a
first-fit placement: when first fit already meets a level's bound (every ring at its
maximum, the clique lower bound on the footprint, an item at its lowest free address)
that level is proven without a check. The result records which levels were proven.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import z3

from placement._budget import Budget, search_max, search_min
from placement._model import (
    Item,
    Structure,
    first_fit,
    footprint,
    grow_depths,
    lower_bound,
    seed_orders,
    structure,
    tie_order,
)
from placement.lifetime import Timeline
from placement.problem import Domain, Problem, round_up
from solver import SAT, UNSAT, Verdict, minimise_core

MAX_CORE_PAIRS = 20_000
"""Above this many co-live pairs a domain that a capacity cut proves infeasible gets the cut's
core: the solver model that might find a smaller one would cost seconds just to build."""


@dataclass(frozen=True)
class Packed:
    """A feasible placement of one domain and what was proven about it."""

    domain: Domain
    items: tuple[Item, ...]
    bases: tuple[int, ...]
    sizes: tuple[int, ...]
    depths: Mapping[str, int]
    end: int
    lower: int
    depth_proven: bool
    footprint_proven: bool
    canonical: bool


@dataclass(frozen=True)
class Conflict:
    """A set of items of one domain that cannot be placed together at minimum depths.

    ``needs`` is the smallest footprint the core takes without a capacity limit (exact
    when ``needs_exact``, else a lower bound); ``minimal`` whether removing any member was
    proven to make the rest fit.
    """

    domain: Domain
    items: tuple[Item, ...]
    depths: Mapping[str, int]
    needs: int
    needs_exact: bool
    minimal: bool


@dataclass(frozen=True)
class Undecided:
    """The budget ran out before a placement or a proof of infeasibility was found."""

    domain: Domain


class PackModel:
    """The Z3 encoding of one domain: a base per item, optional depth variables, an end.

    ``tracked`` guards each item's own constraints (range, alignment) and its share of
    every clique cut with a literal, for unsat cores; co-live pairs stay disjoint.
    """

    def __init__(
        self,
        items: Sequence[Item],
        st: Structure,
        lo: int,
        hi: int,
        *,
        sizes: Sequence[int] | None,
        depth_ranges: Mapping[str, tuple[int, int]],
        tracked: bool = False,
    ) -> None:
        self.items = items
        # a context of its own: Z3's search depends on term identities, which must not
        # depend on what else this process solved before
        self.ctx = ctx = z3.Context()
        self.solver = z3.Solver(ctx=ctx)
        self.guards: list[z3.BoolRef] = []
        dname = {name: f"d{k}" for k, name in enumerate(sorted(depth_ranges))}
        self.base = [z3.Int(f"b{it.index}", ctx) for it in items]
        self.depth = {name: z3.Int(v, ctx) for name, v in dname.items()}
        self.end = z3.Int("end", ctx)
        self.lits = [z3.Bool(f"t{it.index}", ctx) for it in items] if tracked else []
        size = []
        for it in items:
            if sizes is not None:
                size.append(str(sizes[it.index]))
            elif it.ring is None:
                size.append(str(it.unit))
            else:
                size.append(f"(* {it.unit} {dname[it.ring]})")
        # the bulk of the constraints goes in as SMT-LIB text: building tens of thousands
        # of terms through the Python API costs far more than Z3's parser
        out = ["(declare-const end Int)"]
        out += [f"(declare-const {v} Int)" for v in dname.values()]
        for it in items:
            out.append(f"(declare-const b{it.index} Int)")
            if it.align > 1:
                out.append(f"(declare-const q{it.index} Int)")
            if tracked:
                out.append(f"(declare-const t{it.index} Bool)")
        for name, (dmin, dmax) in depth_ranges.items():
            out.append(f"(assert (and (>= {dname[name]} {dmin}) (<= {dname[name]} {dmax})))")
        out.append(f"(assert (and (>= end {lo}) (<= end {hi})))")
        for it in items:
            k = it.index
            own = f"(>= b{k} {lo}) (<= (+ b{k} {size[k]}) end)"
            if it.align > 1:
                own += f" (= b{k} (* {it.align} q{k}))"
            out.append(f"(assert (=> t{k} (and {own})))" if tracked else f"(assert (and {own}))")
        chain_of: dict[int, int] = {}
        # symmetry breaking orders interchangeable items; with tracked items (an unsat core
        # may drop any of them) every pair keeps its own disjunction instead
        for c, chain in enumerate(() if tracked else st.chains):
            for a, b in itertools.pairwise(chain):
                out.append(f"(assert (<= (+ b{a} {size[a]}) b{b}))")
            for i in chain:
                chain_of[i] = c
        for i, j in st.pairs:
            if i in chain_of and chain_of.get(j) == chain_of[i]:
                continue
            out.append(f"(assert (or (<= (+ b{i} {size[i]}) b{j}) (<= (+ b{j} {size[j]}) b{i})))")
        for clique in st.cliques:
            if len(clique) < 2:
                continue
            terms = " ".join(f"(ite t{i} {size[i]} 0)" if tracked else size[i] for i in clique)
            out.append(f"(assert (<= (+ {terms}) (- end {lo})))")
        self.solver.from_string("\n".join(out))

    def bases(self, model: z3.ModelRef) -> list[int]:
        return [model.eval(b, model_completion=True).as_long() for b in self.base]

    def depths(self, model: z3.ModelRef) -> dict[str, int]:
        return {n: model.eval(d, model_completion=True).as_long() for n, d in self.depth.items()}

    def probe(self, budget: Budget, *extra: z3.BoolRef) -> tuple[Verdict, z3.ModelRef | None]:
        """Check under extra constraints (behind a fresh guard literal); the model when sat."""
        guard = z3.Bool(f"probe{len(self.guards)}", self.ctx)
        self.guards.append(guard)
        self.solver.add(z3.Implies(guard, z3.And(*extra)))
        result = budget.check(self.solver, guard)
        model = self.solver.model() if result.sat else None
        return result, model

    def value(self, model: z3.ModelRef, expr: z3.ArithRef) -> int:
        return int(model.eval(expr, model_completion=True).as_long())

    def raise_to(
        self,
        budget: Budget,
        expr: z3.ArithRef,
        best: int,
        upper: int,
    ) -> tuple[int, bool, z3.ModelRef | None]:
        """The largest value of ``expr`` in ``[best, upper]`` (``best`` feasible)."""
        return search_max(lambda v: self.probe(budget, expr >= v), lambda m: self.value(m, expr), best, upper)

    def lower_to(
        self, budget: Budget, expr: z3.ArithRef, best: int, lower: int, step: int = 1, near_first: bool = False
    ) -> tuple[int, bool, z3.ModelRef | None]:
        """The smallest value of ``expr`` in ``[lower, best]`` on a grid of ``step``."""
        return search_min(
            lambda v: self.probe(budget, expr <= v), lambda m: self.value(m, expr), best, lower, step, near_first
        )


def _sizes(items: Sequence[Item], depths: Mapping[str, int]) -> list[int]:
    return [it.size(depths) for it in items]


def best_seed(items: Sequence[Item], st: Structure, sizes: Sequence[int], lo: int, hi: int) -> list[int] | None:
    """The first-fit placement of smallest footprint over the seed orders (first wins ties)."""
    best: list[int] | None = None
    for order in seed_orders(items, st, sizes):
        bases = first_fit(items, st, sizes, lo, hi, _chain_order(st, order))
        if bases is not None and (best is None or footprint(sizes, bases, lo) < footprint(sizes, best, lo)):
            best = bases
    return best


def _chain_order(st: Structure, order: Sequence[int]) -> list[int]:
    """The order with each chain's members re-dealt in chain order (keeps symmetry breaking)."""
    chain_of = {i: c for c, chain in enumerate(st.chains) for i in chain}
    dealt = [0] * len(st.chains)
    out = []
    for i in order:
        c = chain_of.get(i)
        if c is None:
            out.append(i)
        else:
            out.append(st.chains[c][dealt[c]])
            dealt[c] += 1
    return out


def _lowest_free(it: Item, st: Structure, sizes: Sequence[int], fixed: Mapping[int, int], floor: int) -> int:
    """The lowest aligned address ≥ floor where the item overlaps no fixed co-live item."""
    v = round_up(floor, it.align)
    busy = sorted((fixed[j], fixed[j] + sizes[j]) for j in st.neighbours[it.index] if j in fixed)
    for start, end in busy:
        if start >= v + sizes[it.index]:
            break
        if end > v:
            v = round_up(end, it.align)
    return v


def solve_domain(
    problem: Problem,
    domain: Domain,
    items: tuple[Item, ...],
    budget: Budget,
) -> Packed | Conflict | Undecided:
    """Place one domain's items lexicographically optimally (module docstring)."""
    caps = problem.capacities
    timeline = problem.timeline
    lo, hi = caps.bounds(domain)
    st = structure(items, timeline)
    ranges = {r.name: problem.depth_range(r) for r in problem.rings} if domain is Domain.SMEM else {}
    low_depths = {name: a for name, (a, _) in ranges.items()}
    sizes = _sizes(items, low_depths)
    witness = best_seed(items, st, sizes, lo, hi)
    if witness is None:
        # a capacity cut proves there is no placement: the solver only looks for a smaller
        # core, within one check; otherwise its check decides and may spend the whole budget
        cut = _capacity_core(items, st, sizes, lo, hi)
        if cut is not None and len(st.pairs) > MAX_CORE_PAIRS:
            return _conflict(domain, items, timeline, cut, None, low_depths, sizes, lo, hi, budget)
        tracked = PackModel(items, st, lo, hi, sizes=sizes, depth_ranges={}, tracked=True)
        result = budget.check(tracked.solver, *tracked.lits, decisive=cut is None)
        if result.unsat:
            core = sorted(int(str(lit)[1:]) for lit in tracked.solver.unsat_core())
            return _conflict(domain, items, timeline, core, tracked, low_depths, sizes, lo, hi, budget)
        if result.unknown:
            if cut is None:
                return Undecided(domain)
            return _conflict(domain, items, timeline, cut, None, low_depths, sizes, lo, hi, budget)
        witness = tracked.bases(tracked.solver.model())
    depths, depth_proven = dict(low_depths), True
    if ranges:
        depths, witness, depth_proven = _deepen(items, st, lo, hi, ranges, witness, budget)
        sizes = _sizes(items, depths)
    model: PackModel | None = None
    end = footprint(sizes, witness, lo)
    lower = lower_bound(items, st, sizes, lo)
    seed = best_seed(items, st, sizes, lo, hi)
    if seed is not None and footprint(sizes, seed, lo) < end:
        witness, end = seed, footprint(sizes, seed, lo)
    footprint_proven = end <= lower
    if not footprint_proven:
        model = PackModel(items, st, lo, hi, sizes=sizes, depth_ranges={})
        end, footprint_proven, found = model.lower_to(budget, model.end, end, lower)
        if found is not None:
            witness = model.bases(found)
            end = footprint(sizes, witness, lo)
    bases, canonical = _canonical(items, st, lo, end, sizes, witness, model, budget)
    end = footprint(sizes, bases, lo)
    return Packed(
        domain, items, tuple(bases), tuple(sizes), depths, end, lower, depth_proven, footprint_proven, canonical
    )


DepthTerm = Callable[[Mapping[str, z3.ArithRef]], z3.BoolRef]
"""A constraint over the ring depths, built for whichever model it is added to."""

Found = tuple[dict[str, int], list[int]]
"""Ring depths and the bases of a placement at those depths."""


class _DepthSearch:
    """Depth probes answered by a relaxation first and the full model only when it must.

    The relaxation has the depth variables and the capacity cuts alone (each clique's
    sizes and each item's size at its alignment fit the domain), so "unsat" there is
    "unsat" for the full model, and a depth vector it proposes that first fit packs is a
    placement. Only a probe neither settles builds (once) and asks the full model, whose
    pairwise disjunctions make each check cost seconds when there are many items.
    """

    def __init__(
        self, items: Sequence[Item], st: Structure, lo: int, hi: int, ranges: Mapping[str, tuple[int, int]]
    ) -> None:
        self.items, self.st, self.lo, self.hi, self.ranges = items, st, lo, hi, ranges
        self.ctx = z3.Context()
        self.solver = z3.Solver(ctx=self.ctx)
        self.depth = {n: z3.Int(f"d{k}", self.ctx) for k, n in enumerate(sorted(ranges))}
        for n, (a, b) in ranges.items():
            self.solver.add(self.depth[n] >= a, self.depth[n] <= b)
        for group in (*st.cliques, *((it.index,) for it in items)):
            fixed = sum(items[i].unit for i in group if items[i].ring is None)
            pad = max(round_up(lo, items[i].align) - lo for i in group) if len(group) == 1 else 0
            terms = [items[i].unit * self.depth[ring] for i in group if (ring := items[i].ring) is not None]
            if terms:
                self.solver.add(z3.Sum(terms) + fixed + pad <= hi - lo)
        self.full: PackModel | None = None
        self.fixed: list[DepthTerm] = []
        self.guards = 0

    def add(self, term: DepthTerm) -> None:
        """A constraint every later probe keeps."""
        self.fixed.append(term)
        self.solver.add(term(self.depth))
        if self.full is not None:
            self.full.solver.add(term(self.full.depth))

    def probe(self, budget: Budget, term: DepthTerm) -> tuple[Verdict, Found | None]:
        guard = z3.Bool(f"probe{self.guards}", self.ctx)
        self.guards += 1
        self.solver.add(z3.Implies(guard, term(self.depth)))
        result = budget.check(self.solver, guard)
        if result.unsat:
            return result, None
        if result.sat:
            model = self.solver.model()
            depths = {n: model.eval(d, model_completion=True).as_long() for n, d in self.depth.items()}
            bases = best_seed(self.items, self.st, _sizes(self.items, depths), self.lo, self.hi)
            if bases is not None:
                return result, (depths, bases)
        if self.full is None:
            self.full = PackModel(self.items, self.st, self.lo, self.hi, sizes=None, depth_ranges=self.ranges)
            for fixed in self.fixed:
                self.full.solver.add(fixed(self.full.depth))
        result, found = self.full.probe(budget, term(self.full.depth))
        if found is None:
            return result, None
        return result, (self.full.depths(found), self.full.bases(found))


def _equal(name: str, value: int) -> DepthTerm:
    return lambda d: d[name] == value


def _deepen(
    items: Sequence[Item],
    st: Structure,
    lo: int,
    hi: int,
    ranges: Mapping[str, tuple[int, int]],
    witness: list[int],
    budget: Budget,
) -> tuple[dict[str, int], list[int], bool]:
    """Ring depths: the largest sum, then the smallest maximum, then each deepest in name order."""
    names = sorted(ranges)
    top = {n: ranges[n][1] for n in names}
    full = best_seed(items, st, _sizes(items, top), lo, hi)
    if full is not None:
        return top, full, True
    depths, grown = grow_depths(ranges, lambda d: best_seed(items, st, _sizes(items, d), lo, hi))
    if grown is None:
        depths = {n: ranges[n][0] for n in names}
    else:
        witness = grown
    search = _DepthSearch(items, st, lo, hi, ranges)

    def total(d: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        return z3.Sum([d[n] for n in names])

    def at_least(v: int) -> tuple[Verdict, Found | None]:
        return search.probe(budget, lambda d: total(d) >= v)

    def at_most(v: int) -> tuple[Verdict, Found | None]:
        return search.probe(budget, lambda d: z3.And([d[n] <= v for n in names]))

    # (the searches call these with what a satisfiable probe found, never None)
    def depth_sum(f: Found | None) -> int:
        return sum(f[0].values()) if f is not None else 0

    def widest(f: Found | None) -> int:
        return max(f[0].values()) if f is not None else 0

    best, proven, found = search_max(at_least, depth_sum, sum(depths.values()), sum(top.values()))
    if found is not None:
        depths, witness = found
    search.add(lambda d: total(d) == best)
    narrow, ok, found = search_min(at_most, widest, max(depths.values()), max(ranges[n][0] for n in names))
    proven = proven and ok
    if found is not None:
        depths, witness = found
    search.add(lambda d: z3.And([d[n] <= narrow for n in names]))
    for n in names:

        def deeper(v: int, n: str = n) -> tuple[Verdict, Found | None]:
            return search.probe(budget, lambda d: d[n] >= v)

        def depth_of(f: Found | None, n: str = n) -> int:
            return f[0][n] if f is not None else 0

        value, ok, found = search_max(deeper, depth_of, depths[n], top[n])
        proven = proven and ok
        if found is not None:
            depths, witness = found
        search.add(_equal(n, value))
    return depths, witness, proven


def _canonical(
    items: Sequence[Item],
    st: Structure,
    lo: int,
    end: int,
    sizes: Sequence[int],
    witness: list[int],
    model: PackModel | None,
    budget: Budget,
) -> tuple[list[int], bool]:
    """The lexicographically smallest bases, items in :func:`tie_order`, with footprint ≤ end.

    Items are fixed one at a time at their lowest feasible address. The lowest address
    free of the items fixed so far is a lower bound; a witness placement (first fit,
    else a Z3 model) at that bound settles an item without a check. After the first
    check that runs out of budget the rest keep the witness's addresses (deterministic,
    but not proven canonical): the remaining checks would be as hard.
    """
    before: dict[int, int] = {}
    for chain in st.chains:
        for a, b in itertools.pairwise(chain):
            before[b] = a
    order = tie_order(items, sizes)
    fixed: dict[int, int] = {}
    pinned: list[int] = []
    canonical = True
    for i in order:
        it = items[i]
        floor = lo
        if i in before:
            floor = fixed[before[i]] + sizes[before[i]]
        v0 = _lowest_free(it, st, sizes, fixed, floor)
        if witness[i] != v0 and v0 + sizes[i] <= end and canonical:
            rest = [j for j in order if j not in fixed and j != i]
            for completion in (rest, sorted(rest, key=lambda j: (witness[j], j))):
                trial = first_fit(items, st, sizes, lo, end, completion, {**fixed, i: v0})
                if trial is not None:
                    witness = trial
                    break
        if witness[i] != v0 and canonical:
            if model is None:
                model = PackModel(items, st, lo, end, sizes=sizes, depth_ranges={})
            for j in fixed:
                if j not in pinned:
                    model.solver.add(model.base[j] == fixed[j])
                    pinned.append(j)
            model.solver.add(model.end <= end)
            value, ok, found = model.lower_to(budget, model.base[i], witness[i], v0, it.align, near_first=True)
            canonical = canonical and ok
            if found is not None:
                witness = model.bases(found)
            witness[i] = value
        fixed[i] = witness[i]
    return [fixed[it.index] for it in items], canonical


def _fits(
    items: Sequence[Item], members: Sequence[int], timeline: Timeline, sizes: Sequence[int], lo: int, hi: int
) -> bool:
    """Whether first fit packs these items (a cheap witness that a subset is satisfiable)."""
    sub = tuple(dataclasses.replace(items[i], index=k) for k, i in enumerate(members))
    return best_seed(sub, structure(sub, timeline), [sizes[i] for i in members], lo, hi) is not None


def _capacity_core(items: Sequence[Item], st: Structure, sizes: Sequence[int], lo: int, hi: int) -> list[int] | None:
    """Pairwise co-live items whose sizes alone exceed the domain, or None if no cut proves it.

    The proof without a solver check: one item past the limit at its alignment, else the
    largest members of a clique (:attr:`Structure.cliques`) until their sum passes it.
    """
    for it in items:
        if round_up(lo, it.align) + sizes[it.index] > hi:
            return [it.index]
    for clique in st.cliques:
        chosen, total = [], lo
        for i in sorted(clique, key=lambda i: (-sizes[i], i)):
            chosen.append(i)
            total += sizes[i]
            if total > hi:
                return sorted(chosen)
    return None


def _conflict(
    domain: Domain,
    items: tuple[Item, ...],
    timeline: Timeline,
    core: list[int],
    tracked: PackModel | None,
    depths: Mapping[str, int],
    sizes: Sequence[int],
    lo: int,
    hi: int,
    budget: Budget,
) -> Conflict:
    """Shrink an infeasible set of items to a minimal one (deletion-based) and measure what it needs.

    ``tracked`` is the domain's tracked model when the solver found the core; without one
    the checks run on a model of the first core's items alone, so shrinking a core that a
    capacity cut found costs what the core costs, not what the whole domain does.
    """
    origin = list(core) if tracked is None else [it.index for it in items]
    position = {j: k for k, j in enumerate(origin)}

    def check(trial: Sequence[int]) -> tuple[Verdict, list[int] | None]:
        nonlocal tracked
        if _fits(items, trial, timeline, sizes, lo, hi):
            return SAT, None
        if tracked is None:
            sub = tuple(dataclasses.replace(items[j], index=k) for k, j in enumerate(origin))
            tracked = PackModel(
                sub, structure(sub, timeline), lo, hi, sizes=[sizes[j] for j in origin], depth_ranges={}, tracked=True
            )
        result = budget.check(tracked.solver, *[tracked.lits[position[j]] for j in trial])
        if result.unsat:
            return UNSAT, sorted(origin[int(str(lit)[1:])] for lit in tracked.solver.unsat_core())
        return result, None

    shrunk, minimal = minimise_core(core, check)
    core = list(shrunk)
    members = tuple(items[i] for i in core)
    needs, exact = _needs(members, timeline, [sizes[i] for i in core], lo, budget)
    return Conflict(domain, members, depths, needs, exact, minimal)


def _needs(members: Sequence[Item], timeline: Timeline, sizes: list[int], lo: int, budget: Budget) -> tuple[int, bool]:
    """The smallest footprint (from ``lo``) of a set of items with no capacity limit."""
    sub = tuple(dataclasses.replace(it, index=k) for k, it in enumerate(members))
    st = structure(sub, timeline)
    hi = lo + sum(s + it.align for s, it in zip(sizes, sub, strict=True))
    seed = best_seed(sub, st, sizes, lo, hi)
    assert seed is not None, "first fit always succeeds without a capacity limit"
    end = footprint(sizes, seed, lo)
    lower = lower_bound(sub, st, sizes, lo)
    if end <= lower:
        return end - lo, True
    model = PackModel(sub, st, lo, hi, sizes=sizes, depth_ranges={})
    end, exact, _ = model.lower_to(budget, model.end, end, lower)
    return (end - lo, True) if exact else (lower - lo, False)
