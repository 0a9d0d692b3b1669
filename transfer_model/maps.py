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

from checker.clauses import l_map
from checker.clauses.l_map import MapCase, MapFinding
from contract_lang.expr import BinOp, EvalError, Expr, Int, Name, names, to_text
from diagnostics.model import Diagnostic
from diagnostics.span import UNKNOWN_SPAN, Span
from solver import SAT, Verdict, Witnessed
from transfer_model import exprs as ex
from transfer_model.smt import DEFAULT_RLIMIT, Query, session, solve

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
    """``unsat`` when the two maps agree on every slot (same variables and outputs)."""
    if a.params != b.params or a.outputs != b.outputs:
        return SAT
    differs = ex.disj([ex.compare("!=", x, y) for x, y in zip(a.exprs, b.exprs, strict=True)])
    return solve(Query(a.params, (differs,)), rlimit).verdict


# ---------------------------------------------------------------------------------------
# L-MAP: the decider; checker/clauses/l_map.py words each finding


def _span_of(expr: Expr, fallback: Span) -> Span:
    span = getattr(expr, "span", UNKNOWN_SPAN)
    return fallback if span == UNKNOWN_SPAN else span


def _found(case: MapCase, layout: LayoutMap, what: str, span: Span | None = None, **facts: object) -> MapFinding:
    return MapFinding(case, what, layout.to_text(), span or layout.span, tuple((k, str(v)) for k, v in facts.items()))


def _unknown(layout: LayoutMap, what: str, check: str, answer: Witnessed) -> MapFinding:
    return _found("undecided", layout, what, check=check, reason=answer.verdict.reason)


def _structure(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk | None) -> list[MapFinding]:
    """Shape errors that make the exactness queries meaningless."""
    out: list[MapFinding] = []
    tile_names = tuple(n for n, _ in tile)
    if layout.kind == SMEM:
        if layout.params != tile:
            variables = ", ".join(f"{n}: {e}" for n, e in layout.params)
            out.append(_found("smem-variables", layout, what, variables=variables, tile=tile_text(tile)))
        if len(layout.outputs) != 1:
            out.append(_found("smem-outputs", layout, what))
    elif layout.outputs != tile_names:
        out.append(_found("outputs", layout, what, outputs=", ".join(layout.outputs), dims=", ".join(tile_names)))
    if layout.kind == TMEM and len(layout.params) != 2:
        out.append(_found("tmem-variables", layout, what))
    if chunk is not None:
        out.extend(_chunk_structure(layout, tile, what, chunk))
    known = set(layout.names)
    for output, expr in zip(layout.outputs, layout.exprs, strict=True):
        unknown = sorted(names(expr) - known)
        if unknown:
            out.append(
                _found("unknown-name", layout, what, _span_of(expr, layout.span), name=unknown[0], output=output)
            )
            continue
        bad = ex.first_non_arith(expr)
        if bad is not None:
            op = bad.op if isinstance(bad, BinOp) else "not"
            span = _span_of(bad, _span_of(expr, layout.span))
            out.append(_found("not-arithmetic", layout, what, span, op=op, output=output))
            continue
        try:
            ex.bounds(expr, {n: (0, e - 1) for n, e in layout.params})
        except ex.BoundsError as err:
            span = _span_of(err.node, _span_of(expr, layout.span))
            out.append(_found("divisor", layout, what, span, divisor=to_text(err.node)))
    return out


def _chunk_structure(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk) -> list[MapFinding]:
    extents = dict(tile)
    if chunk.dim not in extents or chunk.size < 1 or extents[chunk.dim] % chunk.size:
        return []  # L-TENSOR reports a chunking the tile does not allow
    count = extents[chunk.dim] // chunk.size
    if layout.kind != REGS or len(layout.params) < 2:
        return [_found("no-chunk-variable", layout, what)]
    name, extent = layout.params[-1]
    if extent != count:
        return [
            _found(
                "chunk-count",
                layout,
                what,
                variable=name,
                extent=extent,
                dim=chunk.dim,
                dim_extent=extents[chunk.dim],
                size=chunk.size,
                count=count,
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
    found = _structure(layout, tile, what, chunk)  # the map's shape first: no SMT query for a malformed map
    if not found:
        with session():
            found = _check_exact(layout, tile, what, chunk, elem_bytes, rlimit)
    return [l_map.inexact(f) for f in found]


def _check_exact(
    layout: LayoutMap,
    tile: Tile,
    what: str,
    chunk: Chunk | None,
    elem_bytes: int | None,
    rlimit: int,
) -> list[MapFinding]:
    if layout.kind == SMEM:
        return _check_addresses(layout, what, elem_bytes or 1, rlimit)
    out: list[MapFinding] = []
    in_range = True
    injective = True
    answer = _out_of_range(layout, tile, rlimit)
    if answer.verdict.sat:
        in_range = False
        slot = tuple(answer.value(n) for n in layout.names)
        element = layout.evaluate(slot)
        bad = next(i for i, (v, (_, e)) in enumerate(zip(element, tile, strict=True)) if not 0 <= v < e)
        out.append(
            _found(
                "out-of-range",
                layout,
                what,
                _span_of(layout.exprs[bad], layout.span),
                slot=point_text(layout.names, slot),
                element=point_text(layout.outputs, element),
                tile=tile_text(tile),
                output=layout.outputs[bad],
            )
        )
    elif answer.verdict.unknown:
        return [_unknown(layout, what, "out-of-range", answer)]
    answer = _collision(layout, tile, rlimit)
    if answer.verdict.sat:
        injective = False
        a = tuple(answer.value("a." + n) for n in layout.names)
        b = tuple(answer.value("b." + n) for n in layout.names)
        element = layout.evaluate(a)
        out.append(
            _found(
                "collision",
                layout,
                what,
                slot=point_text(layout.names, a),
                other_slot=point_text(layout.names, b),
                element=point_text(layout.outputs, element),
            )
        )
    elif answer.verdict.unknown:
        return [_unknown(layout, what, "collision", answer)]
    missing = _missing(layout, tile, in_range and injective)
    if missing is not None:
        out.append(
            _found(
                "missing",
                layout,
                what,
                element=point_text(layout.outputs, missing),
                verb="demands" if what.startswith("demand") else "places",
                slots=layout.size,
                elements=tile_size(tile),
                tile=tile_text(tile),
            )
        )
    if not out and chunk is not None:
        out.extend(_check_chunks(layout, tile, what, chunk, rlimit))
    return out


def _out_of_range(layout: LayoutMap, tile: Tile, rlimit: int) -> Witnessed:
    conds = []
    for expr, (_, extent) in zip(layout.exprs, tile, strict=True):
        conds.append(ex.compare("<", expr, Int(0)))
        conds.append(ex.compare(">=", expr, Int(extent)))
    return solve(Query(layout.params, (ex.disj(conds),)), rlimit)


def _collision(layout: LayoutMap, tile: Tile, rlimit: int) -> Witnessed:
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


def _check_chunks(layout: LayoutMap, tile: Tile, what: str, chunk: Chunk, rlimit: int) -> list[MapFinding]:
    dims = [n for n, _ in tile]
    expr = layout.exprs[dims.index(chunk.dim)]
    name = layout.params[-1][0]
    wrong = ex.compare("!=", ex.div(expr, Int(chunk.size)), Name(name))
    answer = solve(Query(layout.params, (wrong,)), rlimit)
    if answer.verdict.unknown:
        return [_unknown(layout, what, "chunk", answer)]
    if answer.verdict.unsat:
        return []
    slot = tuple(answer.value(n) for n in layout.names)
    element = layout.evaluate(slot)
    return [
        _found(
            "wrong-chunk",
            layout,
            what,
            _span_of(expr, layout.span),
            slot=point_text(layout.names, slot),
            element=point_text(layout.outputs, element),
            asked=slot[-1],
            actual=element[dims.index(chunk.dim)] // chunk.size,
            variable=name,
            dim=chunk.dim,
            size=chunk.size,
        )
    ]


def _check_addresses(layout: LayoutMap, what: str, elem_bytes: int, rlimit: int) -> list[MapFinding]:
    out: list[MapFinding] = []
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
    if answer.verdict.unknown:
        return [_unknown(layout, what, "address", answer)]
    if answer.verdict.sat:
        element = tuple(answer.value(n) for n in layout.names)
        (address,) = layout.evaluate(element)
        out.append(
            _found(
                "bad-address",
                layout,
                what,
                _span_of(expr, layout.span),
                element=point_text(layout.names, element),
                address=address,
                elem_bytes=elem_bytes,
            )
        )
    pa, (ea,) = layout.renamed("a.")
    pb, (eb,) = layout.renamed("b.")
    overlap = (ex.compare("<", ea, ex.add(eb, Int(elem_bytes))), ex.compare("<", eb, ex.add(ea, Int(elem_bytes))))
    distinct = ex.disj([ex.compare("!=", Name("a." + n), Name("b." + n)) for n in layout.names])
    answer = solve(Query(pa + pb, (*overlap, distinct)), rlimit)
    if answer.verdict.unknown:
        return [_unknown(layout, what, "collision", answer)]
    if answer.verdict.sat:
        a = tuple(answer.value("a." + n) for n in layout.names)
        b = tuple(answer.value("b." + n) for n in layout.names)
        out.append(
            _found(
                "overlap",
                layout,
                what,
                _span_of(expr, layout.span),
                element=point_text(layout.names, a),
                other_element=point_text(layout.names, b),
                address=layout.evaluate(a)[0],
                other_address=layout.evaluate(b)[0],
            )
        )
    return out
