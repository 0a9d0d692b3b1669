"""L-PARITY: endpoints disagree on the phase-parity convention of a ring's barriers.

## What it checks
Waits on an mbarrier name a phase parity. Right after `mbarrier.init` phase 0 is
current: a wait on parity 0 blocks and a wait on parity 1 passes. The language's
convention: a consumer's first `full wait` uses parity 0 (wait for the first fill),
a producer's first `empty wait` uses parity 1 (a fresh slot is free). A side may
state another parity (`empty wait parity 0`) only when the other side pre-arms the
barrier (`empty arrive … prearm`). The model decides, for each barrier, whether
the first waits of both sides agree with the arrivals before them. Decided on the SMT
protocol model.

## Why it matters
Parity is the whole state a waiter sees (PTX ISA §9.7.13.15.16). A producer that
waits on parity 0 of a fresh empty barrier blocks forever unless the consumer
pre-arrived; a consumer that waits on parity 1 of a fresh full barrier reads a slot
that was never written. Components written against CUTLASS's convention and a
hand-rolled one disagree exactly here.

## Example
```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    requires feature mbarrier, cp_async_bulk
    role load entry load_main warps 1
    claim smem stage bytes 32KiB align 128 per_slot kv use bulk_copy
    ring kv produce by load {
        depth 2..4
        full init 1 expect_tx 32KiB
        empty init per_warp(mma)
        empty wait parity 0
        full arrive 1 tx 32KiB
        writes async
        init by load fenced
    }
}

stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 8 warpgroup
    ring kv consume by mma {
        full wait
        empty arrive per_warp(mma)
        reads async
    }
}
```

## Fix
Use one convention on both sides: either the producer's first empty wait uses
parity 1 (the default), or the consumer pre-arms every empty barrier
(`empty arrive per_warp(mma) prearm`) and the producer waits on parity 0.
"""

from __future__ import annotations

from checker.clauses._protocol import Labelled, ModelClause, static_diagnostic, undecided
from checker.protocol.model import BarrierKind
from checker.protocol.verdict import StaticViolation, Undecided
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class ParityClause(ModelClause):
    code = Code.L_PARITY
    name = "phase-parity"
    summary = "endpoints disagree on the phase-parity convention of a ring's barriers"

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """Decided by the model (``checker/protocol/check.py``, ``_check_static``)."""
        if isinstance(found, StaticViolation):
            return violation(found)
        if isinstance(found, Undecided):
            return undecided(
                found, f"`{found.ring}.{found.about}`", f"the first parities on `{found.ring}.{found.about}`"
            )
        return super().word(found)


def violation(found: StaticViolation) -> Diagnostic:
    """A first wait against the pre-arms before it: which wait, and what pre-arms (or that nothing does)."""
    wait = found.wait
    assert wait is not None  # an L-PARITY finding is about one wait
    name = found.name
    primary: list[Labelled] = [(wait.provenance, f"`{wait.role}` first waits with parity {wait.parity}")]
    arms = [s for s in found.steps if s.prearm]
    secondary: list[Labelled] = [(s.provenance, f"`{s.role}` pre-arms `{name}`") for s in arms]
    if not arms:
        secondary.append((found.ring_at, f"nothing pre-arms `{name}`"))
    who = f"`{wait.role}` first waits on `{name}` with parity {wait.parity}"
    armed = found.accounting.prearm > 0
    if found.barrier is BarrierKind.EMPTY and not armed:
        message = f"{who} but nothing pre-arms it, so the first wait blocks on a fresh barrier"
    elif found.barrier is BarrierKind.EMPTY:
        message = f"{who} but it is pre-armed, so the wait skips the pre-armed phase"
    elif not armed:
        message = f"{who}, which passes on a fresh barrier before the slot is filled"
    else:
        message = f"{who} but it is pre-armed, so the first fill is taken for the pre-armed phase"
    return static_diagnostic(found, [message] * len(found.broken), primary, secondary, _fix(found, bool(arms)))


def _fix(found: StaticViolation, armed: bool) -> str:
    if found.barrier is BarrierKind.EMPTY:
        good = 0 if armed else 1
        why = "after the consumer's pre-arm" if armed else "it passes on a fresh barrier"
        return (
            f"the producer's first wait on `{found.name}` uses parity {good} ({why}); pre-arm "
            "from the consumer only together with parity 0"
        )
    good = 1 if armed else 0
    return f"the consumer's first wait on `{found.name}` uses parity {good}: it waits for the first fill"
