"""The protocol decided at the depths the linker may choose: all of them, or the ends of each range and the placed ones.

First the parametric argument (``parametric.py``) is asked for every depth of each ring's
range at once (an unbounded range included) and every trip count: when it proves the
protocol safe, every depth placement may choose is decided, and placement may choose any
depth that fits shared memory (:func:`placement_depths`). Otherwise the bounded model
decides each range at its least and its greatest depth (an unbounded range at
:data:`MAX_CHECKED_DEPTH`, which placement then reads: it never places such a ring
deeper), and :func:`recheck` decides the depths placement chose when the ends did not. A
ring deeper than the bounded model unrolls in full, at a depth the argument does not cover,
is run for :data:`SHORT_BOUND`, then :data:`DEEP_BOUND` iterations: what a run finds is
reported (a run of any length is a run of the kernel), and with nothing found the ring is :class:`TooDeep`:
undecided, never vouched for. What this module returns is typed and unselected:
``checker/policy.py`` says which of it a selection reports, the clauses word it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from checker.composition import Composition
from checker.memo import Memo
from checker.protocol.build import Built, Unmodelled, at_depths, build_model
from checker.protocol.check import MAX_MODEL_DEPTH, ModelOptions, parametric_proof, verdict
from checker.protocol.declarations import Declared, declaration_problems, excluded, slot_overruns
from checker.protocol.model import Protocol
from checker.protocol.verdict import Finding, ProtocolVerdict, Undecided
from checker.storage import agreed_depth
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code

MAX_CHECKED_DEPTH = 8
"""The deepest ring depth the bounded model checks when a range is unbounded above (and the
deepest placement chooses then), when the parametric argument does not decide the protocol."""

DEEP_BOUND = 2 * MAX_MODEL_DEPTH + 1
"""The iterations per role the bounded model runs for a ring deeper than it unrolls in full
(the size of the model of a ring at :data:`MAX_MODEL_DEPTH`)."""

SHORT_BOUND = 3
"""The iterations per role of the short run that goes before the :data:`DEEP_BOUND` one."""

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
    """A ring deeper than the bounded model unrolls in full, at a depth the parametric argument does
    not cover: undecided, never vouched for (L-DEADLOCK words it).

    ``lowest`` is the least depth the ring allows, at most :data:`MAX_MODEL_DEPTH` (for the fix);
    ``reason`` why the parametric argument did not decide the protocol; ``bound`` the iterations
    per role the bounded model ran without a finding (0: none).
    """

    code: ClassVar[str] = Code.L_DEADLOCK
    ring: str
    depth: int
    span: Span
    lowest: int
    reason: str = ""
    bound: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        """One per ring and depth."""
        return (self.code, self.ring, self.depth)


ModelFinding = Finding | Declared
"""A finding of the protocol clauses: the model's or the declarations'."""
ModelUndecided = Undecided | TooDeep
"""An undecided question: a query the solver could not decide, or a ring too deep to model."""


@dataclass(frozen=True)
class ModelReport:
    """Everything the protocol model says about one composition, before any selection.

    ``findings`` are the clauses' findings (all tiers); ``undecided`` the undecided questions;
    ``unmodelled`` the channels left out; ``checked`` the depth assignments the bounded model
    decided (ring → depth, the modelled rings); ``proved`` the depth ranges (ring, lo, hi;
    hi None: unbounded) the parametric argument decided, every depth in them and every trip
    count; ``notes`` what the check leaves out (a lowered bound).
    """

    findings: tuple[ModelFinding, ...] = ()
    undecided: tuple[ModelUndecided, ...] = ()
    unmodelled: tuple[Unmodelled, ...] = ()
    checked: tuple[tuple[tuple[str, int], ...], ...] = ()
    notes: tuple[Diagnostic, ...] = ()
    proved: tuple[tuple[str, int, int | None], ...] = ()


def analyse(comp: Composition, options: ModelOptions | None = None, memo: Memo | None = None) -> ModelReport:
    """Decide the composition's protocol at every depth the linker may choose, or at the least and
    the greatest when the parametric argument does not cover them."""
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
        proved = _every_depth(comp, built.protocol, options, memo)
        if proved:
            return ModelReport(tuple(found.values()), (), tuple(unmodelled.values()), proved=proved)
        deep = _too_deep(comp, built.protocol, options, memo)
        if deep:
            result, deep = _deep_run(built.protocol, deep, options, memo)
            for f in result.findings:
                found.setdefault((type(f), f.identity), f)
            left: list[ModelUndecided] = [*result.undecided, *deep]
            for query in left:
                undecided.setdefault((type(query), query.identity), query)
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

    The accepted verdict must cover the configuration that is linked: the parametric
    argument covers every depth of the ranges, the bounded model a range's ends only, and
    placement may choose any depth inside. Empty when those depths were decided already;
    when a ring is deeper than the model unrolls in full and the argument does not cover its
    depth, what a run of :data:`DEEP_BOUND` iterations finds, or :class:`TooDeep`.
    """
    options = options or ModelOptions()
    built = build_model(comp, depths, excluded(comp))
    if built.protocol is None:
        return ModelReport()
    modelled = [r.name for r in built.protocol.rings]
    proved = _every_depth(comp, built.protocol, options, memo)
    if proved and all(lo <= depths.get(n, 1) and (hi is None or depths.get(n, 1) <= hi) for n, lo, hi in proved):
        return ModelReport()  # every depth of the ranges is decided
    for choice in depth_choices(comp):
        if all(choice.get(n, 1) == depths.get(n, 1) for n in modelled):
            return ModelReport()  # decided by the check already
    deep = _too_deep(comp, built.protocol, options, memo)
    if deep:
        result, deep = _deep_run(built.protocol, deep, options, memo)
        return ModelReport(result.findings, (*result.undecided, *deep))
    result = verdict(built.protocol, options, memo)
    return ModelReport(result.findings, result.undecided, checked=(tuple((n, depths.get(n, 1)) for n in modelled),))


def placement_depths(comp: Composition, memo: Memo | None = None) -> dict[str, tuple[int, int | None]]:
    """The depths placement may choose per ring: every side's range, with an unbounded one
    capped at :data:`MAX_CHECKED_DEPTH` unless the parametric argument decides every depth
    of it (then shared memory alone bounds it). Rings with no common depth are left out."""
    ranges = {name: agreed for name in sorted(comp.rings) if (agreed := agreed_depth(comp, name)) is not None}
    if all(hi is not None for _, hi in ranges.values()):
        return ranges
    built = build_model(comp, {n: lo for n, (lo, _) in ranges.items()}, excluded(comp))
    open_proved = built.protocol is not None and bool(_every_depth(comp, built.protocol, ModelOptions(), memo))
    modelled = {r.name for r in built.protocol.rings} if built.protocol is not None else set()
    return {
        n: (lo, hi if hi is not None or (open_proved and n in modelled) else max(lo, MAX_CHECKED_DEPTH))
        for n, (lo, hi) in ranges.items()
    }


def _every_depth(
    comp: Composition, protocol: Protocol, options: ModelOptions, memo: Memo | None
) -> tuple[tuple[str, int, int | None], ...]:
    """The rings' depth ranges, when the parametric argument decides every depth of them (else empty)."""
    if options.bound is not None:
        return ()  # an explicit bound asks for the bounded model
    ranges: dict[str, tuple[int, int | None]] = {}
    for ring in protocol.rings:
        agreed = agreed_depth(comp, ring.name)
        ranges[ring.name] = (ring.depth, ring.depth) if agreed is None else agreed
    proof = parametric_proof(protocol, ranges, options.rlimit, memo)
    return proof.depths if proof.proved else ()


def _too_deep(comp: Composition, protocol: Protocol, options: ModelOptions, memo: Memo | None) -> list[TooDeep]:
    """Rings deeper than the bounded model unrolls, when the parametric argument does not decide
    the protocol at its depths: undecided, never vouched for."""
    deep = [ring for ring in protocol.rings if ring.depth > MAX_MODEL_DEPTH]
    if not deep:
        return []
    if options.bound is None:
        proof = parametric_proof(protocol, None, options.rlimit, memo)
        if proof.proved:
            return []
        reason = proof.reason
    else:
        reason = "a bounded unrolling was asked for (`--bound`)"
    return [TooDeep(r.name, r.depth, r.provenance.span, _lowest(comp, r.name), reason) for r in deep]


def _deep_run(
    protocol: Protocol, deep: list[TooDeep], options: ModelOptions, memo: Memo | None
) -> tuple[ProtocolVerdict, list[TooDeep]]:
    """The bounded model's verdict over at most :data:`DEEP_BOUND` iterations, and the rings that
    stay undecided: none when the run found a mistake (the composition is rejected by it).

    A run of :data:`SHORT_BOUND` iterations goes first: what it finds is a run of the kernel too,
    and a mistake that needs no wrap of the ring (a counter's order, a barrier's accounting) is
    found there within the budget that the long run's model may exceed."""
    bound = min(options.bound or DEEP_BOUND, DEEP_BOUND)
    if bound > SHORT_BOUND:
        short = verdict(protocol, ModelOptions(options.rlimit, SHORT_BOUND), memo)
        if short.findings:
            return short, []
    result = verdict(protocol, ModelOptions(options.rlimit, bound), memo)
    if result.findings:
        return result, []
    return result, [dataclasses.replace(d, bound=bound) for d in deep]


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
    "DEEP_BOUND",
    "MAX_CHECKED_DEPTH",
    "ModelFinding",
    "ModelReport",
    "ModelUndecided",
    "TooDeep",
    "analyse",
    "depth_choices",
    "placement_depths",
    "recheck",
]
