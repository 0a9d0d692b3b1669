"""Each realistic protocol mistake is caught with the right clause; correct rings pass."""

from __future__ import annotations

import pytest

from checker.engine import word
from checker.protocol import (
    DeadlockWitness,
    Op,
    ProtocolBuilder,
    RaceWitness,
    StaticViolation,
    Status,
    check_protocol,
    per_thread,
    per_warp,
)
from checker.protocol.explore import Uninitialised, explore
from checker.protocol.model import init_fault
from tests.checker.protocol.helpers import (
    EMPTY,
    FULL,
    TILE,
    kv_ring,
    two_operand_rings,
    waits_on_unfed_barrier,
    worded,
)


@pytest.mark.parametrize("depth", range(1, 9))
def test_reference_ring_passes_at_every_depth(depth: int) -> None:
    verdict = check_protocol(kv_ring(depth))
    assert verdict.status is Status.SAFE, verdict.findings
    assert verdict.deadlock is False and not verdict.races and not verdict.static
    assert worded(verdict) == []


@pytest.mark.parametrize("depth", [1, 3])
def test_prearmed_empty_with_parity_zero_passes(depth: int) -> None:
    protocol = kv_ring(depth, produce={"parity": 0}, consume={"prearm": True})
    assert check_protocol(protocol).status is Status.SAFE


def test_late_release_is_fine_when_the_ring_is_deep_enough() -> None:
    assert check_protocol(kv_ring(2, consume={"lag": 1})).status is Status.SAFE


def test_consumer_arriving_per_thread_where_per_warp_was_initialized() -> None:
    mma_threads = per_thread(ProtocolBuilder().role("mma", 8))
    verdict = check_protocol(kv_ring(2, consume={"release": mma_threads}))
    assert "L-ARRIVE" in verdict.codes
    finding = next(f for f in verdict.findings if f.code == "L-ARRIVE")
    assert isinstance(finding, StaticViolation) and finding.broken == ("arrive",)
    assert word(finding).message == (
        "`kv.empty` is initialized for 8 arrivals per phase but its participants arrive 256 times"
    )
    assert finding.in_core and finding.declared_at.text == "empty init 8"
    assert [s.provenance.text for s in finding.steps] == ["kv.empty arrive 256"]
    # The consequence is visible too: the empty barrier never completes a phase.
    assert verdict.deadlock is True


def test_producer_forgetting_expect_tx_for_one_of_two_copies() -> None:
    protocol = kv_ring(2, produce={"tx": TILE // 2, "copies": [TILE // 2, TILE // 2]})
    verdict = check_protocol(protocol)
    assert "L-TXBYTES" in verdict.codes
    finding = next(f for f in verdict.findings if f.code == "L-TXBYTES")
    assert isinstance(finding, StaticViolation) and finding.broken == ("txbytes", "declared-expect")
    diag = word(finding)
    assert diag.message == ("`kv.full` expects 8192 transaction bytes per phase but its copies complete 16384")
    assert not finding.in_core
    assert {s.provenance.text for s in finding.steps} == {"kv.full arrive 1 tx 8192", "kv.full copy 8192"}
    assert any("declares 16384" in note for note in diag.notes)
    # The phase completes after the first copy: the consumer can read a half-written slot.
    assert ("kv", "early-read") in verdict.races


def test_empty_barrier_parity_differs_between_sides_prearm_without_parity_zero() -> None:
    verdict = check_protocol(kv_ring(2, consume={"prearm": True}))
    finding = next(f for f in verdict.findings if f.code == "L-PARITY")
    assert isinstance(finding, StaticViolation) and finding.wait is not None
    assert word(finding).message == (
        "`load` first waits on `kv.empty` with parity 1 but it is pre-armed, so the wait skips the pre-armed phase"
    )
    assert finding.wait.provenance.text == "kv.empty wait parity 1"
    assert [s.provenance.text for s in finding.steps if s.prearm] == ["kv.empty arrive 8 prearm"]
    assert {"L-DEADLOCK", "L-RACE"} <= verdict.codes


def test_empty_barrier_parity_zero_without_prearm_blocks_forever() -> None:
    verdict = check_protocol(kv_ring(2, produce={"parity": 0}))
    assert {"L-PARITY", "L-DEADLOCK"} <= verdict.codes
    deadlock = next(f for f in verdict.findings if isinstance(f, DeadlockWitness))
    blocked = {row.role: row for row in deadlock.trace.stuck}
    assert blocked["load"].barrier == "kv.empty[0]" and blocked["load"].parity == 0
    assert blocked["load"].iteration == 0


def test_consumer_waiting_full_at_parity_one_reads_an_empty_slot() -> None:
    verdict = check_protocol(kv_ring(2, consume={"parity": 1}))
    assert {"L-PARITY", "L-RACE"} <= verdict.codes
    race = next(f for f in verdict.findings if f.code == "L-RACE")
    assert word(race).message == "`mma` can read slot 0 of ring `kv` before `load` fills it"


@pytest.mark.parametrize(("depth", "lag"), [(1, 1), (2, 2), (3, 3)])
def test_release_after_the_producers_next_wait_deadlocks(depth: int, lag: int) -> None:
    verdict = check_protocol(kv_ring(depth, consume={"lag": lag}))
    assert verdict.codes == {"L-DEADLOCK"}
    finding = verdict.findings[0]
    assert isinstance(finding, DeadlockWitness)
    assert {row.role for row in finding.trace.stuck} == {"load", "mma"}


def test_role_waiting_on_a_barrier_no_role_arrives_on() -> None:
    verdict = check_protocol(waits_on_unfed_barrier())
    assert "L-DEADLOCK" in verdict.codes
    arrive = word(next(f for f in verdict.findings if f.code == "L-ARRIVE"))
    assert arrive.message == ("`acc.full` is initialized for 1 arrival per phase but no role arrives on it")
    assert arrive.helps == ("add an `arrive` on `acc.full` to the side that fills the slot",)
    deadlock = next(f for f in verdict.findings if isinstance(f, DeadlockWitness))
    assert any(row.role == "epi" and row.barrier == "acc.full[0]" for row in deadlock.trace.stuck)


def test_producer_without_empty_wait_overwrites() -> None:
    verdict = check_protocol(kv_ring(2, produce={"wait_empty": False}))
    assert ("kv", "overwrite") in verdict.races
    race = next(f for f in verdict.findings if isinstance(f, RaceWitness))
    assert word(race).message == "`load` can overwrite slot 0 of ring `kv` before `mma` releases it"
    assert word(race).helps == ("wait on `kv.empty` before writing the slot",)
    assert race.trace.stuck[0].step.op is Op.COPY


def test_cross_ring_wait_cycle_deadlocks() -> None:
    """Each role waits for the other's ring before filling its own."""
    b = ProtocolBuilder("cycle.kc")
    b.role("x", 1)
    b.role("y", 1)
    b.ring("xy", depth=2, producer="x", consumer="y", full_init=1, empty_init=1, init_by=["x"])
    b.ring("yx", depth=2, producer="y", consumer="x", full_init=1, empty_init=1, init_by=["y"])
    b.consume("yx", release=1)
    b.produce("xy")
    b.consume("xy", release=1)
    b.produce("yx")
    verdict = check_protocol(b.build())
    assert verdict.codes == {"L-DEADLOCK"}
    stuck = verdict.findings[0].trace.stuck  # type: ignore[union-attr]
    assert {(r.role, r.barrier) for r in stuck} == {("x", "yx.full[0]"), ("y", "xy.full[0]")}


def test_cross_ring_order_that_prearms_the_cycle_passes() -> None:
    b = ProtocolBuilder("cycle.kc")
    b.role("x", 1)
    b.role("y", 1)
    b.ring("xy", depth=2, producer="x", consumer="y", full_init=1, empty_init=1, init_by=["x"])
    b.ring("yx", depth=2, producer="y", consumer="x", full_init=1, empty_init=1, init_by=["y"])
    b.produce("xy")
    b.consume("yx", release=1)
    b.consume("xy", release=1)
    b.produce("yx")
    assert check_protocol(b.build()).status is Status.SAFE


@pytest.mark.parametrize("depth", [2, 4])
def test_two_operand_rings_pass_and_one_missing_wait_is_found(depth: int) -> None:
    b = two_operand_rings(depth)
    b.produce("a")
    b.produce("b")
    b.consume("a")
    b.consume("b")
    assert check_protocol(b.build()).status is Status.SAFE
    b = two_operand_rings(depth)
    b.produce("a")
    b.produce("b", wait_empty=False)
    b.consume("a")
    b.consume("b")
    verdict = check_protocol(b.build())
    assert ("b", "overwrite") in verdict.races and ("a", "overwrite") not in verdict.races


def test_who_initializes_is_l_inits_one_rule() -> None:
    """One rule (``model.init_fault``): the L-INIT clause applies it to the contracts, the explorer to a
    protocol before it runs it; the model decides none of it."""
    assert init_fault([("load", False)], ["load", "mma"], ["load", "mma"]) is None
    assert init_fault([], ["load", "mma"], ["load", "mma"]) == "none"
    assert init_fault([("load", False), ("mma", False)], ["load", "mma"], ["load", "mma"]) == "several"
    assert init_fault([("load", True), ("load", False)], ["load", "mma"], ["load", "mma"]) is None
    assert init_fault([("epi", False)], ["load", "mma"], ["load", "mma", "epi"]) == "outsider"
    assert init_fault([("epi", True)], ["load", "mma"], ["load", "mma", "epi"]) is None
    assert init_fault([("epi", True)], ["load", "mma"], ["load", "mma"]) == "outsider"
    b = ProtocolBuilder("init.kc")
    b.role("load", 1)
    b.role("mma", 4)
    b.role("epi", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4, init_by=["epi"])
    b.produce("kv")
    b.consume("kv")
    assert check_protocol(b.build()).status is Status.SAFE
    with pytest.raises(Uninitialised, match="outsider"):
        explore(b.build())


def test_multi_consumer_ring_needs_every_release() -> None:
    def build(release_b: int) -> ProtocolBuilder:
        b = ProtocolBuilder("bcast.kc")
        b.role("load", 1)
        b.role("ma", 4)
        b.role("mb", 4)
        b.ring(
            "kv",
            depth=2,
            producer="load",
            consumer=["ma", "mb"],
            full_init=1,
            empty_init=8,
            full_tx=TILE,
            init_by=["load"],
        )
        b.produce("kv")
        b.consume("kv", role="ma", release=4)
        b.consume("kv", role="mb", release=release_b)
        return b

    assert check_protocol(build(4).build()).status is Status.SAFE
    verdict = check_protocol(build(2).build())
    assert {"L-ARRIVE", "L-DEADLOCK"} <= verdict.codes


def test_counter_threshold_above_what_is_added_deadlocks() -> None:
    def build(need: int) -> ProtocolBuilder:
        b = ProtocolBuilder("ctr.kc")
        b.role("push", 1)
        b.role("load", 1)
        b.counter("ready", producer="push", consumer="load")
        b.step("push", Op.ADD, "ready", count=1)
        b.step("load", Op.WAIT_GE, "ready", count=need)
        return b

    b = build(1)
    b.role("mma", 4)
    b.ring("kv", depth=2, producer="load", consumer="mma", full_init=1, empty_init=4, full_tx=TILE, init_by=["load"])
    b.produce("kv")
    b.consume("kv")
    assert check_protocol(b.build()).status is Status.SAFE
    verdict = check_protocol(build(2).build())
    assert verdict.codes == {"L-DEADLOCK"}
    deadlock = verdict.findings[0]
    assert isinstance(deadlock, DeadlockWitness)
    assert [(r.role, r.barrier) for r in deadlock.trace.stuck] == [("load", "ready")]


@pytest.mark.parametrize(("threads", "safe"), [(256, True), (224, False)])
def test_named_barrier_thread_count(threads: int, safe: bool) -> None:
    b = ProtocolBuilder("bar.kc")
    b.role("mma", 4)
    b.role("epi", 4)
    b.named_barrier("sync", threads)
    b.step("mma", Op.BAR_SYNC, "sync", count=128)
    b.step("epi", Op.BAR_SYNC, "sync", count=128)
    verdict = check_protocol(b.build())
    assert (verdict.status is Status.SAFE) is safe
    if not safe:
        assert verdict.codes == {"L-DEADLOCK"}


def test_producer_arrive_before_wait_on_a_second_ring_is_independent() -> None:
    """Declaration checks look at one barrier at a time: a mistake names its barrier."""
    b = two_operand_rings(2)
    b.produce("a")
    b.produce("b", tx=4096, copies=[4096, 4096])
    b.consume("a")
    b.consume("b")
    verdict = check_protocol(b.build())
    assert ("L-TXBYTES", "b", "full") in verdict.static
    assert not any(key[1] == "a" for key in verdict.static)


def test_explicit_step_order_across_rings_is_respected() -> None:
    """The same steps in another order: the consumer releases `a` only after waiting `b`."""
    b = two_operand_rings(1)
    b.produce("a")
    b.produce("b")
    mma = b.get_role("mma")
    steps = [
        b.make_step("mma", Op.WAIT, "a", barrier=FULL, parity=0),
        b.make_step("mma", Op.READ, "a"),
        b.make_step("mma", Op.WAIT, "b", barrier=FULL, parity=0),
        b.make_step("mma", Op.READ, "b"),
        b.make_step("mma", Op.ARRIVE, "a", barrier=EMPTY, count=per_warp(mma)),
        b.make_step("mma", Op.ARRIVE, "b", barrier=EMPTY, count=per_warp(mma)),
    ]
    b.set_program("mma", steps)
    assert check_protocol(b.build()).status is Status.SAFE
