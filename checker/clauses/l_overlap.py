"""L-OVERLAP: claims of one domain cannot be placed within capacity without overlapping live ranges.

## What it checks
Every shared-memory claim states its size, `bytes N` with N ≥ 1: a claim of no bytes
gets no storage of its own, and its address is a neighbour's.

The claims of a domain that are certainly live together must fit its capacity:

- **shared memory**: kernel-lifetime claims, per-slot claims times their ring's
  minimum depth, two 8-byte mbarriers per slot of every ring at its minimum depth,
  and the heaviest set of other claims whose lifetimes certainly overlap (one phase,
  phases declared `concurrent`, intersecting event intervals of one connection),
  together at most `smem_per_block_optin` user bytes (232448 on sm_90a, 101376 on
  sm_120a; the 1 KiB the driver reserves per block is charged separately);
- **tensor memory**: the power-of-two allocations of co-live `claim tmem`s at most
  `tmem_columns` (512 on sm_100a). Claims in phases the interpreter declares
  `exclusive` do not add up.

This is a necessary condition, a lower bound of the peak (alignment padding is not
counted); the joint placement decides the rest and reports with this code. When the
slots of one ring alone overflow shared memory at its minimum depth, that ring is
reported alone ("no depth fits the slot storage"), not the sum it is part of. Every
shared-memory overflow is this clause's, whether rings take part or not; L-DEPTH is
only about depth ranges.

## Why it matters
Shared memory beyond the opt-in limit fails at launch (`cudaErrorInvalidValue` when
the dynamic size is set); tensor-memory allocations beyond 512 columns block in
`tcgen05.alloc` forever. Neither is visible when each component is compiled alone:
it is the composition that does not fit.

## Example
```kernlink
stage "bw.mma" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role mma entry mma_main warps 1
    claim tmem acc columns 512
}
stage "bw.softmax" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role softmax entry softmax_main warps 4 warpgroup
    claim tmem stats columns 32
}
```

## Fix
Shrink a claim, lower a ring's minimum depth, or give claims lifetimes that do not
overlap (phases the interpreter declares exclusive, or event intervals of one tensor
connection that do not intersect).
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses._core import Core
from checker.composition import Composition
from checker.report import plural, seam
from checker.storage import (
    BARRIERS_PER_SLOT,
    Demand,
    min_depth,
    min_depth_span,
    overflowing_rings,
    peak,
    per_slot_claims,
    slot_bytes,
    smem_demands,
    tmem_demands,
)
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Severity
from diagnostics.symbols import Code

CODE = Code.L_OVERLAP
# The help of a placement core with a ring in it, and of one without.
RING_HELP = "lower the ring's minimum depth or its slot size, or free shared memory around it"
CORE_HELP = (
    "make a claim smaller, or give claims that are not used together exclusive phases "
    "or event lifetimes so that they can share storage"
)


def placement_core(
    core: Core, domain: str, target: str, blocks_per_sm: int = 1, rings: tuple[tuple[str, int], ...] = ()
) -> Diagnostic:
    """A storage core placement cannot fit (``domain``: smem, tmem or counter), in this clause's words."""
    per = f" per block at `blocks_per_sm {blocks_per_sm}`" if blocks_per_sm > 1 else ""
    title, unit = {
        "smem": ("shared memory", "B"),
        "tmem": ("tensor memory", "columns"),
        "counter": ("counter slots", "slots"),
    }[domain]
    if domain == "counter":
        what = f"counter slots need {core.needs_text}, the counter array holds {core.offers}"
    else:
        what = f"{title} needs {core.needs_text} {unit}, {target} offers {core.offers} {unit}{per}"
    if len(rings) == 1:
        what = f"ring `{rings[0][0]}` does not fit at its minimum depth {rings[0][1]}: {what}"
    elif rings:
        names = ", ".join(f"`{r}`" for r, _ in rings)
        what = f"rings {names} do not fit at their minimum depths {', '.join(str(d) for _, d in rings)}: {what}"
    notes = core.notes(unit)
    if blocks_per_sm > 1 and domain in ("smem", "tmem"):
        notes.append(
            f"`blocks_per_sm {blocks_per_sm}`: {blocks_per_sm} blocks share one SM, so each "
            f"gets {core.offers} {unit} of {title} (hardware/residency.py)"
        )
    notes += core.budget_notes()
    return Diagnostic(
        CODE, what, Severity.ERROR, core.labels(), tuple(notes), (RING_HELP if rings else CORE_HELP,), core.data(domain)
    )


class OverlapClause(Clause):
    code = CODE
    name = "capacity-overlap"
    summary = "claims of one domain cannot be placed within capacity without overlapping live ranges"
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        sizeless = [o for o in comp.items(A.SmemClaim) if not o.item.bytes]
        for owned in sizeless:
            stated = "no `bytes`" if owned.item.bytes is None else "`bytes 0`"
            yield seam(
                self.code,
                f"shared-memory claim `{owned.item.name}` of `{owned.stage_name}` has {stated}",
                (owned.span, "a claim needs at least one byte"),
                notes=(
                    "placement gives every claim storage of its own; a claim of no bytes would be placed at "
                    "the address of the next one, and a write through it lands there",
                ),
                helps=(f"state its size: `claim smem {owned.item.name} bytes N …`",),
                data={"claim": owned.item.name, "stage": owned.stage_name, "bytes": owned.item.bytes},
            )
        target = comp.target
        if target is None or sizeless:
            return
        rings = overflowing_rings(comp)
        for ring in rings:
            yield self._storage(comp, ring)
        if not rings:
            yield from self._domain(
                comp,
                "shared memory",
                smem_demands(comp),
                target.smem_per_block_optin,
                "B",
                (
                    f"the {target.smem_reserved_per_block} B the driver reserves per block are charged separately "
                    "(specs/hardware.md §1.1)",
                ),
                "shrink a claim, lower a ring's minimum depth, or give claims lifetimes that do not overlap",
            )
        if target.tmem_columns:
            yield from self._domain(
                comp,
                "tensor memory",
                tmem_demands(comp),
                target.tmem_columns,
                "columns",
                (
                    f"every allocation takes a power of two of columns, at least {target.tmem_min_alloc_columns} "
                    "(PTX ISA §9.7.16.7.1)",
                ),
                "shrink an allocation, or give the claims lifetimes that do not overlap (phases the "
                "interpreter declares exclusive)",
            )

    def _storage(self, comp: Composition, ring: str) -> Diagnostic:
        target = comp.target
        assert target is not None
        depth, per_slot = min_depth(comp, ring), slot_bytes(comp, ring)
        need, have = per_slot * depth, target.smem_per_block_optin
        span = min_depth_span(comp, ring)
        assert span is not None
        claims = per_slot_claims(comp, ring)
        fits = have // per_slot
        helps = (
            (f"lower the minimum depth to {fits} (the most that fits), or shrink the per-slot claims",)
            if fits >= 1
            else (f"one slot alone needs {per_slot} B: shrink the per-slot claims",)
        )
        return seam(
            self.code,
            f"no depth of ring `{ring}` fits its slot storage: at its minimum depth {depth} the slots need "
            f"{need} B, {target.name} offers {have} B",
            (span, f"minimum depth {depth}"),
            [(c.span, f"`{c.item.name}`: {c.item.bytes} B per slot") for c in claims],
            notes=(
                f"one slot holds its per-slot claims and {BARRIERS_PER_SLOT} mbarriers of "
                f"{target.mbarrier_size} B: {per_slot} B; {plural(depth, 'slot')} take {need} B",
            ),
            helps=helps,
            data={"ring": ring, "depth": depth, "needed": need, "available": have},
        )

    def _domain(
        self,
        comp: Composition,
        domain: str,
        demands: list[Demand],
        capacity: int,
        unit: str,
        notes: tuple[str, ...],
        fix: str,
    ) -> Iterator[Diagnostic]:
        total, members = peak(comp, demands)
        if total <= capacity or not members:
            return
        assert comp.target is not None
        running, primary = 0, members[-1]
        for member in members:
            running += member.amount
            if running > capacity:
                primary = member
                break
        space = f" {unit}"
        yield seam(
            self.code,
            f"{domain} needs {total}{space}, {comp.target.name} offers {capacity}{space}",
            (primary.span, f"{primary.label} (the sum passes {capacity}{space} here)"),
            [(m.span, m.label) for m in members if m is not primary],
            notes=(
                f"these {len(members)} demands are certainly live together; their sum is a lower bound "
                "of the peak (alignment padding not counted)",
                *notes,
            ),
            helps=(f"free at least {total - capacity}{space}: {fix}",),
            data={
                "domain": domain,
                "needed": total,
                "available": capacity,
                "claims": ",".join(m.name for m in members),
            },
        )
