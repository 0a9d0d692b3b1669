"""Verification that runs on compositions the clauses accepted: placement, then tensor routes.

Their rejections carry clause codes (L-OVERLAP, L-WARPS, L-REGS, L-BARRIER, L-DEPTH from
placement; L-MAP, L-ROUTE, L-SCRATCH from the route ladder), so ``--select``/``--ignore``
apply to them like to every clause.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis.plan import place_route_barriers, route_tensors
from checker.composition import Composition
from checker.engine import at_placed_depths
from checker.memo import Memo
from checker.protocol.check import ModelOptions
from diagnostics.model import Diagnostic, DiagnosticError
from placement.adapter import Placed, place

if TYPE_CHECKING:
    from transfer_model.adapter import RoutedSeam


@dataclass
class Downstream:
    placed: Placed | None = None
    routes: list[RoutedSeam] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def verify_downstream(
    comp: Composition,
    options: ModelOptions | None = None,
    selected: Iterable[str] | None = None,
    memo: Memo | None = None,
) -> Downstream:
    """Place the composition, decide its protocol at the placed ring depths when those were not
    decided yet (the verdict covers the configuration that is linked), route its tensor
    connections on the placed roles, then place the routes' named barriers (analysis/plan.py),
    so `place`, `fit` and the link read one placement. ``selected``: the clause codes the
    caller reports (the protocol's one-mistake-one-clause tiers apply over those)."""
    placed, diags = place(comp, memo)
    if placed is None:
        return Downstream(None, [], diags)
    depths = {r.name: r.depth for r in placed.placement.rings}
    protocol = at_placed_depths(comp, depths, options, selected, memo)
    routes, route_diags = route_tensors(comp, placed)
    found = diags + protocol + route_diags
    if any(d.is_error for d in route_diags):
        return Downstream(placed, routes, found)
    try:  # the staging routes' named barriers join the placement that place, fit and link read
        return Downstream(place_route_barriers(comp, placed, routes), routes, found)
    except DiagnosticError as err:
        return Downstream(None, routes, found + list(err.diagnostics))
