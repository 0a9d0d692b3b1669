"""L-RACE: the protocol lets a producer overwrite a slot not yet released, or a consumer read a slot not yet full.

## What it checks
The bounded protocol model (every ring wrapped at least twice, at the least and the
greatest depth the linker may choose) searches for an interleaving in which a
producer's write or async copy into slot `i % depth` happens before every consumer
released the slot's previous contents, or a consumer's read of a slot happens before
the phase that fills it completed. A found interleaving is reported as a step table
(role, step, barrier, slot, phase, parity) and as labels on the contract lines.

## Why it matters
Rings move data between warps that run at different speeds; only the barriers order
them. Without the empty wait the producer laps the consumer and overwrites a tile in
use; without the full wait the consumer reads stale data. Both corrupt results
silently and only under timing that tests rarely hit.

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
Wait on the slot's empty barrier before writing it (producer) and on its full
barrier before reading it (consumer), and release it only after the last read.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses.l_deadlock import alone
from checker.composition import Composition
from checker.context import CheckContext
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class RaceClause(Clause):
    code = Code.L_RACE
    name = "slot-race"
    summary = "the protocol lets a producer overwrite a slot not yet released, or a consumer read a slot not yet full"
    category = "protocol"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Alone, as ``--select`` of this code: with the undecided queries it leaves."""
        return iter(alone(self, comp))

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return iter(ctx.protocol_for(self.code))
