"""Issue 12/13/20 regressions: no silent accept, tiers over the selection, honest unknowns.

Each test names the issue item it covers; every one of them failed before the change
that made it pass (the accepted mutant, the `--select` that hid the hang, the depth the
solver had not seen, the undecided query filed under another clause).
"""

from __future__ import annotations

import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from checker.engine import ModelOptions, by_code
from checker.protocol import depths
from checker.protocol.build import build
from checker.protocol.check import canonical, check_protocol
from checker.protocol.smt import ProtocolModel
from fuzzing.contract_oracle import problems_of
from kernlink.api import check, compose
from kernlink.cli import main
from tests.checker.protocol.helpers import kv_ring
from tests.tiers import examples

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "specs" / "examples"
CLAUSES = ROOT / "tests" / "checker" / "clauses"
CORPUS = Path(__file__).parent / "corpus"
MODEL_CODES = ("L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK")

TWO_RINGS = """
stage "t.load" version "1.0.0" {
    target sm_90a
    requires feature mbarrier
    role load entry load_main warps 1
    claim smem a_tiles bytes 4KiB align 128 per_slot a
    claim smem b_tiles bytes 4KiB align 128 per_slot b
    ring a produce by load {
        depth 2
        full init 1
        empty init per_warp(mma)
        empty wait
        writes generic
        init by load
    }
    ring b produce by load {
        depth 2
        full init 1
        empty init 1
        empty wait
        full arrive 1
        writes generic
        init by load
    }
}

stage "t.mma" version "1.0.0" {
    target sm_90a
    requires feature mbarrier
    role mma entry mma_main warps 4 warpgroup
    ring a consume by mma {
        full wait
        reads generic
        empty arrive per_warp(mma)
    }
    ring b consume by mma {
        full wait
        reads generic
        empty arrive per_thread(mma)
    }
}
"""


def _codes(result: object) -> set[str]:
    return {d.code for d in result.diagnostics if d.is_error}  # type: ignore[attr-defined]


def _write(tmp_path: Path, text: str, name: str = "t.kc") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- issue 12 item 1: a producer that never writes ---------------------------------------


def _moe4_without_full_arrive(tmp_path: Path) -> Path:
    folder = tmp_path / "moe4"
    shutil.copytree(
        EXAMPLES / "moe4", folder, ignore=shutil.ignore_patterns("build")
    )  # a local build is not the example
    gemm = folder / "gemm.kc"
    text = gemm.read_text()
    assert "        full arrive per_warp(expert)\n" in text
    gemm.write_text(text.replace("        full arrive per_warp(expert)\n", ""))
    return folder / "moe4.kp"


def test_moe4_without_its_only_full_arrive_is_l_arrive(tmp_path: Path) -> None:
    result = check([str(_moe4_without_full_arrive(tmp_path))])
    assert _codes(result) == {"L-ARRIVE"}
    diag = next(d for d in result.diagnostics if d.code == "L-ARRIVE")
    assert "`h.full`" in diag.message and diag.primary is not None


def test_moe4_hang_is_l_deadlock_when_only_deadlock_is_selected(tmp_path: Path) -> None:
    result = check([str(_moe4_without_full_arrive(tmp_path))], select=["L-DEADLOCK"])
    assert _codes(result) == {"L-DEADLOCK"}


def test_the_contract_oracle_refutes_the_moe4_mutant(tmp_path: Path) -> None:
    _, comp = compose([str(_moe4_without_full_arrive(tmp_path))])
    assert comp is not None
    found = problems_of(comp, {"h": 2})
    assert found and found[0].startswith("L-ARRIVE")


def test_a_ring_that_cannot_be_filled_does_not_hide_another_rings_count(tmp_path: Path) -> None:
    result = check([str(_write(tmp_path, TWO_RINGS))])
    arrive = [d for d in result.diagnostics if d.code == "L-ARRIVE"]
    assert {m for d in arrive for m in ("`a.full`", "`b.empty`") if m in d.message} == {"`a.full`", "`b.empty`"}


def test_an_unmodelled_ring_is_undecided_with_its_span_when_nothing_else_reports_it() -> None:
    with_a_clash = CLAUSES / "L-PROTO"
    fixture = next(p for p in sorted(with_a_clash.iterdir()) if p.name.startswith("fail_") and p.suffix == ".kc")
    alone = check([str(fixture)], select=["L-DEADLOCK"])
    unknown = [d for d in alone.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
    assert unknown and all(d.primary is not None for d in unknown)
    together = check([str(fixture)])
    assert "E-SOLVER-UNKNOWN" not in _codes(together)  # the root cause is reported: the unknown is its dependent


# -- issue 12 item 2: per_warpgroup of fewer than 4 warps ---------------------------------


def test_per_warpgroup_of_a_one_warp_role_is_l_arrive_with_a_span(tmp_path: Path) -> None:
    text = TWO_RINGS.replace("empty init per_warp(mma)", "empty init per_warpgroup(load)")
    result = check([str(_write(tmp_path, text))])
    diag = next(d for d in result.diagnostics if d.code == "L-ARRIVE" and "per_warpgroup" in str(d.labels))
    line = text[: text.index("per_warpgroup(load)")].count("\n") + 1
    assert diag.primary is not None and diag.primary.span.line == line


# -- issue 12 item 8: the linked depth is a checked depth ----------------------------------


DEEP = """
stage "t.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    claim smem stage bytes 128 align 128 per_slot kv
    ring kv produce by load {
        depth DEPTH
        full init 1
        empty init per_warp(mma)
        empty wait
        full arrive 1
        writes generic
        init by load
    }
}

stage "t.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    ring kv consume by mma {
        full wait
        empty arrive per_warp(mma)
        reads generic
    }
}
"""


def _deep(tmp_path: Path, depth: str) -> Path:
    return _write(tmp_path, DEEP.replace("DEPTH", depth))


def test_a_depth_range_is_decided_at_the_depth_placement_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real, proof = depths.verdict, depths.parametric_proof

    def spy(protocol, options, memo=None):  # type: ignore[no-untyped-def]
        seen.extend(r.depth for r in protocol.rings)
        return real(protocol, options, memo)

    def spy_proof(protocol, ranges, rlimit, memo=None):  # type: ignore[no-untyped-def]
        found = proof(protocol, ranges, rlimit, memo)
        if found.proved:
            seen.extend(d for _, lo, hi in found.depths for d in range(lo, (hi or lo) + 1))
        return found

    monkeypatch.setattr(depths, "verdict", spy)
    monkeypatch.setattr(depths, "parametric_proof", spy_proof)
    result = check([str(_deep(tmp_path, "2..20"))])
    assert result.accepted
    placed = {r.depth for r in result.downstream.placed.placement.rings}  # type: ignore[union-attr]
    assert placed <= set(seen), (placed, seen)


def test_a_depth_range_up_to_255_is_decided_at_every_depth(tmp_path: Path) -> None:
    """Issue 27: the parametric argument decides every depth of `2..255` (E-SOLVER-UNKNOWN before)."""
    result = check([str(_deep(tmp_path, "2..255"))])
    assert result.accepted and not [d for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
    assert result.composition is not None
    assert depths.analyse(result.composition).proved == (("kv", 2, 255),)


@pytest.mark.parametrize("depth", [9, 12, 16])
def test_the_model_agrees_with_the_contract_oracle_at_larger_depths(depth: int) -> None:
    for consume in ({}, {"lag": 1}, {"lag": depth}):
        protocol = kv_ring(depth, consume=consume)
        verdict = check_protocol(protocol)
        from checker.protocol.explore import explore

        found = explore(protocol, max_states=400_000)
        assert (verdict.deadlock is True) == found.deadlock, (depth, consume)


def test_an_open_depth_range_is_placed_within_the_decided_depths(tmp_path: Path) -> None:
    text = (CORPUS / "cutlass_ws_gemm.kc").read_text().replace("        depth 2..5\n", "")
    result = check([str(_write(tmp_path, text))])
    assert result.accepted, [d.message for d in result.diagnostics]
    assert result.composition is not None
    report = depths.analyse(result.composition)
    placed = {r.name: r.depth for r in result.downstream.placed.placement.rings}  # type: ignore[union-attr]
    proved = {name: (lo, hi) for name, lo, hi in report.proved}
    assert placed and all(n in proved and proved[n][0] <= d for n, d in placed.items()), (placed, proved)


# -- issue 12 item 9: Ctrl-C is an interrupt, not a spent budget ---------------------------


def test_a_sigint_during_a_solve_raises_keyboard_interrupt() -> None:
    model = ProtocolModel(kv_ring(2), bound=5, rlimit=3_000_000)
    x, y, w = z3.Ints("x y w", model.ctx)
    model.solver.add(x * x * x + y * y * y == w * w * w, x > 1, y > 1, w > 1)  # only the budget ends this
    # Python's own Ctrl-C handling, whatever another test in this worker process installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, signal.raise_signal, (signal.SIGINT,))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.check(model.dynamic_facts())
            timer.join()  # the interrupt arrives at the latest here (however loaded the machine): never a verdict
            time.sleep(1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_an_interrupted_check_exits_130_without_a_verdict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("analysis.pipeline.run_clauses", interrupted)
    path = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    assert main(["check", str(path)]) == 130
    out = capsys.readouterr()
    assert "accepted" not in out.out + out.err


# -- issue 13 item 2: tiers over the selected codes; unknowns never filtered ----------------


def _model_fixtures() -> list[tuple[str, Path]]:
    return [(code, p) for code in MODEL_CODES for p in sorted((CLAUSES / code).glob("fail_*.kc"))]


def test_fail_never_released_hangs_under_deadlock_and_race() -> None:
    result = check([str(CLAUSES / "L-ARRIVE" / "fail_never_released.kc")], select=["L-DEADLOCK", "L-RACE"])
    assert "L-DEADLOCK" in _codes(result)


@pytest.mark.parametrize(("code", "fixture"), _model_fixtures(), ids=lambda v: getattr(v, "name", v))
def test_each_model_fixture_is_reported_under_a_selection_of_its_code(code: str, fixture: Path) -> None:
    assert code in _codes(check([str(fixture)], select=[code]))


ALL_CODES = sorted(by_code())


@examples(0.12)
@given(index=st.integers(0, len(_model_fixtures()) - 1), others=st.sets(st.sampled_from(ALL_CODES), max_size=6))
def test_every_selection_containing_the_fixtures_code_reports_it(index: int, others: set[str]) -> None:
    code, fixture = _model_fixtures()[index]
    result = check([str(fixture)], select=sorted(others | {code}))
    assert code in _codes(result), (fixture.name, sorted(others))


def test_an_undecided_query_survives_every_ignore() -> None:
    fixture = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    for ignore in (["L-DEADLOCK"], ["L-RACE"], ["L-DEADLOCK", "L-RACE"]):
        result = check([str(fixture)], ignore=ignore, options=ModelOptions(rlimit=500))
        unknown = [d for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
        assert unknown and not result.accepted, ignore
        assert all(d.primary is not None for d in unknown)


def test_undecided_queries_keep_their_own_clause() -> None:
    fixture = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    result = check([str(fixture)], select=["L-RACE"], options=ModelOptions(rlimit=500))
    clauses = {dict(d.data).get("clause") for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"}
    assert "L-RACE" in clauses or "L-ARRIVE" in clauses, clauses


def test_cli_names_the_solver_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = capsys.readouterr().out
    assert "--rlimit" in text and "--bound" in text
    path = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    assert main(["check", str(path), "--rlimit", "0"]) == 2
    assert main(["check", str(path), "--rlimit", "400000000", "--bound", "7"]) == 0


# -- semantic verdict cache --------------------------------------------------------------


def test_verdicts_are_cached_on_meaning_not_layout(tmp_path: Path) -> None:
    text = (CORPUS / "cutlass_ws_gemm.kc").read_text()
    moved = "\n\n# a comment that moves every line\n" + text
    first = compose([str(_write(tmp_path, text, "a.kc"))])[1]
    second = compose([str(_write(tmp_path, moved, "b.kc"))])[1]
    assert first is not None and second is not None
    one = build(first, {"ab": 2})
    two = build(second, {"ab": 2})
    assert one is not None and two is not None and one != two
    assert canonical(one)[0] == canonical(two)[0]


# -- issue 12 items 11, 12: correct production-style compositions stay accepted -------------


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.kc")), ids=lambda p: p.name)
def test_production_corpus_is_accepted_and_the_contract_oracle_agrees(path: Path) -> None:
    result = check([str(path)])
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.composition is not None and result.downstream is not None and result.downstream.placed
    placed = {r.name: r.depth for r in result.downstream.placed.placement.rings}
    assert problems_of(result.composition, placed) == ()


def test_a_lowered_bound_is_said_once() -> None:
    fixture = CLAUSES / "L-DEADLOCK" / "pass_late_release_depth2.kc"
    result = check([str(fixture)], options=ModelOptions(bound=3))
    notes = [d for d in result.diagnostics if d.code == depths.BOUND_NOTE]
    assert result.accepted and len(notes) == 1 and notes[0].primary is not None
    assert not [d for d in check([str(fixture)]).diagnostics if d.code == depths.BOUND_NOTE]
