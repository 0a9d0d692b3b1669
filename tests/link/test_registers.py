"""The register groups against the linked kernel's real register count: fit, re-solve once, or L-REGS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernlink.api import link
from linker.link import JSON, entry_count
from tests.link.examples import build_example

pytestmark = pytest.mark.toolchain

TWO_PER_SM = {"threads 384": "threads 384 blocks_per_sm 2"}
# Two blocks per SM: ptxas caps the entry at 65536 / 768 → 80 registers, not the 168 placement predicts.
SMALL_BUDGETS = {"loader.kc": {**TWO_PER_SM, "regs 40": "regs 24"}, "reduce.kc": {**TWO_PER_SM, "regs 232": "regs 96"}}


def test_entry_count_is_what_setmaxnreg_steps_can_hand_out() -> None:
    assert entry_count(168) == 168
    assert entry_count(255) == 248  # ptxas' count for blocks of 256 threads or fewer
    assert entry_count(85) == 80


def test_placement_predicts_the_entry_count_of_two_blocks_per_sm(tmp_path: Path) -> None:
    # placement and ptxas agree on 80 registers (hardware/residency.py): one round, no re-solve,
    # and shared memory placed for two resident blocks
    pipeline = build_example("ring", tmp_path, SMALL_BUDGETS)
    result = link([pipeline], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    data = json.loads((tmp_path / "out" / JSON).read_text())
    assert data["resolved"] is False
    (only,) = data["attempts"]
    assert (only["entry_assumed"], only["registers"], only["outcome"]) == (80, 80, "accepted")
    assert only["demand"] <= only["pool"] == 80 * 384
    assert data["placement"]["warps"]["entry_regs"] == 80
    groups = data["dispatch"]["groups"]
    assert sum(g["budget"] * g["warps"] * 32 for g in groups) <= 80 * 384
    assert all(g["budget"] >= 24 for g in groups) and groups[-1]["budget"] >= 96
    assert 2 * (data["dispatch"]["dynamic_smem"] + 1024) <= 233472
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert ".minnctapersm 2" in ptx


def test_budgets_that_cannot_fit_the_real_count_are_l_regs(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path, {"loader.kc": TWO_PER_SM, "reduce.kc": TWO_PER_SM})
    result = link([pipeline], tmp_path / "out")
    assert sorted({d.code for d in result.diagnostics if d.is_error}) == ["L-REGS"]
    found = next(d for d in result.diagnostics if d.code == "L-REGS")
    # Two blocks per SM split the register file: the check rejects it before any link.
    assert "80 per thread × 384 threads" in found.message
    data = json.loads((tmp_path / "out" / JSON).read_text())
    assert data["status"] == "rejected"
