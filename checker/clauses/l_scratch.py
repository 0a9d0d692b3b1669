"""L-SCRATCH: the route needs more scratch than the consumer lends.

## What it checks
Shared-memory staging stores the tile (or one chunk of it, for a chunked import by
a separate role) into scratch the *consumer* lends with `lends smem CLAIM`. The
structural part is decided here: every lent claim exists in the importing stage.
The amount is decided by the transfer model once a staging route is chosen: the
lent claims' bytes must hold what the route stores (tile or chunk bytes).

## Why it matters
Staging writes through the lent claim's base address. Writing past its end
overwrites whatever placement put next to it — another component's ring slot or
barrier — without any error on the GPU.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    requires feature wgmma
    role mma entry mma_main warps 8 warpgroup
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        generation once
        placement library wgmma_m64nNk16_f32(n: 256, warpgroups: 2)
        ready event acc.ready
    }
}

stage "demo.epilogue" version "1.0.0" {
    target sm_90a
    role epilogue entry epi_main warps 4 warpgroup
    claim smem scratch bytes 4KiB align 16 lifetime between acc.ready acc.done
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 128 n 256
        chunk n 32
        demand regs(t: 128, p: 32, c: 8) -> (m, n) {
            m = t
            n = 32 * c + p
        }
        lends smem scratch
        done event acc.done
    }
}
```

## Fix
Grow the lent claim to the size in the diagnostic (a chunk of 128 × 32 f32 is
16 KiB), or chunk the import more finely so each chunk fits.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

CODE = Code.L_SCRATCH


class ScratchClause(Clause):
    code = CODE
    name = "scratch-too-small"
    summary = "the route needs more scratch than the consumer lends"
    category = "tensors"
    decided_by = "transfer"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for imp in comp.tensor_imports:
            mine = {o.item.name for o in comp.items(A.SmemClaim) if o.stage is imp.stage}
            for lend in imp.item.lends:
                if lend.kind == "smem" and lend.claim not in mine:
                    from diagnostics.suggestions import did_you_mean

                    guess = did_you_mean(lend.claim or "", sorted(mine))
                    yield seam(
                        self.code,
                        f"import `{imp.item.name}` lends shared-memory claim `{lend.claim}`, which "
                        f"stage `{imp.stage_name}` does not declare",
                        (lend.span, "no such claim"),
                        helps=(f"did you mean `{guess}`?",)
                        if guess
                        else (f"declare `claim smem {lend.claim} bytes …` in `{imp.stage_name}`",),
                    )


def shortfall(export: str, imp: str, role: str, needed: int, lent: int) -> tuple[str, str]:
    """The one wording of a staging route short of scratch: message and help."""
    return (
        f"staging `{export}` into `{imp}` needs {needed} bytes of shared memory but role `{role}` lends {lent}",
        f"lend at least {needed} bytes of shared memory to `{role}` for this import",
    )
