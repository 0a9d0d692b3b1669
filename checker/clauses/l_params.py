"""L-PARAMS: parameter regions overlap, exceed the kernel parameter limit, or disagree with the captured layout.

## What it checks
Each `params NAME size S align A { field: type @ offset … }` block is the layout of a
C struct the component reads from the kernel's parameters. The clause checks:

- `align` is a power of two and `size` is a multiple of it;
- every field lies inside the struct (offset + size of its type ≤ `size`), at an
  offset that is a multiple of its type's natural alignment (`u8`/`i8`/`bool` 1,
  `u16`/`i16`/`f16`/`bf16` 2, `u32`/`i32`/`f32` 4, `u64`/`i64`/`f64`/`ptr` 8), and
  the struct's `align` is at least that alignment;
- no two fields overlap;
- all stages' regions, each placed at the next multiple of its `align` in pipeline
  order, fit the target's kernel parameter limit (32764 bytes since CUDA 12.1;
  4096 bytes when a package was built by an older toolkit);
- when a stage comes from a package, its declared layout matches the layout the
  compiler saw at pack time: the struct's size and alignment, and each field's
  offset and size; a field the compiler's struct has but the contract does not
  declare is reported too;
- a `host provider … fn F fills a, b` writes only fields of its stage's one params
  block that no fact writes (`= fact`), each field is filled by one provider, and a
  provider that `fills` has an `fn` to be called through.

## Why it matters
The linker builds the kernel's parameter block from these declarations and writes
fact values into the declared fields. The component's code reads the same bytes
through its own compiled struct. If the two layouts differ — a field added in the
source but not in the contract, a `u32` moved to make room for a pointer — the
component reads the wrong bytes: a tile count taken from half a pointer. Parameter
blocks past the limit fail to launch (`CUDA_ERROR_INVALID_VALUE`). A host provider
writes into the block before every launch: a field it was not declared to fill would
be overwritten behind the contract's back — a fact the link checked, or another
provider's result.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    params GemmParams size 24 align 8 {
        tmap_a: ptr @ 0
        k_tiles: u32 @ 8
        tmap_b: ptr @ 12
    }
}
```

## Fix
Declare the layout your compiler produces: natural offsets (`offsetof`), `size`
= `sizeof`, `align` = `alignof`. Rebuild the package after changing the struct, and
keep parameter blocks small (pass large tables through a pointer).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.params import ParamsProblem, block_problems
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from hardware.targets import SCALAR_ALIGN_SOURCE, field_align, field_size
from package.loader import StageEntry


class ParamsClause(Clause):
    code = Code.L_PARAMS
    name = "params-layout"
    summary = "parameter regions overlap, exceed the kernel parameter limit, or disagree with the captured layout"
    category = "communication"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for entry in comp.stages:
            captured = {c.name: c for c in entry.captured.params_layouts} if entry.captured else {}
            for params in entry.stage.items:
                if not isinstance(params, A.Params):
                    continue
                yield from self._struct(entry, params)
                yield from self._fields(entry, params)
                if params.name in captured:
                    package = entry.package or entry.source
                    for problem in block_problems(params, captured[params.name]):
                        yield disagreement(problem, entry.name, package)
            yield from self._providers(entry)
        yield from self._limit(comp)

    # ------------------------------------------------------------- one declared struct

    def _struct(self, entry: StageEntry, p: A.Params) -> Iterator[Diagnostic]:
        if not _power_of_two(p.align):
            yield seam(
                self.code,
                f"params `{p.name}` of `{entry.name}` has alignment {p.align}, which is not a power of two",
                (p.span, f"align {p.align}"),
                helps=("use the struct's `alignof`, a power of two",),
                data={"params": p.name, "align": p.align},
            )
            return
        if p.size % p.align:
            yield seam(
                self.code,
                f"params `{p.name}` of `{entry.name}` has size {p.size}, not a multiple of its alignment {p.align}",
                (p.span, f"size {p.size}"),
                notes=("a C struct's size is always a multiple of its alignment",),
                helps=(f"use the struct's `sizeof`: {_round_up(p.size, p.align)} with trailing padding",),
                data={"params": p.name, "size": p.size, "align": p.align},
            )
        widest = max(p.fields, key=lambda f: field_align(f.type) or 1, default=None)
        need = (field_align(widest.type) or 1) if widest is not None else 1
        if widest is not None and p.align < need:
            yield seam(
                self.code,
                f"params `{p.name}` of `{entry.name}` is aligned to {p.align}, but field "
                f"`{widest.name}: {widest.type}` needs {need}",
                (p.span, f"align {p.align}"),
                [(widest.span, f"needs {need}-byte alignment")],
                notes=(f"a struct is aligned to its widest member ({SCALAR_ALIGN_SOURCE})",),
                helps=(f"declare `align {need}`",),
                data={"params": p.name, "align": p.align, "needed": need},
            )

    def _fields(self, entry: StageEntry, p: A.Params) -> Iterator[Diagnostic]:
        placed: list[tuple[int, int, A.ParamField]] = []
        for f in p.fields:
            size, align = field_size(f.type) or 1, field_align(f.type) or 1
            end = f.offset + size
            if f.offset % align:
                yield seam(
                    self.code,
                    f"field `{f.name}` of params `{p.name}` is at offset {f.offset}, which is not a "
                    f"multiple of {align} (the alignment of `{f.type}`)",
                    (f.span, f"offset {f.offset}"),
                    notes=(f"the compiler places a `{f.type}` at a multiple of {align} and pads before it",),
                    helps=(
                        f"declare the offset `offsetof` gives ({_round_up(f.offset, align)} after padding, "
                        "unless other fields moved)",
                    ),
                    data={"params": p.name, "field": f.name, "offset": f.offset, "align": align},
                )
            if end > p.size:
                yield seam(
                    self.code,
                    f"field `{f.name}` of params `{p.name}` ends at byte {end}, past the struct's size {p.size}",
                    (f.span, f"bytes {f.offset}..{end}"),
                    [(p.span, f"size {p.size}")],
                    helps=("use the struct's `sizeof` as `size`",),
                    data={"params": p.name, "field": f.name, "end": end, "size": p.size},
                )
            for start, stop, other in placed:
                if f.offset < stop and start < end:
                    yield seam(
                        self.code,
                        f"fields `{other.name}` and `{f.name}` of params `{p.name}` overlap",
                        (f.span, f"`{f.name}` takes bytes {f.offset}..{end}"),
                        [(other.span, f"`{other.name}` takes bytes {start}..{stop}")],
                        notes=("the linker writes each field's value; overlapping fields overwrite each other",),
                        helps=("use the offsets `offsetof` gives",),
                        data={"params": p.name, "fields": f"{other.name},{f.name}"},
                    )
            placed.append((f.offset, end, f))

    # ------------------------------------------------------------- host providers

    def _providers(self, entry: StageEntry) -> Iterator[Diagnostic]:
        """A called provider writes only caller fields of the stage's one params block, each once."""
        blocks = [p for p in entry.stage.items if isinstance(p, A.Params)]
        fields = {f.name: (block, f) for block in blocks for f in block.fields}
        filled: dict[str, A.HostProvider] = {}
        for provider in entry.stage.items:
            if not isinstance(provider, A.HostProvider):
                continue
            name = f"host provider `{provider.library}` of `{entry.name}`"
            if provider.fills and provider.function is None:
                yield seam(
                    self.code,
                    f"{name} fills {_listed(provider.fills)} but names no `fn`: nothing calls it",
                    (provider.span, "no `fn`"),
                    notes=(
                        "the launch helpers call a provider through its `fn`; without one the fields stay "
                        "as the caller left them",
                    ),
                    helps=(
                        "name the provider's entry point: `fn NAME` (`CUresult NAME(void* params, CUstream stream)`)",
                    ),
                    data={"provider": provider.library, "problem": "no-fn"},
                )
                continue
            if provider.function is not None and len(blocks) > 1:
                yield seam(
                    self.code,
                    f"{name} is called with the stage's params block, and `{entry.name}` declares {len(blocks)}",
                    (provider.span, "called with one params block"),
                    [(b.span, f"params `{b.name}`") for b in blocks],
                    helps=("merge the stage's params blocks into one",),
                    data={"provider": provider.library, "problem": "blocks", "blocks": len(blocks)},
                )
                continue
            for field in provider.fills:
                found = fields.get(field)
                if found is None:
                    declared = ", ".join(f"`{f}`" for f in fields) or "none"
                    import difflib

                    near = difflib.get_close_matches(field, list(fields), n=1)
                    guess = f"did you mean `{near[0]}`? " if near else ""
                    yield seam(
                        self.code,
                        f"{name} fills `{field}`, which no params block of the stage declares",
                        (provider.span, f"fills `{field}`"),
                        notes=(
                            f"the stage's params fields: {declared}",
                            "a provider writes only into its own stage's params block",
                        ),
                        helps=(f"{guess}declare `{field}` in the stage's params block, or drop it from `fills`",),
                        data={"provider": provider.library, "field": field, "problem": "undeclared"},
                    )
                elif found[1].fact is not None:
                    yield seam(
                        self.code,
                        f"{name} fills `{field}`, which the link writes from fact `{found[1].fact}`",
                        (provider.span, f"fills `{field}`"),
                        [(found[1].span, f"`= fact {found[1].fact}`")],
                        notes=("a fact field holds the value the link checked; a provider may not overwrite it",),
                        helps=(f"drop `{field}` from `fills`, or make it a caller field (no `= fact`)",),
                        data={"provider": provider.library, "field": field, "problem": "fact"},
                    )
                elif field in filled:
                    yield seam(
                        self.code,
                        f"{name} fills `{field}`, which host provider `{filled[field].library}` fills too",
                        (provider.span, f"fills `{field}`"),
                        [(filled[field].span, "the first provider that fills it")],
                        notes=("providers run in order, so the later one would silently win",),
                        helps=("let one provider fill each field",),
                        data={"provider": provider.library, "field": field, "problem": "twice"},
                    )
                else:
                    filled[field] = provider

    # ------------------------------------------------------------- the kernel's parameter block

    def _limit(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None:
            return
        legacy = [s for s in comp.stages if s.captured and _before_large_params(s.captured.toolkit)]
        field = "kernel_param_legacy_max_bytes" if legacy else "kernel_param_max_bytes"
        limit = target.fact(field)
        cursor = 0
        regions: list[tuple[StageEntry, A.Params, int]] = []
        for entry in comp.stages:
            for p in entry.stage.items:
                if isinstance(p, A.Params):
                    offset = _round_up(cursor, p.align if _power_of_two(p.align) else 1)
                    regions.append((entry, p, offset))
                    cursor = offset + p.size
        if cursor <= limit.value:
            return
        crossing = next((e, p, o) for e, p, o in regions if o + p.size > limit.value)
        entry, p, offset = crossing
        notes = [f"`{e.name}` `{q.name}`: bytes {o}..{o + q.size}" for e, q, o in regions]
        notes.append(f"{target.name} allows {limit.value} bytes of kernel parameters ({limit.source})")
        if legacy:
            old = legacy[0]
            notes.append(
                f"`{old.name}` was built with `{old.captured.toolkit if old.captured else ''}`, "
                "before CUDA 12.1 raised the limit"
            )
        yield seam(
            self.code,
            f"the pipeline's params regions take {cursor} bytes, more than the {limit.value}-byte "
            f"kernel parameter limit of {target.name}",
            (p.span, f"`{p.name}` ends at byte {offset + p.size}"),
            [(q.span, f"`{q.name}`: {q.size} bytes") for e, q, o in regions if q is not p],
            notes=notes,
            helps=("pass large tables through a pointer field instead of by value",),
            data={"bytes": cursor, "limit": limit.value, "target": target.name},
        )


# ----------------------------------------------------------------- the compiler's layout (checker/params.py decides)


def disagreement(problem: ParamsProblem, stage: str, package: str) -> Diagnostic:
    """The one message shape of each way a params block disagrees with its compiled struct (``package``: where
    the layout was captured; at check time the package read, at pack time the package written)."""
    note = f"layout captured when `{package}` was packed"
    p, node = problem.params, problem.node
    declared, captured = problem.declared, problem.captured
    match problem.problem:
        case "missing-struct":
            return seam(
                CODE,
                f"params struct `{p}` is not declared at global scope in the source",
                (node.span, "declared here"),
                notes=(note,),
                helps=("make the struct in the source and the contract's params block agree",),
                data={"params": p, "problem": problem.problem},
            )
        case "size" | "align":
            what = "size" if problem.problem == "size" else "alignment"
            return seam(
                CODE,
                f"params `{p}` of `{stage}` declares {what} {declared}, but the compiled struct has {what} {captured}",
                (node.span, f"{what} {declared}"),
                notes=(note,),
                helps=(f"declare {what} {captured}, or rebuild the package from the source the contract describes",),
                data={"params": p, "attribute": what, "declared": declared, "captured": captured},
            )
        case "missing-field":
            compiled = ", ".join(f"`{n}`" for n in problem.compiled_fields) or "(none)"
            return seam(
                CODE,
                f"field `{problem.field}` of params `{p}` is not in the compiled struct",
                (node.span, "declared here"),
                notes=(note, f"compiled fields: {compiled}"),
                helps=("declare the fields of the compiled struct, or rebuild the package",),
                data={"params": p, "field": problem.field},
            )
        case "offset" | "field-size":
            assert problem.declared_place is not None and problem.captured_place is not None
            (offset, size), (at, got) = problem.declared_place, problem.captured_place
            return seam(
                CODE,
                f"field `{problem.field}` of params `{p}` is declared at offset {offset} ({size} bytes), but the "
                f"compiler placed it at offset {at} ({got} bytes)",
                (node.span, f"offset {offset}, {size} bytes"),
                notes=(note,),
                helps=(f"declare `{problem.field}` at `@ {at}` with a {got}-byte type, or rebuild the package",),
                data={"params": p, "field": problem.field, "declared": f"{offset}+{size}", "captured": f"{at}+{got}"},
            )
        case "undeclared-field":
            assert problem.captured_place is not None
            at, got = problem.captured_place
            return seam(
                CODE,
                f"the compiled struct `{p}` of `{stage}` has field `{problem.field}` (offset {at}, {got} bytes) "
                "that the contract does not declare",
                (node.span, f"no field `{problem.field}`"),
                notes=(note, "the linker never writes an undeclared field"),
                helps=(f"declare `{problem.field}` at `@ {at}`",),
                data={"params": p, "field": problem.field, "offset": at, "size": got},
            )


CODE = Code.L_PARAMS


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit if unit > 0 else value


def _before_large_params(toolkit: str | None) -> bool:
    """Whether a toolkit string (``nvcc 12.0``) predates CUDA 12.1's 32764-byte parameter limit."""
    match = re.search(r"(\d+)\.(\d+)", toolkit or "")
    return match is not None and (int(match.group(1)), int(match.group(2))) < (12, 1)
