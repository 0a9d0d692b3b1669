"""moe4 on the GPU against PyTorch, and one stale upgrade: the relink is correct, the symbol link hangs, decoded.

Builds through bench/stale_facts.py (the study's own steps) and runs each link with `kernlink
run` in a subprocess (a trap ends its context). Needs PyTorch for the reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.moe.test_stale_facts import STUDY

pytestmark = pytest.mark.gpu


def test_moe4_matches_pytorch_plain_and_under_the_watchdog(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    STUDY.build(tmp_path, STUDY.Shape(tokens=64), cases=False, grid=4)
    for name in ("plain", "watchdog"):
        outcome = STUDY.run(tmp_path / "moe4" / name, tmp_path / "inputs", 4, 128)
        assert outcome["outcome"] == "correct", outcome


def test_a_stale_dispatch_tile_hangs_in_the_symbol_link_and_relinks_correctly(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    STUDY.write_inputs(tmp_path / "inputs", STUDY.Shape())
    edit = STUDY.UPGRADES[0]
    assert edit.name == "dispatch tile 32 -> 16"
    links = STUDY.build_case(tmp_path / "case", edit, tmp_path / "inputs")
    assert STUDY.run(links["kernlink"], tmp_path / "inputs", 8, 128)["outcome"] == "correct"
    outcome = STUDY.run(links["symbol"], tmp_path / "inputs", 8, 128)
    # the first wait to time out is decoded: the GEMM's `tokens_ready` (on the H200, bench/results/…/moe4) or,
    # when a finished block's grid-wide wait times out first, `phase_done`
    assert outcome["outcome"] == "hang" and "E-HANG" in str(outcome["detail"]), outcome
