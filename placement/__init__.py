"""Joint placement of every claimed on-chip resource, its verifier, a greedy baseline and maps.

Build a :class:`Problem` (capacities, claims, rings, roles, timeline), call
:func:`solve` for the lexicographically optimal, canonical :class:`Placement` (or a
:class:`~diagnostics.model.DiagnosticError` naming the minimal conflicting set), check
any placement with :func:`verify`, compare with :func:`greedy`, and print it with
:func:`render_map`, :func:`to_json` and :func:`render_svg`.
"""

from placement._budget import DEFAULT_CHECK_RLIMIT, DEFAULT_RLIMIT
from placement.greedy import greedy
from placement.lifetime import KERNEL, Connection, Interval, Lifetime, Phase, Timeline, Whole
from placement.problem import (
    DOMAINS,
    BarrierClaim,
    Capacities,
    CounterClaim,
    Domain,
    Problem,
    Ring,
    Role,
    SmemClaim,
    TargetLike,
    TmemClaim,
)
from placement.report import render_map, to_json, to_jsonable
from placement.result import (
    DomainUse,
    Objective,
    Placement,
    RegisterGroup,
    RingDepth,
    RolePlacement,
    Slot,
)
from placement.solve import solve
from placement.svg import render_svg
from placement.verify import verify

__all__ = [
    "DEFAULT_CHECK_RLIMIT",
    "DEFAULT_RLIMIT",
    "DOMAINS",
    "KERNEL",
    "BarrierClaim",
    "Capacities",
    "Connection",
    "CounterClaim",
    "Domain",
    "DomainUse",
    "Interval",
    "Lifetime",
    "Objective",
    "Phase",
    "Placement",
    "Problem",
    "RegisterGroup",
    "Ring",
    "RingDepth",
    "Role",
    "RolePlacement",
    "Slot",
    "SmemClaim",
    "TargetLike",
    "Timeline",
    "TmemClaim",
    "Whole",
    "greedy",
    "render_map",
    "render_svg",
    "solve",
    "to_json",
    "to_jsonable",
    "verify",
]
