"""L-DEADLOCK: the protocol model reaches a state where every live role waits.

## What it checks
The protocol model looks for a reachable state in which every role that has not
finished is blocked on a wait (an mbarrier parity wait, a counter wait, a named
barrier) that no other role can complete. It first tries to prove that no such state
exists at every depth the linker may choose and for every trip count, by an
invariant over the roles' progress counters (specs/protocol-proofs.md: what the proof
covers, and what it leaves to the bounded model). Otherwise the bounded model decides:
every ring at the least and the greatest depth of its range, every role of every CTA
running the same number of iterations, any number up to 2·depth + 1 (a persistent
CTA's trip count is whatever its scheduler gives it), so a hang of a shorter run is
found too. A ring deeper than the bounded model unrolls in full (32) that the proof
does not cover runs 65 iterations: a hang found there is reported, otherwise the ring
is `E-SOLVER-UNKNOWN`. Named barriers are stepped like any barrier: an arrival before
the loop (`prearm`), a role that syncs on one barrier and arrives on another, and roles
that take turns. Across CTAs (a cluster's multicast and remote steps, a counter whose
partner is the same role in the other CTAs of a tile) the model runs the launch's
cluster and three CTAs of the tile's group, named `role@cta` in the trace. A found hang
is reported as a step table (role, step, barrier, slot, phase, parity) and as labels
on the contract lines.
A query the solver could not decide within its `rlimit` is `E-SOLVER-UNKNOWN` on the
ring or barrier it is about, filed under the clause that asked it (never a pass, and
never hidden by `--select`/`--ignore`); `kernlink check --rlimit N` sets the budget and
`--bound K` asks for the bounded model over K iterations instead of the proof. A ring
the model cannot represent is left out with its own `E-SOLVER-UNKNOWN` unless another
error of the check is about that ring. When a wrong declaration (L-ARRIVE, L-TXBYTES,
L-PARITY) causes the hang, only that clause is reported — unless it is not selected:
`--select L-DEADLOCK` still reports the hang.

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
        reads async
    }
}
```

## Fix
Release each slot before waiting for a later one, or require a depth that covers the
lag (`depth 2..8` for `lag 1`). For a barrier nobody arrives on, add the missing
side or the missing `arrive` step.
"""

from __future__ import annotations

from checker.clauses._protocol import Labelled, ModelClause, diagnostic, trace_labels, undecided
from checker.protocol.build import Unmodelled
from checker.protocol.check import MAX_MODEL_DEPTH
from checker.protocol.depths import TooDeep
from checker.protocol.verdict import DeadlockWitness, TraceRow, Undecided
from diagnostics.model import Diagnostic, Label
from diagnostics.symbols import Code
from solver import unknown_diagnostic


class DeadlockClause(ModelClause):
    code = Code.L_DEADLOCK
    name = "protocol-deadlock"
    summary = "the protocol model reaches a state where every live role waits"

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """Decided by the model (``checker/protocol/check.py``, ``_check_deadlock``); what it cannot
        look at is undecided (``checker/protocol/depths.py``, ``build.py``)."""
        if isinstance(found, DeadlockWitness):
            return witness(found)
        if isinstance(found, Undecided):
            return undecided(found, "whether the protocol can deadlock", "whether the protocol can deadlock")
        if isinstance(found, TooDeep):
            return too_deep(found)
        if isinstance(found, Unmodelled):
            return left_out(found)
        return super().word(found)


def witness(found: DeadlockWitness) -> Diagnostic:
    """Where every live role blocks, the late releases that cause it, and the trace that gets there."""
    trace = found.trace
    who = ", ".join(f"`{r.role}` on `{r.barrier}`" for r in trace.stuck)
    primary = [(r.step.provenance, _blocked(r)) for r in trace.stuck]
    lagging: list[Labelled] = [(s.provenance, _late(s.role, s.lag, s.peel)) for s in found.lagging]
    exclude = {p for p, _ in primary} | {p for p, _ in lagging}
    notes = []
    if found.finished:
        notes.append("finished: " + ", ".join(f"`{r}`" for r in found.finished) + f" ran all {found.bound} iterations")
    return diagnostic(
        Code.L_DEADLOCK,
        f"the protocol can deadlock: every live role waits ({who})",
        primary,
        (*lagging, *trace_labels(trace.rows, exclude)),
        notes,
        (
            "each wait needs an arrival that does not depend on the waiter's own later "
            "steps: check the order of waits and releases across rings, a release's lag "
            "against the ring depth, and a wait on a barrier no role arrives on",
        ),
        trace=trace,
        data=(
            ("blocked", "; ".join(f"{r.role}@{r.barrier}" for r in trace.stuck)),
            ("trace_length", str(len(trace.rows))),
        ),
    )


def _blocked(row: TraceRow) -> str:
    where = f"iteration {row.iteration}" if row.iteration >= 0 else "the prologue"
    parity = f", parity {row.parity}" if row.parity is not None else ""
    phase = f", phase {row.phase}" if row.phase is not None else ""
    return f"`{row.role}` blocks here forever ({where}{phase}{parity})"


def _late(role: str, lag: int, peel: int) -> str:
    late = f"{lag} iteration" + ("" if lag == 1 else "s")
    if peel:
        return f"`{role}` runs this side {late} behind its loop (`lag {peel}`): the waiter needs it first"
    return f"`{role}` releases each slot {late} late (`lag {lag}`): the waiter needs it first"


# ----------------------------------------------------------------- what the model leaves undecided
# A hang cannot be ruled out where the model does not look: each is E-SOLVER-UNKNOWN of this clause.


def too_deep(found: TooDeep) -> Diagnostic:
    """A ring deeper than the bounded model unrolls in full, at a depth the parametric argument does not cover."""
    why = (f"the parametric argument does not decide it: {found.reason}",) if found.reason else ()
    ran = (
        (
            f"the bounded model found no mistake in {found.bound} iterations per role, fewer than the "
            f"{2 * found.depth + 1} that wrap the ring twice",
        )
        if found.bound
        else ()
    )
    return unknown_diagnostic(
        Code.L_DEADLOCK,
        f"the protocol model does not unroll ring `{found.ring}` at depth {found.depth} (at most {MAX_MODEL_DEPTH})",
        (Label(found.span, f"depth {found.depth} is not checked", True),),
        more_notes=(*why, *ran, "the linker may only use a depth the protocol model has decided"),
        helps=(
            f"bound the ring's depth range to at most {MAX_MODEL_DEPTH} (e.g. `depth "
            f"{found.lowest}..{MAX_MODEL_DEPTH}`): a deeper ring rarely pays for its shared memory",
        ),
        data=(("ring", found.ring), ("depth", str(found.depth))),
    )


def left_out(found: Unmodelled) -> Diagnostic:
    """A channel the model leaves out, which no other selected clause explains."""
    return unknown_diagnostic(
        Code.L_DEADLOCK,
        f"the protocol model leaves out `{found.channel}`: {found.reason}",
        tuple(Label(span, "not modelled" if i == 0 else "another side", i == 0) for i, span in enumerate(found.spans)),
        more_notes=("no other selected clause reports why; its hand-offs are not checked",),
        data=(("channel", found.channel), ("reason", found.reason)),
    )
