"""L-MAP: a placement or demand map is not exact over its tile.

## What it checks
A tensor export's `placement` and an import's `demand` are closed-form maps over
bounded variables. Each must be exact over the tile: every slot (thread × register,
lane × column, or address) maps inside the tile, no two slots map to one element,
and every element is placed (demanded) exactly once; a chunked demand's last
variable is the chunk index and each chunk covers exactly its part of the tile.
The structural part is decided here — a map's outputs are the tile's dimensions
(an `smem` map's inputs are), every name it uses is one of its variables, and
`regs`/`tmem` variables state their extents. Exactness is proved with Z3 by the
transfer model once the composition is placed, with a witness element for each
defect. A register fragment passed to a callable (language.md §10.1) is held to the
same, and the callable's demand and the call's placement span the same group of
whole warps (the threads that make one call). A fragment no pair reaches (a callable's
stage checked alone) is held to its own side of this: exact, over whole warps.

## Why it matters
The linker generates the moves of a hand-off from these maps. A map that sends two
accumulator registers to one element silently drops a value; one that misses an
element leaves the consumer reading whatever its register held. Neither shows up
until the numbers are wrong.

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
    claim smem scratch bytes 128KiB align 16 lifetime between acc.ready acc.done
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 128 n 256
        demand regs(t: 128, c: 256) -> (m, n) {
            m = t
            n = c % 128
        }
        lends smem scratch
        done event acc.done
    }
}
```

## Fix
Make the map a bijection between its slots and the tile: check the formula against
the witness in the diagnostic (the element it misses or the two slots that collide).
For MMA accumulators, name the library map (`wgmma_m64nNk16_f32`,
`mma_m16n8k16_f32`) instead of writing the formula out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from contract_lang import ast as A
from contract_lang.expr import names
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.symbols import Code


class MapClause(Clause):
    code = Code.L_MAP
    name = "inexact-map"
    summary = "a placement or demand map is not exact over its tile"
    category = "tensors"
    decided_by = "transfer"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for exp in comp.items(A.ExportTensor):
            yield from self._shape(exp.item.placement, exp.item.tile, f"placement of `{exp.item.name}`")
        for imp in comp.items(A.ImportTensor):
            tile = imp.item.tile
            if not tile:
                exports = comp.tensor_exports.get(imp.item.export, ())
                tile = exports[0].item.tile if exports else ()
            yield from self._shape(imp.item.demand, tile, f"demand of `{imp.item.name}`")

    def _shape(self, spec: A.MapSpec | None, tile: tuple[A.Dim, ...], what: str) -> Iterator[Diagnostic]:
        if not isinstance(spec, A.LayoutMap) or not tile:
            return
        dims = tuple(d.name for d in tile)
        variables = {p.name for p in spec.params}
        if spec.kind == "smem":
            if tuple(p.name for p in spec.params) != dims:
                yield seam(
                    self.code,
                    f"the {what} maps from ({', '.join(p.name for p in spec.params)}) but the "
                    f"tile's dimensions are ({', '.join(dims)})",
                    (spec.span, "an `smem` map takes the tile's coordinates"),
                    helps=(f"write `smem({', '.join(dims)}) -> (addr) {{ addr = … }}`",),
                )
        else:
            if tuple(spec.outputs) != dims:
                yield seam(
                    self.code,
                    f"the {what} yields ({', '.join(spec.outputs)}) but the tile's dimensions are ({', '.join(dims)})",
                    (spec.span, "outputs must be the tile's dimensions"),
                    helps=(f"write `-> ({', '.join(dims)})` and one assignment for each",),
                )
            for param in spec.params:
                if param.extent is None:
                    yield seam(
                        self.code,
                        f"variable `{param.name}` of the {what} has no extent",
                        (param.span, "unbounded variable"),
                        helps=(f"write `{param.name}: N` with the number of values it takes",),
                    )
        assigned = [a.name for a in spec.assigns]
        for out in spec.outputs:
            if assigned.count(out) != 1:
                yield seam(
                    self.code,
                    f"the {what} assigns `{out}` {assigned.count(out)} times",
                    (spec.span, "each output needs exactly one assignment"),
                    helps=(f"write one `{out} = …` line",),
                )
        for assign in spec.assigns:
            stray = sorted(names(assign.expr) - variables)
            if stray:
                yield seam(
                    self.code,
                    f"the {what} uses {', '.join(f'`{s}`' for s in stray)}, which "
                    f"{'is not a variable' if len(stray) == 1 else 'are not variables'} of the map",
                    (assign.span, "unknown name"),
                    helps=(f"the map's variables are {', '.join(f'`{v}`' for v in sorted(variables))}",),
                )


# ----------------------------------------------------------------- the transfer model's shape findings, worded here

CODE = Code.L_MAP
_SHAPE = (("check", "shape"),)


def unreadable(message: str, span: Span) -> Diagnostic:
    """A map the transfer model cannot build (an unknown library map, bad arguments): its reason."""
    return Diagnostic(
        CODE, message, labels=(Label(span, "this map"),), helps=("see `kernlink explain L-MAP` for the map forms",)
    )


def _shape(message: str, span: Span | None, helps: tuple[str, ...] = ()) -> Diagnostic:
    labels = (Label(span, "map declared here", True),) if span is not None else ()
    return Diagnostic(CODE, message, labels=labels, helps=helps, data=_SHAPE)


def threads_mismatch(what: str, spans: int, role: str, has: int, span: Span | None) -> Diagnostic:
    """A register map whose thread variable spans another count than its role's threads."""
    return _shape(f"{what} spans {spans} threads but role `{role}` has {has}", span)


def fragment_group(
    name: str, callable_: str, passed: int, taken: int, passed_span: Span | None, taken_span: Span | None
) -> Diagnostic:
    """A callable's fragment over a group that is not whole warps, or a caller's over another group."""
    labels = tuple(
        Label(s, text, primary)
        for s, text, primary in ((taken_span, f"{taken} threads", True), (passed_span, f"{passed} threads", False))
        if s is not None
    )
    return Diagnostic(
        CODE,
        f"fragment `{name}` of `{callable_}`: the callable's demand spans {taken} threads and the call's placement "
        f"{passed}; both must span the same group of whole warps",
        labels=labels,
        helps=("a callable runs in groups of its demand's threads: state the caller's placement over one group",),
    )


def fragment_threads(name: str, callable_: str, word: str, threads: int, span: Span | None) -> Diagnostic:
    """A fragment (checked on its own side, before any pairing) over a group that is not whole warps."""
    return _shape(
        f"fragment `{name}` of `{callable_}`: its {word} spans {threads} threads, not a group of whole warps",
        span,
        ("a callable runs in groups of its demand's threads: state the map over 32, 64, 128 … threads",),
    )


def fragment_role(
    name: str,
    callable_: str,
    role: str,
    role_threads: int,
    threads: int,
    call_span: Span,
    demand_span: Span,
    word: str = "demanded",
) -> Diagnostic:
    """A role that calls a callable in groups of its fragment's threads but is no whole number of groups."""
    return Diagnostic(
        CODE,
        f"fragment `{name}` of `{callable_}` spans groups of {threads} threads but role `{role}`, which calls it, "
        f"has {role_threads}",
        labels=(
            Label(call_span, f"called by {role_threads} threads", True),
            Label(demand_span, f"{word} here", False),
        ),
        helps=(f"call `{callable_}` from a role of a multiple of {threads} threads",),
    )


def tmem_too_large(
    what: str, lane: str, lanes: int, col: str, cols: int, span: Span | None, limits: tuple[int, int]
) -> Diagnostic:
    return _shape(
        f"{what} spans `{lane}: {lanes}` x `{col}: {cols}` but tensor memory has {limits[0]} lanes and "
        f"{limits[1]} columns",
        span,
    )


def demand_not_registers(what: str, kind: str, span: Span | None) -> Diagnostic:
    return _shape(
        f"{what} must be a register map, not `{kind}`",
        span,
        ("demand `regs(t: ..., r: ...) -> (...)`: imports deliver into registers",),
    )


def warpgroups_mismatch(
    export: str, role: str, given: int, threads: int, spec: tuple[Span, str], role_line: tuple[Span, str, int]
) -> Diagnostic:
    """A library placement whose `warpgroups:` disagrees with the role that holds it (``spec``: span, map name)."""
    width = 128  # threads of a warpgroup
    want = threads // width
    role_span, role_name, warps = role_line
    return Diagnostic(
        CODE,
        f"placement of `{export}` spans {given * width} threads (`warpgroups: {given}`) "
        f"but role `{role}` has {threads}",
        labels=(
            Label(spec[0], f"`warpgroups: {given}` = {given * width} threads"),
            Label(role_span, f"`{role_name}`: {warps} warps = {threads} threads", primary=False),
        ),
        notes=(f"`{spec[1]}` stacks one 64-row accumulator per warpgroup of the role that holds it",),
        helps=(f"write `warpgroups: {want}` (the role's {warps} warps), or change the role's width",),
        data=(("check", "shape"), ("warpgroups", str(given)), ("expected", str(want))),
    )


# ----------------------------------------------------------------- the transfer model's exactness findings, worded here

MapCase = Literal[
    "smem-variables",  # facts: variables, tile
    "smem-outputs",
    "outputs",  # facts: outputs, dims
    "tmem-variables",
    "unknown-name",  # facts: name, output
    "not-arithmetic",  # facts: op, output
    "divisor",  # facts: divisor
    "no-chunk-variable",
    "chunk-count",  # facts: variable, extent, dim, dim_extent, size, count
    "undecided",  # facts: check, reason
    "out-of-range",  # facts: slot, element, tile, output
    "collision",  # facts: slot, other_slot, element
    "missing",  # facts: element, verb, slots, elements, tile
    "wrong-chunk",  # facts: slot, element, asked, actual, variable, dim, size
    "bad-address",  # facts: element, address, elem_bytes
    "overlap",  # facts: element, other_element, address, other_address
]


@dataclass(frozen=True)
class MapFinding:
    """One way a layout map is not exact over its tile, as the transfer model found it.

    ``case`` says which defect; ``what`` names the map ("placement of `acc`"); ``map_text``
    is the map in contract syntax; ``span`` the locus (the map, or the expression at fault);
    ``facts`` the values of the case (named beside each case of :data:`MapCase`, all text).
    """

    case: MapCase
    what: str
    map_text: str
    span: Span
    facts: tuple[tuple[str, str], ...] = ()


def inexact(found: MapFinding) -> Diagnostic:
    """The one message shape of each exactness case."""
    f = dict(found.facts)
    what = found.what
    check, label = "shape", "map declared here"
    notes: tuple[str, ...] = ()
    helps: tuple[str, ...] = ()
    data: tuple[tuple[str, str], ...] = ()
    match found.case:
        case "smem-variables":
            message = f"{what} takes `({f['variables']})` but the tile is `{f['tile']}`"
            helps = ("give a shared-memory map one variable per tile dimension, with its extent",)
        case "smem-outputs":
            message = f"{what} must have one output, the byte address"
        case "outputs":
            message = f"{what} has outputs `({f['outputs']})` but the tile's dimensions are `({f['dims']})`"
            helps = ("name the outputs after the tile's dimensions, in order",)
        case "tmem-variables":
            message = f"{what} must take two variables, lane and column"
        case "unknown-name":
            message = f"{what} uses `{f['name']}` in `{f['output']}`, which is not one of its variables"
            label = "unknown variable"
        case "not-arithmetic":
            message = f"{what} uses `{f['op']}` in `{f['output']}`; layout maps use only `+ - * / %`"
            label = "not integer arithmetic"
        case "divisor":
            message = f"{what} may divide by zero or a negative value in `{f['divisor']}`"
            label = "divisor not always positive"
        case "no-chunk-variable":
            check, message = "chunk", f"{what} is chunked but has no chunk variable"
            helps = ("make the demand's last variable the chunk index",)
        case "chunk-count":
            check = "chunk"
            message = (
                f"{what} has chunk variable `{f['variable']}: {f['extent']}` but `{f['dim']} {f['dim_extent']}` "
                f"in chunks of {f['size']} makes {f['count']} chunks"
            )
            notes = ("the last variable of a chunked demand is the chunk index",)
        case "undecided":
            check = f["check"]
            message = f"could not decide whether {what} is exact ({check}): the solver gave up"
            notes = (f"solver: {f['reason']}",)
            helps = ("simplify the map's expressions, or raise the solver's resource limit",)
        case "out-of-range":
            check, label = "out-of-range", f"`{f['output']}` leaves the tile"
            message = f"{what} sends slot `{f['slot']}` to `{f['element']}`, outside the tile `{f['tile']}`"
            data = (("slot", f["slot"]), ("element", f["element"]))
        case "collision":
            check, label = "collision", "not one-to-one"
            message = f"{what} sends slots `{f['slot']}` and `{f['other_slot']}` to one element `{f['element']}`"
            data = (("slot", f["slot"]), ("other_slot", f["other_slot"]), ("element", f["element"]))
        case "missing":
            check, label = "missing", "does not cover the tile"
            message = f"{what} never {f['verb']} element `{f['element']}`"
            notes = (f"the map has {f['slots']} slots for the {f['elements']} elements of `{f['tile']}`",)
            data = (("element", f["element"]),)
        case "wrong-chunk":
            check, label = "chunk", "element of another chunk"
            message = (
                f"{what} asks for `{f['element']}` in chunk {f['asked']}, but that element is in chunk {f['actual']}"
            )
            name, size = f["variable"], f["size"]
            notes = (f"chunk `{name}` covers `{f['dim']}` in [{size} * {name}, {size} * {name} + {size})",)
            data = (("slot", f["slot"]), ("element", f["element"]))
        case "bad-address":
            check, label = "out-of-range", "bad address"
            message = (
                f"{what} puts element `{f['element']}` at address {f['address']}, "
                f"which is negative or not a multiple of {f['elem_bytes']}"
            )
            data = (("element", f["element"]), ("address", f["address"]))
        case "overlap":
            check, label = "collision", "not one-to-one"
            message = (
                f"{what} stores elements `{f['element']}` and `{f['other_element']}` "
                f"at overlapping addresses {f['address']} and {f['other_address']}"
            )
            data = (("element", f["element"]), ("other_element", f["other_element"]))
    return Diagnostic(
        CODE,
        message,
        labels=(Label(found.span, label, True),),
        notes=(*notes, f"the map: `{found.map_text}`"),
        helps=helps,
        data=(("check", check), *data),
    )
