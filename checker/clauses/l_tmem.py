"""L-TMEM: a tensor-memory allocation is not a power of two of ≥ 32 columns, or a role reads lanes it cannot reach.

## What it checks
On a target with tensor memory (sm_100a), every `claim tmem`:

- states `columns`, a power of two of at least `tmem_min_alloc_columns` (32) and at
  most `tmem_columns` (512);
- for every `read by R lanes a..b`: `a ≤ b < tmem_lanes` (128), `R` is a role of the
  composition, and the lanes span no more 32-lane quadrants than `R` can reach. Warp
  `q` of a warpgroup (warp rank mod 4) may touch only lanes `32q … 32q+31`, so a role
  of `w` consecutive warps reaches at most `min(w, 4)` consecutive quadrants.

On targets without tensor memory these checks do not apply (L-FEATURE rejects a stage
that needs it there).

## Why it matters
`tcgen05.alloc` takes a power of two of columns in [32, 512]; ptxas rejects 48 or 96
("value must be power of 2") and 16 or 1024 ("out of range"). A `tcgen05.ld` whose lane
field lies outside the issuing warp's quadrant is not allowed (PTX ISA §9.7.16.8.1):
an epilogue of two warps cannot read all 128 accumulator lanes, however its warps
are placed.

## Example
```kernlink
stage "bw.epilogue" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role epilogue entry epilogue_main warps 4 warpgroup
    # a 128 x 384 f32 accumulator: 384 columns is not an allocation size
    claim tmem acc columns 384 read by epilogue lanes 0..127
}
```

## Fix
Round `columns` up to a power of two of at least 32. Give the reading role one warp
per 32-lane quadrant it reads (a whole warpgroup for all 128 lanes), or have each
role read only its own quadrants.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import plural, seam
from checker.storage import is_power_of_two
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from hardware.residency import tmem_allocation
from hardware.targets import TargetSpec

QUADRANT_LANES = 32
"""Lanes one warp may touch: warp q of a warpgroup reaches lanes 32q … 32q+31 (PTX ISA §9.7.16.8.1)."""


class TmemClause(Clause):
    code = Code.L_TMEM
    name = "bad-tmem-claim"
    summary = (
        "a tensor-memory allocation is not a power of two of at least 32 columns, or a role reads lanes "
        "outside its warps' quadrants"
    )
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None or target.tmem_columns == 0:
            return
        claims = list(comp.items(A.TmemClaim))
        for claim in claims:
            yield from self._columns(claim, target, claims)
            for read in claim.item.reads:
                yield from self._read(comp, claim, read, target)

    def _columns(
        self, claim: Owned[A.TmemClaim], target: TargetSpec, claims: list[Owned[A.TmemClaim]]
    ) -> Iterator[Diagnostic]:
        item = claim.item
        columns, least, most = item.columns, target.tmem_min_alloc_columns, target.tmem_columns
        data = {"claim": item.name, "columns": columns, "min": least, "max": most}
        if columns is None:
            yield seam(
                self.code,
                f"tensor-memory claim `{item.name}` states no `columns`",
                (claim.span, "no `columns`"),
                helps=(f"state the allocation, a power of two in [{least}, {most}]",),
                data=data,
            )
            return
        problem = None
        if columns > most:
            problem = f"exceeds the {most} columns of {target.name}"
        elif columns < least:
            problem = f"is below the smallest allocation, {least} columns"
        elif not is_power_of_two(columns):
            problem = "is not a power of two"
        if problem is None:
            return
        fit = tmem_allocation(target, columns)
        notes = [f"`tcgen05.alloc` takes a power of two of columns in [{least}, {most}] (PTX ISA §9.7.16.7.1)"]
        others = [
            (o, tmem_allocation(target, o.item.columns))
            for o in claims
            if o is not claim and o.item.columns is not None
        ]
        taken = sum(a for _, a in others if a is not None)
        if fit is not None and others and fit + taken > most:
            names = ", ".join(f"`{o.item.name}` ({a})" for o, a in others if a is not None)
            notes.append(
                f"rounded up to {fit}, it and the other claims ({names}) take {fit + taken} of the "
                f"{most} columns: live at the same time they then overflow tensor memory (L-OVERLAP); "
                "shrink a claim or give them exclusive lifetimes"
            )
        yield seam(
            self.code,
            f"tensor-memory claim `{item.name}` of {columns} columns {problem}",
            (claim.span, f"`columns {columns}`"),
            notes=tuple(notes),
            helps=(
                (f"claim `columns {fit}`",)
                if fit is not None
                else (f"split the claim into allocations of at most {most} columns",)
            ),
            data=data,
        )

    def _read(
        self, comp: Composition, claim: Owned[A.TmemClaim], read: A.TmemRead, target: TargetSpec
    ) -> Iterator[Diagnostic]:
        item, lanes = claim.item, target.tmem_lanes
        where = f"lanes {read.lane_lo}..{read.lane_hi}"
        data = {"claim": item.name, "role": read.role, "lo": read.lane_lo, "hi": read.lane_hi}
        if read.lane_lo > read.lane_hi or read.lane_hi >= lanes:
            problem = "ends before it starts" if read.lane_lo > read.lane_hi else f"goes past lane {lanes - 1}"
            yield seam(
                self.code,
                f"the read of `{item.name}` by `{read.role}` at {where} {problem}",
                (read.span, where),
                notes=(f"tensor memory has {lanes} lanes, 0..{lanes - 1} (PTX ISA §9.7.16.1)",),
                helps=("give the lanes as `lo..hi` with lo ≤ hi",)
                if read.lane_lo > read.lane_hi
                else (f"read at most up to lane {lanes - 1}",),
                data=data,
            )
            return
        role = comp.role(read.role)
        if role is None:
            from diagnostics.suggestions import did_you_mean

            guess = did_you_mean(read.role, sorted(comp.roles))
            yield seam(
                self.code,
                f"`{item.name}` is read by `{read.role}`, which no stage declares as a role",
                (read.span, "unknown role"),
                helps=(f"did you mean `{guess}`?",) if guess else ("name a role of the composition",),
                data=data,
            )
            return
        if role.warps <= 0:
            return
        first, last = read.lane_lo // QUADRANT_LANES, read.lane_hi // QUADRANT_LANES
        quadrants = last - first + 1
        reach = min(role.warps, target.warpgroup_warps)
        if quadrants <= reach:
            return
        yield seam(
            self.code,
            f"`{read.role}` reads `{item.name}` at {where}, {quadrants} lane quadrants, but its "
            f"{plural(role.warps, 'warp')} reach at most {plural(reach, 'quadrant')}",
            (read.span, f"{where} span quadrants {first}..{last}"),
            [(role.role.span, f"`{read.role}` has {plural(role.warps, 'warp')}")],
            notes=(
                "warp q of a warpgroup (warp rank mod 4) may touch only lanes 32q..32q+31 of tensor "
                "memory (PTX ISA §9.7.16.8.1)",
            ),
            helps=(f"give `{read.role}` {quadrants} warps, or read at most {reach * QUADRANT_LANES} lanes from it",),
            data={**data, "quadrants": quadrants, "reach": reach},
        )
