"""Layout maps: evaluation, printing, Z3 exactness (L-MAP) with witnesses."""

from __future__ import annotations

from contract_lang.expr import BinOp, Int, Name, to_text
from diagnostics.span import Span
from transfer_model.library import wgmma_m64nNk16_f32
from transfer_model.maps import REGS, SMEM, Chunk, LayoutMap, check_map, equivalent

from .builders import SKETCH_TILE, b, regs, sketch_demand, sketch_placement

TILE_16x8 = (("m", 16), ("n", 8))


def _data(diag: object) -> dict[str, str]:
    return dict(diag.data)  # type: ignore[attr-defined]


def test_evaluate_enumerate_and_print() -> None:
    layout = sketch_placement()
    assert layout.evaluate({"t": 37, "r": 6}) == (16 + 5 // 4 + 8, 8 + 2 + 0)
    assert layout.evaluate((37, 6)) == layout.evaluate({"t": 37, "r": 6})
    assert layout.size == 256 * 128
    items = list(layout.items())
    assert len(items) == layout.size and items[0] == ((0, 0), (0, 0))
    m, n = (to_text(e) for e in layout.exprs)
    assert layout.to_text() == f"regs(t: 256, r: 128) -> (m, n) {{ m = {m}  n = {n} }}"
    assert m.startswith("64 * (t / 128) + 16 * ") and n == "8 * (r / 4) + 2 * (t % 4) + r % 2"
    assert str(layout) == layout.to_text()


def test_sketch_maps_are_exact() -> None:
    assert check_map(sketch_placement(), SKETCH_TILE) == []
    assert check_map(sketch_demand(), SKETCH_TILE, chunk=Chunk("n", 32)) == []


def test_library_equals_sketch_node_for_node_and_by_proof() -> None:
    assert wgmma_m64nNk16_f32(256, 2) == sketch_placement()
    assert equivalent(wgmma_m64nNk16_f32(256, 2), sketch_placement()).unsat
    shifted = regs((("t", 256), ("r", 128)), sketch_placement().exprs[0], b("%", "r", 2))
    assert equivalent(shifted, sketch_placement()).sat


def test_out_of_range_with_witness_and_span() -> None:
    span = Span("acc.kc", 4, 13, 4, 14)
    layout = LayoutMap(REGS, (("t", 32), ("r", 4)), ("m", "n"), (Name("t", span), Name("r")))
    (diag,) = [d for d in check_map(layout, TILE_16x8, what="placement of `x`") if _data(d)["check"] == "out-of-range"]
    assert diag.code == "L-MAP"
    assert diag.message.startswith("placement of `x` sends slot `(t=")
    assert "outside the tile `m 16 n 8`" in diag.message
    t = int(_data(diag)["slot"].split("t=")[1].split(",")[0])
    assert t >= 16  # the witness really leaves the tile
    assert diag.labels[0].span == span and diag.labels[0].primary


def test_collision_with_witness() -> None:
    layout = regs((("t", 32), ("r", 4)), b("/", "t", 2), "r")  # 128 slots onto 16 x 4 elements of 16 x 8
    diags = check_map(layout, TILE_16x8, what="placement of `x`")
    (collision,) = [d for d in diags if _data(d)["check"] == "collision"]
    data = _data(collision)
    a = tuple(int(p.split("=")[1]) for p in data["slot"].strip("()").split(", "))
    c = tuple(int(p.split("=")[1]) for p in data["other_slot"].strip("()").split(", "))
    assert a != c and layout.evaluate(a) == layout.evaluate(c)
    missing = [d for d in diags if _data(d)["check"] == "missing"]
    assert missing and "never places element" in missing[0].message


def test_missing_element_with_witness() -> None:
    layout = regs((("t", 32), ("r", 2)), b("/", "t", 2), b("+", b("*", 4, b("%", "t", 2)), "r"))
    (diag,) = check_map(layout, TILE_16x8, what="demand of `y`")
    assert _data(diag)["check"] == "missing"
    assert "demand of `y` never demands element" in diag.message
    element = tuple(int(p.split("=")[1]) for p in _data(diag)["element"].strip("()").split(", "))
    assert element not in {image for _, image in layout.items()}
    assert "64 slots for the 128 elements" in diag.notes[0]


def test_shape_errors() -> None:
    unknown = regs((("t", 32), ("r", 4)), "q", "r")
    assert "uses `q` in `m`, which is not one of its variables" in check_map(unknown, TILE_16x8)[0].message
    compare = regs((("t", 32), ("r", 4)), b("*", 8, b(">=", "r", 2)), "r")
    assert "uses `>=`" in check_map(compare, TILE_16x8)[0].message
    divide = regs((("t", 32), ("r", 4)), b("/", "t", "r"), "r")
    assert "may divide by zero" in check_map(divide, TILE_16x8)[0].message
    outputs = LayoutMap(REGS, (("t", 32), ("r", 4)), ("row", "col"), (Name("t"), Name("r")))
    assert "has outputs `(row, col)`" in check_map(outputs, TILE_16x8)[0].message
    assert all(d.code == "L-MAP" for d in check_map(outputs, TILE_16x8))


def test_chunked_demand_checks() -> None:
    wrong_extent = regs((("t", 128), ("p", 32), ("c", 4)), "t", b("+", b("*", 32, "c"), "p"))
    (diag,) = check_map(wrong_extent, SKETCH_TILE, what="demand of `acc`", chunk=Chunk("n", 32))
    assert "has chunk variable `c: 4` but `n 256` in chunks of 32 makes 8 chunks" in diag.message
    swapped = regs((("t", 128), ("p", 32), ("c", 8)), "t", b("+", b("*", 8, "p"), "c"))
    (diag,) = check_map(swapped, SKETCH_TILE, what="demand of `acc`", chunk=Chunk("n", 32))
    assert _data(diag)["check"] == "chunk"
    slot = tuple(int(p.split("=")[1]) for p in _data(diag)["slot"].strip("()").split(", "))
    assert swapped.evaluate(slot)[1] // 32 != slot[-1]


def test_shared_memory_maps() -> None:
    row_major = LayoutMap(SMEM, TILE_16x8, ("addr",), (b("*", 4, b("+", b("*", 8, "m"), "n")),))
    assert check_map(row_major, TILE_16x8, elem_bytes=4) == []
    packed = LayoutMap(SMEM, TILE_16x8, ("addr",), (b("+", b("*", 8, "m"), "n"),))
    diags = check_map(packed, TILE_16x8, elem_bytes=4)
    checks = {_data(d)["check"] for d in diags}
    assert checks == {"out-of-range", "collision"}  # misaligned, and 4-byte elements overlap
    wrong_params = LayoutMap(SMEM, (("m", 8), ("n", 8)), ("addr",), (Name("m"),))
    assert "takes `(m: 8, n: 8)` but the tile is `m 16 n 8`" in check_map(wrong_params, TILE_16x8)[0].message


def test_undecided_is_reported_not_passed() -> None:
    hard = regs(
        (("t", 256), ("r", 45)),
        b("/", b("%", b("*", b("+", b("*", "t", 45), "r"), 7), 11520), 96),
        b("%", b("%", b("*", b("+", b("*", "t", 45), "r"), 7), 11520), 96),
    )
    diags = check_map(hard, (("m", 120), ("n", 96)), rlimit=1000)
    assert diags and diags[0].message.startswith("could not decide whether")


def test_witnesses_are_deterministic() -> None:
    layout = regs((("t", 64), ("r", 4)), b("/", "t", 2), "r")
    tile = (("m", 32), ("n", 8))
    assert check_map(layout, tile) == check_map(layout, tile)


def test_int_encoding_for_negative_intermediates() -> None:
    reversed_rows = regs((("t", 16), ("r", 8)), b("-", 15, "t"), "r")
    assert check_map(reversed_rows, TILE_16x8) == []
    off_by_one = regs((("t", 16), ("r", 8)), b("-", 16, "t"), "r")
    (diag,) = [d for d in check_map(off_by_one, TILE_16x8) if _data(d)["check"] == "out-of-range"]
    assert _data(diag)["slot"].startswith("(t=0, ")  # only thread 0 reaches row 16


def test_layout_map_validation() -> None:
    for bad in (
        lambda: LayoutMap("vram", (("t", 32),), ("m",), (Name("t"),)),
        lambda: LayoutMap(REGS, (("t", 32),), ("m", "n"), (Name("t"),)),
        lambda: LayoutMap(REGS, (("t", 0),), ("m",), (Name("t"),)),
        lambda: LayoutMap(REGS, (("t", 32), ("t", 2)), ("m",), (Name("t"),)),
        lambda: LayoutMap(REGS, (("t.x", 32),), ("m",), (Name("t"),)),
    ):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("accepted an invalid layout map")
    assert BinOp("+", Int(1), Int(2)) == b("+", 1, 2)
