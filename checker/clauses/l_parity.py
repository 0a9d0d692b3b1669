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
        reads generic
    }
}
```

## Fix
Use one convention on both sides: either the producer's first empty wait uses
parity 1 (the default), or the consumer pre-arms every empty barrier
(`empty arrive per_warp(mma) prearm`) and the producer waits on parity 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses.l_deadlock import alone
from checker.composition import Composition
from checker.context import CheckContext
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class ParityClause(Clause):
    code = Code.L_PARITY
    name = "phase-parity"
    summary = "endpoints disagree on the phase-parity convention of a ring's barriers"
    category = "protocol"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Alone, as ``--select`` of this code: with the undecided queries it leaves."""
        return iter(alone(self, comp))

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return iter(ctx.protocol_for(self.code))
