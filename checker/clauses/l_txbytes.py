"""L-TXBYTES: an mbarrier's expected transaction bytes differ from the bytes its async copies complete per phase.

## What it checks
A full barrier fed by bulk or TMA copies completes a phase when its arrivals are in
*and* its transaction count returns to zero: `arrive.expect_tx` (`full arrive 1 tx
N`) adds N expected bytes, and each async copy (`full copy M`, or one implied copy of
the `tx` bytes when the side lists none) completes M. The model compares, per phase,
the bytes expected with the bytes completed (and with the `expect_tx` the barrier's
`init` line declares). Decided on the SMT protocol model, per CTA: in a cluster a
`multicast` copy completes its bytes on the barrier of every CTA, a `remote` one on the
peer's (a 2-CTA pair's load, whose leader's barrier counts both CTAs' copies). The
copies must also fit the slot they fill: the copies `into` a per-slot claim move at most
its bytes per phase, and all copies of a phase at most the ring's per-slot claims
together (a slot smaller than its copies is overrun, however well tx, copies and barrier
agree). Each CTA has its own slot: a copy lands in its issuer's (a `remote` one too), a
`multicast` one in every CTA's, and `on leader` / `on peer` say which CTAs issue it.

## Why it matters
The transaction count must reach exactly zero (PTX ISA §9.7.13.15.2). A producer
that expects 16 KiB but issues two 16 KiB copies lets the phase complete after the
first copy: the consumer reads a half-written tile. Expecting more than is copied
never completes the phase: the consumer hangs.

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
        empty wait
        full arrive 1 tx 16KiB
        full copy 16KiB
        full copy 16KiB
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
Expect the sum of the copies' bytes in the one `arrive.expect_tx` of the phase
(`full arrive 1 tx 32KiB` for two 16 KiB copies), or expect each copy's bytes.
"""

from __future__ import annotations

from checker.clauses._protocol import ModelClause, count_labels, static_diagnostic, undecided
from checker.protocol.declarations import CopyFinding
from checker.protocol.smt import StaticRule
from checker.protocol.verdict import StaticViolation, Undecided
from checker.report import seam
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class TxbytesClause(ModelClause):
    code = Code.L_TXBYTES
    name = "transaction-bytes"
    summary = "an mbarrier's expected transaction bytes differ from the bytes its async copies complete per phase"

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """Decided by the model (``checker/protocol/check.py``, ``_check_static``) or the declarations
        (``checker/protocol/declarations.py``)."""
        if isinstance(found, StaticViolation):
            return violation(found)
        if isinstance(found, CopyFinding):
            return copy_finding(found)
        if isinstance(found, Undecided):
            what = f"`{found.ring}.{found.about}`"
            return undecided(found, what, f"the transaction bytes of {what}")
        return super().word(found)


# ----------------------------------------------------------------- the model's findings (protocol/check.py)


def violation(found: StaticViolation) -> Diagnostic:
    """The bytes one barrier expects against those its copies complete (and those it declares)."""
    declared = found.expect_tx
    primary, secondary = count_labels(
        found, f"declares {declared} bytes per phase" if declared is not None else "the barrier"
    )
    return static_diagnostic(found, [_message(found, rule) for rule in found.broken], primary, secondary, _fix(found))


def _message(found: StaticViolation, rule: StaticRule) -> str:
    name, declared, acct = found.name, found.expect_tx, found.accounting
    if rule == "txbytes":
        return f"`{name}` expects {acct.expected} transaction bytes per phase but its copies complete {acct.completed}"
    if rule == "declared-expect":
        return f"`{name}` declares {declared} transaction bytes per phase but its arrivals expect {acct.expected}"
    if rule == "declared-copy":
        return f"`{name}` declares {declared} transaction bytes per phase but its copies complete {acct.completed}"
    most = max(acct.expected, acct.completed)
    return f"`{name}` moves {most} transaction bytes per phase, above the tx-count limit of 1048575"


def _fix(found: StaticViolation) -> str:
    """Which side is wrong cannot be told: both fixes, in the contract's units (KiB as written)."""
    acct = found.accounting
    expected, completed = _size(acct.expected), _size(acct.completed)
    gap = _size(abs(acct.expected - acct.completed))
    if acct.expected > acct.completed:
        return (
            f"either a copy is missing: copy {gap} more per phase (the copies complete {completed} of the "
            f"{expected} expected); or the expectation is too high: expect {completed} in the `arrive … tx` "
            "and `expect_tx` steps"
        )
    return (
        f"either the expectation is short: expect {completed} in the `arrive … tx` and `expect_tx` steps "
        f"(now {expected}); or a copy is extra: copy only {expected} per phase ({gap} fewer)"
    )


def _size(n: int) -> str:
    """Bytes as contracts write them: `48KiB` when whole KiB, else a plain byte count."""
    return f"{n // 1024}KiB" if n >= 1024 and n % 1024 == 0 else str(n)


# ------------------------------------------------------------ the declarations' findings (protocol/declarations.py)

_OVERRUN = "a copy past the end of its slot overwrites the next slot or claim while another role reads it"


def count_bytes(n: int) -> str:
    """Bytes as the contracts write them: whole KiB as `KiB`."""
    return f"{n // 1024} KiB" if n and n % 1024 == 0 else f"{n} B"


_EACH_CTA = (
    "each CTA has its own slot: a copy lands in its issuer's (a `remote` one too), a `multicast` one in "
    "every CTA's, one from each CTA that issues it"
)


def copy_finding(found: CopyFinding) -> Diagnostic:
    """The one message shape of each copy that moves what no slot holds."""
    ring, first, rest = found.ring, found.copies[0], found.copies[1:]
    primary = (first[0], f"`{first[1]}`")
    copies = [(span, f"`{line}`") for span, line in rest]
    moved, room = count_bytes(found.moved), count_bytes(found.room)
    multicast = any(" multicast" in line for _, line in found.copies)
    notes = (_OVERRUN, _EACH_CTA) if multicast else (_OVERRUN,)
    match found.case:
        case "unknown-claim":
            known = ", ".join(f"`{c}`" for c in found.claims) or "none"
            return seam(
                Code.L_TXBYTES,
                f"a copy of ring `{ring}` fills `{found.claim}`, which is no per-slot claim of `{ring}`",
                primary,
                helps=(f"name a `per_slot {ring}` claim of the composition (here: {known})",),
                data={"ring": ring, "into": found.claim},
            )
        case "over-claim":
            claim = found.claim
            return seam(
                Code.L_TXBYTES,
                f"the copies into `{claim}` move {moved} per phase, but a slot of `{claim}` holds {room}",
                primary,
                copies + [(span, f"one slot of `{claim}`") for span, _ in found.slots],
                notes=notes,
                helps=(f"copy at most {room} into `{claim}` per phase, or claim {moved} per slot",),
                data={"ring": ring, "claim": claim, "copied": found.moved, "slot": found.room},
            )
        case "over-slot":
            return seam(
                Code.L_TXBYTES,
                f"the copies of ring `{ring}` move {moved} per phase, but its slot holds {room}",
                primary,
                copies + [(span, f"{count_bytes(n)} per slot") for span, n in found.slots],
                notes=notes,
                helps=(
                    f"claim at least {moved} per slot of `{ring}`, or copy less; name the claim each copy fills "
                    "with `into CLAIM`",
                ),
                data={"ring": ring, "copied": found.moved, "slot": found.room},
            )
        case "no-bytes":
            return seam(
                Code.L_TXBYTES,
                f"a copy of {found.moved} bytes into `{ring}` completes nothing",
                primary,
                helps=("state the bytes the copy moves, or drop the line",),
            )
