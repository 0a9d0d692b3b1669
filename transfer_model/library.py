"""Library layout maps: MMA accumulator placements and tcgen05.ld fragments.

Contracts name these instead of spelling the formulas out
(``placement library wgmma_m64nNk16_f32(n: 256, warpgroups: 2)``); ``library_map``
expands such a reference into the same closed-form ``LayoutMap`` a contract could write.

Sources (specs/hardware.md):

- §7.1 ``mma.sync.aligned.m16n8k16`` f32 accumulator, lane ``l``, ``g = l / 4``,
  register ``c_i``: row ``g + 8 * (i / 2)``, column ``2 * (l % 4) + i % 2``.
  HW-verified on an H200 (tests/transfer_model/data/accumulator_readback.json).
- §7.2 ``wgmma.mma_async.m64nNk16`` f32 accumulator, thread ``t`` of the warpgroup, warp
  ``w = t / 32``, lane ``l``, register ``d_i`` (``N / 2`` registers): row
  ``16 * w + l / 4 + 8 * ((i / 2) % 2)``, column ``8 * (i / 4) + 2 * (l % 4) + i % 2``.
  HW-verified on an H200 for N in {8, 32, 64, 128, 256}.
- §6.2 ``tcgen05.ld`` fragments (sm_100a), decoded from CUTLASS, not hardware-verified.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from contract_lang.expr import Expr, Int, Name
from transfer_model import exprs as ex
from transfer_model.maps import REGS, LayoutMap

_T, _R = Name("t"), Name("r")


class LibraryError(ValueError):
    """A library map reference with unknown name or invalid parameters."""


def _i(value: int) -> Int:
    return Int(value)


def _sum(terms: list[Expr]) -> Expr:
    out = terms[0]
    for term in terms[1:]:
        out = ex.add(out, term)
    return out


def mma_m16n8k16_f32(warps_m: int = 1, warps_n: int = 1, atoms_m: int = 1, atoms_n: int = 1) -> LayoutMap:
    """Accumulators of ``mma.sync.m16n8k16`` (f32) over a grid of warps, each a grid of atoms.

    Warps are ``warps_m x warps_n``, row-major (warp ``w = t / 32`` is at row ``w / warps_n``,
    column ``w % warps_n``); each warp holds ``atoms_m x atoms_n`` 16x8 atoms. Register
    ``r`` is ``4 * atom + i`` with atoms row-major (``atom = am * atoms_n + an``) and ``i``
    the PTX ``c_i``. Tile: ``m 16*atoms_m*warps_m  n 8*atoms_n*warps_n``.
    """
    for name, value in (("warps_m", warps_m), ("warps_n", warps_n), ("atoms_m", atoms_m), ("atoms_n", atoms_n)):
        if value < 1:
            raise LibraryError(f"`mma_m16n8k16_f32` needs `{name}` of at least 1, not {value}")
    threads = 32 * warps_m * warps_n
    registers = 4 * atoms_m * atoms_n
    lane: Expr = _T if threads == 32 else ex.mod(_T, _i(32))
    warp = ex.div(_T, _i(32))
    i: Expr = _R if registers == 4 else ex.mod(_R, _i(4))
    atom = ex.div(_R, _i(4))
    m_terms: list[Expr] = []
    n_terms: list[Expr] = []
    if warps_m > 1:
        m_terms.append(ex.mul(_i(16 * atoms_m), ex.div(warp, _i(warps_n))))
    if warps_n > 1:
        n_terms.append(ex.mul(_i(8 * atoms_n), ex.mod(warp, _i(warps_n))))
    if atoms_m > 1:
        m_terms.append(ex.mul(_i(16), ex.div(atom, _i(atoms_n))))
    if atoms_n > 1:
        n_terms.append(ex.mul(_i(8), ex.mod(atom, _i(atoms_n))))
    m = _sum([*m_terms, ex.div(lane, _i(4)), ex.mul(_i(8), ex.div(i, _i(2)))])
    n = _sum([*n_terms, ex.mul(_i(2), ex.mod(_T, _i(4))), ex.mod(_R, _i(2))])
    return LayoutMap(REGS, (("t", threads), ("r", registers)), ("m", "n"), (m, n))


def wgmma_m64nNk16_f32(n: int, warpgroups: int = 1) -> LayoutMap:
    """Accumulators of ``wgmma.mma_async.m64nNk16`` (f32), warpgroups stacked along ``m``.

    Warpgroup ``t / 128`` holds rows ``64 * (t / 128)`` onwards. Tile:
    ``m 64*warpgroups  n N``; ``N / 2`` registers per thread. For ``n: 256, warpgroups: 2``
    this is the contract sketch's ``regs(t: 256, r: 128)`` map, node for node.
    """
    if n < 8 or n > 256 or n % 8:
        raise LibraryError(f"`wgmma_m64nNk16_f32` needs `n` a multiple of 8 in [8, 256], not {n}")
    if warpgroups < 1:
        raise LibraryError(f"`wgmma_m64nNk16_f32` needs `warpgroups` of at least 1, not {warpgroups}")
    m: Expr = ex.mul(_i(16), ex.mod(ex.div(_T, _i(32)), _i(4)))
    if warpgroups > 1:
        m = ex.add(ex.mul(_i(64), ex.div(_T, _i(128))), m)
    m = ex.add(ex.add(m, ex.div(ex.mod(_T, _i(32)), _i(4))), ex.mul(_i(8), ex.mod(ex.div(_R, _i(2)), _i(2))))
    col = ex.add(ex.add(ex.mul(_i(8), ex.div(_R, _i(4))), ex.mul(_i(2), ex.mod(_T, _i(4)))), ex.mod(_R, _i(2)))
    return LayoutMap(REGS, (("t", 128 * warpgroups), ("r", n // 2)), ("m", "n"), (m, col))


# ---------------------------------------------------------------------------------------
# tcgen05.ld shapes (specs/hardware.md §6.1, §6.2)


@dataclass(frozen=True)
class Tcgen05Shape:
    """One ``tcgen05.ld`` shape: lanes touched, and registers and columns per ``.num`` step."""

    name: str
    lanes: int
    regs_per_num: int
    cols_per_num: int
    max_num: int

    def nums(self) -> tuple[int, ...]:
        """Legal ``.num`` values: powers of two up to ``max_num``."""
        return tuple(1 << k for k in range(self.max_num.bit_length()))

    def registers(self, num: int) -> int:
        return self.regs_per_num * num

    def columns(self, num: int) -> int:
        return self.cols_per_num * num


TCGEN05_SHAPES: dict[str, Tcgen05Shape] = {
    s.name: s
    for s in (
        Tcgen05Shape("32x32b", 32, 1, 1, 128),
        Tcgen05Shape("16x256b", 16, 4, 8, 32),
        Tcgen05Shape("16x128b", 16, 2, 4, 64),
        Tcgen05Shape("16x64b", 16, 1, 2, 128),
        Tcgen05Shape("16x32bx2", 16, 1, 2, 128),
    )
}
"""Shapes in the route ladder's order of preference (at equal instruction counts)."""


def tcgen05_ld_fragment(shape: str, num: int) -> LayoutMap:
    """Thread ``T`` (lane in warp), register ``j`` → (``lane``, ``col``) offsets from the load's base.

    ``.16x32bx2`` uses ``immHalfSplitoff = num`` (CUTLASS's choice), so its second half
    reads the ``num`` columns after the first.
    """
    if shape not in TCGEN05_SHAPES:
        raise LibraryError(f"unknown `tcgen05.ld` shape `{shape}`")
    info = TCGEN05_SHAPES[shape]
    if num not in info.nums():
        raise LibraryError(f"`tcgen05.ld.{shape}` takes `.num` in {list(info.nums())}, not {num}")
    t, j = Name("T"), Name("j")
    lane: Expr
    col: Expr
    if shape == "32x32b":
        lane, col = t, j
    elif shape == "16x256b":
        lane = ex.add(ex.div(t, _i(4)), ex.mul(_i(8), ex.div(ex.mod(j, _i(4)), _i(2))))
        col = ex.add(ex.add(ex.mul(_i(8), ex.div(j, _i(4))), ex.mul(_i(2), ex.mod(t, _i(4)))), ex.mod(j, _i(2)))
    elif shape == "16x128b":
        lane = ex.add(ex.div(t, _i(4)), ex.mul(_i(8), ex.mod(j, _i(2))))
        col = ex.add(ex.mul(_i(4), ex.div(j, _i(2))), ex.mod(t, _i(4)))
    elif shape == "16x64b":
        lane = ex.add(ex.div(t, _i(4)), ex.mul(_i(8), ex.mod(t, _i(2))))
        col = ex.add(ex.mul(_i(2), j), ex.mod(ex.div(t, _i(2)), _i(2)))
    else:
        lane = ex.mod(t, _i(16))
        col = ex.add(j, ex.mul(_i(num), ex.div(t, _i(16))))
    return LayoutMap(REGS, (("T", 32), ("j", info.registers(num))), ("lane", "col"), (lane, col))


LIBRARY: dict[str, Callable[..., LayoutMap]] = {
    "mma_m16n8k16_f32": mma_m16n8k16_f32,
    "wgmma_m64nNk16_f32": wgmma_m64nNk16_f32,
}


def library_map(name: str, params: Mapping[str, int]) -> LayoutMap:
    """Expand ``placement library NAME(k: v, ...)`` into its layout map."""
    if name not in LIBRARY:
        known = ", ".join(f"`{k}`" for k in sorted(LIBRARY))
        raise LibraryError(f"unknown library map `{name}` (known: {known})")
    try:
        return LIBRARY[name](**params)
    except TypeError as exc:
        raise LibraryError(f"library map `{name}` does not take parameters {sorted(params)}") from exc
