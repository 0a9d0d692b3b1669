"""What a composition uses of a target it does not fit, for ``kernlink fit``'s report.

A target that rejects the composition has no placement, so nothing says how far over it is,
nor whether the other resources fit. Here the composition is placed again for that target
with its room relaxed (shared memory, tensor memory and named barrier IDs unbounded; every
ring at its minimum depth, the least the contracts allow); every resource of that placement
is then compared with the target's real capacity. Registers and warps are the target's own:
when they do not fit either, no placement exists and the resources stay unknown (``—``).
"""

from __future__ import annotations

import dataclasses

from checker.composition import Composition
from diagnostics.model import DiagnosticError
from placement.adapter import problem_from
from placement.problem import Capacities, Problem
from placement.result import Placement

ROOM = 1 << 30
"""Shared-memory bytes of the relaxed placement: more than any composition asks."""


def relaxed(problem: Problem) -> Problem:
    """``problem`` with unbounded room and every ring at its minimum depth."""
    caps = problem.capacities
    room = dataclasses.replace(
        caps,
        smem_per_block_optin=ROOM,
        tmem_columns=max(caps.tmem_columns, 1 << 20) if caps.tmem_columns or problem.tmem else 0,
        tmem_min_alloc_columns=max(caps.tmem_min_alloc_columns, 1),
        named_barriers_per_cta=max(caps.named_barriers_per_cta, 1 << 12),
    )
    rings = tuple(dataclasses.replace(r, depth_max=r.depth_min) for r in problem.rings)
    return dataclasses.replace(problem, capacities=room, rings=rings)


def demand(comp: Composition) -> tuple[Placement, Capacities] | None:
    """The relaxed placement of ``comp`` and the target's real capacities; None when none exists."""
    from placement.solve import solve

    try:
        problem = problem_from(comp)
        return solve(relaxed(problem)), problem.capacities
    except (ValueError, DiagnosticError):
        return None
