"""One mistake, one clause; what no selected clause owns; the selection never hides a hang.

The protocol model reports every finding it decides (``checker/protocol/depths.py``); this
module says which of them a check reports. A wrong declaration (a count, the bytes, a
parity) makes the protocol race or hang, so only the first tier of :data:`TIERS` with a
selected finding is reported, and the undecided queries of later tiers are its dependents
too. What no selected clause owns (the undecided questions, the channels the model left
out that no error explains, a hang the selection would hide) is reported whatever the
selection: an undecided check is never an accept. Everything here is typed; the engine
asks the clause each item names to word it (``checker/engine.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from checker.composition import Composition, Owned
from checker.protocol.build import Unmodelled
from checker.protocol.declarations import NO_DEPTH_FITS
from checker.protocol.depths import ModelFinding, ModelReport, ModelUndecided
from checker.protocol.verdict import DeadlockWitness
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code

TIERS = ((Code.L_ARRIVE, Code.L_TXBYTES, Code.L_PARITY), (Code.L_RACE,), (Code.L_DEADLOCK,))
"""The codes the protocol model decides, root causes first."""
MODEL_CODES = tuple(code for tier in TIERS for code in tier)

Leftover = ModelUndecided | DeadlockWitness | Unmodelled
"""What no selected clause owns: reported whatever the selection."""


def reported(report: ModelReport, codes: Iterable[str]) -> tuple[tuple[ModelFinding, ...], tuple[ModelUndecided, ...]]:
    """The findings and the undecided questions a check of the selected ``codes`` reports.

    Only the first tier with a finding among the selected codes is reported (a wrong count
    makes the protocol race or hang: the race or hang is its dependent); undecided queries
    of later tiers are dependents too. With nothing found, every undecided query is
    reported: an undecided check is never an accept.
    """
    chosen = set(codes)
    found = [f.code for f in report.findings if f.code in chosen]
    tier = next((i for i, t in enumerate(TIERS) if any(code in t for code in found)), None)
    if tier is None:
        return (), report.undecided
    kept = tuple(f for f in report.findings if f.code in TIERS[tier] and f.code in chosen)
    return kept, tuple(u for u in report.undecided if _tier_of(u.code) <= tier)


def hang_proofs(report: ModelReport, codes: Iterable[str]) -> tuple[DeadlockWitness, ...]:
    """The deadlocks a selection would hide: no selected protocol clause reports anything, yet it hangs.

    A selection narrows what is reported, never what is accepted: the finding that proves
    a hang is shown whatever ``--select``/``--ignore`` say (with a selected finding, the
    composition is rejected by its root cause already).
    """
    if reported(report, codes)[0]:
        return ()
    return tuple(f for f in report.findings if isinstance(f, DeadlockWitness))


def leftovers(
    report: ModelReport, codes: Iterable[str], comp: Composition, found: Sequence[Diagnostic]
) -> list[Leftover]:
    """What no selected clause owns, given what the check ``found``: undecided questions, hangs, channels left out.

    They are never filtered by the selection, and the model runs whatever the selection
    (a check of other clauses must not accept a composition that hangs).
    """
    codes = tuple(codes)
    return [*reported(report, codes)[1], *hang_proofs(report, codes), *unexplained(comp, report.unmodelled, found)]


def unexplained(comp: Composition, unmodelled: Iterable[Unmodelled], found: Sequence[Diagnostic]) -> list[Unmodelled]:
    """The channels left out of the model that no error ``found`` is about (an error on one of
    its endpoints, or on a role one of them names, is its root cause): each is undecided."""
    errs = [lab.span for d in found if d.severity is Severity.ERROR for lab in d.labels]
    out = []
    for u in unmodelled:
        if u.reason == NO_DEPTH_FITS:
            continue  # a dependent of the placement failure, which is reported whatever the selection
        if any(_inside(span, whole) for span in errs for whole in (*u.spans, *_related(comp, u.channel))):
            continue  # a dependent: the error about the channel is the root cause
        out.append(u)
    return out


VOIDED = (
    "reported whatever the clause selection: the protocol model's verdict is about the contract, and "
    "this code synchronises otherwise"
)
OPEN = (
    "reported whatever the clause selection: the protocol model's verdict is about the contract, and "
    "whether this code keeps it is undecided"
)


def voided(conformance: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The code findings a selection without L-CONFORM would hide although they bear on the model's verdict.

    A decided L-CONFORM error of a protocol check (a missing release, a per-thread arrival,
    a dropped proxy fence, a wrong parity, :data:`checker.conformance.PROTOCOL_CHECKS`)
    means the code may hang or race where the contract the model proved does not; an
    undecided site of such a check (I-CONFORM, an error under ``--strict``), or a package
    whose code was not checked at all (it carries no PTX), leaves that open. Like a hang
    proof, each is shown whatever ``--select``/``--ignore`` say.
    """
    from checker.conformance import PROTOCOL_CHECKS

    def bears(d: Diagnostic) -> bool:
        check = dict(d.data).get("check")
        if d.code == Code.I_CONFORM:
            return check is None or check in PROTOCOL_CHECKS
        return d.code == Code.L_CONFORM and d.severity is Severity.ERROR and check in PROTOCOL_CHECKS

    return [
        dataclasses.replace(d, notes=(*d.notes, OPEN if d.code == Code.I_CONFORM else VOIDED))
        for d in conformance
        if bears(d)
    ]


def _tier_of(code: str) -> int:
    return next((i for i, t in enumerate(TIERS) if code in t), len(TIERS))


def _related(comp: Composition, channel: str) -> list[Span]:
    """The channel's endpoints and the declarations of the roles they name."""
    ends: list[Owned[Any]] = [
        *comp.rings.get(channel, ()),
        *comp.counters.get(channel, ()),
        *comp.rendezvous.get(channel, ()),
    ]
    roles = {e.item.role for e in ends}
    roles |= {it.role for e in comp.rings.get(channel, ()) for it in e.item.items if isinstance(it, A.RingInitBy)}
    return [e.span for e in ends] + [comp.roles[r].role.span for r in sorted(roles) if r in comp.roles]


def _inside(part: Span, whole: Span) -> bool:
    return part.file == whole.file and whole.line <= part.line and part.end_line <= whole.end_line


__all__ = ["MODEL_CODES", "TIERS", "Leftover", "hang_proofs", "leftovers", "reported", "unexplained", "voided"]
