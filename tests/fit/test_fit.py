"""Issue 18 item 3: `kernlink fit` — a table per target, and repairs that make a failing target fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.fit import fit_target
from kernlink.api import check
from kernlink.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "specs" / "examples"
FIXTURES = Path(__file__).parent / "fixtures"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / f"{p.name}.kp").exists())


@pytest.mark.parametrize("name", NAMES)
def test_fit_prints_the_table_for_every_reference_composition(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", str(EXAMPLES / name / f"{name}.kp"), "--targets", "sm_90a,sm_100a,sm_120a", "--no-repairs"])
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["resource", "sm_90a", "sm_100a", "sm_120a"]
    for row in ("block threads", "shared memory per block", "largest safe grid", "verdict"):
        assert any(line.startswith(row) for line in out.splitlines()), row
    verdicts = next(line for line in out.splitlines() if line.startswith("verdict")).split()[1:]
    assert verdicts[0] == "fits"  # every reference composition is written for sm_90a
    assert code == (0 if verdicts == ["fits"] * 3 else 1)


def test_fit_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["fit", str(EXAMPLES / "ring" / "ring.kp"), "--targets", "sm_90a,sm_120a", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "kernlink-fit/1"
    sm90, sm120 = report["targets"]
    assert sm90["fits"] and sm90["largest_safe_grid"] == 132 and sm90["resident_blocks_per_sm"] == 1
    smem = next(r for r in sm120["resources"] if r["resource"] == "shared memory per block")
    assert smem["capacity"] == 101376 and smem["used"] <= 101376


# (fixture, the target it fails on, the edit expected among the repairs: old → new)
CASES = [
    ("ring_deep/deep.kp", "sm_120a", ("depth 4..6", "depth 3..6")),
    ("ring_deep/deep.kp", "sm_120a", ("bytes 32KiB", "bytes 16KiB")),  # with the ring's tx bytes
    ("regs_two_blocks.kc", "sm_90a", ("blocks_per_sm 2", "blocks_per_sm 1")),
    ("regs_two_blocks.kc", "sm_90a", ("regs 232", "regs 96")),
    ("threads_per_sm.kc", "sm_120a", ("blocks_per_sm 8", "blocks_per_sm 6")),
    ("grid_not_resident.kc", "sm_90a", ("grid 1000", "grid resident")),
    ("grid_unstated.kc", "sm_90a", ("", "grid resident")),
    ("tmem_overflow.kc", "sm_100a", ("columns 512", "columns 256")),
    ("smem_claim.kc", "sm_120a", ("bytes 128KiB", "bytes 64KiB")),
]


@pytest.mark.parametrize(("fixture", "target", "edit"), CASES, ids=[f"{c[0]}-{c[2][1]}" for c in CASES])
def test_repair_applied_makes_the_target_fit(tmp_path: Path, fixture: str, target: str, edit: tuple[str, str]) -> None:
    source = FIXTURES / fixture
    assert not check([source], target=target).accepted
    result = fit_target([source], target)
    assert not result.fits and result.repairs
    chosen = next(e for e in result.repairs if (e.old, e.new) == edit)
    assert chosen.cost == min(e.cost for e in result.repairs if e.span == chosen.span)
    # apply the edit (and the edits that go with it) ourselves, to a copy, and re-check
    folder = tmp_path / "copy"
    shutil.copytree(source.parent, folder)
    for one in chosen.edits():
        edited = folder / Path(one.span.file).resolve().relative_to(source.parent.resolve())
        lines = edited.read_text().splitlines(keepends=True)
        line = lines[one.span.line - 1]
        assert one.old in line
        lines[one.span.line - 1] = line.replace(one.old, one.new, 1) if one.old else line.rstrip() + f" {one.new}\n"
        edited.write_text("".join(lines))
    assert check([folder / source.name], target=target).accepted


def test_repairs_are_cheapest_first() -> None:
    result = fit_target([FIXTURES / "regs_two_blocks.kc"], "sm_90a")
    costs = [e.cost for e in result.repairs]
    assert costs == sorted(costs) and len(costs) >= 2


def test_a_failing_target_reports_every_resource(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31 item 8: a failing target showed its block threads and shared memory as `—` and nothing else."""
    code = main(
        [
            "fit",
            str(FIXTURES / "ring_deep" / "deep.kp"),
            "--targets",
            "sm_90a,sm_120a",
            "--no-repairs",
            "--format",
            "json",
        ]
    )
    assert code == 1
    sm90, sm120 = json.loads(capsys.readouterr().out)["targets"]
    assert not sm120["fits"] and sm120["resources_at_minimum_depths"] and not sm90["resources_at_minimum_depths"]
    rows = {r["resource"]: r for r in sm120["resources"]}
    assert set(rows) == {r["resource"] for r in sm90["resources"]}
    assert all(r["used"] is not None for r in rows.values()), rows
    smem = rows["shared memory per block"]
    assert smem["used"] > smem["capacity"] == 101376  # how far over, at the minimum depth
    assert rows["named barrier IDs"]["used"] <= rows["named barrier IDs"]["capacity"]


def test_a_fitting_targets_resources_are_its_placement(capsys: pytest.CaptureFixture[str]) -> None:
    main(["fit", str(EXAMPLES / "ring" / "ring.kp"), "--targets", "sm_90a", "--no-repairs", "--format", "json"])
    (sm90,) = json.loads(capsys.readouterr().out)["targets"]
    smem = next(r for r in sm90["resources"] if r["resource"] == "shared memory per block")
    assert smem["used"] == 196704  # 6 slots: the deepest that fits, not the minimum


def test_fit_color(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["fit", str(FIXTURES / "ring_deep" / "deep.kp"), "--targets", "sm_90a,sm_120a", "--no-repairs"]
    main([*args, "--color", "always"])
    painted = capsys.readouterr().out
    assert "\033[32mfits" in painted and "\033[31m\033[1mfails" in painted and "over" in painted
    over = next(line for line in painted.splitlines() if line.startswith("shared memory per block"))
    assert "\033[31m" in over
    main([*args, "--color", "never"])
    assert "\033[" not in capsys.readouterr().out
