"""The code-mutation campaign (`kernlink fuzz --code`) on the ring example: every mutant of a
synchronisation instruction is rejected by conformance or shown not to change the protocol.

The full campaign over every example component is bench/results/cpu-2026-12-03/code_mutants.md;
this is its budgeted run in CI (the ring example: about 75 mutants).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.pipeline import resolve_inputs
from fuzzing.code import CODE_KINDS, CodeMutation, judge, mutations, run_code_campaign
from kernlink.cli import main
from package.codefacts import derive
from package.loader import load
from tests.link.examples import EXAMPLES, build_example


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
    # `cursor` applies only to a wait in two loops; the ring's waits sit in one (its persistent twin is below)
    assert kinds == set(CODE_KINDS) - {"cursor"}
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
    from fuzzing.code import _crosses_branch

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


# ----------------------------------------------------------------- `cursor`: a ring position reset per unit of work


def _cursor(ptx: str) -> list[CodeMutation]:
    return [m for m in mutations("fx", ptx) if m.kind == "cursor"]


def _inserted(original: str, mutant: str) -> list[tuple[int, str]]:
    """The lines a mutant adds (index in the original where each goes), asserting it only adds."""
    a, b = original.split("\n"), mutant.split("\n")
    added: list[tuple[int, str]] = []
    i = 0
    for line in b:
        if i < len(a) and line == a[i]:
            i += 1
        else:
            added.append((i, line.strip()))
    assert i == len(a), "the mutant removes or edits a line"
    return added


def test_the_cursor_mutant_restarts_the_carried_registers_before_the_k_loop_on_every_unit() -> None:
    from tests.conformance.test_ring_entry import HEAD, K_LOOP, TAIL

    ptx = HEAD + K_LOOP + TAIL
    found = _cursor(ptx)
    edits = {m.edit.split(" (")[0]: m for m in found}
    # slot and parity together, then each alone: %r10 is the slot, %r11 the phase (both start at 0)
    assert list(edits) == [
        "restart the wait's slot and parity",
        "restart the wait's slot",
        "restart the wait's parity",
    ]
    lines = ptx.split("\n")
    unit, k = lines.index("$L_unit:"), lines.index("$L_k:")
    expected = {
        "restart the wait's slot and parity": ["mov.b32 \t%r10, 0;", "mov.b32 \t%r11, 0;"],
        "restart the wait's slot": ["mov.b32 \t%r10, 0;"],
        "restart the wait's parity": ["mov.b32 \t%r11, 0;"],
    }
    for edit, m in edits.items():
        added = _inserted(ptx, m.ptx)
        assert [t for _, t in added] == expected[edit]
        # inside the loop over units, before the k-loop's header: on every pass, not once before the first
        assert all(unit < at <= k for at, _ in added), added
        assert "$L_k" in m.edit and m.line == next(i + 1 for i, t in enumerate(lines) if "try_wait" in t)
        (wait,) = [f for f in derive(m.ptx).facts if f.kind == "wait"]
        reset = {"slot and parity": ("slot", "parity"), "slot": ("slot",), "parity": ("parity",)}
        restarted = edit.removeprefix("restart the wait's ")
        assert {r for r, how in wait.entry if how == "reset"} == set(reset[restarted]), wait.entry


def test_no_cursor_mutant_where_the_wait_sits_in_one_loop_or_the_cursor_is_already_reset() -> None:
    from tests.conformance.test_ring_entry import HEAD, K_LOOP, RESET, TAIL

    one_loop = HEAD.replace("$L_unit:\n", "") + K_LOOP + "\tret;\n}\n"
    assert _cursor(one_loop) == []
    assert _cursor(HEAD + RESET + K_LOOP + TAIL) == []  # reset already: nothing carried to reset
    # only the phase carried: only the phase is restarted
    only_phase = _cursor(HEAD + "\tmov.u32 \t%r10, 0;\n" + K_LOOP + TAIL)
    assert [m.edit.split(" (")[0] for m in only_phase] == ["restart the wait's parity"]


@pytest.fixture(scope="module")
def swapab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The persistent swap-AB pipeline, packed (its producer's and consumer's waits sit in a k-loop inside
    the loop over units of work)."""
    from packing.pack import pack

    folder = tmp_path_factory.mktemp("persistent") / "persistent"
    shutil.copytree(EXAMPLES / "gemm_swiglu" / "persistent", folder, ignore=shutil.ignore_patterns("build", "ringfed"))
    for stem in ("scheduler_small", "producer_swapab", "consumer_swapab", "epilogue_swapab"):
        pack(folder / f"{stem}.cu", folder / f"{stem}.kc", folder / "build" / f"{stem}.kpkg")
    return folder / "gemm_swiglu_persistent_swapab.kp"


def test_a_persistent_consumers_cursor_reset_is_rejected_by_wait_parity(swapab: Path) -> None:
    comp = resolve_inputs(load([swapab]))
    assert comp is not None
    by_stage = {e.stage.name: e for e in comp.stages if e.captured is not None and e.captured.ptx}
    counts = {
        name: sum(m.kind == "cursor" for m in mutations(name, e.captured.ptx))  # type: ignore[union-attr, arg-type]
        for name, e in by_stage.items()
    }
    # only the two ring sides that carry a position across units; the epilogue's and scheduler's code has none
    assert counts == {
        "gemm.scheduler_small": 0,
        "gemm.producer_swapab": 3,
        "gemm.mainloop_swapab": 3,
        "swiglu.epilogue_swapab": 0,
    }, counts
    consumer = by_stage["gemm.mainloop_swapab"]
    assert consumer.captured is not None and consumer.captured.ptx is not None
    for m in [m for m in mutations("consumer", consumer.captured.ptx) if m.kind == "cursor"]:
        assert not m.equivalent
        out = judge(consumer, m, comp)
        assert out.verdict == "rejected" and out.checks == ("wait-parity",) and out.at == "pack", (m.describe(), out)
    report = run_code_campaign(comp, str(swapab), kinds=frozenset({"cursor"}))
    assert len(report.outcomes) == 6 and {o.verdict for o in report.outcomes} == {"rejected"}


def test_an_l2_prefetch_is_not_mutated() -> None:
    """``cp.async.bulk.prefetch.tensor`` shares the copies' prefix but completes on no barrier: no mutant of it;
    the copy beside it is mutated."""
    ptx = "\n".join(
        [
            ".visible .func fx_main(",
            "\t.param .b64 fx_main_param_0",
            ")",
            "{",
            "\t.reg .b32 \t%r<8>;",
            "\t.reg .b64 \t%rd<4>;",
            "\tld.param.u64 \t%rd1, [fx_main_param_0];",
            "\tcp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd1, {%r1, %r2}];",
            "\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd1, {%r1, %r2}], [%r4];",  # noqa: E501
            "\tret;",
            "}",
            "",
        ]
    )
    opcodes = {m.opcode for m in mutations("fx", ptx)}
    assert opcodes and not any(o.startswith("cp.async.bulk.prefetch") for o in opcodes), opcodes
    assert any(o.startswith("cp.async.bulk.tensor") for o in opcodes)


_TWO_ARRIVES = """
.visible .func fx_main(
\t.param .b64 fx_main_param_0,
\t.param .b64 fx_main_param_1
)
{
\t.reg .b32 \t%r<20>;
\tmov.u32 \t%r1, %tid.x;
\tshl.b32 \t%r2, %r1, 3;
\tmov.u32 \t%r3, 0;
\tmapa.shared::cluster.u32 %r4, %r2, %r3;
\tmbarrier.arrive.shared::cluster.b64 _, [%r4];
\tmov.u32 \t%r5, 1;
\tmapa.shared::cluster.u32 %r6, %r2, %r5;
\tmbarrier.arrive.shared::cluster.b64 _, [%r6];
\tret;
}
"""


def test_a_reorder_moves_the_computation_of_its_operands_along() -> None:
    """Moving only the line would read `%r6` before anything sets it (not a source-level reorder)."""
    (moved,) = [m for m in mutations("fx", _TWO_ARRIVES) if m.kind == "reorder" and "arrive" in m.opcode]
    body = [line.strip() for line in moved.ptx.split("\n") if line.strip()]
    second = body.index("mbarrier.arrive.shared::cluster.b64 _, [%r6];")
    assert body[second - 2 : second + 2] == [
        "mov.u32 \t%r5, 1;",
        "mapa.shared::cluster.u32 %r6, %r2, %r5;",
        "mbarrier.arrive.shared::cluster.b64 _, [%r6];",
        "mbarrier.arrive.shared::cluster.b64 _, [%r4];",
    ]
    facts = [f for f in derive(moved.ptx).facts if f.kind == "arrive"]
    assert all(f.operand("addr") is not None and f.operand("addr").kind != "unknown" for f in facts)  # type: ignore[union-attr]


_TWO_INITS = """
.extern .func  (.param .b32 func_retval0) kl_fx_full_count
()
;
.visible .func fx_init(
\t.param .b64 fx_init_param_0
)
{
\t.reg .b32 \t%r<20>;
\tmov.u32 \t%r1, 64;
\t{ // callseq 0, 0
\t.param .b32 retval0;
\tcall.uni (retval0),
\tkl_fx_full_count,
\t(
\t);
\tld.param.b32 \t%r2, [retval0+0];
\t} // callseq 0
\tmbarrier.init.shared::cta.b64 [%r1], %r2;
\t{ // callseq 1, 0
\t.param .b32 retval0;
\tcall.uni (retval0),
\tkl_fx_full_count,
\t(
\t);
\tld.param.b32 \t%r3, [retval0+0];
\t} // callseq 1
\tadd.s32 \t%r4, %r1, 8;
\tmbarrier.init.shared::cta.b64 [%r4], %r3;
\tret;
}
"""


def test_a_reorder_moves_a_handle_call_that_computes_an_operand_along() -> None:
    (moved,) = [m for m in mutations("fx", _TWO_INITS) if m.kind == "reorder"]
    body = [line.strip() for line in moved.ptx.split("\n") if line.strip()]
    first = body.index("mbarrier.init.shared::cta.b64 [%r4], %r3;")
    assert body[first - 9 : first + 2] == [
        "{ // callseq 1, 0",
        ".param .b32 retval0;",
        "call.uni (retval0),",
        "kl_fx_full_count,",
        "(",
        ");",
        "ld.param.b32 \t%r3, [retval0+0];",
        "} // callseq 1",
        "add.s32 \t%r4, %r1, 8;",
        "mbarrier.init.shared::cta.b64 [%r4], %r3;",
        "mbarrier.init.shared::cta.b64 [%r1], %r2;",
    ]
    inits = [f for f in derive(moved.ptx).facts if f.kind == "mbarrier-init"]
    assert [f.operand("count").kind for f in inits] == ["handle", "handle"]  # type: ignore[union-attr]
