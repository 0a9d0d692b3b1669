"""Fuzzed seams: accepted routes deliver exactly in simulation; rung verdicts match brute force."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given

from contract_lang.expr import Name
from tests.tiers import examples
from tests.transfer_model.strategies import Scenario, seams
from transfer_model.maps import TMEM, Chunk, LayoutMap
from transfer_model.program import Arrive, Copy, Program, Sync, TmemFence, build_program
from transfer_model.routes import select_route
from transfer_model.simulate import SimulationError, expected, simulate
from transfer_model.tensors import Lends

from .builders import SKETCH_TILE, b, export_of, import_of, regs, sketch_demand, sketch_placement
from .oracle import rung_verdicts

FUZZ = examples(1.5)


@FUZZ
@given(seams())
def test_accepted_routes_deliver_every_element_exactly(scenario: Scenario) -> None:
    result = select_route(scenario.export, scenario.imp, scenario.lends, target_has_tmem=scenario.target_has_tmem)
    if result.route is None:
        assert result.diagnostics and result.diagnostics[0].code in ("L-ROUTE", "L-SCRATCH")
        return
    assert simulate(result.route.program, scenario.export) == expected(scenario.imp)
    # the same route when placement lets its scratch share storage with claims live until ready
    aliased = build_program(result.route.seam, result.route.result, scratch_aliased=True)
    assert simulate(aliased, scenario.export) == expected(scenario.imp)


@FUZZ
@given(seams())
def test_rung_verdicts_match_brute_force(scenario: Scenario) -> None:
    result = select_route(scenario.export, scenario.imp, scenario.lends, target_has_tmem=scenario.target_has_tmem)
    oracle = rung_verdicts(scenario.export, scenario.imp, scenario.lends, scenario.target_has_tmem)
    for rung in result.rungs:
        assert rung.passed == oracle[rung.rung], (rung.rung, rung.check, rung.reason)
    if result.route is None:
        assert not any(oracle.values())


def _staging() -> tuple[Program, object, object]:
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=256, chunk=Chunk("n", 32))
    route = select_route(export, imp, Lends(16384), target_has_tmem=False).route
    assert route is not None
    return route.program, export, imp


def test_simulation_catches_a_missing_barrier() -> None:
    program, export, _ = _staging()
    calls = list(program.import_ops)
    calls[1] = tuple(op for op in calls[1] if op != Sync(0))
    broken = dataclasses.replace(program, import_ops=tuple(calls))
    with pytest.raises(SimulationError, match="may still be reading"):
        simulate(broken, export)  # type: ignore[arg-type]


def test_simulation_catches_a_load_before_the_store_is_ordered() -> None:
    program, export, _ = _staging()
    calls = list(program.import_ops)
    calls[0] = tuple(op for op in calls[0] if op != Sync(0))
    stores_only = tuple(op for op in program.export_ops if not isinstance(op, Arrive))
    broken = dataclasses.replace(program, import_ops=tuple(calls), export_ops=stores_only)
    with pytest.raises(SimulationError, match="without a barrier"):
        simulate(broken, export)  # type: ignore[arg-type]


def test_simulation_catches_a_wrong_register() -> None:
    placement = sketch_placement()
    export = export_of(placement, SKETCH_TILE)
    imp = import_of(placement, SKETCH_TILE, first=0, role="mma")
    route = select_route(export, imp, Lends(), target_has_tmem=False).route
    assert route is not None
    calls = list(route.program.import_ops)
    calls[0] = (Copy(0, 1), *calls[0][1:])
    broken = dataclasses.replace(route.program, import_ops=tuple(calls))
    assert simulate(broken, export) != expected(imp)


def test_simulation_catches_a_barrier_count_mismatch() -> None:
    program, export, _ = _staging()
    with pytest.raises(SimulationError, match="deadlock"):
        simulate(dataclasses.replace(program, barrier_threads=program.barrier_threads + 32), export)  # type: ignore[arg-type]


# ------------------------------------------------- scratch sharing storage with claims live until ready


def _aliased(chunk: Chunk | None, lent: int, first: int = 256) -> tuple[Program, Program, object, object]:
    """The staging route unguarded but marked aliased (the old lowering) and as lowered for aliased scratch."""
    export = export_of(sketch_placement(), SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=first, chunk=chunk)
    route = select_route(export, imp, Lends(lent), target_has_tmem=False).route
    assert route is not None and route.program.shared == "scratch"
    unsafe = dataclasses.replace(route.program, scratch_aliased=True)
    return unsafe, build_program(route.seam, route.result, scratch_aliased=True), export, imp


@pytest.mark.parametrize(("chunk", "lent"), [(Chunk("n", 32), 16384), (None, 131072)], ids=["chunk", "tile"])
def test_simulation_catches_a_first_store_into_aliased_scratch_before_every_producer_warp_exported(
    chunk: Chunk | None, lent: int
) -> None:
    # warp 0 stores its first elements while warp 7 may still read the claims the scratch
    # reuses (a wgmma in flight on the ring's slot): the race the gemm components once hid
    unsafe, _, export, _ = _aliased(chunk, lent)
    with pytest.raises(SimulationError, match="may still use the claims it aliases"):
        simulate(unsafe, export)  # type: ignore[arg-type]


@pytest.mark.parametrize(("chunk", "lent"), [(Chunk("n", 32), 16384), (None, 131072)], ids=["chunk", "tile"])
def test_aliased_scratch_is_stored_only_after_every_producer_warp_exported(chunk: Chunk | None, lent: int) -> None:
    _, guarded, export, imp = _aliased(chunk, lent)
    last = Sync(guarded.barriers - 1)
    assert guarded.export_ops[0] == last and guarded.import_ops[0][0] == last
    assert simulate(guarded, export) == expected(imp)  # type: ignore[arg-type]


def test_aliased_scratch_needs_no_extra_consumer_sync_when_the_roles_coincide() -> None:
    placement = sketch_placement()
    export = export_of(placement, SKETCH_TILE)
    # the producer's own threads take rows t / 2, half a row each: other warps' registers
    demand = regs((("t", 256), ("r", 128)), b("/", "t", 2), b("+", b("*", 128, b("%", "t", 2)), "r"))
    imp = import_of(demand, SKETCH_TILE, first=0, role="mma")
    route = select_route(export, imp, Lends(131072), target_has_tmem=False).route
    assert route is not None and route.rung == "smem-staging" and route.program.shared == "scratch"
    guarded = build_program(route.seam, route.result, scratch_aliased=True)
    assert guarded.export_ops[0] == Sync(0) and guarded.import_ops[0].count(Sync(0)) == 1
    assert simulate(guarded, export) == expected(imp)
    with pytest.raises(SimulationError, match="may still use the claims it aliases"):
        simulate(dataclasses.replace(route.program, scratch_aliased=True), export)


# ------------------------------------------------- tensor memory: loads ordered after the producer's writes


def _tmem_route() -> tuple[Program, object, object]:
    placement = LayoutMap(TMEM, (("lane", 128), ("col", 256)), ("m", "n"), (Name("lane"), Name("col")))
    export = export_of(placement, SKETCH_TILE)
    imp = import_of(sketch_demand(), SKETCH_TILE, first=128, chunk=Chunk("n", 32))
    route = select_route(export, imp, Lends(), target_has_tmem=True).route
    assert route is not None and route.rung == "tmem-load"
    return route.program, export, imp


def test_tensor_memory_loads_after_fence_barrier_fence_deliver() -> None:
    program, export, imp = _tmem_route()
    assert simulate(program, export) == expected(imp)  # type: ignore[arg-type]


@pytest.mark.parametrize("drop", ["consumer sync", "consumer fence", "producer fence"])
def test_simulation_catches_a_tensor_memory_load_not_ordered_after_the_writes(drop: str) -> None:
    program, export, _ = _tmem_route()
    calls = list(program.import_ops)
    export_ops = program.export_ops
    if drop == "consumer sync":  # the producer still arrives: the barrier count stays paired
        calls[0] = tuple(op for op in calls[0] if op != Sync(0))
        export_ops = tuple(op for op in export_ops if not isinstance(op, Arrive))
    elif drop == "consumer fence":
        calls[0] = tuple(op for op in calls[0] if op != TmemFence(before=False))
    else:
        export_ops = tuple(op for op in export_ops if op != TmemFence(before=True))
    broken = dataclasses.replace(program, import_ops=tuple(calls), export_ops=export_ops)
    with pytest.raises(SimulationError, match=r"before_thread_sync|not ordered after"):
        simulate(broken, export)  # type: ignore[arg-type]
