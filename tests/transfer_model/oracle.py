"""Brute-force verdicts of the route ladder's rungs, by enumerating every consumer slot.

An independent check of the SMT models in ``transfer_model.primitives``: the same
delivery conditions, decided by evaluating the maps on every slot instead of by Z3.
"""

from __future__ import annotations

import math

from transfer_model.library import TCGEN05_SHAPES, tcgen05_ld_fragment
from transfer_model.program import demand_slot
from transfer_model.tensors import ELEM_BYTES, Lends, TensorExport, TensorImport


def _flat(values: tuple[int, ...], params: tuple[tuple[str, int], ...]) -> int:
    out = 0
    for value, (_, extent) in zip(values, params, strict=True):
        out = out * extent + value
    return out


def rung_verdicts(export: TensorExport, imp: TensorImport, lends: Lends, has_tmem: bool) -> dict[str, bool]:
    placement, demand = export.placement, imp.demand
    where = placement.inverse
    regs = math.prod(e for _, e in imp.register_params)
    slots = [
        (t, j, c, where[demand.evaluate(demand_slot(imp, t, j, c))])
        for t in range(imp.threads.count)
        for c in range(imp.chunks)
        for j in range(regs)
    ]
    verdicts = {"tmem-load": False, "register-copy": False, "warp-shuffle": False, "smem-staging": False}
    elem_bytes = ELEM_BYTES[export.elem]
    if placement.kind == "regs":
        reg_params = placement.params[1:]
        source: dict[tuple[int, int], set[int]] = {}
        for _, j, c, slot in slots:
            source.setdefault((j, c), set()).add(_flat(slot[1:], reg_params))
        uniform = all(len(s) == 1 for s in source.values())
        holders = [(imp.threads.first + t, export.threads.first + slot[0]) for t, _, _, slot in slots]
        verdicts["register-copy"] = uniform and all(a == b for a, b in holders)
        verdicts["warp-shuffle"] = uniform and all(a // 32 == b // 32 for a, b in holders)
        same = export.threads == imp.threads
        tile_bytes = placement.size * elem_bytes
        if lends.smem_bytes is not None and (same or not export.threads.overlaps(imp.threads)):
            if lends.smem_bytes >= tile_bytes:
                verdicts["smem-staging"] = True
            elif imp.chunk is not None and not same:
                verdicts["smem-staging"] = lends.smem_bytes >= tile_bytes // imp.chunks
    elif placement.kind == "tmem" and has_tmem and elem_bytes == 4:
        verdicts["tmem-load"] = any(
            _tmem_shape_works(imp, slots, shape, num, regs)
            for shape, info in TCGEN05_SHAPES.items()
            for num in info.nums()
            if regs % info.registers(num) == 0
        )
    return verdicts


def _tmem_shape_works(imp: TensorImport, slots: list, shape: str, num: int, regs: int) -> bool:
    info = TCGEN05_SHAPES[shape]
    width = info.registers(num)
    fragment = tcgen05_ld_fragment(shape, num)
    cells = {(t, j, c): slot for t, j, c, slot in slots}
    for (t, j, c), (lane, col) in cells.items():
        base_lane, base_col = cells[(32 * (t // 32), width * (j // width), c)]
        off_lane, off_col = fragment.evaluate((t % 32, j % width))
        if (lane, col) != (base_lane + off_lane, base_col + off_col):
            return False
        warp = (imp.threads.first + t) // 32
        if base_lane // 32 != warp % 4 or base_lane % info.lanes:
            return False
    return True
