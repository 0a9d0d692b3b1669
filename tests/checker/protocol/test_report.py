"""Diagnostics: codes, labels, trace tables, determinism, and honest unknowns."""

from __future__ import annotations

from checker.protocol import Status, check_protocol
from solver import UNKNOWN_CODE
from tests.checker.protocol.helpers import kv_ring, protocol_diagnostics, waits_on_unfed_barrier, worded


def test_tiny_budget_is_unknown_not_a_pass() -> None:
    verdict = check_protocol(kv_ring(4), rlimit=2_000)
    assert verdict.status is Status.UNKNOWN
    assert verdict.undecided
    assert verdict.deadlock is None
    diags = worded(verdict)
    assert diags and all(d.code == UNKNOWN_CODE and d.is_error for d in diags)
    assert any(dict(d.data)["clause"] == "L-DEADLOCK" for d in diags)
    assert all("rlimit 2000" in d.message for d in diags)
    # every undecided query is shown on the channel it is about, under its own clause
    assert all(d.primary is not None for d in diags)
    assert {dict(d.data)["clause"] for d in diags} <= {"L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK"}


def test_unknown_never_hides_a_found_violation() -> None:
    verdict = check_protocol(kv_ring(2, consume={"release": 256}), rlimit=30_000)
    assert verdict.status in (Status.UNSAFE, Status.UNKNOWN)
    assert verdict.status is not Status.SAFE


def test_diagnostics_are_deterministic() -> None:
    for protocol in (
        kv_ring(3, consume={"lag": 3}),
        kv_ring(2, produce={"wait_empty": False}),
        waits_on_unfed_barrier(3),
        kv_ring(2, consume={"prearm": True}),
    ):
        first = protocol_diagnostics(protocol)
        second = protocol_diagnostics(protocol)
        assert first == second
        assert first


def test_deadlock_diagnostic_has_trace_table_and_labels() -> None:
    [diag] = protocol_diagnostics(kv_ring(1, consume={"lag": 1}))
    assert diag.code == "L-DEADLOCK"
    assert diag.message == (
        "the protocol can deadlock: every live role waits (`load` on `kv.empty[0]`, `mma` on `kv.full[0]`)"
    )
    primaries = [label for label in diag.labels if label.primary]
    assert {label.span.line for label in primaries} == {7, 10}
    assert all("blocks here forever" in label.text for label in primaries)
    assert any(not label.primary and label.text.startswith("runs at trace") for label in diag.labels)
    table = diag.notes[0].splitlines()
    assert table[1].split() == ["#", "role", "step", "iter", "barrier", "slot", "phase", "parity", "effect"]
    blocked = [line for line in table if line.strip().startswith("->")]
    assert len(blocked) == 2 and all(line.rstrip().endswith("blocks") for line in blocked)
    assert diag.message[-1] != "."


def test_race_diagnostic_points_at_both_sides() -> None:
    diags = protocol_diagnostics(kv_ring(2, produce={"wait_empty": False}))
    race = next(d for d in diags if d.code == "L-RACE")
    primary = race.primary
    assert primary is not None and primary.text.startswith("writes slot 0 for iteration 2")
    assert any(label.text.startswith("`mma` is done with iteration 0") for label in race.labels)
    assert dict(race.data)["kind"] == "overwrite"


def test_static_conflict_carries_its_minimal_core() -> None:
    diags = protocol_diagnostics(kv_ring(2, consume={"release": 256}))
    arrive = next(d for d in diags if d.code == "L-ARRIVE")
    core = next(n for n in arrive.notes if n.startswith("minimal conflicting facts"))
    assert "`empty init 8`" in core and "`kv.empty arrive 256`" in core
    assert "`kv.full" not in core
