"""L-DEADLOCK: the bounded protocol model reaches a state where every live role waits.

## What it checks
The bounded protocol model searches for a reachable state in which every role that
has not finished is blocked on a wait (an mbarrier parity wait, a counter wait, a
named barrier) that no other role can complete. The trace is reported as a step
table (role, step, barrier, slot, phase, parity) and as labels on the contract lines.
A query the solver could not decide within its `rlimit` is `E-SOLVER-UNKNOWN` on the
ring or barrier it is about, filed under the clause that asked it (never a pass, and
never hidden by `--select`/`--ignore`); `kernlink check --rlimit N --bound K` sets the
budget and the iterations unrolled. A ring the model cannot represent is left out with
its own `E-SOLVER-UNKNOWN` unless another error of the check is about that ring.
When a wrong declaration (L-ARRIVE, L-TXBYTES, L-PARITY) causes the hang, only that
clause is reported — unless it is not selected: `--select L-DEADLOCK` still reports
the hang.

## Why it matters
A deadlocked kernel does not fail: it hangs the GPU until the watchdog or the user
kills it. A consumer that releases slot i only after waiting for slot i+1 deadlocks a
ring of depth 1 but works at depth 2 — a bug that appears when the linker (or a
smaller shared-memory budget) picks a shallower ring.

## Example
```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    requires feature mbarrier, cp_async_bulk
    role load entry load_main warps 1
    claim smem stage bytes 32KiB align 128 per_slot kv use bulk_copy
    ring kv produce by load {
        depth 1
        full init 1 expect_tx 32KiB
        empty init per_warp(mma)
        empty wait
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
        empty arrive per_warp(mma) lag 1
        reads generic
    }
}
```

## Fix
Release each slot before waiting for a later one, or require a depth that covers the
lag (`depth 2..8` for `lag 1`). For a barrier nobody arrives on, add the missing
side or the missing `arrive` step.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.context import CheckContext
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class DeadlockClause(Clause):
    code = Code.L_DEADLOCK
    name = "protocol-deadlock"
    summary = "the bounded protocol model reaches a state where every live role waits"
    category = "protocol"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Alone, as ``--select`` of this code: with the undecided queries it leaves."""
        from checker.engine import run_clauses

        return iter(run_clauses(comp, [type(self)]))

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return iter(ctx.protocol_for(self.code))
