"""Run the registered clauses over a composition and collect their diagnostics.

Every clause runs (or the ``select``/``ignore`` subset); diagnostics are sorted
deterministically; a clause that raises is reported as an engine bug
(``E-INTERNAL``), never as a crash and never as a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from checker.clause import Clause, internal_error
from checker.clauses import CLAUSES, l_deadlock
from checker.composition import Composition
from checker.context import CheckContext
from checker.memo import Memo
from checker.protocol.adapter import ModelOptions
from diagnostics.model import Diagnostic, Label, Severity, sort_diagnostics


class SelectionError(ValueError):
    """``--select``/``--ignore`` named a code no clause has."""


def registry() -> tuple[type[Clause], ...]:
    return CLAUSES


def by_code() -> dict[str, type[Clause]]:
    return {cls.code: cls for cls in registry()}


def selected(select: Sequence[str] | None = None, ignore: Sequence[str] | None = None) -> list[type[Clause]]:
    known = by_code()
    unknown = [c for c in [*(select or ()), *(ignore or ())] if c not in known]
    if unknown:
        raise SelectionError(f"unknown clause code: {', '.join(sorted(unknown))}")
    chosen = [known[c] for c in select] if select else list(known.values())
    skip = set(ignore or ())
    return sorted((c for c in chosen if c.code not in skip), key=lambda c: c.code)


def run_clauses(
    comp: Composition,
    clauses: Iterable[type[Clause]] | None = None,
    options: ModelOptions | None = None,
    memo: Memo | None = None,
    *,
    leftovers: bool = True,
) -> list[Diagnostic]:
    """All diagnostics of the given clauses (default: every registered clause), sorted.

    One :class:`CheckContext` per call holds what the clauses share (the protocol model;
    ``memo``, what the caller keeps between checks);
    the one-mistake-one-clause tiers of the protocol clauses apply over the selected codes
    only, and what no clause owns (undecided queries, channels the model left out) is
    reported whatever the selection. ``leftovers=False`` is for a pre-pass of a few clauses
    (resolution) that the full pass follows: the model's leftovers belong to that pass.
    """
    chosen = list(clauses) if clauses is not None else selected()
    ctx = CheckContext(comp, frozenset(c.code for c in chosen), options or ModelOptions(), memo or Memo())
    found: list[Diagnostic] = []
    for cls in chosen:
        try:
            found.extend(cls().check_in(comp, ctx))
        except Exception as exc:  # a clause bug must not look like a pass or crash the CLI
            found.append(internal_error(cls, exc))
    try:
        found.extend(l_deadlock.leftovers(ctx, found) if leftovers else ())
    except Exception as exc:
        found.append(internal_error(chosen[0], exc))
    return sort_diagnostics(found)


def errors(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity is Severity.ERROR]


__all__ = [
    "CheckContext",
    "Label",
    "Memo",
    "ModelOptions",
    "SelectionError",
    "by_code",
    "errors",
    "registry",
    "run_clauses",
    "selected",
]
