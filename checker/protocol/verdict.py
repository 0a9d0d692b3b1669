"""The verdict of a protocol check: findings with traces and cores, undecided queries, proofs, cost.

What :func:`checker.protocol.check.check_protocol` returns, apart from how it decides: the
memo of verdicts (``checker/memo.py``) and the report (``checker/protocol/report.py``)
read these types without the decision procedure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from checker.protocol.model import Provenance, Step
from checker.protocol.smt import Fact
from solver import DEFAULT_RLIMIT, UNKNOWN_CODE


class Status(enum.Enum):
    """The overall answer: no finding and nothing undecided, a finding, or undecided."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TraceRow:
    """One step of a counterexample schedule.

    ``phase`` is the number of phases the barrier completed before the step (the index of
    its current phase); ``effect`` says what the step did (``passes``, ``blocks``, …).
    """

    index: int
    role: str
    step: Step
    iteration: int
    barrier: str
    slot: int | None
    phase: int | None
    parity: int | None
    effect: str


@dataclass(frozen=True)
class Trace:
    """A schedule (``rows``) and the steps it ends at (``stuck``: blocked or racing)."""

    rows: tuple[TraceRow, ...]
    stuck: tuple[TraceRow, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One violated clause: message, the locus, related spans, a trace or a core."""

    code: str
    message: str
    primary: tuple[tuple[Provenance, str], ...]
    secondary: tuple[tuple[Provenance, str], ...] = ()
    notes: tuple[str, ...] = ()
    helps: tuple[str, ...] = ()
    trace: Trace | None = None
    core: tuple[Fact, ...] = ()
    key: tuple[str, ...] = ()
    data: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Undecided:
    """A query the solver could not decide: the clause that asked it, what, and where."""

    code: str
    what: str
    where: tuple[Provenance, ...] = ()


@dataclass(frozen=True)
class Proof:
    """Why a query is unsat: the minimal set of facts that rules it out."""

    query: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class ModelStats:
    """Size and cost of the check.

    Sizes are the whole model's; ``checks`` and ``seconds`` include the ring slices;
    ``build_seconds`` is the construction of the whole model alone.
    """

    bound: int
    events: int
    assertions: int
    variables: int
    checks: int
    seconds: float
    build_seconds: float


@dataclass(frozen=True)
class ProtocolVerdict:
    """The structured result of :func:`check_protocol`.

    ``deadlock`` is ``None`` when undecided; ``races`` holds ``(ring, "overwrite" |
    "early-read")``; ``static`` holds ``(code, ring, barrier)`` of the declaration checks.
    """

    findings: tuple[Finding, ...]
    undecided: tuple[Undecided, ...]
    proofs: tuple[Proof, ...]
    stats: ModelStats
    deadlock: bool | None
    races: frozenset[tuple[str, str]]
    static: frozenset[tuple[str, str, str]]
    rlimit: int = field(default=DEFAULT_RLIMIT)

    @property
    def status(self) -> Status:
        if self.findings:
            return Status.UNSAFE
        return Status.UNKNOWN if self.undecided else Status.SAFE

    @property
    def codes(self) -> frozenset[str]:
        codes = {f.code for f in self.findings}
        if self.undecided:
            codes.add(UNKNOWN_CODE)
        return frozenset(codes)


__all__ = ["Finding", "ModelStats", "Proof", "ProtocolVerdict", "Status", "Trace", "TraceRow", "Undecided"]
