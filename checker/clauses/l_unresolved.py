"""L-UNRESOLVED: a call has no export serving it.

## What it checks
Every call site (`call NAME (types) -> type as SYMBOL from role R`, or `from callable F`
inside an exported callable) needs an `export callable NAME` in some stage of the
pipeline. When the pipeline chooses the provider (`resolve call NAME to "stage"`), that
stage must be in the pipeline and export `NAME`; the `resolve` line is then reported
once, with every call it affects.

## Why it matters
A call site is compiled against an external device symbol that the linker defines as
a trampoline to the serving export. With no export there is nothing to bind it to:
nvJitLink stops with an undefined symbol — or, worse, binds a same-named function of
another component whose contract was never checked.

## Example
```kernlink
stage "attn.core" version "3.0.1" {
    target sm_90a
    role core entry attn_core_main warps 8
    call mask (i32, i32) -> bool as kl_call_mask from role core guarantees converged
}
stage "attn.mask.causal" version "1.2.0" {
    target sm_90a
    export callable causal_mask (i32, i32) -> bool = causal_mask_impl requires converged
}
```

## Fix
Add the stage that exports the callable to the pipeline, rename the call to the
exported name, or point the `resolve` line at a stage that exports it.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import plural, seam
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code


class UnresolvedClause(Clause):
    code = Code.L_UNRESOLVED
    name = "unresolved-call"
    summary = "a call has no export serving it"
    category = "callables"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        resolves: dict[str, A.Resolve] = {}
        for item in comp.pipeline.items:
            if isinstance(item, A.Resolve):
                resolves.setdefault(item.call, item)
        for choice in resolves.values():
            yield from self._bad_resolve(comp, choice)
        for call in comp.calls:
            if call.item.name in resolves or serving_exports(comp, call):
                continue
            yield self._no_export(comp, call)

    def _no_export(self, comp: Composition, call: Owned[A.Call]) -> Diagnostic:
        name = call.item.name
        exported = sorted(comp.exports)
        guess = did_you_mean(name, exported)
        notes = (
            [f"callables exported in this pipeline: {', '.join(f'`{e}`' for e in exported)}"]
            if exported
            else ["no stage of the pipeline exports a callable"]
        )
        helps = [f"did you mean `{guess}`?"] if guess else []
        helps.append(f"add the stage that exports `{name}` to the pipeline")
        secondary = [(e.span, f"`{e.stage_name}` exports `{guess}`") for e in comp.exports.get(guess or "", ())]
        return seam(
            self.code,
            f"call `{name}` in `{call.stage_name}` has no export serving it",
            (call.span, f"calls `{name} {call.item.signature}`"),
            secondary,
            notes=notes,
            helps=helps,
            data={"call": name, "stage": call.stage_name, "suggestion": guess or ""},
        )

    def _bad_resolve(self, comp: Composition, choice: A.Resolve) -> Iterator[Diagnostic]:
        exports = comp.exports.get(choice.call, ())
        if any(e.stage_name == choice.stage for e in exports):
            return
        sites = [c for c in comp.calls if c.item.name == choice.call]
        in_pipeline = comp.stage(choice.stage) is not None
        why = (
            f"stage `{choice.stage}` exports no callable `{choice.call}`"
            if in_pipeline
            else f"stage `{choice.stage}` is not in the pipeline"
        )
        secondary = [(c.span, f"`{c.stage_name}` calls `{choice.call}` here") for c in sites]
        secondary += [(e.span, f"`{e.stage_name}` exports `{choice.call}`") for e in exports]
        helps = [f'write `resolve call {choice.call} to "{e.stage_name}"`' for e in exports[:1]]
        if not exports:
            helps.append(f"add a stage exporting `{choice.call}` to the pipeline, or remove the `resolve` line")
        stage_guess = did_you_mean(choice.stage, [s.name for s in comp.stages])
        if not in_pipeline and stage_guess and not exports:
            helps.insert(0, f"did you mean `{stage_guess}`?")
        yield seam(
            self.code,
            f"`resolve call {choice.call}` chooses `{choice.stage}`, but {why}",
            (choice.span, "chosen here"),
            secondary,
            notes=(
                f"{plural(len(sites), 'call site')} of `{choice.call}` "
                f"{'stays' if len(sites) == 1 else 'stay'} unresolved",
            ),
            helps=helps,
            data={"call": choice.call, "stage": choice.stage},
        )
