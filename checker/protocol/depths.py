"""The protocol decided at the depths the linker may choose: the ends of every range, then the placed ones.

A ring's depth range is checked at its least and its greatest depth (an unbounded range at
:data:`MAX_CHECKED_DEPTH`, which placement reads: it never places a ring deeper); placement
may choose any depth inside, so :func:`recheck` decides the depths it chose when the ends
did not. A ring deeper than the bounded model unrolls is :class:`TooDeep`: undecided, never
vouched for. What this module returns is typed and unselected: ``checker/policy.py`` says
which of it a selection reports, the clauses word it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from checker.composition import Composition
from checker.memo import Memo
from checker.protocol.build import Built, Unmodelled, at_depths, build_model
from checker.protocol.check import MAX_MODEL_DEPTH, ModelOptions, verdict
from checker.protocol.declarations import Declared, declaration_problems, excluded, slot_overruns
from checker.protocol.model import Protocol
from checker.protocol.verdict import Finding, Undecided
from checker.storage import agreed_depth
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code

MAX_CHECKED_DEPTH = 8
"""The deepest ring depth the model checks when a range is unbounded above."""

BOUND_NOTE = Code.I_PROTOCOL_BOUND


def depth_choices(comp: Composition) -> list[dict[str, int]]:
    """The ring depths to check: every ring at its least, then at its greatest allowed depth."""
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    for name in comp.rings:
        agreed = agreed_depth(comp, name)
        lo, hi = (1, 1) if agreed is None else (agreed[0], agreed[1] if agreed[1] is not None else MAX_CHECKED_DEPTH)
        lows[name], highs[name] = lo, max(lo, min(hi, MAX_CHECKED_DEPTH))
    return [lows] if lows == highs else [lows, highs]


@dataclass(frozen=True)
class TooDeep:
    """A ring deeper than the bounded model unrolls: undecided, never vouched for (L-DEADLOCK words it).

    ``lowest`` is the least depth the ring allows, at most :data:`MAX_MODEL_DEPTH` (for the fix).
    """

    code: ClassVar[str] = Code.L_DEADLOCK
    ring: str
    depth: int
    span: Span
    lowest: int


ModelFinding = Finding | Declared
"""A finding of the protocol clauses: the model's or the declarations'."""
ModelUndecided = Undecided | TooDeep
"""An undecided question: a query the solver could not decide, or a ring too deep to model."""


@dataclass(frozen=True)
class ModelReport:
    """Everything the protocol model says about one composition, before any selection.

    ``findings`` are the clauses' findings (all tiers); ``undecided`` the undecided questions;
    ``unmodelled`` the channels left out; ``checked`` the depth assignments decided (ring →
    depth, the modelled rings); ``notes`` what the check leaves out (a lowered bound).
    """

    findings: tuple[ModelFinding, ...] = ()
    undecided: tuple[ModelUndecided, ...] = ()
    unmodelled: tuple[Unmodelled, ...] = ()
    checked: tuple[tuple[tuple[str, int], ...], ...] = ()
    notes: tuple[Diagnostic, ...] = ()


def analyse(comp: Composition, options: ModelOptions | None = None, memo: Memo | None = None) -> ModelReport:
    """Decide the composition's protocol at the least and the greatest depth the linker may choose."""
    options = options or ModelOptions()
    memo = memo or Memo()
    declared = (*declaration_problems(comp), *slot_overruns(comp))
    left_out = excluded(comp)
    found: dict[object, ModelFinding] = {}
    for d in declared:
        found.setdefault((type(d), d.identity), d)
    undecided: dict[object, ModelUndecided] = {}
    unmodelled: dict[str, Unmodelled] = {}
    checked: list[tuple[tuple[str, int], ...]] = []
    notes: list[Diagnostic] = []
    first: Built | None = None
    for depths in depth_choices(comp):
        built = first = build_model(comp, depths, left_out) if first is None else at_depths(first, depths)
        for u in built.unmodelled:
            unmodelled.setdefault(u.channel, u)
        if built.protocol is None:
            continue
        deep = _too_deep(comp, built.protocol)
        if deep:
            undecided.update((d, d) for d in deep)
            break
        checked.append(tuple(sorted((r.name, depths.get(r.name, 1)) for r in built.protocol.rings)))
        result = verdict(built.protocol, options, memo)
        notes += _bound_note(built.protocol, options)
        for f in result.findings:
            found.setdefault((type(f), f.identity), f)
        for query in result.undecided:
            undecided.setdefault((type(query), query.identity), query)
        if len(found) > len(declared):
            break  # report the least depth's findings; a deeper ring adds no new mistake
    return ModelReport(
        tuple(found.values()), tuple(undecided.values()), tuple(unmodelled.values()), tuple(checked), tuple(notes[-1:])
    )  # one note: the deepest depths' bound


def recheck(
    comp: Composition, depths: dict[str, int], options: ModelOptions | None = None, memo: Memo | None = None
) -> ModelReport:
    """The model's report at the depths placement chose, when the check did not decide them.

    The accepted verdict must cover the configuration that is linked: a depth range is
    checked at its ends, placement may choose any depth inside it. Empty when those depths
    were decided already; only :class:`TooDeep` when a ring is deeper than the model unrolls.
    """
    options = options or ModelOptions()
    built = build_model(comp, depths, excluded(comp))
    if built.protocol is None:
        return ModelReport()
    modelled = [r.name for r in built.protocol.rings]
    for choice in depth_choices(comp):
        if all(choice.get(n, 1) == depths.get(n, 1) for n in modelled):
            return ModelReport()  # decided by the check already
    deep = _too_deep(comp, built.protocol)
    if deep:
        return ModelReport(undecided=tuple(deep))
    result = verdict(built.protocol, options, memo)
    return ModelReport(result.findings, result.undecided, checked=(tuple((n, depths.get(n, 1)) for n in modelled),))


def _too_deep(comp: Composition, protocol: Protocol) -> list[TooDeep]:
    """Rings deeper than the bounded model unrolls: undecided, never vouched for."""
    return [
        TooDeep(ring.name, ring.depth, ring.provenance.span, _lowest(comp, ring.name))
        for ring in protocol.rings
        if ring.depth > MAX_MODEL_DEPTH
    ]


def _lowest(comp: Composition, ring: str) -> int:
    agreed = agreed_depth(comp, ring)
    return 1 if agreed is None else min(agreed[0], MAX_MODEL_DEPTH)


def _bound_note(protocol: Protocol, options: ModelOptions) -> list[Diagnostic]:
    if options.bound is None or options.bound >= protocol.default_bound():
        return []
    first = protocol.rings[0].provenance.span if protocol.rings else None
    return [
        Diagnostic(
            BOUND_NOTE,
            f"the protocol was checked over {options.bound} iterations per role, fewer than the "
            f"{protocol.default_bound()} that wrap every ring twice",
            severity=Severity.NOTE,
            labels=(Label(first, "checked with a lowered bound", True),) if first is not None else (),
            notes=("a mistake that shows only in later iterations is not looked for",),
            helps=(f"drop `--bound` (or give at least {protocol.default_bound()}) for the full check",),
        )
    ]


__all__ = [
    "BOUND_NOTE",
    "MAX_CHECKED_DEPTH",
    "ModelFinding",
    "ModelReport",
    "ModelUndecided",
    "TooDeep",
    "analyse",
    "depth_choices",
    "recheck",
]
