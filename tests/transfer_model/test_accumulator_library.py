"""Library maps: bijective, equal to the formulas, and equal to GPU read-back data element by element."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transfer_model.library import (
    TCGEN05_SHAPES,
    LibraryError,
    library_map,
    mma_m16n8k16_f32,
    tcgen05_ld_fragment,
    wgmma_m64nNk16_f32,
)
from transfer_model.maps import check_map

from .builders import sketch_placement

READBACK = Path(__file__).parent / "data" / "accumulator_readback.json"


def _layouts() -> dict[str, dict[str, object]]:
    data = json.loads(READBACK.read_text())
    return data["layouts"]  # type: ignore[no-any-return]


def _library_for(name: str):  # type: ignore[no-untyped-def]
    if name == "mma_m16n8k16_f32":
        return mma_m16n8k16_f32()
    n = int(name.removeprefix("wgmma_m64n").removesuffix("k16_f32"))
    return wgmma_m64nNk16_f32(n)


def test_readback_file_has_the_required_layouts() -> None:
    layouts = _layouts()
    assert {"mma_m16n8k16_f32", "wgmma_m64n32k16_f32"} <= set(layouts)


@pytest.mark.parametrize("name", sorted(_layouts()))
def test_model_matches_readback_element_by_element(name: str) -> None:
    entry = _layouts()[name]
    layout = _library_for(name)
    threads, registers = entry["threads"], entry["registers"]
    assert layout.params == (("t", threads), ("r", registers))
    rows, cols = entry["row"], entry["col"]
    assert isinstance(rows, list) and isinstance(cols, list) and len(rows) == len(cols) == layout.size
    mismatches = [
        (t, r, (rows[t * registers + r], cols[t * registers + r]), layout.evaluate((t, r)))
        for t in range(threads)
        for r in range(registers)  # type: ignore[call-overload]
        if layout.evaluate((t, r)) != (rows[t * registers + r], cols[t * registers + r])
    ]
    assert mismatches == []


@pytest.mark.parametrize("n", range(8, 257, 8))
def test_wgmma_maps_are_bijective(n: int) -> None:
    for warpgroups in (1, 2):
        layout = wgmma_m64nNk16_f32(n, warpgroups)
        assert check_map(layout, (("m", 64 * warpgroups), ("n", n))) == []
        assert layout.params == (("t", 128 * warpgroups), ("r", n // 2))


@pytest.mark.parametrize("grid", [(1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 1, 1), (2, 2, 2, 4), (4, 2, 1, 2), (1, 4, 4, 1)])
def test_mma_maps_are_bijective(grid: tuple[int, int, int, int]) -> None:
    warps_m, warps_n, atoms_m, atoms_n = grid
    layout = mma_m16n8k16_f32(*grid)
    tile = (("m", 16 * atoms_m * warps_m), ("n", 8 * atoms_n * warps_n))
    assert check_map(layout, tile) == []


def test_mma_single_atom_is_the_ptx_formula() -> None:
    layout = mma_m16n8k16_f32()
    for t in range(32):
        for i in range(4):
            assert layout.evaluate((t, i)) == (t // 4 + 8 * (i >= 2), 2 * (t % 4) + (i & 1))


def test_mma_warp_grid_is_row_major() -> None:
    layout = mma_m16n8k16_f32(warps_m=2, warps_n=2)
    assert layout.evaluate((32, 0)) == (0, 8)  # warp 1: row 0, column block 1
    assert layout.evaluate((64, 0)) == (16, 0)  # warp 2: row block 1


@pytest.mark.parametrize("shape", sorted(TCGEN05_SHAPES))
def test_tcgen05_fragments_are_bijective(shape: str) -> None:
    info = TCGEN05_SHAPES[shape]
    for num in info.nums():
        fragment = tcgen05_ld_fragment(shape, num)
        assert fragment.params == (("T", 32), ("j", info.registers(num)))
        assert check_map(fragment, (("lane", info.lanes), ("col", info.columns(num)))) == []


def test_tcgen05_32x32b_is_one_lane_per_thread() -> None:
    fragment = tcgen05_ld_fragment("32x32b", 8)
    assert all(fragment.evaluate((t, j)) == (t, j) for t in range(32) for j in range(8))


def test_library_reference_expands_to_the_sketch_map() -> None:
    assert library_map("wgmma_m64nNk16_f32", {"n": 256, "warpgroups": 2}) == sketch_placement()
    assert library_map("mma_m16n8k16_f32", {}) == mma_m16n8k16_f32()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: wgmma_m64nNk16_f32(12), "multiple of 8"),
        (lambda: wgmma_m64nNk16_f32(264), "multiple of 8"),
        (lambda: wgmma_m64nNk16_f32(64, 0), "warpgroups"),
        (lambda: mma_m16n8k16_f32(warps_m=0), "warps_m"),
        (lambda: tcgen05_ld_fragment("16x256b", 64), ".num"),
        (lambda: tcgen05_ld_fragment("8x8b", 1), "unknown"),
        (lambda: library_map("hgmma", {}), "unknown library map"),
        (lambda: library_map("wgmma_m64nNk16_f32", {"m": 64}), "does not take"),
    ],
)
def test_library_errors(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LibraryError, match=message):
        call()
