"""A one-shot ring side (`once`, issue 29): Q filled once per CTA, waited for once before the
consumer's loop and released once after it. The language states it, the bounded model and the
explicit-state oracle run it (each independently), the parametric argument proves it at every
depth and trip count, and a producer that refills it every iteration hangs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checker.protocol import DEFAULT_RLIMIT, Op, Protocol, check_protocol
from checker.protocol import parametric as P
from checker.protocol.build import build_model
from checker.protocol.declarations import excluded
from checker.protocol.events import unroll
from checker.protocol.explore import explore
from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError
from diagnostics.symbols import Code
from kernlink.api import compose
from tests.checker.protocol.helpers import contract_protocol
from tests.checker.protocol.test_oracle import assert_agree

FIXTURES = Path(__file__).resolve().parents[1] / "clauses" / "L-DEADLOCK"
PASS = FIXTURES / "pass_one_shot_ring.kc"
FAIL = FIXTURES / "fail_one_shot_ring_refilled.kc"
ATTENTION = Path(__file__).resolve().parents[3] / "specs" / "examples" / "attention"
DEPTHS = {"q": 1, "k": 2}  # as the fixtures state them


def _protocol(text: str, tmp_path: Path) -> Protocol:
    return contract_protocol(text, tmp_path, DEPTHS)


def test_the_side_item_parses_prints_and_rejects_a_second_one() -> None:
    parsed = parse_text(PASS.read_text(), "pass.kc")
    rings = [r for s in parsed.stages for r in s.items if isinstance(r, A.Ring)]
    assert [(r.name, r.side) for r in rings if r.once] == [("q", "produce"), ("q", "consume")]
    assert parse_text(print_file(parsed), "again.kc") == parsed  # parse . print = id (spans aside)
    with pytest.raises(DiagnosticError) as err:
        parse_text(PASS.read_text().replace("        once\n", "        once\n        once\n", 1), "twice.kc")
    assert err.value.diagnostics[0].code is Code.E_DUPLICATE


def test_the_side_runs_before_and_after_the_loop(tmp_path: Path) -> None:
    protocol = _protocol(PASS.read_text(), tmp_path)
    assert protocol.peeled  # its release follows the loop: a run is no prefix of a longer one
    load, mma = unroll(protocol, 3)
    assert [(e.step.channel, e.op, e.data) for e in load if e.op is Op.COPY] == [
        ("q", Op.COPY, 0),
        ("k", Op.COPY, 0),
        ("k", Op.COPY, 1),
        ("k", Op.COPY, 2),
    ]
    steps = [(e.step.channel, e.op) for e in mma]
    assert steps[:2] == [("q", Op.WAIT), ("q", Op.READ)]  # once, before the loop
    assert steps[-1] == ("q", Op.ARRIVE) and steps.count(("q", Op.ARRIVE)) == 1  # once, after it


@pytest.mark.parametrize("trips", [1, 2, 3])
def test_the_bounded_model_and_the_oracle_agree(tmp_path: Path, trips: int) -> None:
    good, bad = _protocol(PASS.read_text(), tmp_path / "pass"), _protocol(FAIL.read_text(), tmp_path / "fail")
    assert_agree(good, trips)
    assert_agree(bad, trips)
    assert not explore(good, trips).deadlock
    assert explore(bad, trips).deadlock is (trips >= 2)  # one iteration needs one fill only


@pytest.mark.parametrize("depths", [(1, None), (2, 255), (64, 64)])
def test_the_one_shot_ring_is_proved_at_every_depth_and_the_refilled_one_never(
    tmp_path: Path, depths: P.DepthRange
) -> None:
    good = _protocol(PASS.read_text(), tmp_path / "pass")
    result = P.prove(good, {r.name: depths for r in good.rings}, rlimit=DEFAULT_RLIMIT)
    assert result.proved, result.reason
    bad = _protocol(FAIL.read_text(), tmp_path / "fail")
    ranges = {r.name: depths if r.name == "k" else (1, 1) for r in bad.rings}
    result = P.prove(bad, ranges, rlimit=DEFAULT_RLIMIT)
    assert not result.proved and "deadlock freedom" in result.reason, result.reason
    verdict = check_protocol(bad)
    assert verdict.deadlock and not verdict.coverage.parametric


def test_a_one_shot_side_that_lags_is_not_modelled(tmp_path: Path) -> None:
    side = "    ring q consume by mma {\n        once\n"
    text = PASS.read_text().replace(side, side + "        lag 1\n")
    kc = tmp_path / "p.kc"
    kc.write_text(text)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        _, comp = compose([kc.name])
    finally:
        os.chdir(old)
    assert comp is not None
    built = build_model(comp, DEPTHS, excluded(comp))
    assert any("one-shot side" in u.reason for u in built.unmodelled)


def test_the_attention_core_and_its_loads_state_q_as_one_shot() -> None:
    for name in ("core", "load_dense", "load_blocksparse", "load_paged"):
        (stage,) = parse_text((ATTENTION / f"{name}.kc").read_text(), f"{name}.kc").stages
        assert all(r.once for r in stage.rings if r.name == "q"), name
