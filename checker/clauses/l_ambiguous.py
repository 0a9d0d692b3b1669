"""L-AMBIGUOUS: several exports could serve one call and the pipeline does not choose.

## What it checks
When more than one export in the pipeline has a call's name, the pipeline must pick
one with exactly one `resolve call NAME to "stage"` line. Reported once per callable
name, with every call site and every candidate export labelled. Two `resolve` lines
for one call that name different stages are ambiguous too; a stage exporting the
same name twice is ambiguous even after a `resolve`.

## Why it matters
The linker defines each call site's symbol as a trampoline to one export. Picking
one silently — the first package on the command line, the highest version — makes
the kernel's behaviour depend on argument order; two masks with one signature
(a causal one and a sliding-window one) compute different attention.

## Example
```kernlink
stage "attn.core" version "3.0.1" {
    target sm_90a
    role core entry attn_core_main warps 8
    call mask (i32, i32) -> bool as kl_call_mask from role core guarantees converged
}
stage "attn.mask.causal" version "1.2.0" {
    target sm_90a
    export callable mask (i32, i32) -> bool = causal_mask requires converged
}
stage "attn.mask.window" version "1.0.0" {
    target sm_90a
    export callable mask (i32, i32) -> bool = window_mask requires converged
}
```

## Fix
Add the line the help shows, e.g. `resolve call mask to "attn.mask.causal"`, to
the pipeline, or drop the stage that should not serve the call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class AmbiguousClause(Clause):
    code = Code.L_AMBIGUOUS
    name = "ambiguous-call"
    summary = "several exports could serve one call and the pipeline does not choose"
    category = "callables"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        yield from self._conflicting_resolves(comp)
        sites: dict[str, list[Owned[A.Call]]] = defaultdict(list)
        for call in comp.calls:
            sites[call.item.name].append(call)
        for name, calls in sorted(sites.items()):
            candidates = serving_exports(comp, calls[0])
            if len(candidates) > 1:
                yield self._ambiguous(comp, name, calls, candidates)

    def _ambiguous(
        self, comp: Composition, name: str, calls: list[Owned[A.Call]], candidates: tuple[Owned[A.ExportCallable], ...]
    ) -> Diagnostic:
        stages = sorted({e.stage_name for e in candidates})
        first, *others = calls
        secondary = [(c.span, f"`{c.stage_name}` also calls `{name}` here") for c in others]
        secondary += [(e.span, f"candidate: `{e.stage_name}` exports `{name} {e.item.signature}`") for e in candidates]
        chosen = next((it for it in comp.pipeline.items if isinstance(it, A.Resolve) and it.call == name), None)
        if chosen is not None:  # the chosen stage itself exports the name more than once
            message = f"call `{name}` is resolved to `{chosen.stage}`, which exports `{name}` {len(candidates)} times"
            secondary.append((chosen.span, "chosen here"))
            helps = [f"keep one `export callable {name}` in `{chosen.stage}`"]
        else:
            listed = ", ".join(f"`{s}`" for s in stages)
            message = f"call `{name}` could be served by {len(candidates)} exports ({listed})"
            lines = " or ".join(f'`resolve call {name} to "{s}"`' for s in stages)
            helps = [f"choose one in pipeline `{comp.pipeline.name}`: add {lines}"]
        return seam(
            self.code,
            message,
            (first.span, f"`{first.stage_name}` calls `{name}` here"),
            secondary,
            notes=("the linker binds each call site to exactly one export and will not guess",),
            helps=helps,
            data={"call": name, "candidates": ",".join(stages)},
        )

    def _conflicting_resolves(self, comp: Composition) -> Iterator[Diagnostic]:
        first: dict[str, A.Resolve] = {}
        for item in comp.pipeline.items:
            if not isinstance(item, A.Resolve):
                continue
            earlier = first.setdefault(item.call, item)
            if earlier is item or earlier.stage == item.stage:
                continue
            yield seam(
                self.code,
                f"call `{item.call}` is resolved twice, to `{earlier.stage}` and to `{item.stage}`",
                (item.span, f"resolves to `{item.stage}`"),
                [(earlier.span, f"resolves to `{earlier.stage}`")],
                notes=("the first `resolve` line is the one that takes effect",),
                helps=(f"keep one `resolve call {item.call}` line",),
                data={"call": item.call, "stages": f"{earlier.stage},{item.stage}"},
            )
