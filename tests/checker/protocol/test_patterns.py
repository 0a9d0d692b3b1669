"""Issue 27: the production patterns' steps (CTAs, turns, grid counters, asynchronous reads) in the model.

Each pattern (``checker/protocol/strategies.py``: :func:`pattern`) is decided by the SMT model
and by the explicit-state explorer, which implement its semantics independently: they must
agree on every pattern, sound or with each of its mistakes (random draws: test_oracle.py). A sound
pattern has no finding (they were L-DEADLOCK, L-UNPAIRED or unstatable before); each mistake
has the finding named here.
"""

from __future__ import annotations

import pytest

from checker.protocol import Protocol, check_protocol
from checker.protocol.check import MAX_RLIMIT
from checker.protocol.explore import explore
from checker.protocol.model import Op, Part, ProtocolBuilder, Scope, Threshold
from checker.protocol.smt import ProtocolModel
from tests.checker.protocol.strategies import PATTERN_MISTAKES, pattern

EXPECTED: dict[tuple[str, str], str] = {
    ("pingpong", "no-prearm"): "L-DEADLOCK",
    ("pingpong", "prearm-both"): "L-DEADLOCK",
    ("pingpong", "no-turns"): "L-ARRIVE",
    ("pingpong", "release-late"): "L-DEADLOCK",
    ("multicast", "local-release"): "L-RACE",
    ("multicast", "tx-one-half"): "L-TXBYTES",
    ("multicast", "no-empty-wait"): "L-RACE",
    ("pair", "peer-copy-local"): "L-TXBYTES",
    ("pair", "peer-no-wait"): "L-RACE",
    ("pair", "tx-one-copy"): "L-TXBYTES",
    ("split-k", "threshold"): "L-DEADLOCK",
    ("split-k", "no-wait"): "L-RACE",
    ("split-k", "add-first"): "L-RACE",
    ("stream-k", "threshold"): "L-RACE",
    ("stream-k", "no-wait"): "L-RACE",
    ("stream-k", "add-first"): "L-RACE",
    ("grid-barrier", "threshold"): "L-RACE",
    ("grid-barrier", "no-wait"): "L-RACE",
    ("grid-barrier", "add-first"): "L-RACE",
    ("staging", "no-read-wait"): "L-RACE",
    ("staging", "lag"): "L-RACE",
    ("staging", "restart"): "L-RACE",
    ("tmem", "release-first"): "L-RACE",
    ("tmem", "no-read-wait"): "L-RACE",
    ("lagged", "release-early"): "L-DEADLOCK",
    ("lagged", "order"): "L-DEADLOCK",
    ("restart", "wait-late"): "L-RACE",
    ("restart", "no-read-wait"): "L-RACE",
    ("presync", "one-side"): "L-DEADLOCK",
    ("presync", "loop-one-side"): "L-DEADLOCK",
    ("presync", "twice"): "L-DEADLOCK",
    ("pingpong-phases", "synced-first"): "L-DEADLOCK",
    ("pingpong-phases", "handover-late"): "L-DEADLOCK",
    ("oneshot", "refilled"): "L-DEADLOCK",
    ("oneshot", "no-wait"): "L-RACE",
    ("oneshot", "wait-in-loop"): "L-DEADLOCK",
}


def assert_agree(protocol: Protocol, bound: int | None = None) -> None:
    verdict = check_protocol(protocol, bound=bound, rlimit=MAX_RLIMIT)
    # a peeled protocol's check stops at its first failing trip count (test_oracle.assert_agree)
    oracle = explore(protocol, verdict.stats.bound if protocol.peeled else bound)
    assert not verdict.undecided, verdict.undecided
    assert verdict.deadlock == oracle.deadlock
    assert verdict.races == oracle.races
    assert verdict.static == oracle.static


@pytest.mark.parametrize("name", sorted(PATTERN_MISTAKES))
def test_a_sound_pattern_has_no_finding_and_the_explorer_agrees(name: str) -> None:
    protocol = pattern(name, depth=2)
    verdict = check_protocol(protocol)
    assert verdict.findings == () and not verdict.undecided, [f.code for f in verdict.findings]
    assert_agree(protocol)


@pytest.mark.parametrize("case", sorted(EXPECTED), ids="/".join)
def test_each_mistake_is_found_by_its_clause_and_the_explorer_agrees(case: tuple[str, str]) -> None:
    name, mistake = case
    depth = 2 if mistake == "restart" else 1
    protocol = pattern(name, mistake, depth)
    codes = {f.code for f in check_protocol(protocol).findings}
    assert EXPECTED[case] in codes, codes
    assert_agree(protocol)


def test_every_mistake_has_an_expectation() -> None:
    assert set(EXPECTED) == {(n, m) for n, ms in PATTERN_MISTAKES.items() for m in ms}


def test_a_middle_split_is_modelled() -> None:
    """Split-K in three CTAs: the middle split both waits and is waited for. A serial split-K
    whose splits after the first skip the wait is sound for two splits only."""
    b = ProtocolBuilder("splitk.kc")
    b.role("m", 1)
    b.counter("sem", producer="m", consumer="m", scope=Scope.GPU, grid=True)
    b.set_program(
        "m",
        [
            b.make_step("m", Op.WAIT_GE, "sem", threshold=Threshold.OTHERS, part=Part.REST),
            b.make_step("m", Op.READ, "sem", part=Part.REST),
            b.make_step("m", Op.WRITE, "sem"),
            b.make_step("m", Op.ADD, "sem", count=1),
        ],
    )
    assert not check_protocol(b.build(group=2)).findings  # split 1 waits for split 0
    three = check_protocol(b.build(group=3))
    assert {f.code for f in three.findings} == {"L-DEADLOCK"}  # splits 1 and 2 wait for each other
    assert_agree(b.build(group=3))


def test_a_deadlock_names_the_trip_count_of_its_run() -> None:
    """Every CTA runs the same number of iterations, any from 1 to the bound: a release one
    iteration late on a ring of depth 1 hangs the run of 2 iterations already, and the
    witness says so (the explorer agrees that some trip count hangs)."""
    b = ProtocolBuilder("trip.kc")
    b.role("load", 1)
    b.role("mma", 1)
    b.ring("kv", depth=1, producer="load", consumer="mma", full_init=1, empty_init=1, init_by=("load",))
    b.produce("kv")
    b.consume("kv", lag=1)
    verdict = check_protocol(b.build(), bound=5)
    (witness,) = verdict.findings
    assert witness.code == "L-DEADLOCK" and witness.bound == 2  # type: ignore[union-attr]
    assert explore(b.build(), 5).deadlock


def test_phases_in_order_are_proved_before_they_are_used() -> None:
    """Across CTAs a barrier that several processes change is encoded by its phases only when a
    probe proves that no step of a phase runs before the phase before it is complete; a
    producer that skips its empty wait breaks that order on every barrier, and the counting
    encoding decides them; in one CTA the counting encoding decides, as before."""
    sound = pattern("multicast", depth=2)
    every = {f"kv.{kind}[{slot}]@{cta}" for kind in ("full", "empty") for slot in (0, 1) for cta in (0, 1)}
    assert ProtocolModel(sound, bound=sound.default_bound(), rlimit=MAX_RLIMIT).aligned == every
    broken = pattern("multicast", "no-empty-wait", depth=2)
    assert ProtocolModel(broken, bound=broken.default_bound(), rlimit=MAX_RLIMIT).aligned == frozenset()
    one = pattern("pingpong", depth=2)
    assert ProtocolModel(one, bound=one.default_bound(), rlimit=MAX_RLIMIT).aligned == frozenset()
