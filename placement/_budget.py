"""Placement's solver budget and the bounded searches on top of it.

Every check of one placement draws on one :class:`solver.Budget` counted in Z3 *rlimit*
units (resource counts, identical across runs and machines for one Z3 build), never
wall-clock time, so a placement that ran out of budget runs out at the same point
everywhere. A check that hits the limit answers ``unknown``; callers treat that as "not
proven", never as either answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from solver import BUDGETS, Budget, Verdict

DEFAULT_RLIMIT = BUDGETS.placement
DEFAULT_CHECK_RLIMIT = BUDGETS.placement_query


__all__ = ["DEFAULT_CHECK_RLIMIT", "DEFAULT_RLIMIT", "Budget", "search_max", "search_min"]

M = TypeVar("M")
"""What a probe returns when it is satisfiable: a Z3 model, or a placement found without one."""


def search_max(
    probe: Callable[[int], tuple[Verdict, M | None]], value_of: Callable[[M], int], best: int, upper: int, step: int = 1
) -> tuple[int, bool, M | None]:
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
        if result.sat and found is not None:
            model = found
            best = max(mid, value_of(found))
        elif result.unsat:
            hi = mid - step
        else:
            return best, False, model
    return best, True, model


def search_min(
    probe: Callable[[int], tuple[Verdict, M | None]],
    value_of: Callable[[M], int],
    best: int,
    lower: int,
    step: int = 1,
    near_first: bool = False,
) -> tuple[int, bool, M | None]:
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
        if result.sat and found is not None:
            model = found
            best = min(mid, value_of(found))
        elif result.unsat:
            lo = mid + step
        else:
            return best, False, model
    return best, True, model
