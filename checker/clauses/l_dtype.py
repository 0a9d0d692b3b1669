"""L-DTYPE: an import's element type differs from the export's.

## What it checks
When both an export and an import of one tensor state `elem`, they must state the
same element type (`f32`, `f16`, `bf16`, `e4m3`, `e5m2`, `i32`, `u32`, `i8`, `u8`,
`f64`). An import that leaves `elem` out takes the export's. Imports of a tensor no
single stage exports are L-TENSOR's concern.

## Why it matters
Generated transfers move values exactly and never convert: a register copy, a warp
shuffle or a shared-memory staging moves bits. An `f32` accumulator delivered to a
consumer compiled for `bf16` is read as pairs of garbage half-words, and every
per-thread register count, byte size and scratch size the route was planned with is
wrong by a factor of two. Converting is the consumer's job, after the import, in its
own code.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        ready event acc.ready
    }
}
stage "swiglu.epilogue" version "1.0.3" {
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    import tensor acc from accumulator into role epilogue {
        elem bf16
        tile m 128 n 256
        done event acc.done
    }
}
```

## Fix
Import the element type the producer exports and convert in the consumer's code
(`__float22bfloat162_rn` after the import), or have the producer export the
narrower type.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

CODE = Code.L_DTYPE


class DtypeClause(Clause):
    code = CODE
    name = "element-type-mismatch"
    summary = "an import's element type differs from the export's"
    category = "tensors"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for imp in comp.tensor_imports:
            exports = comp.tensor_exports.get(imp.item.export, ())
            if len(exports) != 1:
                continue
            exp = exports[0]
            mine, theirs = imp.item.elem, exp.item.elem
            if mine is None or theirs is None or mine == theirs:
                continue
            message, help_ = mismatch(
                imp.item.name, exp.item.name, mine, theirs, f"`{exp.stage_name}`", f"`{imp.stage_name}`'s code"
            )
            yield seam(
                self.code,
                message,
                (imp.item.attr_span("elem"), f"imported as `{mine}`"),
                [(exp.item.attr_span("elem"), f"exported as `{theirs}`")],
                notes=(NOTE,),
                helps=(help_,),
                data={"import": imp.item.name, "export": exp.item.name, "import_elem": mine, "export_elem": theirs},
            )


NOTE = "generated transfers move values bit for bit; they never convert"


def mismatch(imp: str, export: str, mine: str, theirs: str, exporter: str, consumer: str) -> tuple[str, str]:
    """The one wording of an element-type mismatch: message and help."""
    return (
        f"import `{imp}` reads `{export}` as `{mine}`, but {exporter} exports it as `{theirs}`",
        f"import `elem {theirs}` and convert to `{mine}` in {consumer}",
    )
