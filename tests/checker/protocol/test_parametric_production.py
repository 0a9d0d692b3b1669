"""The parametric argument on the production constructs (issue 27): turns, pre-armed named
barriers, asynchronous reads and read waits, unsynchronized staging rings, step parts and
targets; several CTAs (clusters with multicast and remote steps, groups sharing a tile's grid
counter with relative thresholds); what it leaves to the bounded model (restarting slot
indices, phases that can mix across CTAs), and the oracle's agreement on random protocols with
grid, cluster and named-barrier steps."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from checker.composition import Composition
from checker.protocol import DEFAULT_RLIMIT, BarrierKind, Op, Protocol, check_protocol
from checker.protocol import parametric as P
from checker.protocol.build import build_model
from checker.protocol.check import MAX_RLIMIT, ModelOptions
from checker.protocol.declarations import excluded
from checker.protocol.depths import _deep_run, analyse
from checker.protocol.explore import StateLimit, explore
from checker.protocol.model import Part, Target
from checker.protocol.verdict import Status
from kernlink.api import check, compose
from tests.checker.protocol.strategies import PATTERN_MISTAKES, mixed_protocols, pattern, pattern_protocols
from tests.checker.protocol.test_oracle import assert_agree
from tests.tiers import examples

FULL, EMPTY = BarrierKind.FULL, BarrierKind.EMPTY


def prove(protocol: Protocol, depths: dict[str, P.DepthRange] | None = None) -> P.ParametricResult:
    return P.prove(protocol, depths, rlimit=DEFAULT_RLIMIT)


def every_depth(protocol: Protocol, lo: int = 1, hi: int | None = None) -> dict[str, P.DepthRange]:
    return {r.name: (lo, hi) for r in protocol.rings}


# -- what it proves now ----------------------------------------------------------------------

PROVED = [
    ("pingpong", 0),  # turns, two named barriers, one pre-armed arrival (FA3, CUTLASS ping-pong)
    ("pingpong", 1),
    ("staging", 0),  # a role's own staging buffer, read asynchronously by a TMA store, a read wait per reuse
    ("tmem", 0),  # a ring whose consumer reads asynchronously and releases after its read wait
]


@pytest.mark.parametrize(("name", "knob"), PROVED)
@pytest.mark.parametrize("depths", [(2, 255), (64, 64), (1, None)])
def test_a_sound_production_pattern_of_one_cta_is_proved_at_every_depth(
    name: str, knob: int, depths: P.DepthRange
) -> None:
    protocol = pattern(name, "", 2, knob)
    lo, hi = depths
    if name == "staging":  # its read wait lags by 2: a slot reused every iteration (depth 1) races
        lo = max(lo, 2)
        assert not prove(protocol, every_depth(protocol, 1, 1)).proved
        assert explore(protocol.with_depth("stage", 1), 3).races
    result = prove(protocol, every_depth(protocol, lo, hi))
    assert result.proved, result.reason


MISTAKES_OF_ONE_CTA = [
    ("pingpong", "no-prearm", "deadlock freedom"),
    ("pingpong", "prearm-both", "generation"),
    ("pingpong", "no-turns", "arrivals on `kv.empty`"),
    ("pingpong", "release-late", "is not proved"),
    ("staging", "no-read-wait", "no overwrite on ring `stage`"),
    ("tmem", "release-first", "no overwrite on ring `acc`"),
    ("tmem", "no-read-wait", "no overwrite on ring `acc`"),
]


@pytest.mark.parametrize(("name", "mistake", "reason"), MISTAKES_OF_ONE_CTA)
def test_each_mistake_of_a_production_pattern_is_left_to_the_bounded_model_which_rejects_it(
    name: str, mistake: str, reason: str
) -> None:
    """The failing twins of the proofs above: never proved, at any depth, and found by the bounded model."""
    for depth in (1, 2):
        protocol = pattern(name, mistake, depth)
        result = prove(protocol, every_depth(protocol, depth, depth))
        assert not result.proved and reason in result.reason, result.reason
        found = check_protocol(protocol)
        assert found.findings and not found.coverage.parametric
        oracle = explore(protocol)
        assert oracle.deadlock or oracle.races or oracle.static


# -- several CTAs ----------------------------------------------------------------------------

PROVED_ACROSS_CTAS = [
    ("multicast", 0),  # each CTA copies its half into both CTAs' slots and releases both
    ("multicast", 1),
    ("pair", 0),  # a 2-CTA pair: the leader's barrier counts both CTAs' copies
    ("split-k", 0),  # a grid counter per tile, `wait ge split`, 2 or 3 CTAs per tile
    ("split-k", 1),
    ("stream-k", 0),
    ("stream-k", 1),
    ("grid-barrier", 0),
    ("grid-barrier", 1),
]


@pytest.mark.parametrize(("name", "knob"), PROVED_ACROSS_CTAS)
@pytest.mark.parametrize("depths", [(2, 255), (64, 64), (1, None)])
def test_a_sound_pattern_of_several_ctas_is_proved_at_every_depth(name: str, knob: int, depths: P.DepthRange) -> None:
    """Before the counters were per CTA, each of these fell back to the bounded model ("it runs in
    2 CTAs ..."), which stops at depth 32."""
    protocol = pattern(name, "", 2, knob)
    assert protocol.ctas > 1
    result = prove(protocol, every_depth(protocol, *depths))
    assert result.proved, result.reason


MISTAKES_ACROSS_CTAS = [
    ("multicast", "local-release", "slot reuse by `p@0`'s step on `kv.full` of CTA 1"),
    ("multicast", "tx-one-half", "L-TXBYTES"),
    ("multicast", "no-empty-wait", "slot reuse"),
    ("pair", "peer-copy-local", "L-TXBYTES"),
    ("pair", "peer-no-wait", "slot reuse by `p@1`'s step on `kv.full` of CTA 0"),
    ("pair", "tx-one-copy", "L-TXBYTES"),
    ("split-k", "threshold", "deadlock freedom"),
    ("split-k", "no-wait", "no conflict on counter `flag`"),
    ("split-k", "add-first", "no conflict on counter `flag`"),
    ("stream-k", "threshold", "no conflict on counter `flag`"),
    ("stream-k", "no-wait", "no conflict on counter `flag`"),
    ("stream-k", "add-first", "no conflict on counter `flag`"),
    ("grid-barrier", "threshold", "no conflict on counter `flag`"),
    ("grid-barrier", "no-wait", "no conflict on counter `flag`"),
    ("grid-barrier", "add-first", "no conflict on counter `flag`"),
]


@pytest.mark.parametrize(("name", "mistake", "reason"), MISTAKES_ACROSS_CTAS)
def test_each_mistake_across_ctas_is_left_to_the_bounded_model_which_rejects_it(
    name: str, mistake: str, reason: str
) -> None:
    for knob in (0, 1):
        protocol = pattern(name, mistake, 2, knob)
        for depths in ((2, 2), (2, 255), (1, None)):
            result = prove(protocol, every_depth(protocol, *depths))
            assert not result.proved and reason in result.reason, result.reason
        found = check_protocol(protocol)
        assert found.findings and not found.coverage.parametric
        oracle = explore(protocol)
        assert oracle.deadlock or oracle.races or oracle.static


def test_a_release_into_both_ctas_whose_phases_can_mix_is_left_to_the_bounded_model() -> None:
    """Ping-pong in a 2-CTA cluster whose consumers release both CTAs' slot but whose copies stay in
    their own CTA: a consumer may release data ``y`` on the peer's barrier before the peer's consumer
    released ``y - depth`` there (its release into its own CTA came first), so a phase of the peer's
    `empty` can complete with the arrival of a later use. The hardware tolerates it here (the reads
    are done), but phases are no longer a function of the counters: the argument does not prove it."""
    protocol = pattern("pingpong", "", 2, 2)
    assert P.outside(protocol) is None
    result = prove(protocol, every_depth(protocol, 2, 255))
    assert not result.proved and "step on `kv.empty` of CTA 1 is not proved (O2)" in result.reason
    assert check_protocol(protocol).status is Status.SAFE


def test_what_the_argument_leaves_to_the_bounded_model_says_why() -> None:
    """A slot index that restarts on a ring with barriers: its phases follow the slots, whose reuse
    is not linear in the depth."""
    base = pattern("tmem", "", 2)
    protocol = dataclasses.replace(base, rings=(dataclasses.replace(base.rings[0], restart=3),))
    reason = "slot index restarts every 3 iterations and its barriers' phases follow the slots"
    assert reason in (P.outside(protocol) or ""), P.outside(protocol)
    result = check_protocol(protocol)
    assert not result.coverage.parametric and reason in result.coverage.fallback


# -- software pipelining, restarting staging indices, syncs before the loop -----------------

PIPELINED = [
    ("lagged", 0, 1),  # a consumer side of `v` lagging one iteration, its last phase peeled (attention's PV)
    ("lagged", 1, 2),  # lagging two: with one slot, V_1 waits for V_0's release two iterations on
    ("restart", 0, 1),  # a staging index restarting every depth + 1 subtiles, its read wait one behind
    ("restart", 1, 1),
    ("presync", 0, 1),  # both roles `bar.sync` before their loops (a barrier of one generation)
    ("presync", 1, 1),  # ... on the barrier their loops sync on too
    ("pingpong-phases", 0, 1),  # FA3's ping-pong as its code runs it (rendezvous `lag 1`, `peeled`)
    ("pingpong-phases", 1, 1),
    ("oneshot", 0, 1),  # Q filled once per CTA (`once`), beside a streamed ring
    ("oneshot", 1, 1),
]


@pytest.mark.parametrize(("name", "knob", "least"), PIPELINED)
@pytest.mark.parametrize("depths", [(2, 255), (64, 64), (1, None)])
def test_a_pipelined_pattern_is_proved_at_every_depth_and_trip_count(
    name: str, knob: int, least: int, depths: P.DepthRange
) -> None:
    """Before, each fell back to the bounded model: a lagged side ("the model field `peel`") at every
    trip count up to its bound, a restarting index and a `bar.sync` before the loop at depths up to 32."""
    protocol = pattern(name, "", 2, knob)
    lo, hi = depths
    result = prove(protocol, every_depth(protocol, max(lo, least), hi))
    assert result.proved, result.reason
    if least > lo:  # below it the pattern really hangs
        assert not prove(protocol, every_depth(protocol, lo, least - 1)).proved
        assert explore(protocol.with_depth("v", lo).with_depth("k", lo), 4).deadlock
    for depth in (least, least + 1):  # the oracle agrees at the least depths
        concrete = protocol
        for ring in protocol.rings:
            concrete = concrete.with_depth(ring.name, depth)
        found = explore(concrete, 2 * depth + 2)
        assert not found.deadlock and not found.races and not found.static


PIPELINE_MISTAKES = [
    ("lagged", "release-early", 0, 2, "parity window"),  # V_i released before the lagged read of it
    ("lagged", "order", 0, 1, "deadlock freedom"),  # the producer lags K while the consumer waits K_i first
    ("lagged", "order", 1, 2, "deadlock freedom"),
    ("restart", "wait-late", 0, 2, "no overwrite on ring `stage`"),  # slot reused a subtile after its use
    ("restart", "no-read-wait", 1, 2, "no overwrite on ring `stage`"),
    ("presync", "one-side", 0, 2, "do not make its count"),  # the producer never syncs before its loop
    ("presync", "loop-one-side", 1, 2, "deadlock freedom"),  # one generation ahead: the last sync hangs
    ("presync", "twice", 0, 2, "more than once before its loop"),
    ("pingpong-phases", "synced-first", 0, 2, "deadlock freedom"),  # warpgroup 0 waits for its first turn
    ("pingpong-phases", "handover-late", 1, 2, "deadlock freedom"),  # warpgroup 1's hand-overs a phase late
    ("oneshot", "refilled", 0, 1, "deadlock freedom"),  # the producer refills Q every iteration
    ("oneshot", "no-wait", 0, 1, "no early read on ring `q`"),
    ("oneshot", "wait-in-loop", 1, 1, "deadlock freedom"),  # the consumer waits for Q every iteration
]


@pytest.mark.parametrize(("name", "mistake", "knob", "depth", "reason"), PIPELINE_MISTAKES)
def test_each_pipelining_mistake_is_left_to_the_bounded_model_which_rejects_it(
    name: str, mistake: str, knob: int, depth: int, reason: str
) -> None:
    protocol = pattern(name, mistake, depth, knob)
    for depths in ((depth, depth), (1, None), (1, 255)):
        result = prove(protocol, every_depth(protocol, *depths))
        assert not result.proved and reason in result.reason, result.reason
    found = check_protocol(protocol)
    assert found.findings and not found.coverage.parametric
    oracle = explore(protocol)
    assert oracle.deadlock or oracle.races or oracle.static


def test_a_grid_counter_in_one_cta_is_proved() -> None:
    """A word per tile that only this CTA's roles step (a group of one)."""
    protocol = pattern("split-k", "", 2, 0)
    one = dataclasses.replace(protocol, group=1)
    assert prove(one, every_depth(one, 1, None)).proved


def test_parts_and_targets_of_one_cta_are_its_own() -> None:
    """`on leader` runs and a multicast arrive acts on the CTA's own barrier when the protocol runs in
    one CTA; a step `on peer` runs nowhere, so its barrier misses its arrivals."""
    base = pattern("tmem", "", 2)
    steps = dict(base.programs)
    moved = {
        role: tuple(
            dataclasses.replace(s, part=Part.LEADER, target=Target.ALL) if s.op is Op.ARRIVE else s for s in prog
        )
        for role, prog in steps.items()
    }
    leader = dataclasses.replace(base, programs=tuple(moved.items()))
    assert prove(leader, every_depth(leader)).proved
    peer = {
        role: tuple(dataclasses.replace(s, part=Part.PEER) if s.op is Op.ARRIVE else s for s in prog)
        for role, prog in steps.items()
    }
    nowhere = dataclasses.replace(base, programs=tuple(peer.items()))
    assert "do not make its phases (L-ARRIVE)" in (P.outside(nowhere) or "")  # its arrivals run nowhere
    assert explore(nowhere).static


def test_a_named_barrier_pre_arrival_without_a_loop_arrival_falls_back() -> None:
    protocol = pattern("pingpong", "", 2)
    programs = tuple(
        (role, tuple(s for s in prog if not (s.op is Op.BAR_ARRIVE and not s.prearm and role == "w1")))
        for role, prog in protocol.programs
    )
    alone = dataclasses.replace(protocol, programs=programs)
    assert "before its loop but not in it" in (P.outside(alone) or ""), P.outside(alone)


# -- the oracle agrees ----------------------------------------------------------------------


@st.composite
def production_claims(draw: st.DrawFn) -> tuple[Protocol, dict[str, P.DepthRange]]:
    """A random protocol with production steps (grid, cluster, named-barrier, turns, asynchronous
    reads; sound or not) and a depth range per ring around its own depth."""
    protocol = draw(st.one_of(mixed_protocols(), pattern_protocols()))
    ranges: dict[str, P.DepthRange] = {}
    for ring in protocol.rings:
        lo = ring.depth
        ranges[ring.name] = (lo, draw(st.sampled_from((lo, lo + 1, lo + 4, 64, None))))
    return protocol, ranges


STATES = 10_000
"""The states the oracle explores per run (a larger run is skipped); the campaign allows more."""
CAMPAIGN_STATES = 100_000


def _runs(data: st.DataObject, protocol: Protocol, ranges: dict[str, P.DepthRange]) -> list[tuple[Protocol, int]]:
    """Concrete runs of a proved claim: depths in each range (up to 64) and up to 8 tiles."""
    runs = []
    for _ in range(3):
        deep = data.draw(st.integers(0, 2)) == 0
        concrete = protocol
        for name, (lo, hi) in ranges.items():
            top = min(hi if hi is not None else 64, 64)
            depth = data.draw(st.integers(lo, top) if deep else st.integers(lo, min(top, lo + 3)))
            concrete = concrete.with_depth(name, depth)
        most = concrete.max_depth
        trips = st.integers(1, 8) if deep else st.integers(1, min(8, 2 * most + 2))
        runs.append((concrete, data.draw(trips)))
    return runs


def agrees(protocol: Protocol, ranges: dict[str, P.DepthRange], data: st.DataObject, states: int) -> None:
    """A proof holds in the explicit-state oracle at concrete depths and trip counts; a protocol the
    argument leaves to the bounded model is decided by it as the oracle decides it (at its depth)."""
    result = prove(protocol, ranges)
    event(f"{protocol.ctas} CTA(s)")
    if not result.proved:
        event("left to the bounded model")
        try:
            assert_agree(protocol, 2, rlimit=MAX_RLIMIT)
        except StateLimit:
            event("the bounded run is too large for the oracle")
        return
    event("proved")
    event(f"proved in {protocol.ctas} CTA(s)")
    for concrete, trips in _runs(data, protocol, ranges):
        try:
            found = explore(concrete, trips, max_states=states)
        except StateLimit:
            event("a run too large for the oracle")
            continue
        event("a run deeper than 8" if concrete.max_depth > 8 else "a run at depth 8 or less")
        where = ({r.name: r.depth for r in concrete.rings}, trips)
        assert not found.deadlock and not found.races and not found.static, (where, found)


@examples(2)
@given(production_claims(), st.data())
def test_the_oracle_agrees_on_random_production_protocols(
    claim: tuple[Protocol, dict[str, P.DepthRange]], data: st.DataObject
) -> None:
    agrees(*claim, data, STATES)


@pytest.mark.slow
@examples(1)
@given(production_claims(), st.data())
def test_the_oracle_agrees_on_random_production_protocols_campaign(
    claim: tuple[Protocol, dict[str, P.DepthRange]], data: st.DataObject
) -> None:
    """The campaign: 10 000 random protocols in the slow tier."""
    agrees(*claim, data, CAMPAIGN_STATES)


@examples(1)
@given(production_claims())
def test_what_holds_by_construction_is_proved_for_the_production_constructs_too(
    claim: tuple[Protocol, dict[str, P.DepthRange]],
) -> None:
    """O1 and consecution (O2 in full) hold whenever the obligations the check asks hold."""
    protocol, ranges = claim
    if prove(protocol, ranges).proved:
        full = P.prove(protocol, ranges, rlimit=DEFAULT_RLIMIT, exhaustive=True)
        assert full.proved, full.reason


def test_every_pattern_is_built() -> None:
    assert set(PATTERN_MISTAKES) >= {"pingpong", "staging", "tmem", "multicast", "pair", "split-k"}


# -- the production controls with their rings widened (issue 27's goal) ---------------------

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "production"
PERSISTENT = Path(__file__).resolve().parents[3] / "specs" / "examples" / "gemm_swiglu" / "persistent"
ONE_CTA = ("cutlass_cooperative_epilogue", "cutlass_pingpong", "dynamic_scheduler", "fa3_pingpong", "ring_fed_epilogue")
SEVERAL_CTAS = ("cutlass_stream_k", "deepgemm_multicast", "serial_split_k")
DEPTH = re.compile(r"(?m)^(\s*)depth [0-9.]+\s*$")


def widened(folder: Path, into: Path, depth: str, pipeline: str = "") -> Path:
    """A copy of a control's pipeline (``pipeline``: the one of that name) and contracts with every
    ring's depth stated as ``depth``."""
    for source in folder.iterdir():
        if source.is_file():
            text = source.read_text()
            (into / source.name).write_text(DEPTH.sub(lambda m: f"{m.group(1)}depth {depth}", text))
    if pipeline:
        return into / pipeline
    (kp,) = into.glob("*.kp")
    return kp


def codes_of(kp: Path) -> list[str]:
    old = Path.cwd()
    os.chdir(kp.parent)
    try:
        result = check([kp.name])
    finally:
        os.chdir(old)
    return sorted({d.code for d in result.diagnostics if d.is_error})


def test_every_control_is_sorted_by_its_ctas() -> None:
    assert sorted((*ONE_CTA, *SEVERAL_CTAS)) == sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", (*ONE_CTA, *SEVERAL_CTAS))
def test_a_control_is_proved_at_depth_2_to_255_and_its_broken_twin_rejected(name: str, tmp_path: Path) -> None:
    """Before the argument knew turns, pre-armed rendezvous and asynchronous reads, the one-CTA controls
    fell back to the bounded model at depths 2 and 8 (FA3's ping-pong: E-SOLVER-UNKNOWN at depth 8);
    before its counters were per CTA, so did those of several CTAs (serial split-K: E-SOLVER-UNKNOWN).
    Each broken twin is still rejected by its own clause, found by the bounded model."""
    (tmp_path / "pass").mkdir()
    (tmp_path / "broken").mkdir()
    kp = widened(CORPUS / name / "pass", tmp_path / "pass", "2..255")
    _, comp = _compose(kp)
    assert comp is not None
    report = analyse(comp)
    assert report.proved and all(hi == 255 for _, _, hi in report.proved), report
    assert codes_of(kp) == []
    broken = widened(CORPUS / name / "broken", tmp_path / "broken", "2..255")
    assert codes_of(broken) == [(CORPUS / name / "broken" / "EXPECTED").read_text().strip()]


def _deep(kp: Path, depth: int) -> Protocol:
    _, comp = _compose(kp)
    assert comp is not None
    built = build_model(comp, {n: 2 for n in comp.rings}, excluded(comp)).protocol
    assert built is not None
    for ring in built.rings:
        built = built.with_depth(ring.name, depth)
    return built


@pytest.mark.parametrize("name", (*ONE_CTA, *SEVERAL_CTAS))
def test_a_control_is_proved_at_depth_64(name: str) -> None:
    verdict = check_protocol(_deep(next((CORPUS / name / "pass").glob("*.kp")), 64))
    assert verdict.coverage.parametric and not verdict.findings and not verdict.undecided


@pytest.mark.parametrize("name", SEVERAL_CTAS)
def test_a_broken_control_of_several_ctas_is_rejected_by_its_own_clause_at_depth_64(name: str) -> None:
    """The argument proves none of the twins at depth 64, and the bounded run of a ring deeper than
    32 rejects each by its own clause: its short run first finds the mistake, which needs no wrap
    of the ring. Before, the 65-iteration run alone left split-K's and stream-K's twins
    E-SOLVER-UNKNOWN (47 s and 33 s) and found DeepGEMM's L-ARRIVE with an L-DEADLOCK beside it."""
    deep = _deep(next((CORPUS / name / "broken").glob("*.kp")), 64)
    assert not P.prove(deep, every_depth(deep, 64, 64), rlimit=DEFAULT_RLIMIT).proved
    found, undecided = _deep_run(deep, [], ModelOptions(), None)
    expected = (CORPUS / name / "broken" / "EXPECTED").read_text().strip()
    assert sorted({f.code for f in found.findings}) == [expected] and not undecided


@pytest.mark.parametrize("kp", sorted(PERSISTENT.glob("*.kp")), ids=lambda p: p.name)
def test_the_persistent_gemm_swiglu_pipelines_are_proved_at_every_depth(kp: Path, tmp_path: Path) -> None:
    """2-CTA clusters with B multicast and a lagged release into both CTAs; the cooperative pipeline's
    stream-K fix-up over a grid counter (`add 1 on rest`, `wait ge others on first`), 6 CTAs. Before:
    E-SOLVER-UNKNOWN at `2..255` after 170 s and 64 s."""
    assert check_protocol(_deep(kp, 64)).coverage.parametric
    assert codes_of(widened(PERSISTENT, tmp_path, "2..255", kp.name)) == []


def _compose(kp: Path) -> tuple[object, Composition | None]:
    old = Path.cwd()
    os.chdir(kp.parent)
    try:
        return compose([kp.name])
    finally:
        os.chdir(old)


@pytest.mark.parametrize("restart", [2, 3, 4, 5])
def test_a_restarting_index_is_proved_exactly_at_the_depths_where_no_race_exists(restart: int) -> None:
    """A staging buffer whose index restarts every ``restart`` subtiles, its read wait lagging 0..3:
    per depth 1..6 the argument proves it iff the explicit-state oracle finds no race (with R = 4
    and a read wait two late, depths 2 and 4 and not 3: slot 0 is reused one subtile after its
    use across tiles)."""
    base = pattern("staging", "restart", 2)
    ring = dataclasses.replace(base.rings[0], restart=restart)
    for lag in range(4):
        programs = tuple(
            (role, tuple(dataclasses.replace(s, lag=lag) if s.op is Op.READ_WAIT else s for s in steps))
            for role, steps in base.programs
        )
        protocol = dataclasses.replace(base, rings=(ring,), programs=programs)
        for depth in range(1, 7):
            concrete = protocol.with_depth("stage", depth)
            assert prove(concrete).proved is not bool(explore(concrete, 12).races), (lag, depth)
