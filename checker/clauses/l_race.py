"""L-RACE: the protocol lets a producer overwrite a slot not yet released, or a consumer read a slot not yet full.

## What it checks
The protocol model looks for an interleaving in which a producer's write or async copy
into slot `i % depth` happens before every consumer released the slot's previous
contents, or a consumer's read of a slot happens before the phase that fills it
completed. It first tries to prove that none exists at every depth the linker may
choose and for every trip count (specs/protocol-proofs.md); otherwise the bounded model
searches every ring wrapped at least twice, at the least and the greatest depth of its
range. A consumer that reads asynchronously (`read async`: a TMA store from shared
memory, `tcgen05.ld`) is done with a slot only at the `read wait` that completes the
read, so a release before it lets the producer overwrite data still being read. Across
CTAs, a copy lands in its CTA's slot (every CTA's when `multicast`) and the consumers
of that CTA must have released it. A grid counter's tile (a counter whose partner is a
role in the other CTAs that share the tile) is written by its producers before they
add and read by its consumers after they wait: a state in which one CTA reads a tile
while another CTA is about to write it is a race. A found interleaving is reported as
a step table (role, step, barrier, slot, phase, parity) and as labels on the contract
lines; across CTAs a role is named `role@cta`.

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
        reads async
    }
}
```

## Fix
Wait on the slot's empty barrier before writing it (producer) and on its full
barrier before reading it (consumer), and release it only after the last read.
"""

from __future__ import annotations

from checker.clauses._protocol import Labelled, ModelClause, diagnostic, trace_labels, undecided
from checker.protocol.smt import Query
from checker.protocol.verdict import RaceWitness, Undecided
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class RaceClause(ModelClause):
    code = Code.L_RACE
    name = "slot-race"
    summary = "the protocol lets a producer overwrite a slot not yet released, or a consumer read a slot not yet full"

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """Decided by the model (``checker/protocol/check.py``, ``_check_races``)."""
        if isinstance(found, RaceWitness):
            return witness(found)
        if isinstance(found, Undecided):
            if found.about == Query.CONFLICT.value:
                what = f"a conflicting access to a tile of counter `{found.ring}`"
                return undecided(found, what, f"whether there is {what}")
            what = f"{found.about} on ring `{found.ring}`"
            return undecided(found, what, f"whether there is an {what}")
        return super().word(found)


def witness(found: RaceWitness) -> Diagnostic:
    """The racing step (the trace's last), the partner's step that comes only later, and the trace."""
    if found.query is Query.CONFLICT:
        return conflict(found)
    ring, slot, iteration = found.ring, found.slot, found.iteration
    secondary: list[Labelled] = []
    if found.query is Query.OVERWRITE:
        assert iteration is not None  # a write of a ring slot is of a data iteration
        if found.asynchronous:
            whose = "its own" if found.partner == found.producer else f"`{found.partner}`'s"
            message = (
                f"`{found.producer}` can overwrite slot {slot} of ring `{ring}` while {whose} asynchronous "
                "read of it may still run"
            )
        else:
            message = (
                f"`{found.producer}` can overwrite slot {slot} of ring `{ring}` before `{found.partner}` releases it"
            )
        primary = (found.step.provenance, f"writes slot {slot} for iteration {iteration} (the trace's last step)")
        if found.partner_step is not None:
            done = iteration - found.depth
            later = f"`{found.partner}` is done with iteration {done} of slot {slot} only later"
            secondary.append((found.partner_step.provenance, later))
        if found.asynchronous:
            fix = (
                "wait for the asynchronous reads (`read wait`, `cp.async.bulk.wait_group.read` or "
                "`tcgen05.wait::ld`) before the slot is released or written again"
            )
        elif found.waits:
            fix = (
                f"make `{found.producer}` wait for the release before writing: the "
                "parities and the release's lag decide which use of the slot it waits for"
            )
        else:
            fix = f"wait on `{ring}.empty` before writing the slot"
    else:
        assert found.partner_step is not None  # a read races the producer's write
        message = f"`{found.racer}` can read slot {slot} of ring `{ring}` before `{found.producer}` fills it"
        primary = (found.step.provenance, f"reads slot {slot} of iteration {iteration} (the trace's last step)")
        secondary.append((found.partner_step.provenance, f"`{found.producer}` writes it only later"))
        fix = (
            f"wait on `{ring}.full` with the parity of the fill before reading"
            if found.waits
            else f"wait on `{ring}.full` before reading the slot"
        )
    rows = found.trace.rows
    secondary += trace_labels(rows, exclude={found.step.provenance})
    data = (("ring", ring), ("kind", found.query.value), ("slot", str(slot)), ("trace_length", str(len(rows))))
    return diagnostic(Code.L_RACE, message, (primary,), secondary, helps=(fix,), trace=found.trace, data=data)


def conflict(found: RaceWitness) -> Diagnostic:
    """A grid counter's tile read by one CTA while another CTA is about to write it."""
    counter, tile = found.ring, found.iteration
    message = f"`{found.racer}` can read tile {tile} of counter `{counter}` while `{found.partner}` has yet to write it"
    primary = (found.step.provenance, f"`{found.racer}` reads the tile here")
    secondary: list[Labelled] = []
    if found.partner_step is not None:
        secondary.append((found.partner_step.provenance, f"`{found.partner}` writes it here, in no fixed order"))
    secondary += trace_labels(found.trace.rows, exclude={found.step.provenance})
    notes = (
        "a counter signals other CTAs: its partner is the same (or another) role in the CTAs that share "
        "the tile; the model runs the tile's group as `role@0`, `role@1`, … (split 0 first)",
    )
    fix = (
        "wait for the adds of the splits whose data the read takes (`wait ge split`, `others` or `all`), "
        "and add only after writing"
        if found.waits
        else f"wait on `{counter}` before reading the tile (`wait ge split`, `others` or `all`), and add after writing"
    )
    data = (("counter", counter), ("kind", found.query.value), ("tile", str(tile)))
    return diagnostic(Code.L_RACE, message, (primary,), secondary, notes, (fix,), trace=found.trace, data=data)
