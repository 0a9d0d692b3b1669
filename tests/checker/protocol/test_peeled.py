"""A ring side's `lag N` (software pipelining with a peeled last phase): the language, the
bounded SMT model and the explicit-state explorer, independently, and the parametric
argument's explicit fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.protocol import DEFAULT_RLIMIT, BarrierKind, Op, Protocol, check_protocol
from checker.protocol import parametric as P
from checker.protocol.events import unroll
from checker.protocol.explore import explore
from checker.protocol.model import Provenance, Step
from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError
from diagnostics.span import UNKNOWN_SPAN
from tests.checker.protocol.helpers import contract_protocol
from tests.checker.protocol.test_oracle import assert_agree

FIXTURES = Path(__file__).resolve().parents[1] / "clauses" / "L-DEADLOCK"
FAIL = FIXTURES / "fail_peeled_lag_across_rings.kc"
PASS = FIXTURES / "pass_peeled_lag_across_rings.kc"


def _protocol(text: str, tmp_path: Path) -> Protocol:
    return contract_protocol(text, tmp_path, 1)


def test_the_side_item_parses_prints_and_rejects_a_second_one() -> None:
    text = PASS.read_text()
    parsed = parse_text(text, "pass.kc")
    rings = [r for s in parsed.stages for r in s.items if isinstance(r, A.Ring)]
    assert [(r.name, r.side, r.lag) for r in rings if r.lag] == [("k", "produce", 1), ("k", "consume", 1)]
    assert parse_text(print_file(parsed), "again.kc") == parsed  # parse . print = id (spans aside)
    twice = text.replace("        lag 1\n", "        lag 1\n        lag 2\n", 1)
    with pytest.raises(DiagnosticError) as err:
        parse_text(twice, "twice.kc")
    assert "E-DUPLICATE" in str(err.value.diagnostics[0].code)


def test_a_lagged_side_runs_its_steps_late_and_once_more_after_the_loop(tmp_path: Path) -> None:
    protocol = _protocol(PASS.read_text(), tmp_path)
    assert protocol.peeled
    load, mma = unroll(protocol, 3)
    # the producer: V_0, (V_1, K_0), (V_2, K_1), then K_2 after its loop
    fills = [(e.step.channel, e.data) for e in load if e.op is Op.COPY]
    assert fills == [("v", 0), ("v", 1), ("k", 0), ("v", 2), ("k", 1), ("k", 2)]
    waits = [(e.step.channel, e.data) for e in mma if e.op is Op.WAIT]
    assert waits == [("v", 0), ("k", 0), ("v", 1), ("k", 1), ("v", 2), ("k", 2)]


@pytest.mark.parametrize(("fixture", "deadlock"), [(FAIL, True), (PASS, False)])
def test_the_model_and_the_explorer_agree_on_the_fixtures(tmp_path: Path, fixture: Path, deadlock: bool) -> None:
    protocol = _protocol(fixture.read_text(), tmp_path)
    assert explore(protocol).deadlock is deadlock
    assert_agree(protocol)


def test_the_peeled_phase_is_what_the_consumer_waits_for(tmp_path: Path) -> None:
    """Only the producer lags: the consumer's last wait (V_{n-1}) is filled by the producer's peeled
    step after its loop (were it dropped, every run would hang there); both engines find no hang."""
    text = FAIL.read_text().replace(
        "    ring k produce by load {\n        depth 1\n        lag 1\n",
        "    ring k produce by load {\n        depth 1\n",
    )
    text = text.replace(
        "    ring v produce by load {\n        depth 1\n",
        "    ring v produce by load {\n        depth 1\n        lag 1\n",
    )
    protocol = _protocol(text, tmp_path)
    assert protocol.peeled
    for n in (1, 2, 3):
        assert_agree(protocol, n)
    assert not check_protocol(protocol).deadlock


@pytest.mark.parametrize("depths", [(1, None), (2, 255), (64, 64)])
def test_the_parametric_argument_proves_a_lagged_side_at_every_depth(tmp_path: Path, depths: P.DepthRange) -> None:
    """The peeled tail is part of the argument (each role runs its loop `lag` more times, in which only
    its peeled steps run): the pass fixture is proved at every depth and trip count, without the
    bounded model's run per trip count."""
    protocol = _protocol(PASS.read_text(), tmp_path)
    result = P.prove(protocol, {r.name: depths for r in protocol.rings}, rlimit=DEFAULT_RLIMIT)
    assert result.proved, result.reason
    verdict = check_protocol(protocol)
    assert verdict.coverage.parametric and not verdict.findings and not verdict.undecided


def test_the_lagged_deadlock_is_never_proved_and_the_bounded_model_rejects_it(tmp_path: Path) -> None:
    """The fail fixture hangs with one slot per ring (V_1 waits for K_0, issued after it); with two
    slots it does not, and the argument proves exactly that, as the explorer finds."""
    protocol = _protocol(FAIL.read_text(), tmp_path)
    for depths in ((1, 1), (1, None)):
        result = P.prove(protocol, {r.name: depths for r in protocol.rings}, rlimit=DEFAULT_RLIMIT)
        assert not result.proved and "deadlock freedom" in result.reason, result.reason
    verdict = check_protocol(protocol)
    assert verdict.deadlock and not verdict.coverage.parametric
    assert verdict.coverage.fallback == P.prove(protocol, None, rlimit=DEFAULT_RLIMIT).reason
    assert P.prove(protocol, {r.name: (2, 255) for r in protocol.rings}, rlimit=DEFAULT_RLIMIT).proved
    for depth in (2, 3):
        deeper = protocol
        for ring in protocol.rings:
            deeper = deeper.with_depth(ring.name, depth)
        assert not explore(deeper, 6).deadlock


def test_a_step_peels_at_most_what_it_lags() -> None:
    prov = Provenance(UNKNOWN_SPAN, "full wait")
    with pytest.raises(ValueError, match="peels at most"):
        Step("r", Op.WAIT, "k", prov, BarrierKind.FULL, parity=0, peel=1)
    with pytest.raises(ValueError, match="only loop arrivals and read waits may lag"):
        Step("r", Op.WAIT, "k", prov, BarrierKind.FULL, parity=0, lag=2, peel=1)
