"""The route ladder: the cheapest provable rung is chosen; failures name every rung's check."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contract_lang.expr import Expr, Int, Name
from diagnostics.span import Span
from transfer_model import exprs as ex
from transfer_model.library import mma_m16n8k16_f32, wgmma_m64nNk16_f32
from transfer_model.maps import REGS, SMEM, TMEM, Chunk, LayoutMap
from transfer_model.primitives import StagingAddress
from transfer_model.program import Arrive, Copy, LaneSource, Shuffle, Sync, TmemFence, TmemLoad, TmemWait
from transfer_model.routes import RouteResult, select_route
from transfer_model.simulate import expected, simulate
from transfer_model.tensors import Lends, RoleThreads, TensorExport, TensorImport, check_identity

from .builders import SKETCH_TILE, b, export_of, import_of, regs, sketch_demand, sketch_placement

MMA_TILE = (("m", 16), ("n", 8))


def _route(export: TensorExport, imp: TensorImport, lends: Lends | None = None, tmem: bool = False) -> RouteResult:
    lends = lends or Lends()
    result = select_route(export, imp, lends, target_has_tmem=tmem)
    if result.route is not None:
        assert simulate(result.route.program, export) == expected(imp)
    return result


def _lane_permuted(placement: LayoutMap, lane: object) -> LayoutMap:
    """The placement with thread ``t`` replaced by ``32 * (t / 32) + lane(t % 32)``."""
    threads = placement.thread[1]
    sigma = lane if threads == 32 else b("+", b("*", 32, b("/", "t", 32)), lane)  # type: ignore[arg-type]
    return LayoutMap(REGS, placement.params, placement.outputs, placement.at({"t": sigma}))


def test_identical_layouts_take_a_register_copy() -> None:
    placement = sketch_placement()
    result = _route(export_of(placement, SKETCH_TILE), import_of(placement, SKETCH_TILE, first=0, role="mma"))
    assert result.route is not None and result.route.rung == "register-copy"
    assert [r.rung for r in result.rungs] == ["tmem-load", "register-copy"]
    assert result.rungs[0].check == "applicable"
    ops = result.route.program.import_ops[0]
    assert ops[:3] == (Copy(0, 0), Copy(1, 1), Copy(2, 2))
    assert result.route.smem_bytes == 0 and result.route.barriers == 0


def test_register_permutation_is_still_a_copy() -> None:
    placement = mma_m16n8k16_f32()
    demand = LayoutMap(REGS, placement.params, placement.outputs, placement.at({"r": b("%", b("+", "r", 1), 4)}))
    result = _route(export_of(placement, MMA_TILE), import_of(demand, MMA_TILE, first=0, role="mma"))
    assert result.route is not None and result.route.rung == "register-copy"
    assert result.route.program.import_ops[0][0] == Copy(0, 1)


def test_intra_warp_rotation_takes_a_shuffle() -> None:
    placement = mma_m16n8k16_f32()
    demand = _lane_permuted(placement, b("%", b("+", "t", 4), 32))
    result = _route(export_of(placement, MMA_TILE), import_of(demand, MMA_TILE, first=0, role="mma"))
    assert result.route is not None and result.route.rung == "warp-shuffle"
    copy = result.rungs[1]
    assert copy.check == "same-thread" and copy.witness is not None
    assert Shuffle(0, 0, LaneSource("rotate", 4)) in result.route.program.import_ops[0]


def test_intra_warp_permutation_in_a_warpgroup_uses_a_lane_table() -> None:
    placement = wgmma_m64nNk16_f32(32)
    demand = _lane_permuted(placement, b("%", b("*", b("%", "t", 32), 5), 32))
    tile = (("m", 64), ("n", 32))
    result = _route(export_of(placement, tile), import_of(demand, tile, first=0, role="mma"))
    assert result.route is not None and result.route.rung == "warp-shuffle"
    shuffle = result.route.program.import_ops[0][0]
    assert isinstance(shuffle, Shuffle) and shuffle.lanes.kind == "lane_table"
    assert shuffle.lanes.table[1] == 5


def test_cross_warp_transpose_takes_staging_per_chunk_or_per_tile() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    chunked = _route(export, imp, Lends(16384))
    assert chunked.route is not None and chunked.route.rung == "smem-staging"
    assert (chunked.route.smem_bytes, chunked.route.barriers) == (16384, 2)
    assert [r.check for r in chunked.rungs[:3]] == ["applicable", "same-thread", "same-warp"]
    program = chunked.route.program
    assert program.barrier_threads == 384 and program.chunks == 8 and program.regs_per_call == 32
    assert all(ops[0] == Sync(0) for ops in program.import_ops)
    whole = _route(export, imp, Lends(128 * 256 * 4))
    assert whole.route is not None and (whole.route.smem_bytes, whole.route.barriers) == (131072, 1)


def test_staging_within_one_role() -> None:
    placement = mma_m16n8k16_f32(warps_m=2)
    tile = (("m", 32), ("n", 8))
    row_per_thread = regs((("t", 64), ("r", 4)), b("/", "t", 2), b("+", b("*", 4, b("%", "t", 2)), "r"))
    result = _route(export_of(placement, tile), import_of(row_per_thread, tile, first=0, role="mma"), Lends(1024))
    assert result.route is not None and result.route.rung == "smem-staging"
    assert result.rungs[2].check == "register-index"
    assert result.route.program.barrier_threads == 64


def test_lends_too_small_is_l_scratch() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    result = _route(export, imp, Lends(4096))
    (diag,) = result.diagnostics
    assert diag.code == "L-SCRATCH"
    assert diag.message == (
        "staging `accumulator` into `acc` needs 16384 bytes of shared memory but role `epilogue` lends 4096"
    )
    assert dict(diag.data)["needed"] == "16384" and dict(diag.data)["lent"] == "4096"
    assert len(diag.notes) == 3 and diag.helps


def test_too_few_consumer_threads_and_no_scratch_is_l_route() -> None:
    placement = wgmma_m64nNk16_f32(64)
    tile = (("m", 64), ("n", 64))
    span = Span("epilogue.kc", 9, 5, 9, 60)
    demand = LayoutMap(REGS, (("t", 64), ("r", 64)), ("m", "n"), (Name("t"), Name("r")), span)
    export = export_of(placement, tile)
    result = _route(export, import_of(demand, tile, first=128))
    (diag,) = result.diagnostics
    assert diag.code == "L-ROUTE"
    assert diag.message == "no route delivers `accumulator` from role `mma` to `acc` of role `epilogue`"
    assert [note.split(":")[0] for note in diag.notes] == [
        "tensor-memory load",
        "direct register copy",
        "warp shuffle",
        "shared-memory staging",
    ]
    data = dict(diag.data)
    assert data["register-copy.check"] == "same-thread" and data["warp-shuffle.check"] == "same-warp"
    assert data["smem-staging.check"] == "scratch"
    assert diag.labels[0].span == span and diag.labels[0].primary
    # The witness is real: the element is held by a thread of another warp.
    witness = result.rungs[2].witness
    assert witness is not None
    holder = placement.inverse[witness.element][0]
    assert holder // 32 != (128 + witness.thread) // 32


def test_consumer_inside_the_producer_role_without_scratch() -> None:
    placement = wgmma_m64nNk16_f32(64)
    tile = (("m", 64), ("n", 64))
    demand = regs((("t", 64), ("r", 64)), "t", "r")
    export = export_of(placement, tile)
    imp = TensorImport("acc", "accumulator", "mma", "f32", tile, demand, RoleThreads(0, 64))
    result = _route(export, imp, Lends(65536))
    assert result.rungs[-1].check == "threads"
    assert result.diagnostics[0].code == "L-ROUTE"


def _tmem_identity(lanes: int = 128, cols: int = 256) -> LayoutMap:
    return LayoutMap(TMEM, (("lane", lanes), ("col", cols)), ("m", "n"), (Name("lane"), Name("col")))


def test_tensor_memory_load_32x32b() -> None:
    export = export_of(_tmem_identity(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=128, chunk=Chunk("n", 32))
    result = _route(export, imp, tmem=True)
    assert result.route is not None and result.route.rung == "tmem-load"
    assert result.route.needs_tmem_address and not result.route.needs_smem_address
    program = result.route.program
    load = program.import_ops[3][0]
    assert isinstance(load, TmemLoad)
    assert (load.shape, load.num, load.bases) == ("32x32b", 32, ((0, 96), (32, 96), (64, 96), (96, 96)))
    # the loads are ordered after the producer's writes: fence, barrier, fence (chunk 0 only)
    assert program.export_ops == (TmemFence(before=True), Arrive(0))
    assert program.import_ops[0][:2] == (Sync(0), TmemFence(before=False))
    assert all(ops[-1] == TmemWait() and Sync(0) not in ops for ops in program.import_ops[1:])
    assert (program.barriers, program.barrier_threads) == (1, 256)
    assert result.route.barriers == 1


def test_tensor_memory_load_16x256b() -> None:
    tile = (("m", 128), ("n", 32))
    lane = b(
        "+",
        b("+", b("+", b("*", 32, b("/", "t", 32)), b("*", 16, "h")), b("/", b("%", "t", 32), 4)),
        b("*", 8, b("/", b("%", "j", 4), 2)),
    )
    col = b("+", b("+", b("*", 8, b("/", "j", 4)), b("*", 2, b("%", "t", 4))), b("%", "j", 2))
    demand = regs((("t", 128), ("h", 2), ("j", 16)), lane, col)
    result = _route(export_of(_tmem_identity(128, 32), tile), import_of(demand, tile, first=0), tmem=True)
    assert result.route is not None and result.route.rung == "tmem-load"
    ops = result.route.program.import_ops[0]
    loads = [op for op in ops if isinstance(op, TmemLoad)]
    assert [(op.shape, op.num, op.dst) for op in loads[:2]] == [("16x256b", 4, 0), ("16x256b", 4, 16)]
    # the producer's own threads: they synced at the export, so the import only fences
    assert result.route.program.export_ops == (TmemFence(before=True), Sync(0))
    assert ops[0] == TmemFence(before=False) and Sync(0) not in ops


def test_tensor_memory_lane_quadrant_is_enforced() -> None:
    export = export_of(_tmem_identity(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=32, chunk=Chunk("n", 32))
    result = _route(export, imp, tmem=True)
    assert result.rungs[0].check == "lane-quadrant"
    assert "may only read lanes 32..63" in result.rungs[0].reason
    assert result.diagnostics[0].code == "L-ROUTE"


def test_no_tensor_memory_on_the_target() -> None:
    export = export_of(_tmem_identity(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=128, chunk=Chunk("n", 32))
    result = _route(export, imp, Lends(1 << 20))
    assert result.rungs[0].reason == "the target has no tensor memory"
    assert result.rungs[-1].check == "applicable"


def test_shared_memory_placement_is_loaded_in_place() -> None:
    tile = (("m", 16), ("n", 8))
    placement = LayoutMap(SMEM, tile, ("addr",), (b("*", 4, b("+", b("*", 8, "m"), "n")),))
    export = TensorExport("accumulator", "mma", "f32", tile, placement, RoleThreads(0, 32))
    demand = regs((("t", 32), ("r", 4)), b("/", "t", 2), b("+", b("*", 4, b("%", "t", 2)), "r"))
    result = _route(export, import_of(demand, tile, first=32))
    assert result.route is not None and result.route.rung == "smem-staging"
    assert result.route.smem_bytes == 0 and result.route.needs_smem_address
    assert result.route.program.shared == "buffer" and result.route.program.export_ops != ()


def test_16_bit_elements_stage_exactly() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE, elem="bf16")
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32), elem="bf16")
    result = _route(export, imp, Lends(8192))
    assert result.route is not None and result.route.smem_bytes == 8192


def test_identity_and_type_mismatches() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32), elem="bf16")
    (diag,) = select_route(export, imp, Lends(1 << 20), target_has_tmem=False).diagnostics
    assert diag.code == "L-DTYPE"
    assert "reads `accumulator` as `bf16`, but the producer exports it as `f32`" in diag.message
    other = import_of(sketch_demand(), (("m", 128), ("n", 128)), first=256, chunk=Chunk("n", 48))
    codes = [d.code for d in select_route(export, other, Lends(), target_has_tmem=False).diagnostics]
    assert codes == ["L-TENSOR", "L-TENSOR"]


def test_unsupported_element_type() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE, elem="f8e4m3")
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32), elem="f8e4m3")
    result = select_route(export, imp, Lends(1 << 20), target_has_tmem=False)
    assert {r.check for r in result.rungs} == {"element"}
    assert result.diagnostics[0].code == "L-ROUTE"


def test_maps_are_checked_first() -> None:
    export = TensorExport("accumulator", "mma", "f32", SKETCH_TILE, sketch_placement(), RoleThreads(0, 128))
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    (diag,) = select_route(export, imp, Lends(), target_has_tmem=False).diagnostics
    assert diag.code == "L-MAP" and "spans 256 threads but role `mma` has 128" in diag.message
    bad = regs((("t", 128), ("p", 32), ("c", 8)), "t", "p")
    diags = select_route(
        export_of(sketch_placement(), SKETCH_TILE),
        import_of(bad, SKETCH_TILE, first=256),
        Lends(),
        target_has_tmem=False,
    ).diagnostics
    assert {d.code for d in diags} == {"L-MAP"}


def test_route_selection_is_deterministic() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    first = select_route(export, imp, Lends(), target_has_tmem=False)
    second = select_route(export, imp, Lends(), target_has_tmem=False)
    assert first.diagnostics == second.diagnostics and first.rungs == second.rungs


def test_staging_race_check_finds_colliding_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    # A scratch layout that folds rows onto each other must be caught by the race check.
    original = StagingAddress.of

    def folded(self: StagingAddress, element: Sequence[Expr]) -> Expr:
        return ex.mod(original(self, element), Int(4096))

    monkeypatch.setattr(StagingAddress, "of", folded)
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    staging = select_route(export, imp, Lends(1 << 17), target_has_tmem=False).rungs[-1]
    assert staging.check == "race"
    assert "share scratch bytes" in staging.reason


def test_chunking_must_divide_the_tile() -> None:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("k", 32))
    (diag,) = check_identity(export, imp)
    assert diag.code == "L-TENSOR" and "chunks `k 32`, but `k` is not a dimension" in diag.message
    renamed = TensorImport("acc", "other", "epilogue", "f32", SKETCH_TILE, sketch_demand(), RoleThreads(256, 128))
    (diag,) = check_identity(export, renamed)
    assert diag.message == "import `acc` names tensor `other`, not `accumulator`"


def test_overlapping_roles_get_a_threads_help() -> None:
    placement = wgmma_m64nNk16_f32(64)
    tile = (("m", 64), ("n", 64))
    imp = TensorImport(
        "acc", "accumulator", "mma", "f32", tile, regs((("t", 64), ("r", 64)), "t", "r"), RoleThreads(64, 64)
    )
    (diag,) = select_route(export_of(placement, tile), imp, Lends(1 << 16), target_has_tmem=False).diagnostics
    assert diag.helps == ("import into the producer's own role, or into a role of its own",)
