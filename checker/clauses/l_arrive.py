"""L-ARRIVE: an mbarrier's initialized arrival count differs from the arrivals its participants make per phase.

## What it checks
Each ring slot has a full and an empty mbarrier initialized with an arrival count
(`full init 1`, `empty init per_warp(mma)`: counts are functions of role widths,
`per_warp(r)` = warps of `r`, `per_thread(r)` = 32 × warps, `per_warpgroup(r)` =
warps / 4). A phase completes when exactly that many arrivals (and the transaction
bytes) have come. The protocol model sums, per barrier and phase, the arrivals the
sides' steps make (`full arrive …`, `empty arrive …` of every consumer) and compares
them with the initialized count: per CTA of a cluster (a `multicast` arrive reaches
every CTA's barrier, a `remote` one the peer's, `on leader` / `on peer` steps only
those CTAs') and per data iteration when consumers take turns (only the consumer
whose turn it is releases a slot). Decided on the SMT protocol model; when the counts
disagree, the resulting deadlock or race is not reported separately. Also: a barrier
no side gives an `init` count, a `full` barrier no producer step arrives on (a side
with no fill: the consumer would wait forever), and a count that is no whole positive
number (`per_warpgroup(R)` of a role of fewer than 4 warps is 0).

## Why it matters
`mbarrier.arrive` decrements the pending count of the *current* phase (PTX ISA
§9.7.13.15). Too few arrivals and the phase never completes: the producer waits
forever on the empty barrier. Too many and the extra arrivals complete the next phase
early, releasing a slot that is still being read. A warpgroup that arrives from
every thread where one arrival per warp was initialized (256 against 8) does both.

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
        empty arrive per_thread(mma)
        reads async
    }
}
```

## Fix
Make the arrivals match the initialized count: elect one lane per warp to arrive
(`empty arrive per_warp(mma)`) or initialize the barrier with `per_thread(mma)`.
"""

from __future__ import annotations

from checker.clauses._protocol import ModelClause, arrivals, count_labels, static_diagnostic, times, undecided
from checker.protocol.declarations import CountFinding
from checker.protocol.model import MBAR_MAX_COUNT
from checker.protocol.smt import StaticRule
from checker.protocol.verdict import StaticViolation, Undecided
from checker.report import seam
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class ArriveClause(ModelClause):
    code = Code.L_ARRIVE
    name = "arrival-count"
    summary = "an mbarrier's initialized arrival count differs from the arrivals its participants make per phase"

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """Decided by the model (``checker/protocol/check.py``, ``_check_static``) or the declarations
        (``checker/protocol/declarations.py``)."""
        if isinstance(found, StaticViolation):
            return violation(found)
        if isinstance(found, CountFinding):
            return count_finding(found)
        if isinstance(found, Undecided):
            what = f"`{found.ring}.{found.about}`"
            return undecided(found, what, f"the arrival count of {what}")
        return super().word(found)


# ----------------------------------------------------------------- the model's findings (protocol/check.py)


def violation(found: StaticViolation) -> Diagnostic:
    """The arrivals of one barrier against its init count, in the contracts' words."""
    primary, secondary = count_labels(found, f"initialized for {arrivals(found.init)} per phase")
    acct = found.accounting
    if not acct.arrivals:
        side = "fills the slot" if found.barrier.value == "full" else "releases the slot"
        fix = f"add an `arrive` on `{found.name}` to the side that {side}"
    else:
        fix = (
            f"make the arrivals per phase equal the init count ({found.init}) — e.g. "
            "`per_warp(role)` for one arrival per warp — or initialize "
            f"`{found.name}` with {acct.arrivals}"
        )
    return static_diagnostic(found, [_message(found, rule) for rule in found.broken], primary, secondary, fix)


def _message(found: StaticViolation, rule: StaticRule) -> str:
    name, init, acct = found.name, found.init, found.accounting
    if rule == "arrive":
        made = f"its participants arrive {times(acct.arrivals)}" if acct.arrivals else "no role arrives on it"
        return f"`{name}` is initialized for {arrivals(init)} per phase but {made}"
    if rule == "prearm":
        return f"the pre-arm of `{name}` arrives {times(acct.prearm)} but a phase needs {arrivals(init)}"
    return f"`{name}` is initialized for {arrivals(init)}, above the mbarrier limit of 1048575"


# ------------------------------------------------------------ the declarations' findings (protocol/declarations.py)


def count_finding(found: CountFinding) -> Diagnostic:
    """The one message shape of each count no mbarrier can take."""
    barrier = f"`{found.ring}.{found.barrier}`"
    what = "initialized with" if found.initializes else "arrived on"
    match found.case:
        case "no-init":
            kind = found.barrier
            example = "full init 1" if kind == "full" else f"empty init per_warp({found.role})"
            return seam(
                Code.L_ARRIVE,
                f"{barrier} has no arrival count: no side states `{kind} init`",
                (found.span, f"no `{kind} init` on ring `{found.ring}`"),
                notes=("`mbarrier.init` needs the number of arrivals that complete a phase (PTX ISA §9.7.13.15.9)",),
                helps=(f"state the arrivals each phase makes, e.g. `{example}`",),
                data={"ring": found.ring, "barrier": kind},
            )
        case "not-whole":
            role, warps = found.role, found.warps
            if warps < 4:
                plural = "s" if warps != 1 else ""
                why = f"`per_warpgroup({role})` is 0: `{role}` has {warps} warp{plural}, less than one warpgroup"
            else:
                why = f"`per_warpgroup({role})` is not a whole number: `{role}` has {warps} warps, not a multiple of 4"
            return seam(
                Code.L_ARRIVE,
                f"{barrier} is {what} a count that is no whole number of arrivals",
                (found.span, why),
                notes=(
                    "a warpgroup is 4 consecutive warps; a role of fewer warps makes `per_warpgroup` 0, which no "
                    "mbarrier can be initialized or arrived with (PTX ISA §9.7.13.15.9)",
                ),
                helps=(
                    "count the arrivals per warp (`per_warp(ROLE)`) or per thread, or give the role whole warpgroups",
                ),
            )
        case "out-of-range":
            return seam(
                Code.L_ARRIVE,
                f"{barrier} is {what} {found.count} arrivals, outside 1..{MBAR_MAX_COUNT}",
                (found.span, f"`{found.line}`"),
                notes=("mbarrier arrival counts are 1 … 2^20 − 1 (PTX ISA §9.7.13.15.9)",),
                helps=("give the count of arrivals each phase really makes",),
            )
