"""L-TENSOR: an import's identity (export name, tile, chunking, generation) differs from the export's.

## What it checks
An import (`import tensor acc from accumulator into role epilogue { … }`) must name a
tensor exported by exactly one stage of the pipeline. What the import states about
the tensor must then agree with the export:

- `tile`: the same dimension names with the same extents (order does not matter:
  dimensions are matched by name, as the layout maps name them);
- `chunk`: every chunk dimension is a tile dimension, and its extent divides that
  dimension's extent (a chunk of `n 48` cannot cover `n 256`);
- `generation`: an export carries one generation (`once` when unstated), or one per
  tile through a ring (`generation ring R`, both sides naming the same ring); an import
  stating `persistent` expects a stream the export does not produce.

An import that leaves out `tile` or `generation` takes the export's. Element types
are L-DTYPE's concern.

A register fragment passed to a callable (`import tensor acc into callable f` in the
callable's stage, `export tensor acc into call f` in each caller's, language.md §10.1)
states `elem`, `tile` and its map on both sides, each side has the other (matched by the
fragment's and the callable's names), and the tiles agree; it names a callable its stage
exports or calls, and a callable has a `ptr` parameter for each fragment it takes (the
caller passes a pointer to its register array): decided on each side alone too, so a
callable's stage checked alone (`kernlink check --stage`) learns it before composing.

## Why it matters
The route that moves the tensor is generated from both sides' maps over one index
space. If the consumer believes the tile is 128×128 while the producer holds
128×256, half the accumulator is never delivered — or the consumer's chunk loop reads
past what the producer placed. A chunk that does not divide its dimension leaves a
remainder no iteration covers.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        generation once
        ready event acc.ready
    }
}
stage "swiglu.epilogue" version "1.0.3" {
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 128 n 128
        chunk n 32
        done event acc.done
    }
}
```

## Fix
Make the import state the export's tile (or leave it out), pick a chunk extent that
divides its dimension, and import a tensor name some stage exports.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code

CODE = Code.L_TENSOR


class TensorClause(Clause):
    code = CODE
    name = "tensor-identity"
    summary = "an import's identity (export name, tile, chunking, generation) differs from the export's"
    category = "tensors"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for imp in comp.tensor_imports:
            exports = comp.tensor_exports.get(imp.item.export, ())
            if not exports:
                yield self._missing(comp, imp)
            elif len(exports) > 1:
                yield self._several(imp, exports)
            else:
                yield from self._compare(imp, exports[0])

    def _missing(self, comp: Composition, imp: Owned[A.ImportTensor]) -> Diagnostic:
        name = imp.item.export
        known = sorted(comp.tensor_exports)
        guess = did_you_mean(name, known)
        helps = [f"did you mean `{guess}`?"] if guess else []
        helps.append(f"add the stage that exports tensor `{name}` to the pipeline")
        return seam(
            self.code,
            f"import `{imp.item.name}` names tensor `{name}`, which no stage exports",
            (imp.span, f"imports `{name}` into role `{imp.item.role}`"),
            [(e.span, f"`{e.stage_name}` exports `{guess}`") for e in comp.tensor_exports.get(guess or "", ())],
            notes=(
                f"tensors exported in this pipeline: {', '.join(f'`{k}`' for k in known)}"
                if known
                else "no stage of the pipeline exports a tensor",
            ),
            helps=helps,
            data={"import": imp.item.name, "export": name, "suggestion": guess or "", "absent": "exporter"},
        )

    def _several(self, imp: Owned[A.ImportTensor], exports: tuple[Owned[A.ExportTensor], ...]) -> Diagnostic:
        name = imp.item.export
        return seam(
            self.code,
            f"import `{imp.item.name}` names tensor `{name}`, which {len(exports)} exports provide",
            (imp.span, f"imports `{name}`"),
            [(e.span, f"`{e.stage_name}` exports `{name}`") for e in exports],
            notes=("an import is bound to exactly one export; the name does not say which",),
            helps=(f"rename all but one export of `{name}`",),
            data={"import": imp.item.name, "export": name},
        )

    def _compare(self, imp: Owned[A.ImportTensor], exp: Owned[A.ExportTensor]) -> Iterator[Diagnostic]:
        i, e = imp.item, exp.item
        if i.tile and e.tile and _dims(i.tile) != _dims(e.tile):
            mine, theirs = _dims(i.tile), _dims(e.tile)
            notes = [
                f"dimension `{d}`: {_extent(mine, d)} at the import, {_extent(theirs, d)} at the export"
                for d in sorted(set(mine) | set(theirs))
                if mine.get(d) != theirs.get(d)
            ]
            message, help_ = tile_mismatch(i.name, e.name, _show(i.tile), _show(e.tile), f"`{exp.stage_name}`")
            yield seam(
                self.code,
                message,
                (i.attr_span("tile"), f"tile `{_show(i.tile)}`"),
                [(e.attr_span("tile"), f"exported tile `{_show(e.tile)}`")],
                notes=notes,
                helps=(help_,),
                data={"import": i.name, "export": e.name, "import_tile": _show(i.tile), "export_tile": _show(e.tile)},
            )
        tile = _dims(i.tile or e.tile)
        for chunk in i.chunk:
            problem = chunk_problem(i.name, chunk.name, chunk.extent, _show(i.tile or e.tile), tile)
            if problem is None:
                continue
            yield seam(
                self.code,
                problem[0],
                (chunk.span, "chunk here"),
                [(i.attr_span("tile") if i.tile else e.attr_span("tile"), f"tile `{_show(i.tile or e.tile)}`")],
                helps=(problem[1],),
                data={"import": i.name, "chunk": f"{chunk.name} {chunk.extent}"},
            )
        produced = generation_text(e.generation, e.ring)
        wanted = generation_text(i.generation, i.ring) if i.generation is not None else None
        # A persistent export is L-GENERATION's to report; comparing against it adds nothing.
        if wanted is not None and wanted != produced and produced != "persistent":
            message, help_ = generation_mismatch(i.name, e.name, wanted, produced, f"`{exp.stage_name}`")
            yield seam(
                self.code,
                message,
                (i.attr_span("generation"), f"generation `{wanted}`"),
                [(e.attr_span("generation"), f"generation `{produced}`")],
                notes=("an export carries exactly one generation of its tensor",),
                helps=(help_,),
                data={
                    "import": i.name,
                    "export": e.name,
                    "import_generation": wanted,
                    "export_generation": produced,
                },
            )


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return small + [n // d for d in small]


def _dims(dims: tuple[A.Dim, ...]) -> dict[str, int]:
    return {d.name: d.extent for d in dims}


def _extent(dims: dict[str, int], name: str) -> str:
    return str(dims[name]) if name in dims else "absent"


def _show(dims: tuple[A.Dim, ...]) -> str:
    return " ".join(f"{d.name} {d.extent}" for d in dims)


# ----------------------------------------------------------------- one wording per problem
# The clause words what it finds in the contracts; the transfer model (which checks seams
# built outside a composition too) words its findings through the same functions.


def tile_mismatch(imp: str, export: str, import_tile: str, export_tile: str, exporter: str) -> tuple[str, str]:
    """Message and help: the import's tile is not the export's (``exporter``: who exports, e.g. "`gemm.mma`")."""
    return (
        f"import `{imp}` sees tile `{import_tile}` but {exporter} exports `{export}` with tile `{export_tile}`",
        f"write `tile {export_tile}` in the import, or leave the tile out",
    )


def chunk_problem(imp: str, dim: str, size: int, tile: str, extents: dict[str, int]) -> tuple[str, str] | None:
    """Message and help for a chunking that is not along a tile dimension or does not divide it; None if fine."""
    extent = extents.get(dim)
    if extent is None:
        why = f"`{dim}` is not a dimension of the tile `{tile}`"
        help_ = f"chunk along one of {', '.join(f'`{d}`' for d in extents)}"
    elif size <= 0 or extent % size:
        why = f"{size} does not divide the tile's extent {extent} along `{dim}`"
        near = min(_divisors(extent) or [1], key=lambda d: (abs(d - size), d))
        help_ = f"pick a chunk extent that divides {extent}, e.g. `chunk {dim} {near}`"
    else:
        return None
    return f"import `{imp}` chunks `{dim} {size}`, but {why}", help_


def generation_text(generation: str | None, ring: str | None) -> str:
    """A tensor's generation as written: ``once`` when unstated, ``ring R`` when ring-fed."""
    return f"ring {ring}" if ring is not None else generation or "once"


def generation_mismatch(imp: str, export: str, wanted: str, produced: str, exporter: str) -> tuple[str, str]:
    return (
        f"import `{imp}` expects generation `{wanted}`, but {exporter} exports `{export}` with generation `{produced}`",
        f"write `generation {produced}` in the import, or leave it out",
    )


def other_export(imp: str, named: str, given: str) -> tuple[str, str]:
    """A seam pairing an import with an export it does not name (built outside a composition)."""
    return f"import `{imp}` names tensor `{named}`, not `{given}`", f"import from `{given}`"


def fragment_pointers(callable_: str, fragments: list[str], pointers: int, export: Span, first: Span) -> Diagnostic:
    """A callable that takes more fragments than its signature has pointers to pass them in."""
    names = ", ".join(f"`{n}`" for n in fragments)
    return Diagnostic(
        CODE,
        f"callable `{callable_}` takes {len(fragments)} fragment{'s' if len(fragments) > 1 else ''} in registers "
        f"({names}) but its signature has {pointers} `ptr` parameter{'' if pointers == 1 else 's'}",
        labels=(Label(export, "its signature", True), Label(first, "a fragment it takes", False)),
        notes=("each fragment is passed as a pointer to the caller's register array (language.md §10.1)",),
        helps=("give the callable one `ptr` parameter for each fragment it takes",),
    )
