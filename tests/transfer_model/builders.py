"""Shared builders for the transfer-model tests."""

from __future__ import annotations

from contract_lang.expr import BinOp, Expr, Int, Name
from transfer_model.maps import REGS, Chunk, LayoutMap, Tile
from transfer_model.tensors import RoleThreads, TensorExport, TensorImport


def b(op: str, left: Expr | int | str, right: Expr | int | str) -> BinOp:
    """``BinOp`` with ints as ``Int`` and strings as ``Name``."""
    return BinOp(op, _e(left), _e(right))


def _e(value: Expr | int | str) -> Expr:
    if isinstance(value, int):
        return Int(value)
    if isinstance(value, str):
        return Name(value)
    return value


def regs(params: tuple[tuple[str, int], ...], m: Expr | str, n: Expr | str) -> LayoutMap:
    return LayoutMap(REGS, params, ("m", "n"), (_e(m), _e(n)))


def export_of(placement: LayoutMap, tile: Tile, first: int = 0, elem: str = "f32") -> TensorExport:
    threads = placement.thread[1] if placement.kind == REGS else 128
    return TensorExport("accumulator", "mma", elem, tile, placement, RoleThreads(first, threads))


def import_of(
    demand: LayoutMap,
    tile: Tile,
    first: int,
    chunk: Chunk | None = None,
    elem: str = "f32",
    role: str = "epilogue",
) -> TensorImport:
    return TensorImport("acc", "accumulator", role, elem, tile, demand, RoleThreads(first, demand.thread[1]), chunk)


def sketch_placement() -> LayoutMap:
    """The contract sketch's 256-thread wgmma accumulator map, written out by hand."""
    m = b(
        "+",
        b(
            "+",
            b("+", b("*", 64, b("/", "t", 128)), b("*", 16, b("%", b("/", "t", 32), 4))),
            b("/", b("%", "t", 32), 4),
        ),
        b("*", 8, b("%", b("/", "r", 2), 2)),
    )
    n = b("+", b("+", b("*", 8, b("/", "r", 4)), b("*", 2, b("%", "t", 4))), b("%", "r", 2))
    return regs((("t", 256), ("r", 128)), m, n)


def sketch_demand() -> LayoutMap:
    """``demand regs(t: 128, p: 32, c: 8) -> (m, n) { m = t  n = 32 * c + p }``."""
    return regs((("t", 128), ("p", 32), ("c", 8)), "t", b("+", b("*", 32, "c"), "p"))


SKETCH_TILE: Tile = (("m", 128), ("n", 256))
