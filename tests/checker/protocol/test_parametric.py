"""The parametric argument: what it proves for every depth and trip count, what it leaves to the
bounded model, and its agreement with the explicit-state oracle on random protocols."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from checker.protocol import DEFAULT_RLIMIT, BarrierKind, Op, Protocol, ProtocolBuilder, check_protocol
from checker.protocol import parametric as P
from checker.protocol.explore import StateLimit, explore
from tests.checker.protocol.helpers import kv_ring, loader_with_rendezvous, two_operand_rings
from tests.checker.protocol.strategies import small_protocols
from tests.tiers import examples

FULL, EMPTY = BarrierKind.FULL, BarrierKind.EMPTY


def prove(protocol: Protocol, depths: dict[str, P.DepthRange] | None = None) -> P.ParametricResult:
    return P.prove(protocol, depths, rlimit=DEFAULT_RLIMIT)


# -- what it proves ------------------------------------------------------------------------


@pytest.mark.parametrize("depths", [(64, 64), (2, 255), (1, None), (33, 33)])
def test_the_reference_ring_is_proved_at_every_depth_of_a_range(depths: P.DepthRange) -> None:
    result = prove(kv_ring(depths[0]), {"kv": depths})
    assert result.proved, result.reason
    assert result.depths == (("kv", *depths),)


def test_a_ring_of_depth_64_is_decided_by_the_check_without_unrolling_it() -> None:
    verdict = check_protocol(kv_ring(64))
    assert verdict.status.value == "safe" and not verdict.undecided
    assert verdict.coverage.parametric and verdict.stats.events == 0


@pytest.mark.parametrize("lag", [1, 2, 3])
def test_a_late_release_is_proved_exactly_from_the_depth_above_its_lag(lag: int) -> None:
    late = kv_ring(lag + 1, consume={"lag": lag})
    assert prove(late, {"kv": (lag + 1, None)}).proved
    shallow = prove(late, {"kv": (lag, None)})
    assert not shallow.proved and "deadlock" in shallow.reason
    assert explore(late.with_depth("kv", lag), 2 * lag + 1).deadlock  # the depth the argument refuses hangs


def test_a_pre_armed_ring_and_two_operand_rings_are_proved() -> None:
    assert prove(kv_ring(3, consume={"prearm": True}, produce={"parity": 0}), {"kv": (1, None)}).proved
    b = two_operand_rings(2)
    for ring in ("a", "b"):
        b.produce(ring)
    for ring in ("a", "b"):
        b.consume(ring)
    assert prove(b.build(), {"a": (1, None), "b": (3, 9)}).proved


def _counter_and_rendezvous(sync: bool) -> Protocol:
    """A loader feeding `mma`, a counter from `mma` to `epi`, and a named barrier joining `mma` and `epi`."""
    b = ProtocolBuilder("ce.kc")
    b.role("load", 1)
    b.role("mma", 4)
    b.role("epi", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4, full_tx=64, init_by=["load"])
    b.counter("done", producer="mma", consumer="epi")
    b.named_barrier("join", 256)
    b.produce("kv")
    b.consume("kv")
    b.step("mma", Op.ADD, "done", count=2)
    b.step("mma", Op.BAR_SYNC, "join", count=128)
    b.step("epi", Op.WAIT_GE, "done", count=2)
    b.step("epi", Op.BAR_SYNC if sync else Op.BAR_ARRIVE, "join", count=128)
    return b.build()


@pytest.mark.parametrize("sync", [True, False])
def test_counters_and_named_barriers_are_stepped_by_the_argument(sync: bool) -> None:
    """`epi` arrives on `join` (or syncs) only after the counter says `mma` synced the iteration before."""
    assert prove(_counter_and_rendezvous(sync), {"kv": (1, None)}).proved
    assert not explore(_counter_and_rendezvous(sync).with_depth("kv", 3)).deadlock
    assert prove(loader_with_rendezvous(), {"q0": (1, None), "q1": (1, None)}).proved


def _runs_ahead(threads: int) -> Protocol:
    """`b` arrives on `sync` every iteration without waiting for anything: it can run ahead."""
    b = ProtocolBuilder("ahead.kc")
    b.role("a", 1)
    b.role("b", 1)
    b.named_barrier("sync", threads)
    b.step("a", Op.BAR_SYNC, "sync", count=32)
    b.step("b", Op.BAR_ARRIVE, "sync", count=32)
    return b.build()


def test_a_named_barrier_arrival_that_may_run_ahead_is_left_to_the_bounded_model() -> None:
    """Two arrivals of `b` complete a generation without `a`: the generations mix."""
    result = prove(_runs_ahead(64))
    assert not result.proved and "generation of `b`'s arrival on `sync`" in result.reason, result.reason
    assert "(O2)" in result.reason


# -- what it leaves to the bounded model, and why --------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "reason"),
    [
        (lambda: kv_ring(2, produce={"wait_empty": False}), "parity window of `mma`'s wait on `kv.full`"),
        (lambda: kv_ring(2, consume={"wait_full": False}), "parity window of `load`'s wait on `kv.empty`"),
        (lambda: kv_ring(1, consume={"lag": 1}), "deadlock freedom is not proved (O4)"),
    ],
)
def test_an_obligation_that_fails_names_itself(protocol: object, reason: str) -> None:
    result = prove(protocol())  # type: ignore[operator]
    assert not result.proved and reason in result.reason, result.reason
    assert check_protocol(protocol()).findings  # type: ignore[operator]  # the bounded model rejects it


def _early_phase(split: bool) -> Protocol:
    """`full` completes on `arrive 1` alone when the bytes are expected by a later step (C2)."""
    b = ProtocolBuilder("c2.kc")
    b.role("load", 1)
    b.role("mma", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4, full_tx=64, init_by=["load"])
    b.step("load", Op.WAIT, "kv", barrier=EMPTY, parity=1)
    if split:
        b.step("load", Op.ARRIVE, "kv", barrier=FULL, count=1)
        b.step("load", Op.EXPECT_TX, "kv", barrier=FULL, nbytes=64)
    else:
        b.step("load", Op.ARRIVE, "kv", barrier=FULL, count=1, nbytes=64)
    b.step("load", Op.COPY, "kv", barrier=FULL, nbytes=64)
    b.consume("kv")
    return b.build()


def _prearmed_by(role: str) -> Protocol:
    """`empty` pre-armed by the consumer, or by the producer, which never releases it (C3)."""
    b = ProtocolBuilder("c3.kc")
    b.role("load", 1)
    b.role("mma", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4, full_tx=64, init_by=["load"])
    b.step(role, Op.ARRIVE, "kv", barrier=EMPTY, count=4, prearm=True)
    b.produce("kv", parity=0)
    b.consume("kv")
    return b.build()


def _named_count(threads: int) -> Protocol:
    b = ProtocolBuilder("c4.kc")
    b.role("a", 1)
    b.role("b", 1)
    b.named_barrier("sync", threads)
    b.step("a", Op.BAR_SYNC, "sync", count=32)
    b.step("b", Op.BAR_SYNC, "sync", count=32)
    return b.build()


CLASS = {
    "C1 arrivals": (lambda: kv_ring(2, consume={"release": 256}), lambda: kv_ring(2), "L-ARRIVE"),
    "C1 bytes": (lambda: kv_ring(2, produce={"tx": 8192, "copies": [8192, 8192]}), lambda: kv_ring(2), "L-TXBYTES"),
    "C1 parity": (lambda: kv_ring(2, consume={"parity": 1}), lambda: kv_ring(2), "L-PARITY"),
    "C2": (lambda: _early_phase(True), lambda: _early_phase(False), "before its last mover"),
    "C3": (lambda: _prearmed_by("load"), lambda: _prearmed_by("mma"), "pre-arms"),
    "C4": (lambda: _named_count(32), lambda: _named_count(64), "do not make its count"),
}


@pytest.mark.parametrize("condition", sorted(CLASS))
def test_each_class_condition_refuses_its_protocol_and_admits_the_twin(condition: str) -> None:
    outside, inside, why = CLASS[condition]
    found = P.outside(outside())
    assert found is not None and why in found, found
    assert P.outside(inside()) is None
    assert prove(inside(), {r.name: (1, None) for r in inside().rings}).proved
    assert "outside the covered class" in prove(outside()).reason


def test_the_early_phase_is_real_where_the_class_refuses_it() -> None:
    assert explore(_early_phase(True)).races  # the consumer reads before the copy lands


def test_a_step_kind_or_a_model_field_it_does_not_know_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """How a kind or a field another change adds to the model is met: explicitly, never silently."""
    monkeypatch.setattr(P, "KNOWN_OPS", P.KNOWN_OPS - {Op.BAR_SYNC})
    assert P.outside(_named_count(64)) == "step kind `bar.sync` of `a`"
    monkeypatch.undo()
    fields = dict(P._KNOWN_FIELDS)
    fields[type(kv_ring(2).programs[0][1][0])] = fields[type(kv_ring(2).programs[0][1][0])] - {"lag"}
    monkeypatch.setattr(P, "_KNOWN_FIELDS", fields)
    assert P.outside(kv_ring(2)) is None  # every step leaves `lag` at its default
    assert P.outside(kv_ring(2, consume={"lag": 1})) == "`Step.lag` of the model"


def test_a_budget_that_runs_out_proves_nothing() -> None:
    result = P.prove(kv_ring(2), rlimit=50)
    assert not result.proved and "ran out of budget" in result.reason


# -- the oracle agrees with every proof ------------------------------------------------------


def _covered(protocol: Protocol) -> bool:
    return P.outside(protocol) is None


COVERED = small_protocols(max_depth=4).filter(_covered)


@st.composite
def claims(draw: st.DrawFn) -> tuple[Protocol, dict[str, P.DepthRange]]:
    """A random protocol of the covered class (its releases lagging by up to 3 iterations) and a
    depth range per ring: about half of them are proved, the rest fail an obligation."""
    protocol = draw(COVERED)
    lags = {}
    for role, steps in protocol.programs:
        for k, step in enumerate(steps):
            if step.op is Op.ARRIVE and not step.prearm and step.barrier is EMPTY and draw(st.integers(0, 3)) == 0:
                lags[(role, k)] = draw(st.integers(0, 3))
    programs = tuple(
        (role, tuple(dataclasses.replace(s, lag=lags.get((role, k), s.lag)) for k, s in enumerate(steps)))
        for role, steps in protocol.programs
    )
    protocol = dataclasses.replace(protocol, programs=programs)  # a lag changes no accounting: still in class
    ranges: dict[str, P.DepthRange] = {}
    for ring in protocol.rings:
        lo = draw(st.integers(1, 5))
        ranges[ring.name] = (lo, draw(st.sampled_from((lo, lo + 1, lo + 4, 64, None))))
    return protocol, ranges


STATES = 10_000
"""The states the oracle explores per run (a larger run is skipped); the campaign allows more."""
CAMPAIGN_STATES = 100_000


def _runs(data: st.DataObject, protocol: Protocol, ranges: dict[str, P.DepthRange]) -> list[tuple[Protocol, int]]:
    """Concrete runs of a proved claim: depths in each range (up to 64), trip counts that wrap the
    rings several times at small depths, and up to 8 iterations (or one wrap) at large ones."""
    runs = []
    for _ in range(3):
        deep = data.draw(st.integers(0, 2)) == 0
        concrete = protocol
        for name, (lo, hi) in ranges.items():
            top = min(hi if hi is not None else 64, 64)
            depth = data.draw(st.integers(lo, top) if deep else st.integers(lo, min(top, lo + 3)))
            concrete = concrete.with_depth(name, depth)
        most = concrete.max_depth
        trips = st.integers(1, 8) | st.just(most + 1) if deep else st.integers(1, 2 * most + 2)
        runs.append((concrete, data.draw(trips)))
    return runs


def _agrees(protocol: Protocol, ranges: dict[str, P.DepthRange], data: st.DataObject, states: int = STATES) -> bool:
    """Whether the oracle finds no deadlock, race or static finding in the runs a proof claims; False
    when nothing was proved (the bounded model decides those: ``test_oracle.py``)."""
    result = prove(protocol, ranges)
    event("proved" if result.proved else "left to the bounded model")
    if not result.proved:
        return False
    checked = 0
    for concrete, trips in _runs(data, protocol, ranges):
        try:
            found = explore(concrete, trips, max_states=states)
        except StateLimit:
            continue
        checked += 1
        event("a run deeper than 8" if concrete.max_depth > 8 else "a run at depth 8 or less")
        event("a run that wraps a ring" if trips > concrete.max_depth else "a run that wraps no ring")
        where = ({r.name: r.depth for r in concrete.rings}, trips)
        assert not found.deadlock and not found.races and not found.static, (where, found)
    return checked > 0


@examples(2)
@given(claims(), st.data())
def test_the_oracle_agrees_with_every_proof(
    claim: tuple[Protocol, dict[str, P.DepthRange]], data: st.DataObject
) -> None:
    protocol, ranges = claim
    _agrees(protocol, ranges, data)


@pytest.mark.slow
@examples(1)
@given(claims(), st.data())
def test_the_oracle_agrees_with_every_proof_campaign(
    claim: tuple[Protocol, dict[str, P.DepthRange]], data: st.DataObject
) -> None:
    """The campaign: 10 000 claims in the slow tier, each proved one checked at up to three
    concrete depths (up to 64) and trip counts. What is not proved falls back to the bounded
    model, whose own campaign is ``test_oracle.py``'s."""
    protocol, ranges = claim
    _agrees(protocol, ranges, data, CAMPAIGN_STATES)


@examples(1)
@given(claims())
def test_what_holds_by_construction_is_proved_too(claim: tuple[Protocol, dict[str, P.DepthRange]]) -> None:
    """O1 and consecution (O2 in full) hold whenever the obligations the check asks hold."""
    protocol, ranges = claim
    if prove(protocol, ranges).proved:
        full = P.prove(protocol, ranges, rlimit=DEFAULT_RLIMIT, exhaustive=True)
        assert full.proved, full.reason
