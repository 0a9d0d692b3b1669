"""Run the registered clauses over a composition and collect their diagnostics.

Every clause runs (or the ``select``/``ignore`` subset); diagnostics are sorted
deterministically; a clause that raises is reported as an engine bug
(``E-INTERNAL``), never as a crash and never as a pass. What no selected clause owns
(``checker/policy.py``) comes typed: the engine asks the registry for the clause its code
names, and that clause words it (:func:`word`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from checker import policy
from checker.clause import Clause, internal_error
from checker.clauses import CLAUSES
from checker.composition import Composition
from checker.context import CheckContext
from checker.memo import Memo
from checker.protocol.check import ModelOptions
from checker.protocol.depths import ModelFinding, recheck
from diagnostics.model import Diagnostic, Label, Severity, sort_diagnostics
from diagnostics.symbols import Code


class SelectionError(ValueError):
    """``--select``/``--ignore`` named a code no clause has."""


def registry() -> tuple[type[Clause], ...]:
    return CLAUSES


def by_code() -> dict[str, type[Clause]]:
    return {cls.code: cls for cls in registry()}


def word(found: ModelFinding | policy.Leftover) -> Diagnostic:
    """A typed finding or undecided question in words, by the clause its code names."""
    return by_code()[found.code].word(found)


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
        if leftovers:
            found.extend([*(word(item) for item in ctx.leftovers(found)), *ctx.protocol().notes])
            if Code.L_CONFORM not in ctx.codes:  # the code findings that void the model's verdict
                found.extend(policy.voided(by_code()[Code.L_CONFORM]().check_in(comp, ctx)))
    except Exception as exc:
        found.append(internal_error(chosen[0], exc))
    return sort_diagnostics(found)


def at_placed_depths(
    comp: Composition,
    depths: dict[str, int],
    options: ModelOptions | None = None,
    selected: Iterable[str] | None = None,
    memo: Memo | None = None,
) -> list[Diagnostic]:
    """The protocol model's diagnostics at the depths placement chose, when the check did not decide them.

    One mistake, one clause over the *selected* codes, as at the checked depths: under
    `--select L-DEADLOCK` a count mistake's hang is still reported, never tiered away. A
    depth deeper than the model unrolls is undecided, never vouched for.
    """
    report = recheck(comp, depths, options, memo)
    codes = policy.MODEL_CODES if selected is None else [c for c in policy.MODEL_CODES if c in set(selected)]
    found, undecided = policy.reported(report, codes)
    diags = [word(item) for item in (*found, *undecided, *policy.hang_proofs(report, codes))]
    if not report.checked:
        return diags
    at = ", ".join(f"`{n}` at depth {d}" for n, d in report.checked[0])
    return [dataclasses.replace(d, notes=(*d.notes, f"found at the depths placement chose: {at}")) for d in diags]


def errors(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity is Severity.ERROR]


__all__ = [
    "CheckContext",
    "Label",
    "Memo",
    "ModelOptions",
    "SelectionError",
    "at_placed_depths",
    "by_code",
    "errors",
    "registry",
    "run_clauses",
    "selected",
    "word",
]
