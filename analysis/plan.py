"""The plan a link follows: an accepted composition's placement, with its route barriers, and its routes.

The check (:mod:`analysis.pipeline`) places the composition and routes its tensor
connections on the placed roles. Linking it needs the placement solved once more in two
cases, and both are decided here, so the linker never calls the placement solver:

- **route barriers** (:func:`plan`): a staging route synchronises on named barriers,
  known only once the routes are chosen on the placed roles; one ``BarrierClaim`` per
  route barrier (owner the importing stage, name ``transfer.<import>.<i>``, lifetime the
  whole kernel) is added and the placement solved again. Barrier claims do not constrain
  warps; a second placement that moves a role would leave the routes stale (``E-INTERNAL``).
- **the register re-solve** (:meth:`Plan.for_entry`): the linked kernel's entry register
  count R is ptxas' (linker/link.py, step 4). When the register groups do not fit the pool
  R gives, the placement is solved again with R as the entry count; one that moves a role
  a tensor route runs on is ``L-REGS``.

Every re-solved placement is verified (:func:`placement.verify`) before it is used.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.link_inputs import LinkInputs, link_inputs
from checker.clauses import l_regs
from checker.composition import Composition
from contract_lang import ast as A
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.symbols import Code
from placement.adapter import Placed
from placement.lifetime import KERNEL
from placement.problem import BarrierClaim, Problem
from placement.result import Placement
from placement.solve import solve
from placement.verify import verify

if TYPE_CHECKING:
    from transfer_model.adapter import RoutedSeam


@dataclass(frozen=True)
class Plan:
    """An accepted composition, its placement (route barriers included) and its tensor routes.

    ``resolved``: the placement was solved again for the linked kernel's entry register count.
    """

    comp: Composition
    placed: Placed
    routes: tuple[RoutedSeam, ...] = ()
    resolved: bool = False

    @property
    def placement(self) -> Placement:
        return self.placed.placement

    @functools.cached_property
    def inputs(self) -> LinkInputs:
        """What the link reads from the composition (:mod:`analysis.link_inputs`)."""
        return link_inputs(self.comp)

    def for_entry(self, entry: int, kernel: str) -> Plan:
        """The plan for a linked ``kernel`` that starts with ``entry`` registers per thread.

        The same plan when its register groups fit the pool ``entry`` gives; else the
        placement solved again with ``entry`` as the entry count. Raises ``DiagnosticError``:
        ``L-REGS`` when no group can be placed or the re-solve moves a routed role, the
        solver's rejection (with a note on the entry count), ``E-INTERNAL`` when the
        re-solved placement fails verification.
        """
        comp, placed = self.comp, self.placed
        if register_demand(placed) <= entry * placed.placement.block_warps * 32:
            return self
        caps = placed.problem.capacities
        if entry < caps.setmaxnreg_min:
            raise DiagnosticError([_entry_too_small(comp, placed, entry, caps.setmaxnreg_min, kernel)])
        problem: Problem = dataclasses.replace(
            placed.problem,
            capacities=dataclasses.replace(caps, max_regs_per_thread=min(entry, caps.max_regs_per_thread)),
        )
        try:
            placement = solve(problem)
        except DiagnosticError as err:
            note = (
                f"after the device link: `{kernel}` has {entry} registers per thread at entry "
                f"(`__launch_bounds__` with its block of {placed.placement.block_warps * 32} threads), "
                f"not the {placed.placement.entry_regs} the placement assumed"
            )
            raise DiagnosticError([dataclasses.replace(d, notes=(*d.notes, note)) for d in err.diagnostics]) from None
        problems = verify(problem, placement)
        if problems:
            raise DiagnosticError(
                [Diagnostic(Code.E_INTERNAL, "the re-solved placement fails verification", notes=tuple(problems[:10]))]
            )
        moved = moved_roles(placed.placement, placement) if self.routes else []
        if moved:
            raise DiagnosticError([l_regs.resolve_moves_routes(entry, comp.pipeline.span, moved)])
        return dataclasses.replace(self, placed=Placed(problem, placement), resolved=True)


def plan(comp: Composition, placed: Placed, routes: Sequence[RoutedSeam] | None = None) -> Plan:
    """The plan for an accepted composition placed as ``placed``, with the route barriers placed.

    ``routes`` are the tensor connections' routes on ``placed`` (the check computed them);
    None routes them here. Raises ``DiagnosticError`` with the routes' or the solver's errors.
    """
    if routes is None:
        routes, route_diags = route_tensors(comp, placed)
        if any(d.is_error for d in route_diags):
            raise DiagnosticError(route_diags)
    return Plan(comp, place_route_barriers(comp, placed, routes), tuple(routes))


def route_tensors(comp: Composition, placed: Placed) -> tuple[list[RoutedSeam], list[Diagnostic]]:
    """:func:`transfer_model.adapter.route_composition`: every tensor connection's route on ``placed``.

    A composition without an ``import tensor`` has no seam to route: the route ladder (its SMT
    models and layout maps) is imported only for one that has. Register fragments passed to
    callables (:mod:`transfer_model.fragments`) are proved here too: after placement, like a seam.
    """
    fragments = any(True for _ in comp.items(A.Fragment))
    if not comp.tensor_imports and not fragments:
        return [], []
    from transfer_model.adapter import route_composition
    from transfer_model.fragments import check_fragments

    routes, diags = route_composition(comp, placed) if comp.tensor_imports else ([], [])
    return routes, diags + (check_fragments(comp) if fragments else [])


def barrier_name(route: RoutedSeam, index: int) -> str:
    """The placement name of a route's ``index``-th named barrier."""
    return f"transfer.{route.seam.imp.name}.{index}"


def place_route_barriers(comp: Composition, placed: Placed, routes: Sequence[RoutedSeam]) -> Placed:
    """``placed`` with one named-barrier claim per route barrier, solved again; the same when none is
    needed or ``placed`` holds them already (the check placed them: :mod:`analysis.downstream`).

    Raises ``DiagnosticError``: the solver's (e.g. ``L-BARRIER`` when the IDs run out),
    or ``E-INTERNAL`` when the second placement moves a role.
    """
    placed_already = {(b.owner, b.name) for b in placed.problem.barriers}
    claims = [
        BarrierClaim(r.seam.import_stage, barrier_name(r, i), r.route.barrier_threads, KERNEL, span=r.seam.imp.span)
        for r in routes
        for i in range(r.route.barriers)
        if (r.seam.import_stage, barrier_name(r, i)) not in placed_already
    ]
    if not claims:
        return placed
    problem = dataclasses.replace(placed.problem, barriers=(*placed.problem.barriers, *claims))
    try:
        placement = solve(problem)
    except DiagnosticError as err:
        note = (
            f"after routing: the staging routes add {len(claims)} named barrier(s) to the placement "
            f"({', '.join(f'`{c.name}`' for c in claims)})"
        )
        raise DiagnosticError([dataclasses.replace(d, notes=(*d.notes, note)) for d in err.diagnostics]) from None
    problems = verify(problem, placement)
    if problems:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_INTERNAL,
                    "the placement with the route barriers fails verification",
                    labels=(Label(comp.pipeline.span, "in this composition"),),
                    notes=tuple(problems[:10]),
                    helps=("report it with the inputs: this is a kernlink bug",),
                )
            ]
        )
    moved = moved_roles(placed.placement, placement)
    if moved:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_INTERNAL,
                    "placing the route barriers moved roles the routes were chosen for",
                    labels=(Label(comp.pipeline.span, "in this composition"),),
                    notes=tuple(moved),
                    helps=("report it with the inputs: barrier claims must not change warps",),
                )
            ]
        )
    return Placed(problem, placement)


def moved_roles(before: Placement, after: Placement) -> list[str]:
    """One line per role whose warps differ between two placements (empty: the routes still hold)."""
    out = []
    for role in before.roles:
        now = next((r for r in after.roles if (r.owner, r.name) == (role.owner, role.name)), None)
        if now is None or (now.first_warp, now.warps) != (role.first_warp, role.warps):
            where = f"warps {now.first_warp}..{now.end - 1}" if now is not None else "no warps"
            out.append(f"role `{role.display}`: warps {role.first_warp}..{role.end - 1} before, {where} after")
    return out


def register_demand(placed: Placed) -> int:
    """Registers the placed groups hold at once: Σ budget × threads of each group."""
    return sum(g.budget * g.warps * 32 for g in placed.placement.groups)


def _entry_too_small(comp: Composition, placed: Placed, entry: int, least: int, kernel: str) -> Diagnostic:
    """The kernel starts with fewer registers than any `setmaxnreg` budget: no group can be placed."""
    labels = [
        (info.role.span, f"`{name}`: regs {info.role.regs}")
        for name, info in sorted((n, i) for n, i in comp.roles.items() if i.role.regs is not None)
    ]
    return l_regs.entry_below_minimum(
        kernel, entry, least, placed.placement.block_warps * 32, labels or [(comp.pipeline.span, "in this composition")]
    )


__all__ = ["Plan", "barrier_name", "moved_roles", "place_route_barriers", "plan", "register_demand", "route_tensors"]
