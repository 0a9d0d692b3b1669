"""The verdict of a protocol check: typed findings with traces and cores, undecided queries, proofs, cost.

What :func:`checker.protocol.check.check_protocol` returns, apart from how it decides: the
memo of verdicts (``checker/memo.py``) and the clauses that word the findings read these
types without the decision procedure. Nothing here is text for people: each finding names
its clause (``code``), whose module words it (``checker/clauses/l_arrive.py``, ``l_txbytes.py``,
``l_parity.py``, ``l_race.py``, ``l_deadlock.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

from checker.protocol.model import BarrierKind, Provenance, Step
from checker.protocol.smt import Fact, Query, StaticRule
from diagnostics.symbols import Code
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
    its current phase) and ``completes`` whether the step completed it; ``value`` is the
    counter's value after an add, or the value a counter wait saw (its target ``threshold``);
    ``part`` the half of a ``bar.sync`` (``arrive``, ``wait``); ``blocked`` that the role
    never gets past the step (a deadlock's last rows).
    """

    index: int
    role: str
    step: Step
    iteration: int
    barrier: str
    slot: int | None
    phase: int | None
    parity: int | None
    completes: bool = False
    value: int | None = None
    threshold: int | None = None
    part: str = ""
    blocked: bool = False


@dataclass(frozen=True)
class Trace:
    """A schedule (``rows``) and the steps it ends at (``stuck``: blocked or racing)."""

    rows: tuple[TraceRow, ...]
    stuck: tuple[TraceRow, ...] = ()


@dataclass(frozen=True)
class Accounting:
    """What the steps on one barrier make per phase: loop and pre-arm arrivals, expected and completed bytes."""

    arrivals: int
    prearm: int
    expected: int
    completed: int


@dataclass(frozen=True)
class StaticViolation:
    """A barrier's declarations break an arithmetic rule (L-ARRIVE, L-TXBYTES), or a first wait
    the parity convention (L-PARITY), whatever the schedule.

    ``broken`` are the rules (``smt.StaticRule``) broken on the barrier (for L-PARITY: by
    ``wait``), the first the one reported; ``core`` is that rule's minimal conflicting set and
    ``steps`` the steps in it; ``in_core`` whether the barrier's declaration (``declared_at``)
    is in it. ``init`` and ``expect_tx`` are the declaration's values, ``accounting`` what
    the steps make; ``ring_at`` the ring's declaration.
    """

    code: str
    ring: str
    barrier: BarrierKind
    broken: tuple[StaticRule, ...]
    init: int
    expect_tx: int | None
    accounting: Accounting
    core: tuple[Fact, ...]
    steps: tuple[Step, ...]
    in_core: bool
    declared_at: Provenance
    ring_at: Provenance
    wait: Step | None = None

    @property
    def name(self) -> str:
        """The barrier as contracts name it (``kv.full``)."""
        return f"{self.ring}.{self.barrier.value}"

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells two findings of one verdict apart: the barrier, and the waiting role and parity."""
        wait = (self.wait.role, self.wait.parity) if self.wait is not None else ()
        return (self.code, self.ring, self.barrier, *wait)


@dataclass(frozen=True)
class RaceWitness:
    """A schedule in which ``racer`` overwrites a slot of ``ring`` before ``partner`` released it
    (``overwrite``), or reads it before ``partner`` filled it (``early-read``).

    ``step`` is the racing step, the trace's last, on data iteration ``iteration`` in slot
    ``slot``; ``partner_step`` the partner's step that comes only later (None: none ran);
    ``waits`` whether ``racer`` waits on the slot's barrier at all; ``asynchronous`` whether
    the partner reads the slot asynchronously (done only at a `read wait`). A grid counter's
    ``conflict`` names the tile in ``iteration`` and the writer as ``partner``.
    """

    code: ClassVar[str] = Code.L_RACE
    ring: str
    query: Query
    depth: int
    producer: str
    racer: str
    partner: str
    slot: int | None
    iteration: int | None
    step: Step
    partner_step: Step | None
    waits: bool
    trace: Trace
    asynchronous: bool = False

    @property
    def identity(self) -> tuple[object, ...]:
        """One race per ring and query in a verdict."""
        return (self.code, self.ring, self.query)


@dataclass(frozen=True)
class DeadlockWitness:
    """A schedule after which every live role waits (``trace.stuck``: where each blocks).

    ``finished`` are the roles that ran all ``bound`` iterations; ``lagging`` the releases
    made late (``lag``) on the rings the blocked roles wait on: the lines that cause it.
    """

    code: ClassVar[str] = Code.L_DEADLOCK
    trace: Trace
    finished: tuple[str, ...]
    bound: int
    lagging: tuple[Step, ...] = ()

    @property
    def identity(self) -> tuple[object, ...]:
        """One deadlock per verdict."""
        return (self.code,)


Finding = StaticViolation | RaceWitness | DeadlockWitness
"""A violated clause, as the model decided it."""


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
class Undecided:
    """A query the solver could not decide within ``rlimit``: the clause that asked it, about what, where.

    ``about`` is the barrier (``full``, ``empty``) of an L-ARRIVE, L-TXBYTES or L-PARITY query on
    ``ring``, the race (``overwrite``, ``early-read``) of an L-RACE one; an L-DEADLOCK query is
    about the whole protocol. ``stats`` is the model it was asked of.
    """

    code: str
    ring: str = ""
    about: str = ""
    where: tuple[Provenance, ...] = ()
    stats: ModelStats | None = None
    rlimit: int = DEFAULT_RLIMIT

    @property
    def identity(self) -> tuple[object, ...]:
        """The question, whatever model it was asked of."""
        return (self.code, self.ring, self.about)


@dataclass(frozen=True)
class Proof:
    """Why a query of clause ``code`` (a race: ``query`` on ``ring``) is unsat: the minimal facts ruling it out."""

    code: str
    facts: tuple[Fact, ...]
    query: str = ""
    ring: str = ""


@dataclass(frozen=True)
class Coverage:
    """What a verdict covers.

    ``parametric``: the counter abstraction (``checker/protocol/parametric.py``) proved the
    protocol free of deadlocks and races at every depth in ``depths`` (ring, lo, hi; hi
    None: unbounded) and every trip count; such a verdict unrolls no model (its stats count
    no events, bound 0). Otherwise the bounded model decided the protocol's own depths over
    its bound, and ``fallback`` says why the parametric argument did not ("" when it was
    not tried: an explicit bound, or an explanation asked for).
    """

    parametric: bool = False
    depths: tuple[tuple[str, int, int | None], ...] = ()
    fallback: str = ""


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
    coverage: Coverage = field(default_factory=Coverage)

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


__all__ = [
    "Accounting",
    "Coverage",
    "DeadlockWitness",
    "Finding",
    "ModelStats",
    "Proof",
    "ProtocolVerdict",
    "RaceWitness",
    "StaticViolation",
    "Status",
    "Trace",
    "TraceRow",
    "Undecided",
]
