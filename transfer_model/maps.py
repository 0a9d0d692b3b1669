"""Layout maps: closed-form maps between slots and tile elements, and the L-MAP check.

A ``LayoutMap`` has a kind, named bounded variables ``name: extent`` (``0 <= v < extent``),
named outputs and one expression (``+ - * / %`` over the variables) per output:

- ``regs(t: T, r1: R1, r2: R2, ...) -> (m, n)``: a register placement or demand. The first
  variable is the thread within the role (thread ``t`` is in warp ``t / 32``, lane
  ``t % 32``); the others index the thread's registers. They flatten **row-major in
  declaration order**: register ``r1 * R2 * ... + r2 * ... + ...``, so a thread holds
  ``R1 * R2 * ...`` registers. A register holds one element; for 2-byte element types a
  "register" is a 16-bit slot (the ABI passes arrays of the element's bit type).
- ``tmem(lane: L, col: C) -> (m, n)``: a tensor-memory placement, lane and column relative
  to the tile's tensor-memory base.
- ``smem(m: M, n: N) -> (addr)``: a shared-memory placement, the other direction: one
  variable per tile dimension and one output, the byte offset of the element from the
  buffer's base.

Exactness (L-MAP). A register or tensor-memory map must be a bijection between its slots
and the tile's elements: no slot maps outside the tile, no two slots map to one element,
and every element has a slot. This holds for demands too: a demand names each element
exactly once (a broadcast would need a primitive that is not on the route ladder). An
shared-memory map must give distinct, non-overlapping, non-negative addresses.

Out-of-range slots and collisions are decided by Z3 (``transfer_model.smt``) with a
witness from the model. Missing elements follow by counting once the map is proven
in range and injective (fewer slots than elements); the witness element is then found
by enumerating the slots, which are bounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import product

from contract_lang.expr import BinOp, EvalError, Expr, Int, Name, names, to_text
from diagnostics.model import Diagnostic, Label
from diagnostics.span import UNKNOWN_SPAN, Span
from diagnostics.symbols import Code
from transfer_model import exprs as ex
from transfer_model.smt import DEFAULT_RLIMIT, Answer, Query, Verdict, session, solve

REGS = "regs"
TMEM = "tmem"
SMEM = "smem"
KINDS = (REGS, TMEM, SMEM)

Tile = tuple[tuple[str, int], ...]
"""Tile dimensions in order, e.g. ``(("m", 128), ("n", 256))``."""


def tile_text(tile: Tile) -> str:
    """The tile as the contract writes it: ``m 128 n 256``."""
    return " ".join(f"{name} {extent}" for name, extent in tile)


def tile_size(tile: Tile) -> int:
    return math.prod(extent for _, extent in tile)


def point_text(names_: Sequence[str], values: Sequence[int]) -> str:
    """``(t=3, r=5)``."""
    return "(" + ", ".join(f"{n}={v}" for n, v in zip(names_, values, strict=True)) + ")"


def row_major(params: Sequence[tuple[str, int]], prefix: str = "") -> Expr:
    """Row-major flattening of bounded variables as an expression (``0`` when none)."""
    out: Expr = Int(0)
    for name, extent in params:
        out = ex.add(ex.mul(out, Int(extent)), Name(prefix + name))
    return out


@dataclass(frozen=True)
class Chunk:
    """An import delivered in chunks: dimension ``dim`` in pieces of ``size``."""

    dim: str
    size: int


@dataclass(frozen=True)
class LayoutMap:
    """A closed-form layout map (see the module docstring for kinds and conventions)."""

    kind: str
    params: tuple[tuple[str, int], ...]
    outputs: tuple[str, ...]
    exprs: tuple[Expr, ...]
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown layout map kind {self.kind!r}")
        if len(self.outputs) != len(self.exprs):
            raise ValueError("a layout map needs one expression per output")
        all_names = [n for n, _ in self.params] + list(self.outputs)
        if len(set(all_names)) != len(all_names):
            raise ValueError(f"duplicate names in layout map: {all_names}")
        for name in all_names:
            if not name.isidentifier():
                raise ValueError(f"layout map name {name!r} is not an identifier")
        if not self.params or any(extent < 1 for _, extent in self.params):
            raise ValueError("a layout map needs variables with extents of at least 1")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple(extent for _, extent in self.params)

    @property
    def size(self) -> int:
        """Number of slots (the product of the extents)."""
        return math.prod(self.extents)

    @property
    def thread(self) -> tuple[str, int]:
        """The thread variable of a register map."""
        return self.params[0]

    @cached_property
    def function(self) -> Callable[..., tuple[int, ...]]:
        """Compiled evaluation: positional slot values → output values."""
        return ex.compile_function(self.names, self.exprs)

    def evaluate(self, slot: Mapping[str, int] | Sequence[int]) -> tuple[int, ...]:
        """Output values at one slot, given by name or positionally."""
        values = [slot[n] for n in self.names] if isinstance(slot, Mapping) else list(slot)
        try:
            return self.function(*values)
        except ZeroDivisionError as exc:
            raise EvalError("division by zero") from exc

    def slots(self) -> Iterator[tuple[int, ...]]:
        """Every slot, row-major in declaration order."""
        return product(*(range(extent) for extent in self.extents))

    def items(self) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
        """``(slot, outputs)`` for every slot."""
        function = self.function
        for slot in self.slots():
            yield slot, function(*slot)

    @cached_property
    def inverse(self) -> dict[tuple[int, ...], tuple[int, ...]]:
        """Outputs → slot, by enumeration (meaningful once the map is proven exact)."""
        return {image: slot for slot, image in self.items()}

    def at(self, values: Mapping[str, Expr]) -> tuple[Expr, ...]:
        """The output expressions with variables replaced by expressions."""
        return tuple(ex.substitute(e, values) for e in self.exprs)

    def renamed(self, prefix: str) -> tuple[tuple[tuple[str, int], ...], tuple[Expr, ...]]:
        """Variables renamed ``prefix + name`` and the outputs over them (for queries)."""
        params = tuple((prefix + n, e) for n, e in self.params)
        return params, self.at({n: Name(prefix + n) for n in self.names})

    def to_text(self) -> str:
        """Contract syntax: ``regs(t: 32, r: 4) -> (m, n) { m = ...  n = ... }``."""
        params = ", ".join(f"{n}: {e}" for n, e in self.params)
        body = "  ".join(f"{o} = {to_text(e)}" for o, e in zip(self.outputs, self.exprs, strict=True))
        return f"{self.kind}({params}) -> ({', '.join(self.outputs)}) {{ {body} }}"

    def __str__(self) -> str:
        return self.to_text()


def equivalent(a: LayoutMap, b: LayoutMap, rlimit: int = DEFAULT_RLIMIT) -> Verdict:
    """``UNSAT`` when the two maps agree on every slot (same variables and outputs)."""
    if a.params != b.params or a.outputs != b.outputs:
        return Verdict.SAT
    differs = ex.disj([ex.compare("!=", x, y) for x, y in zip(a.exprs, b.exprs, strict=True)])
    return solve(Query(a.params, (differs,)), rlimit).verdict


# ---------------------------------------------------------------------------------------
# L-MAP


def _span_of(expr: Expr, fallback: Span) -> Span:
    span = getattr(expr, "span", UNKNOWN_SPAN)
    return fallback if span == UNKNOWN_SPAN else span


def _diag(
    message: str,
    layout: LayoutMap,
    *,
    check: str,
    span: Span | None = None,
    label: str = "",
    notes: tuple[str, ...] = (),
    helps: tuple[str, ...] = (),
    data: tuple[tuple[str, str], ...] = (),
) -> Diagnostic:
    labels = (Label(span or layout.span, label or "map declared here", True),)
    return Diagnostic(
        code=Code.L_MAP,
        message=message,
        labels=labels,
        notes=(*notes, f"the map: `{layout.to_text()}`"),
        helps=helps,
        data=(("check", check), *data),
    )


def _unknown(layout: LayoutMap, what: str, check: str, answer: Answer) -> Diagnostic:
    return _diag(
        f"could not decide whether {what} is exact ({check}): the solver gave up",
        layout,
        check=check,
        notes=(f"solver: {answer.reason}",),
        helps=("simplify the map's expressions, or raise the solver's resource limit",),
    )


def _structure(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk | None) -> list[Diagnostic]:
    """Shape errors that make the exactness queries meaningless."""
    out: list[Diagnostic] = []
    tile_names = tuple(n for n, _ in tile)
    if layout.kind == SMEM:
        if layout.params != tile:
            out.append(
                _diag(
                    f"{what} takes `({', '.join(f'{n}: {e}' for n, e in layout.params)})` but the "
                    f"tile is `{tile_text(tile)}`",
                    layout,
                    check="shape",
                    helps=("give a shared-memory map one variable per tile dimension, with its extent",),
                )
            )
        if len(layout.outputs) != 1:
            out.append(_diag(f"{what} must have one output, the byte address", layout, check="shape"))
    elif layout.outputs != tile_names:
        out.append(
            _diag(
                f"{what} has outputs `({', '.join(layout.outputs)})` but the tile's dimensions are "
                f"`({', '.join(tile_names)})`",
                layout,
                check="shape",
                helps=("name the outputs after the tile's dimensions, in order",),
            )
        )
    if layout.kind == TMEM and len(layout.params) != 2:
        out.append(_diag(f"{what} must take two variables, lane and column", layout, check="shape"))
    if chunk is not None:
        out.extend(_chunk_structure(layout, tile, what, chunk))
    known = set(layout.names)
    for output, expr in zip(layout.outputs, layout.exprs, strict=True):
        unknown = sorted(names(expr) - known)
        if unknown:
            out.append(
                _diag(
                    f"{what} uses `{unknown[0]}` in `{output}`, which is not one of its variables",
                    layout,
                    check="shape",
                    span=_span_of(expr, layout.span),
                    label="unknown variable",
                )
            )
            continue
        bad = ex.first_non_arith(expr)
        if bad is not None:
            op = bad.op if isinstance(bad, BinOp) else "not"
            out.append(
                _diag(
                    f"{what} uses `{op}` in `{output}`; layout maps use only `+ - * / %`",
                    layout,
                    check="shape",
                    span=_span_of(bad, _span_of(expr, layout.span)),
                    label="not integer arithmetic",
                )
            )
            continue
        try:
            ex.bounds(expr, {n: (0, e - 1) for n, e in layout.params})
        except ex.BoundsError as err:
            out.append(
                _diag(
                    f"{what} may divide by zero or a negative value in `{to_text(err.node)}`",
                    layout,
                    check="shape",
                    span=_span_of(err.node, _span_of(expr, layout.span)),
                    label="divisor not always positive",
                )
            )
    return out


def _chunk_structure(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk) -> list[Diagnostic]:
    extents = dict(tile)
    if chunk.dim not in extents or chunk.size < 1 or extents[chunk.dim] % chunk.size:
        return []  # L-TENSOR reports a chunking the tile does not allow
    count = extents[chunk.dim] // chunk.size
    if layout.kind != REGS or len(layout.params) < 2:
        return [
            _diag(
                f"{what} is chunked but has no chunk variable",
                layout,
                check="chunk",
                helps=("make the demand's last variable the chunk index",),
            )
        ]
    name, extent = layout.params[-1]
    if extent != count:
        return [
            _diag(
                f"{what} has chunk variable `{name}: {extent}` but `{chunk.dim} {extents[chunk.dim]}` "
                f"in chunks of {chunk.size} makes {count} chunks",
                layout,
                check="chunk",
                notes=("the last variable of a chunked demand is the chunk index",),
            )
        ]
    return []


def check_map(
    layout: LayoutMap,
    tile: Tile,
    *,
    what: str = "the layout map",
    chunk: Chunk | None = None,
    elem_bytes: int | None = None,
    rlimit: int = DEFAULT_RLIMIT,
) -> list[Diagnostic]:
    """L-MAP: ``layout`` must be exact over ``tile``; one diagnostic per defect, with a witness.

    ``what`` names the map in messages (e.g. "placement of `accumulator`"). With ``chunk``
    the map is a chunked demand: its last variable is the chunk index and every slot of
    chunk ``c`` must name an element of chunk ``c``. ``elem_bytes`` lets a shared-memory
    map be checked for overlapping elements and alignment.
    """
    shape = _structure(layout, tile, what, chunk)
    if shape:
        return shape
    with session():
        return _check_exact(layout, tile, what, chunk, elem_bytes, rlimit)


def _check_exact(
    layout: LayoutMap,
    tile: Tile,
    what: str,
    chunk: Chunk | None,
    elem_bytes: int | None,
    rlimit: int,
) -> list[Diagnostic]:
    if layout.kind == SMEM:
        return _check_addresses(layout, what, elem_bytes or 1, rlimit)
    out: list[Diagnostic] = []
    in_range = True
    injective = True
    answer = _out_of_range(layout, tile, rlimit)
    if answer.verdict is Verdict.SAT:
        in_range = False
        slot = tuple(answer.value(n) for n in layout.names)
        element = layout.evaluate(slot)
        bad = next(i for i, (v, (_, e)) in enumerate(zip(element, tile, strict=True)) if not 0 <= v < e)
        out.append(
            _diag(
                f"{what} sends slot `{point_text(layout.names, slot)}` to "
                f"`{point_text(layout.outputs, element)}`, outside the tile `{tile_text(tile)}`",
                layout,
                check="out-of-range",
                span=_span_of(layout.exprs[bad], layout.span),
                label=f"`{layout.outputs[bad]}` leaves the tile",
                data=(("slot", point_text(layout.names, slot)), ("element", point_text(layout.outputs, element))),
            )
        )
    elif answer.verdict is Verdict.UNKNOWN:
        return [_unknown(layout, what, "out-of-range", answer)]
    answer = _collision(layout, tile, rlimit)
    if answer.verdict is Verdict.SAT:
        injective = False
        a = tuple(answer.value("a." + n) for n in layout.names)
        b = tuple(answer.value("b." + n) for n in layout.names)
        element = layout.evaluate(a)
        out.append(
            _diag(
                f"{what} sends slots `{point_text(layout.names, a)}` and `{point_text(layout.names, b)}` "
                f"to one element `{point_text(layout.outputs, element)}`",
                layout,
                check="collision",
                label="not one-to-one",
                data=(
                    ("slot", point_text(layout.names, a)),
                    ("other_slot", point_text(layout.names, b)),
                    ("element", point_text(layout.outputs, element)),
                ),
            )
        )
    elif answer.verdict is Verdict.UNKNOWN:
        return [_unknown(layout, what, "collision", answer)]
    missing = _missing(layout, tile, in_range and injective)
    if missing is not None:
        verb = "demands" if what.startswith("demand") else "places"
        out.append(
            _diag(
                f"{what} never {verb} element `{point_text(layout.outputs, missing)}`",
                layout,
                check="missing",
                label="does not cover the tile",
                notes=(f"the map has {layout.size} slots for the {tile_size(tile)} elements of `{tile_text(tile)}`",),
                data=(("element", point_text(layout.outputs, missing)),),
            )
        )
    if not out and chunk is not None:
        out.extend(_check_chunks(layout, tile, what, chunk, rlimit))
    return out


def _out_of_range(layout: LayoutMap, tile: Tile, rlimit: int) -> Answer:
    conds = []
    for expr, (_, extent) in zip(layout.exprs, tile, strict=True):
        conds.append(ex.compare("<", expr, Int(0)))
        conds.append(ex.compare(">=", expr, Int(extent)))
    return solve(Query(layout.params, (ex.disj(conds),)), rlimit)


def _collision(layout: LayoutMap, tile: Tile, rlimit: int) -> Answer:
    pa, ea = layout.renamed("a.")
    pb, eb = layout.renamed("b.")
    same = [ex.compare("==", x, y) for x, y in zip(ea, eb, strict=True)]
    inside = []
    for expr, (_, extent) in zip(ea, tile, strict=True):
        inside.append(ex.compare(">=", expr, Int(0)))
        inside.append(ex.compare("<", expr, Int(extent)))
    distinct = ex.disj([ex.compare("!=", Name("a." + n), Name("b." + n)) for n in layout.names])
    return solve(Query(pa + pb, (*same, *inside, distinct)), rlimit)


def _missing(layout: LayoutMap, tile: Tile, exact_so_far: bool) -> tuple[int, ...] | None:
    """An element no slot maps to, or None. Proven absent by counting when in range and injective."""
    if exact_so_far and layout.size >= tile_size(tile):
        return None
    covered = {image for _, image in layout.items()}
    for element in product(*(range(extent) for _, extent in tile)):
        if element not in covered:
            return element
    return None


def _check_chunks(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk, rlimit: int) -> list[Diagnostic]:
    dims = [n for n, _ in tile]
    expr = layout.exprs[dims.index(chunk.dim)]
    name = layout.params[-1][0]
    wrong = ex.compare("!=", ex.div(expr, Int(chunk.size)), Name(name))
    answer = solve(Query(layout.params, (wrong,)), rlimit)
    if answer.verdict is Verdict.UNKNOWN:
        return [_unknown(layout, what, "chunk", answer)]
    if answer.verdict is Verdict.UNSAT:
        return []
    slot = tuple(answer.value(n) for n in layout.names)
    element = layout.evaluate(slot)
    return [
        _diag(
            f"{what} asks for `{point_text(layout.outputs, element)}` in chunk {slot[-1]}, but that "
            f"element is in chunk {element[dims.index(chunk.dim)] // chunk.size}",
            layout,
            check="chunk",
            span=_span_of(expr, layout.span),
            label="element of another chunk",
            notes=(
                f"chunk `{name}` covers `{chunk.dim}` in [{chunk.size} * {name}, {chunk.size} * {name} + {chunk.size})",
            ),
            data=(("slot", point_text(layout.names, slot)), ("element", point_text(layout.outputs, element))),
        )
    ]


def _check_addresses(layout: LayoutMap, what: str, elem_bytes: int, rlimit: int) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    (expr,) = layout.exprs
    bad = (
        ex.disj(
            [
                ex.compare("<", expr, Int(0)),
                ex.compare("!=", ex.mod(expr, Int(elem_bytes)), Int(0)),
            ]
        )
        if elem_bytes > 1
        else ex.compare("<", expr, Int(0))
    )
    answer = solve(Query(layout.params, (bad,)), rlimit)
    if answer.verdict is Verdict.UNKNOWN:
        return [_unknown(layout, what, "address", answer)]
    if answer.verdict is Verdict.SAT:
        element = tuple(answer.value(n) for n in layout.names)
        (address,) = layout.evaluate(element)
        out.append(
            _diag(
                f"{what} puts element `{point_text(layout.names, element)}` at address {address}, "
                f"which is negative or not a multiple of {elem_bytes}",
                layout,
                check="out-of-range",
                span=_span_of(expr, layout.span),
                label="bad address",
                data=(("element", point_text(layout.names, element)), ("address", str(address))),
            )
        )
    pa, (ea,) = layout.renamed("a.")
    pb, (eb,) = layout.renamed("b.")
    overlap = (ex.compare("<", ea, ex.add(eb, Int(elem_bytes))), ex.compare("<", eb, ex.add(ea, Int(elem_bytes))))
    distinct = ex.disj([ex.compare("!=", Name("a." + n), Name("b." + n)) for n in layout.names])
    answer = solve(Query(pa + pb, (*overlap, distinct)), rlimit)
    if answer.verdict is Verdict.UNKNOWN:
        return [_unknown(layout, what, "collision", answer)]
    if answer.verdict is Verdict.SAT:
        a = tuple(answer.value("a." + n) for n in layout.names)
        b = tuple(answer.value("b." + n) for n in layout.names)
        out.append(
            _diag(
                f"{what} stores elements `{point_text(layout.names, a)}` and `{point_text(layout.names, b)}` "
                f"at overlapping addresses {layout.evaluate(a)[0]} and {layout.evaluate(b)[0]}",
                layout,
                check="collision",
                span=_span_of(expr, layout.span),
                label="not one-to-one",
                data=(("element", point_text(layout.names, a)), ("other_element", point_text(layout.names, b))),
            )
        )
    return out
