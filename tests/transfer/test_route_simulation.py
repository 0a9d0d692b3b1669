"""Fuzzed seams: accepted routes deliver exactly in simulation; rung verdicts match brute force."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given

from tests.tiers import examples
from transfer_model.maps import Chunk
from transfer_model.program import Arrive, Copy, Program, Sync
from transfer_model.routes import select_route
from transfer_model.simulate import SimulationError, expected, simulate
from transfer_model.strategies import Scenario, seams
from transfer_model.tensors import Lends

from .builders import SKETCH_TILE, export_of, import_of, sketch_demand, sketch_placement
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
