"""Hypothesis strategies for layout maps and export/import seams.

Maps are bit permutations over power-of-two extents: each bit of each variable goes to
one bit of one output, which covers the GPU layouts built from ``/`` and ``%`` by powers
of two (MMA fragments, row/column-per-thread, interleavings). ``seams`` builds whole
scenarios: a register or tensor-memory placement, a demand that is random, a lane or
register permutation of the placement (register-route cases) or a tcgen05.ld-shaped
view of it (tensor-memory cases), optional chunking, thread positions and lends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from contract_lang.expr import Expr, Int, Name
from transfer_model import exprs as ex
from transfer_model.library import TCGEN05_SHAPES, tcgen05_ld_fragment
from transfer_model.maps import REGS, TMEM, Chunk, LayoutMap, Tile
from transfer_model.tensors import ELEM_BYTES, Lends, RoleThreads, TensorExport, TensorImport

Bit = tuple[str, int]


def _log2(value: int) -> int:
    if value < 1 or value & (value - 1):
        raise ValueError(f"{value} is not a power of two")
    return value.bit_length() - 1


def bits_of(params: Sequence[tuple[str, int]]) -> list[Bit]:
    """``(name, bit)`` for every bit of every power-of-two variable, low bits first."""
    return [(name, b) for name, extent in params for b in range(_log2(extent))]


def bit_map(
    kind: str,
    params: Sequence[tuple[str, int]],
    dims: Sequence[tuple[str, int]],
    assignment: dict[Bit, Bit],
) -> LayoutMap:
    """The layout map sending variable bit ``k`` to output bit ``assignment[k]``.

    Runs of consecutive bits that stay consecutive become one term
    ``2**b * ((v / 2**a) % 2**len)``.
    """
    extents = dict(params)
    outputs: list[Expr] = []
    for dim, _ in dims:
        sources = sorted(((out_bit, src) for src, (d, out_bit) in assignment.items() if d == dim))
        terms: list[tuple[int, str, int, int]] = []  # (out bit, var, first bit, length)
        for out_bit, (name, bit) in sources:
            if terms:
                o, n, b, length = terms[-1]
                if n == name and b + length == bit and o + length == out_bit:
                    terms[-1] = (o, n, b, length + 1)
                    continue
            terms.append((out_bit, name, bit, 1))
        expr: Expr = Int(0)
        for out_bit, name, bit, length in terms:
            field_: Expr = ex.div(Name(name), Int(1 << bit))
            if bit + length < _log2(extents[name]):
                field_ = ex.mod(field_, Int(1 << length))
            expr = ex.add(expr, ex.mul(Int(1 << out_bit), field_))
        outputs.append(expr)
    return LayoutMap(kind, tuple(params), tuple(d for d, _ in dims), tuple(outputs))


@st.composite
def bit_maps(
    draw: st.DrawFn,
    kind: str,
    params: Sequence[tuple[str, int]],
    dims: Sequence[tuple[str, int]],
    fixed: dict[Bit, Bit] | None = None,
) -> LayoutMap:
    """A random exact bit-permutation map; ``fixed`` pins some variable bits to output bits."""
    fixed = dict(fixed or {})
    free_src = [b for b in bits_of(params) if b not in fixed]
    free_dst = [b for b in bits_of(dims) if b not in fixed.values()]
    order = draw(st.permutations(free_dst))
    return bit_map(kind, params, dims, {**fixed, **dict(zip(free_src, order, strict=True))})


@dataclass(frozen=True)
class Scenario:
    export: TensorExport
    imp: TensorImport
    lends: Lends
    target_has_tmem: bool


def _powers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.sampled_from([1 << k for k in range(_log2(lo), _log2(hi) + 1)])


@st.composite
def seams(draw: st.DrawFn, max_elements: int = 2048) -> Scenario:
    """A placement/demand pair with threads and lends, biased towards every rung of the ladder."""
    use_tmem = draw(st.integers(0, 2)) == 0
    m = draw(_powers(16 if use_tmem else 8, 64))
    n = draw(_powers(8, max(8, min(64, max_elements // m))))
    tile: Tile = (("m", m), ("n", n))
    elements = m * n
    elem = draw(st.sampled_from(["f32", "f32", "bf16"]))
    has_tmem = draw(st.integers(0, 3)) > 0 if use_tmem else draw(st.booleans())
    if use_tmem:
        lanes = min(128, elements)
        placement = draw(bit_maps(TMEM, (("lane", lanes), ("col", elements // lanes)), tile))
        producer = RoleThreads(0, 128)
    else:
        threads = draw(_powers(32, min(256, elements)))
        regs = elements // threads
        reg_params: tuple[tuple[str, int], ...] = (("r", regs),)
        if regs >= 4 and draw(st.booleans()):
            reg_params = (("a", 2), ("r", regs // 2))
        placement = draw(bit_maps(REGS, (("t", threads), *reg_params), tile))
        producer = RoleThreads(0, threads)
    style = draw(st.sampled_from(["random", "tmem" if use_tmem else "permuted"]))
    chunk: Chunk | None = None
    if style == "permuted" and placement.kind == REGS:
        consumer = producer
        demand = draw(_permuted(placement))
    elif style == "tmem" and placement.kind == TMEM and placement.params[0][1] == 128:
        consumer = RoleThreads(draw(st.sampled_from([0, 128, 32])), 128)
        demand = draw(_tmem_view(placement))
    else:
        consumer_threads = draw(_powers(32, min(256, elements)))
        same = consumer_threads == producer.count and placement.kind == REGS and draw(st.booleans())
        consumer = producer if same else RoleThreads(producer.end, consumer_threads)
        regs = elements // consumer_threads
        if draw(st.booleans()) and n >= 16:
            size = draw(_powers(8, n // 2))
            chunks = n // size
            chunk = Chunk("n", size)
            per_call = regs // chunks
            if per_call >= 1:
                params = (("t", consumer_threads), ("p", per_call), ("c", chunks))
                pinned = {("c", b): ("n", _log2(size) + b) for b in range(_log2(chunks))}
                demand = draw(bit_maps(REGS, params, tile, pinned))
            else:
                chunk = None
        if chunk is None:
            demand = draw(bit_maps(REGS, (("t", consumer_threads), ("r", regs)), tile))
    tile_bytes = elements * ELEM_BYTES[elem]
    lend = draw(st.sampled_from([None, 0, tile_bytes // 8, tile_bytes // 2, tile_bytes]))
    export = TensorExport("x", "producer", elem, tile, placement, producer)
    imp = TensorImport("y", "x", "consumer", elem, tile, demand, consumer, chunk)
    return Scenario(export, imp, Lends(lend), has_tmem)


@st.composite
def _permuted(draw: st.DrawFn, placement: LayoutMap) -> LayoutMap:
    """``D(t, r) = P(sigma(t), tau(r))``: lanes permuted within each warp, registers rotated."""
    (t, _), *regs = placement.params
    lane = ex.mod(Name(t), Int(32))
    how = draw(st.sampled_from(["same", "rotate", "multiply"]))
    if how == "same":
        sigma: Expr = Name(t)
    else:
        k = draw(st.integers(1, 31)) | (1 if how == "multiply" else 0)
        moved = ex.add(lane, Int(k)) if how == "rotate" else ex.mul(lane, Int(k))
        sigma = ex.add(ex.mul(Int(32), ex.div(Name(t), Int(32))), ex.mod(moved, Int(32)))
    values: dict[str, Expr] = {t: sigma}
    for name, extent in regs:
        shift = draw(st.integers(0, extent - 1))
        values[name] = ex.mod(ex.add(Name(name), Int(shift)), Int(extent))
    return LayoutMap(REGS, placement.params, placement.outputs, placement.at(values))


@st.composite
def _tmem_view(draw: st.DrawFn, placement: LayoutMap) -> LayoutMap:
    """What 128 threads receive from ``tcgen05.ld`` loads of one random shape, as a demand.

    ``D(t, i, j) = P(lane, col)`` with load ``i`` of warp ``w = t / 32`` based at lane
    ``32 w + L * (i % (32 / L))`` and column ``C * (i / (32 / L))`` (``L`` lanes and ``C``
    columns per load), register ``j`` of the load at the shape's fragment offset.
    """
    (lane, _), (col, cols) = placement.params
    options = [
        (shape, num)
        for shape, info in TCGEN05_SHAPES.items()
        for num in info.nums()
        if info.columns(num) <= cols and num <= 8
    ]
    shape, num = draw(st.sampled_from(options))
    info = TCGEN05_SHAPES[shape]
    halves = 32 // info.lanes
    loads = halves * (cols // info.columns(num))
    frag_lane, frag_col = tcgen05_ld_fragment(shape, num).at({"T": ex.mod(Name("t"), Int(32)), "j": Name("j")})
    which = Name("i")
    lane_expr = ex.add(
        ex.add(ex.mul(Int(32), ex.div(Name("t"), Int(32))), ex.mul(Int(info.lanes), ex.mod(which, Int(halves)))),
        frag_lane,
    )
    col_expr = ex.add(ex.mul(Int(info.columns(num)), ex.div(which, Int(halves))), frag_col)
    params = (("t", 128), ("i", loads), ("j", info.registers(num)))
    return LayoutMap(REGS, params, placement.outputs, placement.at({lane: lane_expr, col: col_expr}))
