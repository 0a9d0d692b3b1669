"""`--select` never turns an unplaceable composition, or a hang found at the placed depth, into an accept."""

from __future__ import annotations

import shutil
from pathlib import Path

from checker.engine import at_placed_depths
from kernlink.api import check
from kernlink.cli import main

ROOT = Path(__file__).resolve().parents[2]
OVERFLOW = ROOT / "tests" / "checker" / "clauses" / "L-OVERLAP" / "fail_no_depth_fits.kc"


def test_a_placement_that_fails_is_shown_whatever_the_selection() -> None:
    result = check([OVERFLOW], select=["L-PAIR"])
    assert not result.accepted
    assert "L-OVERLAP" in {d.code for d in result.diagnostics if d.is_error}


def test_cli_select_of_an_unrelated_clause_rejects_the_overflow() -> None:
    assert main(["check", str(OVERFLOW), "--select", "L-PAIR", "--color", "never"]) == 1


def test_a_hang_at_the_placed_depth_survives_a_selection_of_its_code(tmp_path: Path) -> None:
    """The ring's consumer never releases a slot: L-ARRIVE is the root, the hang its dependent."""
    shutil.copytree(ROOT / "specs" / "examples" / "ring", tmp_path / "ring", ignore=shutil.ignore_patterns("build"))
    reduce = tmp_path / "ring" / "reduce.kc"
    reduce.write_text(reduce.read_text().replace("        empty arrive per_warp(reduce)\n", ""))
    result = check([tmp_path / "ring" / "ring.kp"], select=["L-DEADLOCK"])
    assert result.composition is not None
    # a depth inside 2..6 that the check's ends did not decide, as placement may choose it
    found = at_placed_depths(result.composition, {"kv": 4}, selected=["L-DEADLOCK"])
    assert "L-DEADLOCK" in {d.code for d in found}, [d.code for d in found]
    everything = at_placed_depths(result.composition, {"kv": 4})
    assert "L-DEADLOCK" not in {d.code for d in everything}  # with every code selected, only its root
