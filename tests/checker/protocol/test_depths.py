"""Issue 27: rings of any depth and open depth ranges, decided through the checks a user runs.

Every test here failed before the parametric argument: a ring deeper than 32 was
E-SOLVER-UNKNOWN whatever it held (a correct ring, a count mistake, a hang), and an open
range was placed at most at depth 8.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engine import ModelOptions
from checker.protocol import depths
from checker.protocol.parametric import ParametricResult
from kernlink.api import check

RING = """
stage "t.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    claim smem stage bytes 128 align 128 per_slot kv
    ring kv produce by load {
        DEPTH
        full init 1
        empty init INIT
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
        empty arrive per_warp(mma)RELEASE
        reads generic
    }
}
"""


def _ring(tmp_path: Path, depth: str, *, init: str = "per_warp(mma)", release: str = "") -> Path:
    path = tmp_path / "ring.kc"
    text = RING.replace("DEPTH", f"depth {depth}" if depth else "").replace("INIT", init)
    path.write_text(text.replace("RELEASE", release))
    return path


def _errors(result: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in result.diagnostics:  # type: ignore[attr-defined]
        if d.is_error:
            out.setdefault(d.code, []).append(d.message)
    return out


@pytest.mark.parametrize("depth", ["64", "33..40", "2..255"])
def test_a_ring_deeper_than_the_bounded_model_unrolls_is_accepted(tmp_path: Path, depth: str) -> None:
    result = check([str(_ring(tmp_path, depth))])
    assert result.accepted, _errors(result)
    placed = [r.depth for r in result.downstream.placed.placement.rings]  # type: ignore[union-attr]
    assert placed and placed[0] > depths.MAX_CHECKED_DEPTH


def test_an_open_range_is_placed_as_deep_as_shared_memory_holds(tmp_path: Path) -> None:
    result = check([str(_ring(tmp_path, ""))])
    assert result.accepted, _errors(result)
    placed = result.downstream.placed.placement.rings[0].depth  # type: ignore[union-attr]
    assert placed > 1000  # 128-byte slots: far deeper than the 8 an open range was capped at


def test_a_hang_at_depth_64_is_l_deadlock_with_its_trace(tmp_path: Path) -> None:
    result = check([str(_ring(tmp_path, "64", release=" lag 64"))])
    assert set(_errors(result)) == {"L-DEADLOCK"}
    diag = next(d for d in result.diagnostics if d.code == "L-DEADLOCK")
    assert any(n.startswith("trace (schedule order") for n in diag.notes)


def test_a_count_mistake_at_depth_64_is_l_arrive(tmp_path: Path) -> None:
    result = check([str(_ring(tmp_path, "64", init="per_thread(mma)"))])
    assert set(_errors(result)) == {"L-ARRIVE"}


def test_a_late_release_is_decided_over_a_range_that_starts_too_shallow(tmp_path: Path) -> None:
    """The argument refuses an open range (from depth 1): the bounded model finds the hang at depth 1."""
    assert set(_errors(check([str(_ring(tmp_path, "", release=" lag 1"))]))) == {"L-DEADLOCK"}
    assert check([str(_ring(tmp_path, "2..255", release=" lag 1"))]).accepted


def test_a_deep_ring_the_argument_does_not_decide_is_never_vouched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a proof, a ring deeper than 32 is run for 65 iterations; finding nothing, it stays undecided."""

    def refused(protocol, ranges, rlimit, memo=None):  # type: ignore[no-untyped-def]
        return ParametricResult(False, "deadlock freedom is not proved (O4)")

    monkeypatch.setattr(depths, "parametric_proof", refused)
    result = check([str(_ring(tmp_path, "64"))])
    unknown = [d for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
    assert unknown and not result.accepted
    assert unknown[0].primary is not None and "depth 64" in unknown[0].primary.text
    assert "the parametric argument does not decide it: deadlock freedom is not proved (O4)" in unknown[0].notes
    assert any("no mistake in 65 iterations" in n for n in unknown[0].notes)


def test_an_explicit_bound_asks_for_the_bounded_model(tmp_path: Path) -> None:
    result = check([str(_ring(tmp_path, "64"))], options=ModelOptions(bound=7))
    unknown = [d for d in result.diagnostics if d.code == "E-SOLVER-UNKNOWN"]
    assert unknown and not result.accepted
    assert any("`--bound`" in n for n in unknown[0].notes)
    assert check([str(_ring(tmp_path, "2..4"))], options=ModelOptions(bound=7)).accepted
