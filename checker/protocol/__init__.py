"""The SMT model of mbarrier ring protocols (L-INIT, L-ARRIVE, L-TXBYTES, L-PARITY, L-RACE,
L-DEADLOCK).

Build a :class:`Protocol` (directly or with :class:`ProtocolBuilder`), decide it with
:func:`check_protocol`, and turn the verdict into diagnostics with
:func:`verdict_diagnostics`. ``explore`` is the explicit-state oracle used by the tests;
``strategies`` holds the Hypothesis strategy for small random protocols.
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
from checker.protocol.report import (
    UNKNOWN_CODE,
    proof_notes,
    protocol_diagnostics,
    verdict_diagnostics,
)
from checker.protocol.verdict import Finding, ModelStats, Proof, ProtocolVerdict, Status, Trace, TraceRow

__all__ = [
    "DEFAULT_RLIMIT",
    "MBAR_MAX_COUNT",
    "UNKNOWN_CODE",
    "Barrier",
    "BarrierKind",
    "Counter",
    "Finding",
    "InitBy",
    "ModelStats",
    "NamedBarrier",
    "Op",
    "Proof",
    "Protocol",
    "ProtocolBuilder",
    "ProtocolVerdict",
    "Provenance",
    "Ring",
    "Role",
    "Scope",
    "Status",
    "Step",
    "Trace",
    "TraceRow",
    "check_protocol",
    "per_thread",
    "per_warp",
    "per_warpgroup",
    "proof_notes",
    "protocol_diagnostics",
    "verdict_diagnostics",
]
