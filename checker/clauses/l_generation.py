"""L-GENERATION: a persistent producer exports a tensor without a ring, a ring-fed export's ring does not
carry it, or one role imports one export twice.

## What it checks
An export carries one generation of its tensor (one value per element, ready once per
kernel) unless it is ring-fed. So an export may not say `generation persistent`, and
the stage exporting it may not be launched persistent (`launch persistent` in that
stage or in the pipeline), since a persistent producer loops over tiles and rewrites
the tensor once per tile. A ring-fed export (`generation ring R`) carries one
generation per tile, each in a slot of ring `R` (a ring of accumulator buffers): its
role must produce `R`, and every role importing it must consume `R`, so that the
importer releases each buffer and the producer waits for the release before it
overwrites it (the protocol model checks the ring like any other). A persistent
producer may export that way. And one role may import a given export only once: a
second import of the same export into the same role takes the same generation twice.

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
Export from a non-persistent producer (one tile per CTA), or feed the export through a
ring of accumulator buffers (`generation ring R` on both the export and the import,
with `R` produced by the exporting role and consumed by each importing one); import
each export once per role and share the imported values inside the role.
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
    summary = (
        "a persistent producer exports a tensor without a ring, a ring-fed export's ring does not carry it, "
        "or one role imports one export twice"
    )
    category = "tensors"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        pipeline_launch = next(
            (it for it in comp.pipeline.items if isinstance(it, A.Launch) and it.kind == "persistent"), None
        )
        for exports in comp.tensor_exports.values():
            for exp in exports:
                if exp.item.ring is not None:
                    yield from self._ring_fed(comp, exp)
                else:
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

    def _ring_fed(self, comp: Composition, exp: Owned[A.ExportTensor]) -> Iterator[Diagnostic]:
        """A ring-fed export: its role produces the ring, every role importing it consumes it."""
        e = exp.item
        ring = e.ring or ""
        sides = comp.rings.get(ring, ())
        produced = any(s.item.side == "produce" and s.item.role == e.role for s in sides)
        if not produced:
            yield seam(
                self.code,
                f"tensor `{e.name}` is fed through ring `{ring}`, which `{e.role}` does not produce",
                (e.attr_span("generation"), f"`generation ring {ring}`"),
                [(s.span, f"{s.item.side} side by `{s.item.role}`") for s in sides],
                notes=(
                    "each generation of a ring-fed export lives in a slot of its ring: the exporting role "
                    "fills the slot (it waits on `empty` before it overwrites a buffer) and signals `full`",
                ),
                helps=(f"add `ring {ring} produce by {e.role}` to `{exp.stage_name}`, or name the ring it produces",),
                data={"export": e.name, "ring": ring, "role": e.role},
            )
            return
        for imp in comp.tensor_imports:
            i = imp.item
            if i.export != e.name:
                continue
            if any(s.item.side == "consume" and s.item.role == i.role for s in sides):
                continue
            yield seam(
                self.code,
                f"role `{i.role}` imports ring-fed `{e.name}` but does not consume ring `{ring}`",
                (imp.span, f"imports `{e.name}` into `{i.role}`"),
                [(e.attr_span("generation"), f"`{e.name}` is fed through `{ring}`")],
                notes=(
                    "nothing tells the producer that this role is done with a buffer: it would overwrite "
                    "the next tile's generation while the import still reads it",
                ),
                helps=(f"add `ring {ring} consume by {i.role}` (wait on `full`, release `empty` after the import)",),
                data={"export": e.name, "ring": ring, "role": i.role},
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
