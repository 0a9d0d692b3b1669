"""L-DEPTH: ring depths disagree between endpoints, a depth range is empty, or no depth fits the slot storage.

## What it checks
Each side of a ring may bound its depth (`depth 4` or `depth 2..8`); the linker picks
one depth every side allows.

- every stated range starts at 1 or more and is not empty (`lo ≤ hi`);
- the ranges of all sides intersect;
- the ring's slots fit shared memory at the smallest depth the sides allow: per
  slot, its per-slot claims plus two mbarriers (full and empty), times that depth,
  at most `smem_per_block_optin`. (When they fit alone but not together with the
  other claims, that is L-OVERLAP.)
- a `per_slot` claim names a ring that some stage declares.

## Why it matters
Both sides index slots modulo the depth and flip their wait parity on every wrap: a
producer cycling through 4 slots and a consumer cycling through 2 read and release
the wrong slots, and the phases drift until the kernel hangs or reads stale data.
Ring storage grows with the depth, so a range whose smallest depth already
overflows shared memory cannot be linked at all.

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
more; lower the minimum depth, or shrink the per-slot claims, until the slots fit.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import plural, seam
from checker.storage import (
    BARRIERS_PER_SLOT,
    depth_ranges,
    min_depth,
    min_depth_span,
    overflowing_rings,
    per_slot_claims,
    slot_bytes,
    valid_range,
)
from contract_lang import ast as A
from diagnostics.model import Diagnostic


class DepthClause(Clause):
    code = "L-DEPTH"
    name = "ring-depth"
    summary = "ring depths disagree between endpoints, a depth range is empty, or no depth fits the slot storage"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for ring in sorted(comp.rings):
            yield from self._ranges(comp, ring)
        for ring in overflowing_rings(comp):
            yield self._storage(comp, ring)
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
            yield seam(self.code, message, (depth.span, f"`depth {text}`"), notes=(note,),
                       helps=(f"write {fix}",), data={"ring": ring, "lo": depth.lo, "hi": depth.hi})
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
            notes=("both sides index slots modulo one depth and flip their parity on each wrap; the linker "
                   "picks a depth that every side allows",),
            helps=("widen one range so they overlap, or state the depth on one side only",),
            data={"ring": ring, "lo": lo, "hi": hi})

    def _storage(self, comp: Composition, ring: str) -> Diagnostic:
        target = comp.target
        assert target is not None
        depth, per_slot = min_depth(comp, ring), slot_bytes(comp, ring)
        need, have = per_slot * depth, target.smem_per_block_optin
        span = min_depth_span(comp, ring)
        assert span is not None
        claims = per_slot_claims(comp, ring)
        fits = have // per_slot
        helps = ((f"lower the minimum depth to {fits} (the most that fits), or shrink the per-slot claims",)
                 if fits >= 1 else (f"one slot alone needs {per_slot} B: shrink the per-slot claims",))
        return seam(
            self.code,
            f"no depth of ring `{ring}` fits its slot storage: at its minimum depth {depth} the slots need "
            f"{need} B, {target.name} offers {have} B",
            (span, f"minimum depth {depth}"),
            [(c.span, f"`{c.item.name}`: {c.item.bytes} B per slot") for c in claims],
            notes=(f"one slot holds its per-slot claims and {BARRIERS_PER_SLOT} mbarriers of "
                   f"{target.mbarrier_size} B: {per_slot} B; {plural(depth, 'slot')} take {need} B",),
            helps=helps,
            data={"ring": ring, "depth": depth, "needed": need, "available": have})

    def _orphans(self, comp: Composition) -> Iterator[Diagnostic]:
        from contract_lang.parser import did_you_mean

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
                helps=(f"did you mean `{guess}`?",) if guess else
                ("name a ring of the composition, or drop `per_slot`",),
                data={"claim": claim.item.name, "ring": ring})


def _show(depth: A.RingDepth) -> str:
    return str(depth.lo) if depth.lo == depth.hi else f"{depth.lo}..{depth.hi}"
