"""Rendezvous sides that run in part of their role's phases (issue 29): `lag N` and `peeled`.

FlashAttention-3's ping-pong, as its code runs it: warpgroup 0 takes its first turn without a
sync and warpgroup 1 hands no turn over after its last phase. The language states it, the
bounded model and the explicit-state oracle run it, and the parametric argument proves it at
every depth; warpgroup 0 syncing for its first turn too hangs, and nothing proves it."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from checker.protocol import DEFAULT_RLIMIT, BarrierKind, Op, Protocol, check_protocol
from checker.protocol import parametric as P
from checker.protocol.build import build_model
from checker.protocol.declarations import excluded
from checker.protocol.events import unroll
from checker.protocol.explore import explore
from checker.protocol.model import ProtocolBuilder
from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError
from diagnostics.symbols import Code
from kernlink.api import compose
from tests.checker.protocol.helpers import contract_protocol
from tests.checker.protocol.test_oracle import assert_agree

FIXTURES = Path(__file__).resolve().parents[1] / "clauses" / "L-DEADLOCK"
PASS = FIXTURES / "pass_pingpong_first_turn_unsynced.kc"
FAIL = FIXTURES / "fail_pingpong_first_turn_synced.kc"
CORE = Path(__file__).resolve().parents[3] / "specs" / "examples" / "attention" / "attention.kp"


def _protocol(text: str, tmp_path: Path) -> Protocol:
    return contract_protocol(text, tmp_path, 2)


def test_the_attributes_parse_print_and_refuse_what_contradicts_them() -> None:
    parsed = parse_text(PASS.read_text(), "pass.kc")
    sides = [i for s in parsed.stages for i in s.items if isinstance(i, A.Rendezvous)]
    assert [(r.name, r.role, r.lag, r.peeled) for r in sides] == [
        ("turn0", "wg0", 1, False),
        ("turn1", "wg0", None, True),
        ("turn1", "wg1", None, True),
        ("turn0", "wg1", None, False),
    ]
    assert parse_text(print_file(parsed), "again.kc") == parsed  # parse . print = id (spans aside)
    for wrong, word in (
        ("threads 256 lag 1\n", "threads 256 prearm lag 1\n"),
        ("by wg1 threads 256 peeled\n", "by wg1 threads 256 peeled prearm\n"),
        ("threads 256 lag 1\n", "threads 256 lag 0\n"),
    ):
        with pytest.raises(DiagnosticError) as err:
            parse_text(PASS.read_text().replace(wrong, word, 1), "wrong.kc")
        assert err.value.diagnostics[0].code is Code.E_VALUE


def test_each_side_runs_in_the_phases_it_states(tmp_path: Path) -> None:
    """Three kv blocks: four phases (the loop's three and the peeled PV_2)."""
    protocol = _protocol(PASS.read_text(), tmp_path)
    _, wg0, wg1 = unroll(protocol, 3)
    phases: dict[tuple[str, str, Op], set[int]] = {}
    for e in (*wg0, *wg1):
        if e.step.op in (Op.BAR_SYNC, Op.BAR_ARRIVE):
            phases.setdefault((e.role, e.step.channel, e.step.op), set()).add(e.iteration)
    assert phases == {
        ("wg0", "turn0", Op.BAR_SYNC): {1, 2, 3},  # its first turn unsynced
        ("wg0", "turn1", Op.BAR_ARRIVE): {0, 1, 2, 3},
        ("wg1", "turn1", Op.BAR_SYNC): {0, 1, 2, 3},
        ("wg1", "turn0", Op.BAR_ARRIVE): {0, 1, 2},  # no hand-over after its last phase
    }


@pytest.mark.parametrize("trips", [1, 2, 3, 4])
def test_the_bounded_model_and_the_oracle_agree_on_the_fixtures(tmp_path: Path, trips: int) -> None:
    assert_agree(_protocol(PASS.read_text(), tmp_path / "pass"), trips)
    assert_agree(_protocol(FAIL.read_text(), tmp_path / "fail"), trips)
    assert not explore(_protocol(PASS.read_text(), tmp_path / "pass"), trips).deadlock
    assert explore(_protocol(FAIL.read_text(), tmp_path / "fail"), trips).deadlock


@pytest.mark.parametrize("depths", [(1, None), (2, 255), (64, 64)])
def test_the_unsynced_first_turn_is_proved_at_every_depth_and_the_synced_one_never(
    tmp_path: Path, depths: P.DepthRange
) -> None:
    good = _protocol(PASS.read_text(), tmp_path / "pass")
    result = P.prove(good, {r.name: depths for r in good.rings}, rlimit=DEFAULT_RLIMIT)
    assert result.proved, result.reason
    bad = _protocol(FAIL.read_text(), tmp_path / "fail")
    result = P.prove(bad, {r.name: depths for r in bad.rings}, rlimit=DEFAULT_RLIMIT)
    assert not result.proved and "deadlock freedom" in result.reason, result.reason
    verdict = check_protocol(bad)
    assert verdict.deadlock and not verdict.coverage.parametric


def test_the_attention_core_states_its_ping_pong_as_its_code_runs_it() -> None:
    """core.kc's sides (no `prearm` approximation): proved at every depth of its rings."""
    old = Path.cwd()
    os.chdir(CORE.parent)
    try:
        _, comp = compose([CORE.name])
    finally:
        os.chdir(old)
    assert comp is not None
    sides = {(i.name, i.role): i for e in comp.stages for i in e.stage.items if isinstance(i, A.Rendezvous)}
    assert not any(i.prearm for i in sides.values())
    assert sides[("sched0", "core0")].lag == 1 and sides[("sched1", "core0")].peeled
    built = build_model(comp, {n: 2 for n in comp.rings}, excluded(comp)).protocol
    assert built is not None
    result = P.prove(built, {r.name: (2, 255) for r in built.rings}, rlimit=DEFAULT_RLIMIT)
    assert result.proved, result.reason


def test_syncs_in_different_phases_are_not_a_lockstep_rendezvous() -> None:
    """One role's `bar.sync` lags a phase, the other's does not: the bounded model must not pair
    them by loop iteration (it did, and reported a race and a hang at one iteration, where the
    oracle finds the lagged sync, in the peeled phase, meets the other's first)."""
    b = ProtocolBuilder("lockstep.kc")
    b.role("r0", 1)
    b.role("r1", 1)
    b.ring("q0", depth=1, producer="r0", consumer="r1", full_init=1, empty_init=1, init_by=("r0",))
    b.named_barrier("sync", 64)
    b.set_program(
        "r0",
        [
            b.make_step("r0", Op.WAIT, "q0", barrier=BarrierKind.EMPTY, parity=1),
            b.make_step("r0", Op.WRITE, "q0"),
            b.make_step("r0", Op.ARRIVE, "q0", barrier=BarrierKind.FULL, count=1),
            dataclasses.replace(b.make_step("r0", Op.BAR_SYNC, "sync", count=32), lag=1, peel=1),
        ],
    )
    b.set_program(
        "r1",
        [
            b.make_step("r1", Op.BAR_SYNC, "sync", count=32),
            b.make_step("r1", Op.READ, "q0"),
            b.make_step("r1", Op.ARRIVE, "q0", barrier=BarrierKind.EMPTY, count=1),
        ],
    )
    protocol = b.build()
    assert not explore(protocol, 1).deadlock and explore(protocol, 2).deadlock
    for trips in (1, 2, 3):
        assert_agree(protocol, trips)
