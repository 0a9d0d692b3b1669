"""L-SIG: a call's signature differs from the serving export's.

## What it checks
A call site and the export that serves it (the only export of that name, or the one
the pipeline's `resolve` line picks) must state the same parameter types, in the same
order, and the same result type. Calls that no export serves, or that several could
serve, are left to L-UNRESOLVED and L-AMBIGUOUS.

## Why it matters
The caller was compiled against its own declaration of the external function: it
puts each argument in a register of the declared width and reads the result the
same way. A mismatch is not converted anywhere — an `i32` row index read as an
`f32`, or a 32-bit argument where the callee reads 64 bits, is garbage at run time
with no error from the compiler or the device link.

## Example
```kernlink
stage "attn.core" version "3.0.1" {
    target sm_90a
    role core entry attn_core_main warps 8
    call score (f32) -> f32 as kl_call_score from role core guarantees converged
}
stage "attn.score.softcap" version "2.0.0" {
    target sm_90a
    export callable score (f32, f32) -> f32 = softcap_score requires converged
}
```

## Fix
Update the caller's `call` line and its code to the export's signature, or use a
version of the exporting stage that still has the old one.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import plural, seam
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class SigClause(Clause):
    code = Code.L_SIG
    name = "signature-mismatch"
    summary = "a call's signature differs from the serving export's"
    category = "callables"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for call in comp.calls:
            serving = serving_exports(comp, call)
            if len(serving) == 1 and serving[0].item.signature != call.item.signature:
                yield self._mismatch(call, serving[0])

    def _mismatch(self, call: Owned[A.Call], export: Owned[A.ExportCallable]) -> Diagnostic:
        mine, theirs = call.item.signature, export.item.signature
        name = call.item.name
        return seam(
            self.code,
            f"call `{name}` in `{call.stage_name}` has signature `{mine}` but `{export.stage_name}` exports `{theirs}`",
            (mine.span, f"called as `{mine}`"),
            [(theirs.span, f"exported as `{theirs}`")],
            notes=tuple(_differences(mine, theirs)),
            helps=(
                f"declare the call as `call {name} {theirs} as {call.item.symbol} …` and update "
                "the calling code, or use a version of the exporter with the old signature",
            ),
            data={
                "call": name,
                "call_signature": str(mine),
                "export_signature": str(theirs),
                "exporter": export.stage_name,
            },
        )


def _differences(mine: A.Signature, theirs: A.Signature) -> Iterator[str]:
    if len(mine.params) != len(theirs.params):
        yield (f"the call passes {plural(len(mine.params), 'argument')}; the export takes {len(theirs.params)}")
    for index, (a, b) in enumerate(zip(mine.params, theirs.params, strict=False), start=1):
        if a != b:
            yield f"parameter {index} is `{a}` at the call but `{b}` at the export"
    if mine.result != theirs.result:
        yield f"the call expects a `{mine.result}` result; the export returns `{theirs.result}`"
    yield "arguments and results are passed as declared: nothing converts them"
