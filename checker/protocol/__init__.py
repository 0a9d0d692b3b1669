"""The SMT model of mbarrier ring protocols (L-ARRIVE, L-TXBYTES, L-PARITY, L-RACE, L-DEADLOCK).

Build a :class:`Protocol` (directly, with :class:`ProtocolBuilder`, or from a composition
with ``build``), decide it with :func:`check_protocol`: the verdict's findings are typed
(:class:`StaticViolation`, :class:`RaceWitness`, :class:`DeadlockWitness`), and the clause
each names words it (``checker/clauses/``; :func:`checker.engine.word`). ``depths`` decides
a composition at the depths the linker may choose; ``explore`` is the explicit-state oracle
used by the tests; ``strategies`` holds the Hypothesis strategy for small random protocols.
"""

from checker.protocol.check import DEFAULT_RLIMIT, check_protocol
from checker.protocol.model import (
    MBAR_MAX_COUNT,
    Barrier,
    BarrierKind,
    Counter,
    InitBy,
    NamedBarrier,
    Op,
    Protocol,
    ProtocolBuilder,
    Provenance,
    Ring,
    Role,
    Scope,
    Step,
    per_thread,
    per_warp,
    per_warpgroup,
)
from checker.protocol.verdict import (
    DeadlockWitness,
    ModelStats,
    Proof,
    ProtocolVerdict,
    RaceWitness,
    StaticViolation,
    Status,
    Trace,
    TraceRow,
    Undecided,
)

__all__ = [
    "DEFAULT_RLIMIT",
    "MBAR_MAX_COUNT",
    "Barrier",
    "BarrierKind",
    "Counter",
    "DeadlockWitness",
    "InitBy",
    "ModelStats",
    "NamedBarrier",
    "Op",
    "Proof",
    "Protocol",
    "ProtocolBuilder",
    "ProtocolVerdict",
    "Provenance",
    "RaceWitness",
    "Ring",
    "Role",
    "Scope",
    "StaticViolation",
    "Status",
    "Step",
    "Trace",
    "TraceRow",
    "Undecided",
    "check_protocol",
    "per_thread",
    "per_warp",
    "per_warpgroup",
]
