"""L-SITE: an export requires call-site guarantees the site does not give.

## What it checks
An export may require guarantees of every site that calls it (`requires converged,
full_warps`); each call it serves must list them all after `guarantees`:

- `converged`: every thread of the warp that is active reaches the call together;
- `full_warps`: all 32 lanes of each calling warp are active;
- `enter_once`: each thread enters the call at most once per kernel;
- `no_early_return`: no thread of the calling warps has returned before the call.

Only what the `call` line states counts: a call made inside an exported callable
does not inherit that callable's own requirements, because its code may diverge
before the call. Calls that no single export serves are left to L-UNRESOLVED and
L-AMBIGUOUS.

## Why it matters
Warp-collective code (`__shfl_sync`, `__ballot_sync`, `wgmma`, warp-wide `ldmatrix`)
with a full mask is undefined when lanes of the mask are inactive or have diverged:
it hangs or reads another lane's stale register. A mask callable written with warp
votes returns wrong bits — silently — when called from a branch that only some lanes
took.

## Example
```kernlink
stage "attn.core" version "3.0.1" {
    target sm_90a
    role core entry attn_core_main warps 8
    call mask (i32, i32) -> bool as kl_call_mask from role core guarantees converged
}
stage "attn.mask.causal" version "1.2.0" {
    target sm_90a
    export callable mask (i32, i32) -> bool = causal_mask requires converged, full_warps
}
```

## Fix
Call from a point where the guarantee holds (hoist the call out of the divergent
branch, call with every lane and mask the result afterwards) and state it on the
`call` line, or use an export that does not require it.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

_MEANING = {
    "converged": "the active threads of each calling warp arrive together",
    "full_warps": "all 32 lanes of each calling warp are active",
    "enter_once": "each thread calls at most once per kernel",
    "no_early_return": "no thread of the calling warps has returned before the call",
}


class SiteClause(Clause):
    code = Code.L_SITE
    name = "call-site-guarantee"
    summary = "an export requires call-site guarantees the site does not give"
    category = "callables"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for call in comp.calls:
            serving = serving_exports(comp, call)
            if len(serving) != 1:
                continue
            export = serving[0]
            missing = [g for g in export.item.requires if g not in call.item.guarantees]
            if missing:
                yield self._missing(call, export, missing)

    def _missing(self, call: Owned[A.Call], export: Owned[A.ExportCallable], missing: list[str]) -> Diagnostic:
        name = call.item.name
        listed = ", ".join(f"`{g}`" for g in missing)
        given = ", ".join(call.item.guarantees)
        where = f"role `{call.item.caller}`" if call.item.caller_kind == "role" else f"callable `{call.item.caller}`"
        wanted = ", ".join(dict.fromkeys((*call.item.guarantees, *export.item.requires)))
        return seam(
            self.code,
            f"`{export.stage_name}` requires {listed} of every call to `{name}`, but the call "
            f"from {where} of `{call.stage_name}` does not guarantee {'it' if len(missing) == 1 else 'them'}",
            (call.span, f"guarantees {f'only `{given}`' if given else 'nothing'}"),
            [(export.span, f"requires `{', '.join(export.item.requires)}`")],
            notes=tuple(f"`{g}`: {_MEANING[g]}" for g in missing),
            helps=(f"make the site meet it and write `guarantees {wanted}` on the call",),
            data={"call": name, "missing": ",".join(missing), "exporter": export.stage_name},
        )
