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

from checker.clause import Clause, internal_error
from checker.composition import Composition
from checker.context import CheckContext
from checker.protocol.adapter import MAX_MODEL_DEPTH, TooDeep, Unmodelled
from checker.protocol.report import undecided_diagnostic
from diagnostics.model import Diagnostic, Label, sort_diagnostics
from diagnostics.symbols import Code


class DeadlockClause(Clause):
    code = Code.L_DEADLOCK
    name = "protocol-deadlock"
    summary = "the bounded protocol model reaches a state where every live role waits"
    category = "protocol"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Alone, as ``--select`` of this code: with the undecided queries it leaves."""
        return iter(alone(self, comp))

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return iter(ctx.protocol_for(self.code))


# ----------------------------------------------------------------- what the model leaves undecided, worded here
# A hang cannot be ruled out where the model does not look: each is E-SOLVER-UNKNOWN of this clause.


def too_deep(found: TooDeep) -> Diagnostic:
    """A ring deeper than the bounded model unrolls."""
    return undecided_diagnostic(
        Code.L_DEADLOCK,
        f"the protocol model does not unroll ring `{found.ring}` at depth {found.depth} (at most {MAX_MODEL_DEPTH})",
        (Label(found.span, f"depth {found.depth} is not checked", True),),
        ("the linker may only use a depth the protocol model has decided",),
        (("ring", found.ring), ("depth", str(found.depth))),
        (
            f"bound the ring's depth range to at most {MAX_MODEL_DEPTH} (e.g. `depth "
            f"{found.lowest}..{MAX_MODEL_DEPTH}`): a deeper ring rarely pays for its shared memory",
        ),
    )


def left_out(found: Unmodelled) -> Diagnostic:
    """A channel the model leaves out, which no other selected clause explains."""
    return undecided_diagnostic(
        Code.L_DEADLOCK,
        f"the protocol model leaves out `{found.channel}`: {found.reason}",
        tuple(Label(span, "not modelled" if i == 0 else "another side", i == 0) for i, span in enumerate(found.spans)),
        ("no other selected clause reports why; its hand-offs are not checked",),
        (("channel", found.channel), ("reason", found.reason)),
    )


def undecided(found: Diagnostic | TooDeep | Unmodelled) -> Diagnostic:
    """An item the model leaves undecided, as its diagnostic (the model's own are worded already)."""
    if isinstance(found, TooDeep):
        return too_deep(found)
    if isinstance(found, Unmodelled):
        return left_out(found)
    return found


def leftovers(ctx: CheckContext, reported: list[Diagnostic]) -> list[Diagnostic]:
    """What no selected clause owns, worded (:meth:`CheckContext.leftovers`): never filtered by the selection."""
    return [undecided(item) for item in ctx.leftovers(reported)]


def alone(clause: Clause, comp: Composition) -> list[Diagnostic]:
    """One protocol clause checked by itself (a ``--select`` of its code), with what the model leaves undecided."""
    ctx = CheckContext(comp, frozenset({clause.code}))
    try:
        found = list(clause.check_in(comp, ctx))
        return sort_diagnostics([*found, *leftovers(ctx, found)])
    except Exception as exc:  # as in the engine: a clause bug is E-INTERNAL, never a pass or a traceback
        return [internal_error(type(clause), exc)]
