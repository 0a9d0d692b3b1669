"""L-GENERATION: a persistent producer exports a tensor, or one role imports one export twice.

## What it checks
An export carries exactly one generation of its tensor: one value per element,
ready once per kernel. So an export may not say `generation persistent`, and the
stage exporting it may not be launched persistent (`launch persistent` in that stage
or in the pipeline), since a persistent producer loops over tiles and rewrites the
tensor once per tile. And one role may import a given export only once: a second
import of the same export into the same role takes the same generation twice.

## Why it matters
The ready and done events of a tensor connection are single-shot: the producer
signals `ready` once, the consumer signals `done` once, and the scratch lent for the
transfer is reused after `done`. A persistent producer that overwrites its
accumulator for the next tile races the consumer still reading the previous one;
nothing in a one-generation connection makes it wait. A second import of the same
generation doubles the `done` signals, releasing the producer's storage while the
first import may still read it.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        generation persistent
        ready event acc.ready
    }
}
```

## Fix
Export from a non-persistent producer (one tile per CTA), or hand successive tiles
over a ring, whose slots carry one generation each; import each export once per
role and share the imported values inside the role.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class GenerationClause(Clause):
    code = Code.L_GENERATION
    name = "tensor-generation"
    summary = "a persistent producer exports a tensor, or one role imports one export twice"
    category = "tensors"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        pipeline_launch = next(
            (it for it in comp.pipeline.items if isinstance(it, A.Launch) and it.kind == "persistent"), None
        )
        for exports in comp.tensor_exports.values():
            for exp in exports:
                yield from self._persistent(comp, exp, pipeline_launch)
        seen: dict[tuple[str, str, str], Owned[A.ImportTensor]] = {}
        repeats: dict[tuple[str, str, str], list[Owned[A.ImportTensor]]] = defaultdict(list)
        for imp in comp.tensor_imports:
            key = (imp.stage_name, imp.item.role, imp.item.export)
            if key in seen:
                repeats[key].append(imp)
            else:
                seen[key] = imp
        for key, again in repeats.items():
            yield self._twice(seen[key], again)

    def _persistent(
        self, comp: Composition, exp: Owned[A.ExportTensor], pipeline_launch: A.Launch | None
    ) -> Iterator[Diagnostic]:
        e = exp.item
        if e.generation == "persistent":
            yield seam(
                self.code,
                f"tensor `{e.name}` is exported with generation `persistent`; an export carries exactly one generation",
                (e.attr_span("generation"), "persistent export"),
                [(exp.span, f"exported by `{exp.stage_name}`")],
                notes=("the ready and done events of a tensor connection fire once per kernel",),
                helps=("export one generation (`generation once`); hand successive tiles over a ring instead",),
                data={"export": e.name, "stage": exp.stage_name, "cause": "generation"},
            )
            return
        launch = (
            next((it for it in exp.stage.stage.items if isinstance(it, A.Launch) and it.kind == "persistent"), None)
            or pipeline_launch
        )
        if launch is None:
            return
        where = f"`{exp.stage_name}`" if launch is not pipeline_launch else f"pipeline `{comp.pipeline.name}`"
        yield seam(
            self.code,
            f"tensor `{e.name}` is exported by `{exp.stage_name}`, which is launched persistent",
            (exp.span, f"exports `{e.name}` from role `{e.role}`"),
            [(launch.span, f"{where} launches persistent")],
            notes=("a persistent producer rewrites the tensor for every tile, but an export carries one generation",),
            helps=("launch the producer with one tile per CTA (`launch fixed`), or hand successive tiles over a ring",),
            data={"export": e.name, "stage": exp.stage_name, "cause": "launch"},
        )

    def _twice(self, first: Owned[A.ImportTensor], again: list[Owned[A.ImportTensor]]) -> Diagnostic:
        i = first.item
        return seam(
            self.code,
            f"role `{i.role}` of `{first.stage_name}` imports `{i.export}` {len(again) + 1} times",
            (again[0].span, f"imports `{i.export}` again as `{again[0].item.name}`"),
            [(first.span, f"first imported as `{i.name}`")] + [(x.span, "and again") for x in again[1:]],
            notes=("each import takes the export's one generation and signals its own `done`",),
            helps=(f"import `{i.export}` once into `{i.role}` and share the values inside the role",),
            data={"export": i.export, "role": i.role, "stage": first.stage_name},
        )
