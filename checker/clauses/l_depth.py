"""L-DEPTH: ring depths disagree between endpoints, a depth range is empty, or a per-slot claim names no ring.

## What it checks
Each side of a ring may bound its depth (`depth 4` or `depth 2..8`); the linker picks
one depth every side allows.

- every stated range starts at 1 or more and is not empty (`lo ≤ hi`);
- the ranges of all sides intersect;
- a `per_slot` claim names a ring that some stage declares.

L-DEPTH is about depth *ranges*. Running out of shared memory is always L-OVERLAP,
also when the slots of one ring alone overflow it at the ring's minimum depth, so
that `--select L-OVERLAP` catches every shared-memory overflow.

Any depth can be checked: the protocol clauses (L-DEADLOCK, L-RACE) decide every depth
of a range at once when their proof covers the protocol (specs/protocol-proofs.md), and
the linker then picks the deepest that fits shared memory, an open range (no side
states a depth) included. A protocol the proof does not cover is decided at the ends
of each range, an open one at most at depth 8.

## Why it matters
Both sides index slots modulo the depth and flip their wait parity on every wrap: a
producer cycling through 4 slots and a consumer cycling through 2 read and release
the wrong slots, and the phases drift until the kernel hangs or reads stale data.

## Example
```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    claim smem tiles bytes 32KiB align 1024 use tma, swizzle128 per_slot kv
    ring kv produce by load {
        depth 4..8
        full init 1 expect_tx 32KiB
        empty wait
        full arrive 1 tx 32KiB
        writes async
        init by load fenced
    }
}
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    ring kv consume by mma {
        depth 2..3
        empty init per_warp(mma)
        full wait
        reads async
        empty arrive per_warp(mma)
    }
}
```

## Fix
State ranges that overlap (or one exact depth on one side only), starting at 1 or
more; name a declared ring in `per_slot`.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from checker.storage import depth_ranges, valid_range
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class DepthClause(Clause):
    code = Code.L_DEPTH
    name = "ring-depth"
    summary = "ring depths disagree between endpoints, a depth range is empty, or a per-slot claim names no ring"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for ring in sorted(comp.rings):
            yield from self._ranges(comp, ring)
        yield from self._orphans(comp)

    def _ranges(self, comp: Composition, ring: str) -> Iterator[Diagnostic]:
        ranges = depth_ranges(comp, ring)
        bad = [(side, d) for side, d in ranges if not valid_range(d)]
        for side, depth in bad:
            text = _show(depth)
            if depth.lo < 1:
                message = f"the depth of ring `{ring}` in `{side.stage_name}` starts at {depth.lo}"
                note = "a ring has at least one slot"
                fix = f"`depth {max(1, depth.lo)}..{max(1, depth.hi)}`"
            else:
                message = f"the depth range {text} of ring `{ring}` in `{side.stage_name}` is empty"
                note = "a range `lo..hi` allows the depths from lo up to hi"
                fix = f"`depth {depth.hi}..{depth.lo}`"
            yield seam(
                self.code,
                message,
                (depth.span, f"`depth {text}`"),
                notes=(note,),
                helps=(f"write {fix}",),
                data={"ring": ring, "lo": depth.lo, "hi": depth.hi},
            )
        if bad or len(ranges) < 2:
            return
        lo = max(d.lo for _, d in ranges)
        hi = min(d.hi for _, d in ranges)
        if lo <= hi:
            return
        low = min(ranges, key=lambda r: r[1].hi)
        high = max(ranges, key=lambda r: r[1].lo)
        later, earlier = sorted((low, high), key=lambda r: (r[1].span.file, r[1].span.line), reverse=True)
        yield seam(
            self.code,
            f"the sides of ring `{ring}` allow depths {_show(later[1])} and {_show(earlier[1])}, which do not meet",
            (later[1].span, f"`{later[0].stage_name}` allows {_show(later[1])}"),
            [(earlier[1].span, f"`{earlier[0].stage_name}` allows {_show(earlier[1])}")],
            notes=(
                "both sides index slots modulo one depth and flip their parity on each wrap; the linker "
                "picks a depth that every side allows",
            ),
            helps=("widen one range so they overlap, or state the depth on one side only",),
            data={"ring": ring, "lo": lo, "hi": hi},
        )

    def _orphans(self, comp: Composition) -> Iterator[Diagnostic]:
        from diagnostics.suggestions import did_you_mean

        for claim in comp.items(A.SmemClaim):
            ring = claim.item.per_slot
            if ring is None or ring in comp.rings:
                continue
            guess = did_you_mean(ring, sorted(comp.rings))
            yield seam(
                self.code,
                f"claim `{claim.item.name}` is stored per slot of ring `{ring}`, which no stage declares",
                (claim.span, f"`per_slot {ring}`"),
                notes=("a per-slot claim takes one buffer per slot, so its size depends on the ring's depth",),
                helps=(f"did you mean `{guess}`?",)
                if guess
                else ("name a ring of the composition, or drop `per_slot`",),
                data={"claim": claim.item.name, "ring": ring},
            )


def _show(depth: A.RingDepth) -> str:
    return str(depth.lo) if depth.lo == depth.hi else f"{depth.lo}..{depth.hi}"
