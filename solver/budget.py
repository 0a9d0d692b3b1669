"""Every default budget, in one table (:data:`BUDGETS`), and the shared budget placement draws from.

Solver budgets are Z3 ``rlimit`` units, identical across runs and machines for one Z3
build: a query that spends its limit answers ``unknown`` at the same point everywhere.
``kernlink check --rlimit N`` sets the protocol model's budget per query; placement draws
all of its queries from one :class:`Budget`. One budget is wall-clock time: a whole
``kernlink check`` (``--time-budget``, :mod:`solver.deadline`), the bound on how long a
user waits for a verdict, which ends in ``E-SOLVER-BUDGET`` rather than in a silent
minute; every answer given within it is the same on every machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import z3

from solver.verdict import Answer, Verdict, verdict_of


@dataclass(frozen=True)
class Budgets:
    """The default budget of each kind of question kernlink asks (rlimit units unless named otherwise)."""

    protocol_query: int
    """One query of the protocol model (``check --rlimit``)."""
    placement: int
    """One placement, all its queries together (some 10 to 30 s of solving on a current CPU)."""
    placement_query: int
    """The most one placement optimisation query may spend (about a second), so one hard proof
    cannot starve the rest; the query deciding whether a domain has any placement is bounded by
    the total only."""
    route_first: int
    """The first attempt of each tensor-route encoding."""
    route: int
    """The last attempts of a tensor-route encoding (a few seconds of solver work)."""
    fact_query: int
    """One fact-constraint query (L-ASSUME)."""
    check_seconds: float
    """Wall-clock seconds of one ``kernlink check`` (``--time-budget``; 0: none)."""


BUDGETS = Budgets(
    protocol_query=400_000_000,
    placement=200_000_000,
    placement_query=10_000_000,
    route_first=2_000_000,
    route=200_000_000,
    fact_query=5_000_000,
    check_seconds=60.0,
)

DEFAULT_RLIMIT = BUDGETS.protocol_query
"""The protocol model's budget per query (``--rlimit``)."""

MAX_RLIMIT = (1 << 32) - 1
"""The largest rlimit Z3 accepts."""


def validate_rlimit(rlimit: int) -> int:
    """``rlimit`` when Z3 can take it, else :class:`ValueError` (a usage error for the CLI)."""
    if not 0 < rlimit <= MAX_RLIMIT:
        raise ValueError(f"rlimit must be in 1..{MAX_RLIMIT}")
    return rlimit


_RLIMIT_COUNT = re.compile(r":rlimit-count\s+(\d+)")


def rlimit_count(solver: z3.Solver) -> int:
    """The rlimit units ``solver`` has spent so far (one call into Z3, not one per statistic)."""
    stats = solver.statistics()
    found = _RLIMIT_COUNT.search(z3.Z3_stats_to_string(stats.ctx.ref(), stats.stats))
    return int(found.group(1)) if found else 0


@dataclass
class Budget:
    """A total of rlimit units shared by many checks, each capped at ``per_check``."""

    total: int
    per_check: int
    used: int = 0
    checks: int = 0
    unknowns: int = 0

    @property
    def left(self) -> int:
        return max(0, self.total - self.used)

    def check(self, solver: z3.Solver, *assumptions: z3.BoolRef, decisive: bool = False) -> Verdict:
        """One check under what is left of the budget (``unknown`` once it is spent).

        A check is capped at ``per_check`` units, except a ``decisive`` one (one whose
        answer the caller cannot do without), which may spend all that is left.
        """
        limit = self.left if decisive else min(self.left, self.per_check)
        if limit <= 0:
            self.unknowns += 1
            return Verdict(Answer.UNKNOWN, "budget spent")
        solver.set("rlimit", limit)
        before = rlimit_count(solver)
        verdict = verdict_of(solver.check(*assumptions), solver)
        self.used += max(0, rlimit_count(solver) - before)
        self.checks += 1
        if verdict.unknown:
            self.unknowns += 1
        return verdict
