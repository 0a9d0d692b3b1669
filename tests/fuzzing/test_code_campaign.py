"""The code-mutation campaign (`kernlink fuzz --code`) on the ring example: every mutant of a
synchronisation instruction is rejected by conformance or shown not to change the protocol.

The full campaign over every example component is bench/results/cpu-2026-12-03/code_mutants.md;
this is its budgeted run in CI (the ring example: about 75 mutants).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.pipeline import resolve_inputs
from fuzzing.code import CODE_KINDS, mutations, run_code_campaign
from kernlink.cli import main
from package.loader import load
from tests.link.examples import build_example


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_example("ring", tmp_path_factory.mktemp("code"))


def test_no_mutant_that_changes_the_protocol_is_accepted(ring: Path) -> None:
    inputs = load([ring])
    comp = resolve_inputs(inputs)
    assert comp is not None
    report = run_code_campaign(comp, str(ring))
    assert len(report.outcomes) == report.planned > 50
    assert report.accepted() == [], [o.mutation.describe() for o in report.accepted()]
    kinds = {o.mutation.kind for o in report.outcomes}
    assert kinds == set(CODE_KINDS)
    rejected = {c for o in report.outcomes for c in o.checks}
    # the step checks do the work: each of these rejects some mutant of the ring
    for check in ("ring-step", "arrive-count", "wait-parity", "step-order", "ring-fence", "mbarrier-init"):
        assert check in rejected, sorted(rejected)
    for out in report.outcomes:
        if out.verdict in ("equivalent", "outside"):
            assert out.mutation.equivalent  # each says why


def test_the_consumers_missing_release_is_rejected_by_the_step_check(ring: Path) -> None:
    inputs = load([ring])
    comp = resolve_inputs(inputs)
    assert comp is not None
    (entry,) = [e for e in comp.stages if e.stage.name == "ring.reduce"]
    assert entry.captured is not None and entry.captured.ptx is not None
    deleted = [m for m in mutations("reduce", entry.captured.ptx) if m.kind == "delete" and "arrive" in m.opcode]
    assert deleted
    from fuzzing.code import judge

    out = judge(entry, deleted[0], comp)
    assert out.verdict == "rejected" and out.checks == ("ring-step",) and out.at == "pack"


def test_the_command_reports_the_campaign(ring: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", str(ring), "--code", "--examples", "12", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mutants"] == 12 and report["accepted"] == []
    assert main(["fuzz", str(ring), "--code", "--kinds", "nonsense"]) == 2


def test_two_copies_commute_only_within_one_block() -> None:
    """A copy moved before another copy of its fill changes nothing; moved past a branch into a block that
    runs under a condition (gemm_swiglu's `if (credit != 0)`), fills that skip the block lose its bytes."""
    from fuzzing.code import CodeMutation, _crosses_branch

    ptx = "\n".join(
        [
            "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], %r8;",  # 1
            "\t@%p8 bra \t$L__BB1_10;",  # 2
            "\tmbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r9], %r7;",  # 3
            "$L__BB1_10:",  # 4
            "\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd5, {%r2, %r3}], [%r9];",  # noqa: E501
            "\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd6, {%r2, %r3}], [%r9];",  # noqa: E501
        ]
    )

    def moved(line: int, before: int) -> CodeMutation:
        edit = f"move `cp.async.bulk.tensor.2d` before `x` (line {before})"
        return CodeMutation("c", "reorder", "f", line, "cp.async.bulk.tensor.2d", edit, ptx)

    assert not _crosses_branch(moved(6, 5), ptx)
    assert _crosses_branch(moved(5, 3), ptx)
