"""L-ALIGN: an alignment is not a power of two, exceeds what its domain supports, or is below what its use needs.

## What it checks
For every shared-memory claim:

- a stated `align` is a power of two;
- it is at most the user base address of shared memory on the target
  (`smem_user_base`, 1024 on sm_90a): user shared memory starts there, so an offset
  from placement is aligned in absolute terms only up to that base's own alignment;
- it is at least what every declared `use` needs: `tma` 128, `swizzle128` 1024,
  `swizzle64` 512, `swizzle32` 256, `wgmma`, `ldmatrix` and `bulk_copy` 16,
  `mbarrier` 8 (all from the target's hardware table);
- a claim used by `tma` or `bulk_copy` moves a multiple of 16 bytes.

A claim without `align` gets the largest alignment its uses need; that is not an error.

## Why it matters
The hardware checks some of these and silently misbehaves on others. A TMA
destination at +16, +32 or +64 bytes from a 1024-aligned base faults with
`cudaErrorMisalignedAddress` and loses the context (measured on an H200). A
128-byte-swizzled tile at a 128-aligned but not 1024-aligned address is *copied
without error*, but the swizzle pattern follows absolute address bits [9:7], so a
wgmma descriptor with base offset 0 reads the wrong elements: the kernel computes a
wrong result with no fault at all (PTX ISA §5.5.7, §9.7.15.5.1.2.2).

## Example
```kernlink
stage "gemm.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    # 64 x 128 bf16 tile, TMA-loaded with 128B swizzle, read by wgmma
    claim smem a_tile bytes 16KiB align 128 use tma, swizzle128, wgmma
}
```

## Fix
Align the claim to what its most demanding use needs (`align 1024` for a
128-byte-swizzled tile), or drop `align` and let placement choose it. Keep TMA and
bulk-copy sizes multiples of 16 bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from checker.storage import SIZED_USES, is_power_of_two, use_alignment
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from hardware.targets import TargetSpec

_WHY: dict[str, str] = {
    "tma": "TMA faults (`cudaErrorMisalignedAddress`) on a shared address that is not 128-byte aligned "
    "(PG-TMA; measured on H200)",
    "swizzle128": "the 128-byte swizzle XORs absolute address bits [9:7]; off a 1024-byte boundary the "
    "pattern shifts and a descriptor with base offset 0 reads the wrong elements (PTX ISA §5.5.7)",
    "swizzle64": "the 64-byte swizzle pattern repeats every 512 bytes of absolute address; off that "
    "boundary it shifts (PTX ISA §5.5.7)",
    "swizzle32": "the 32-byte swizzle pattern repeats every 256 bytes of absolute address; off that "
    "boundary it shifts (PTX ISA §5.5.7)",
    "wgmma": "a wgmma descriptor holds the operand's start address in 16-byte units (PTX ISA §9.7.15.5.1)",
    "ldmatrix": "each ldmatrix/stmatrix row address must be 16-byte aligned (PTX ISA §9.7.14.5.15)",
    "bulk_copy": "cp.async.bulk needs 16-byte aligned shared addresses (PTX ISA §9.7.9.25)",
    "mbarrier": "an mbarrier is a 64-bit object that must be 8-byte aligned (PTX ISA §9.7.13.15.1)",
}


class AlignClause(Clause):
    code = Code.L_ALIGN
    name = "bad-alignment"
    summary = "an alignment is not a power of two, exceeds what its domain supports, or is below what its use needs"
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for claim in comp.items(A.SmemClaim):
            yield from self._claim(comp, claim)

    def _claim(self, comp: Composition, claim: Owned[A.SmemClaim]) -> Iterator[Diagnostic]:
        item, target = claim.item, comp.target
        align = item.align
        data = {"claim": item.name, "align": align}
        if align is not None and not is_power_of_two(align):
            yield seam(
                self.code,
                f"alignment {align} of claim `{item.name}` is not a power of two",
                (claim.span, f"`align {align}`"),
                helps=(f"use a power of two, such as `align {_pow2_above(align)}`",),
                data=data,
            )
            return
        if target is None:
            return
        base = target.smem_user_base
        if align is not None and align > base:
            yield seam(
                self.code,
                f"claim `{item.name}` asks for {align}-byte alignment, but shared-memory placement can "
                f"guarantee at most {base} on {target.name}",
                (claim.span, f"`align {align}`"),
                notes=(
                    f"user shared memory starts at shared address {base} (specs/hardware.md §1.2), so an "
                    f"offset is aligned in absolute terms only up to {base} bytes",
                ),
                helps=(f"use `align {base}` or less, or realign at run time inside the component",),
                data={**data, "supported": base},
            )
        if align is not None:
            yield from self._uses(claim, target, align)
        yield from self._sizes(claim, target)

    def _uses(self, claim: Owned[A.SmemClaim], target: TargetSpec, align: int) -> Iterator[Diagnostic]:
        item = claim.item
        short = [(use, use_alignment(target, use)) for use in item.uses if use_alignment(target, use) > align]
        if not short:
            return
        use, needed = max(short, key=lambda u: u[1])
        others = [u for u, _ in short if u != use]
        also = f" (and {', '.join(f'`{u}`' for u in others)})" if others else ""
        yield seam(
            self.code,
            f"claim `{item.name}` is aligned to {align} B, but its use `{use}` needs {needed} B",
            (claim.span, f"`align {align}` with `use {use}`{also}"),
            notes=(_WHY[use],),
            helps=(
                f"write `align {needed}`, or drop `align` and let placement take the largest alignment the uses need",
            ),
            data={"claim": item.name, "align": align, "use": use, "needed": needed},
        )

    def _sizes(self, claim: Owned[A.SmemClaim], target: TargetSpec) -> Iterator[Diagnostic]:
        item, unit = claim.item, target.tma_size_multiple
        sized = [u for u in item.uses if u in SIZED_USES]
        if not sized or item.bytes is None or item.bytes % unit == 0:
            return
        yield seam(
            self.code,
            f"claim `{item.name}` moves {item.bytes} B with `{sized[0]}`, not a multiple of {unit} B",
            (claim.span, f"`bytes {item.bytes}` with `use {sized[0]}`"),
            notes=(f"TMA and bulk copies transfer multiples of {unit} bytes (PG-TMA; PTX ISA §9.7.9.25)",),
            helps=(f"round the claim up to {-(-item.bytes // unit) * unit} bytes",),
            data={"claim": item.name, "bytes": item.bytes, "multiple": unit},
        )


def _pow2_above(value: int) -> int:
    size = 1
    while size < value:
        size *= 2
    return size
