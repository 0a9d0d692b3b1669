"""The one unsat-core minimiser (deletion-based)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from solver.verdict import Verdict

L = TypeVar("L")


def minimise_core(
    core: Sequence[L],
    check: Callable[[Sequence[L]], tuple[Verdict, Collection[L] | None]],
) -> tuple[tuple[L, ...], bool]:
    """A minimal sub-core of ``core`` (order kept) and whether it is proven minimal.

    Each member in turn is dropped when the others stay unsat: ``check(trial)`` answers
    for ``trial`` (a sub-sequence of ``core``) with its verdict and, when unsat, the
    members a core of its own names (``None``: all of them), which drops the others too.
    A member whose removal gives ``unknown`` is kept, and the result is then not proven
    minimal; one whose removal gives ``sat`` is needed.
    """
    kept = list(core)
    minimal = True
    for member in list(core):
        if member not in kept:
            continue
        trial = [m for m in kept if m != member]
        verdict, found = check(trial)
        if verdict.unsat:
            kept = trial if found is None else [m for m in trial if m in found]
        elif verdict.unknown:
            minimal = False
    return tuple(kept), minimal
