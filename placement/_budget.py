"""A reproducible solver budget and bounded searches on top of ``z3.Solver``.

Every check of one placement draws on one budget counted in Z3 *rlimit* units
(resource counts, identical across runs and machines for one Z3 build), never
wall-clock time, so a placement that ran out of budget runs out at the same
point everywhere. A check that hits the limit answers ``unknown``; callers treat
that as "not proven", never as either answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import z3

DEFAULT_RLIMIT = 200_000_000
"""Total rlimit units of one placement (some 10 to 30 s of solving on a current CPU)."""

DEFAULT_CHECK_RLIMIT = 10_000_000
"""The most one optimisation check may spend (about a second), so one hard proof cannot starve
the rest; the check deciding whether a domain has any placement is bounded by the total only."""


def _rlimit_count(solver: z3.Solver) -> int:
    stats = solver.statistics()
    if "rlimit count" in stats.keys():  # noqa: SIM118 (z3 Statistics is not a mapping)
        return int(stats.get_key_value("rlimit count"))
    return 0


@dataclass
class Budget:
    """The rlimit units left to one placement, shared by all of its checks."""

    total: int = DEFAULT_RLIMIT
    per_check: int = DEFAULT_CHECK_RLIMIT
    used: int = 0
    checks: int = 0
    unknowns: int = 0

    @property
    def left(self) -> int:
        return max(0, self.total - self.used)

    def check(self, solver: z3.Solver, *assumptions: z3.BoolRef,
              decisive: bool = False) -> z3.CheckSatResult:
        """One check under what is left of the budget (``unknown`` once it is spent).

        A check is capped at ``per_check`` units, except a ``decisive`` one (whether any
        placement of a domain exists at all), which may spend all that is left: without
        its answer there is nothing to return, so a larger total budget must help it.
        """
        limit = self.left if decisive else min(self.left, self.per_check)
        if limit <= 0:
            self.unknowns += 1
            return z3.unknown
        solver.set("rlimit", limit)
        before = _rlimit_count(solver)
        result = solver.check(*assumptions)
        self.used += max(0, _rlimit_count(solver) - before)
        self.checks += 1
        if result == z3.unknown:
            self.unknowns += 1
        return result


M = TypeVar("M")
"""What a probe returns when it is satisfiable: a Z3 model, or a placement found without one."""


def search_max(probe: Callable[[int], tuple[z3.CheckSatResult, M | None]], value_of: Callable[[M], int],
               best: int, upper: int, step: int = 1) -> tuple[int, bool, M | None]:
    """The largest feasible value in ``[best, upper]`` on a grid of ``step``.

    ``probe(v)`` checks "objective ≥ v"; ``best`` is known feasible. Returns the best
    value found, whether it is proven the maximum, and the model of the last
    improving check (None if none improved).
    """
    model = None
    hi = upper - (upper - best) % step
    while best < hi:
        mid = best + ((hi - best) // step + 1) // 2 * step
        result, found = probe(mid)
        if result == z3.sat and found is not None:
            model = found
            best = max(mid, value_of(found))
        elif result == z3.unsat:
            hi = mid - step
        else:
            return best, False, model
    return best, True, model


def search_min(probe: Callable[[int], tuple[z3.CheckSatResult, M | None]], value_of: Callable[[M], int],
               best: int, lower: int, step: int = 1, near_first: bool = False) -> tuple[int, bool, M | None]:
    """The smallest feasible value in ``[lower, best]`` on a grid of ``step`` (``lower`` on it).

    ``probe(v)`` checks "objective ≤ v"; ``best`` is known feasible. With ``near_first``
    the first probes are one step below ``best`` and then ``lower`` (cheap when one of
    them is the answer), then the search bisects. Returns the best value found, whether
    it is proven the minimum, and the model of the last improving check (None if none
    improved).
    """
    model = None
    lo = lower
    probes = 0
    while lo < best:
        if near_first and probes == 0:
            mid = best - step
        elif near_first and probes == 1:
            mid = lo
        else:
            mid = lo + ((best - lo) // step) // 2 * step
        probes += 1
        result, found = probe(mid)
        if result == z3.sat and found is not None:
            model = found
            best = min(mid, value_of(found))
        elif result == z3.unsat:
            lo = mid + step
        else:
            return best, False, model
    return best, True, model
