"""The parity of a wait the ring position has advanced before: an unrolled or peeled copy of a step.

The first wait of a step uses the step's parity; a copy of the step after ``k`` earlier waits on its
barrier (``Fact.prior``) at ring depth ``d`` must use ``want ^ ((k // d) & 1)``: the phase flips at
each wrap of the slot index. Its parity depends on the depth handle, so the facts fold it at each depth
the handle may take (``Fact.depths``: 1 .. MAX_DEPTH, then every deeper one at once, where the code
only compares the depth with constants up to MAX_DEPTH), and the check compares at every depth the
stage's `depth` allows, or every depth when it states none (a consumer). The examples that pass: the
attention loads (`load_dense`, `load_blocksparse`), whose loops nvcc unrolls, and the core.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checker.conformance import check
from package.codefacts import derive
from packing.pack import choose_stage

CONTRACT = """stage "fx.adv" version "1.0.0" {{
    target sm_90a
    requires feature mbarrier
    role p entry fx_p warps 1
    claim smem tiles bytes 1KiB align 128 per_slot r
    ring r produce by p {{
        {depth}
        full init 32
        empty init 1
        empty wait
        full arrive 32
    }}
}}
"""


def _handle(name: str, reg: str) -> str:
    return (
        f"\t{{\n\t.param .b32 retval0;\n\tcall.uni (retval0), kl_fx_adv_r_{name}, ();\n"
        f"\tld.param.b32 {reg}, [retval0+0];\n\t}}\n"
    )


def _ptx(second_parity: str = "%r10") -> str:
    externs = "".join(
        f".extern .func  (.param .b32 func_retval0) kl_fx_adv_r_{n}\n(\n)\n;\n"
        for n in ("depth", "empty_bar", "full_bar")
    )
    return (
        ".version 8.0\n.target sm_90a\n" + externs + ".visible .func fx_p(.param .b64 fx_p_param_0, "
        ".param .b64 fx_p_param_1)\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n"
        + _handle("depth", "%r1")
        + _handle("empty_bar", "%r2")
        + _handle("full_bar", "%r13")
        + "\tmov.u32 %r3, 0;\n\tmov.u32 %r4, 0;\n\txor.b32 %r5, %r4, 1;\n"
        "\t{\n\t.reg .pred w;\n\tmbarrier.try_wait.parity.shared::cta.b64 w, [%r2], %r5;\n\t}\n"
        "\tmbarrier.arrive.shared::cta.b64 _, [%r13];\n"
        # advance: if (++slot == depth) { slot = 0; phase ^= 1; }
        "\tadd.s32 %r6, %r3, 1;\n\tsetp.eq.s32 %p1, %r6, %r1;\n\tselp.b32 %r7, 0, %r6, %p1;\n"
        "\txor.b32 %r8, %r4, 1;\n\tselp.b32 %r9, %r8, %r4, %p1;\n\txor.b32 %r10, %r9, 1;\n"
        "\tshl.b32 %r11, %r7, 3;\n\tadd.s32 %r12, %r2, %r11;\n"
        f"\t{{\n\t.reg .pred w;\n\tmbarrier.try_wait.parity.shared::cta.b64 w, [%r12], {second_parity};\n\t}}\n"
        "\tadd.s32 %r14, %r13, %r11;\n\tmbarrier.arrive.shared::cta.b64 _, [%r14];\n"
        "\tret;\n}\n"
    )


def _parity_findings(tmp_path: Path, depth: str, ptx: str) -> list[tuple[str, bool, dict[str, str]]]:
    (tmp_path / "adv.kc").write_text(CONTRACT.format(depth=depth))
    stage = choose_stage(tmp_path / "adv.kc", None)
    found = check(stage, derive(ptx))
    return [(f.problem, f.decided, dict(f.facts)) for f in found if f.check == "wait-parity"]


def test_the_facts_fold_the_parity_at_each_depth() -> None:
    (_, second) = [f for f in derive(_ptx()).facts if f.kind == "wait"]
    assert second.prior == (1,)
    # per depth 1 .. 8 and every deeper one, the parity on the paths of each earlier-wait count (one: 1)
    assert second.depths == (("kl_fx_adv_r_depth", ((0,), (1,), (1,), (1,), (1,), (1,), (1,), (1,), (1,))),)


@pytest.mark.parametrize("depth", ["depth 2", "depth 1..4"])
def test_a_copy_of_the_step_that_follows_the_ring_position_conforms(tmp_path: Path, depth: str) -> None:
    assert _parity_findings(tmp_path, depth, _ptx()) == []


def test_a_copy_on_the_other_parity_is_rejected(tmp_path: Path) -> None:
    flipped = _ptx("%r9")  # the phase, not the empty wait's `phase ^ 1`
    ((problem, decided, facts),) = _parity_findings(tmp_path, "depth 2", flipped)
    assert (problem, decided, facts["got"], facts["want"], facts["depth"]) == ("advanced", True, "0", "1", "2")


def test_a_copy_that_forgets_the_wrap_is_rejected_at_depth_one(tmp_path: Path) -> None:
    unwrapped = _ptx("%r5")  # the first wait's parity again: right until the slot index wraps
    ((problem, decided, facts),) = _parity_findings(tmp_path, "depth 1..2", unwrapped)
    assert (problem, decided, facts["depth"]) == ("advanced", True, "1")


@pytest.mark.parametrize("depth", ["", "depth 2..16"], ids=["no-depth", "past-max-depth"])
def test_every_deeper_ring_is_decided_at_once(tmp_path: Path, depth: str) -> None:
    # past MAX_DEPTH the code only compares the depth with the slot index (1 here): no wrap, parity 1
    assert _parity_findings(tmp_path, depth, _ptx()) == []
    ((problem, decided, facts),) = _parity_findings(tmp_path, depth, _ptx("%r9"))
    assert (problem, decided) == ("advanced", True) and facts["depth"] in ("1", "2")


def test_a_depth_used_past_a_comparison_leaves_deeper_rings_undecided(tmp_path: Path) -> None:
    # the code compares the depth with 16: no one parity holds for every depth past MAX_DEPTH
    wide = _ptx().replace("\tret;", "\tsetp.gt.u32 %p3, %r1, 16;\n\tret;")
    assert _parity_findings(tmp_path, "depth 2", wide) == []  # a stated depth needs no more
    assert [(p, d) for p, d, _ in _parity_findings(tmp_path, "", wide)] == [("undecided", False)]


def test_a_role_on_turns_is_undecided(tmp_path: Path) -> None:
    # a role on turn 0 of 2 takes every other fill: its k-th wait is not the ring's k-th position
    (tmp_path / "adv.kc").write_text(
        CONTRACT.format(depth="depth 2").replace("role p entry fx_p warps 1", "role p entry fx_p warps 1 turn 0 of 2")
    )
    stage = choose_stage(tmp_path / "adv.kc", None)
    found = [(f.problem, f.decided) for f in check(stage, derive(_ptx())) if f.check == "wait-parity"]
    assert found == [("undecided", False)]


def _peeled(second_parity: str = "%r10") -> str:
    """The first wait and its advance in a block a params value may skip: the second wait runs after
    zero or one earlier wait, with the ring position of each path."""
    body = _ptx(second_parity)
    head, rest = body.split("\tmov.u32 %r3, 0;", 1)
    first, second = rest.split("\tshl.b32 %r11", 1)
    first = first.replace("selp.b32 %r7, 0, %r6, %p1;", "selp.b32 %r3, 0, %r6, %p1;")
    first = first.replace("selp.b32 %r9, %r8, %r4, %p1;", "selp.b32 %r4, %r8, %r4, %p1;")
    first = first.replace("\txor.b32 %r10, %r9, 1;\n", "")
    skip = "\tld.param.u64 %rd1, [fx_p_param_0];\n\tld.u32 %r15, [%rd1];\n\tsetp.eq.s32 %p2, %r15, 0;\n"
    second = "\txor.b32 %r10, %r4, 1;\n\tshl.b32 %r11" + second.replace("%r7", "%r3").replace("%r9", "%r4")
    return (
        head.replace(".reg .b32 %r<16>;", ".reg .b32 %r<16>;\n\t.reg .b64 %rd<2>;")
        + "\tmov.u32 %r3, 0;\n\tmov.u32 %r4, 0;\n"
        + skip
        + "\t@%p2 bra $SKIP;\n"
        + first.replace("\tmov.u32 %r4, 0;\n", "", 1)
        + "$SKIP:\n"
        + second
    )


def test_a_peeled_copy_is_judged_on_each_path_apart(tmp_path: Path) -> None:
    (_, second) = [f for f in derive(_peeled()).facts if f.kind == "wait"]
    assert second.prior == (0, 1) and second.operand("parity") is not None
    assert second.depths[0][1][:2] == ((1, 0), (1, 1))  # depth 1: no wrap on the skipping path, one on the other
    assert _parity_findings(tmp_path, "", _peeled()) == []
    ((problem, decided, facts),) = _parity_findings(tmp_path, "", _peeled("%r4"))
    assert (problem, decided, facts["depth"], facts["waits"]) == ("advanced", True, "1", "0")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
def test_the_dense_loads_unrolled_and_peeled_waits(tmp_path: Path) -> None:
    """attn.load.dense: nvcc unrolls the kv loop by 4 and the side `v` (lag 1) peels its last wait. Every
    copy conforms; a copy on the other parity, or a peeled copy on one constant parity (right on the first
    pass, wrong once the loop before it has run another number of times), is rejected."""
    from fuzzing.code import mutations
    from packing.pack import build

    folder = Path(__file__).resolve().parents[2] / "specs" / "examples" / "attention"
    built = build(folder / "load_dense.cu", folder / "load_dense.kc", compiler="nvcc")
    assert built.ptx is not None
    assert check(built.stage, derive(built.ptx)) == []
    waits = [f for f in derive(built.ptx).facts if f.kind == "wait" and f.function == "attn_load_dense_main"]
    unrolled = next(f for f in waits if f.loops and f.operand("parity").first is None)  # type: ignore[union-attr]
    peeled = max(waits, key=lambda f: f.order)  # v's last wait, after every loop
    assert not peeled.loops and len(peeled.prior) > 1
    verdicts = {}
    for m in mutations("load_dense", built.ptx):
        if m.kind == "parity" and m.line in (unrolled.line, peeled.line):
            found = [(f.check, f.problem) for f in check(built.stage, derive(m.ptx)) if f.decided]
            verdicts[(m.line == peeled.line, m.edit)] = found
    assert ("wait-parity", "advanced") in verdicts[(False, "wait on the other parity")]
    assert verdicts[(True, "wait on parity 0")] and verdicts[(True, "wait on parity 1")]
    assert all(found for found in verdicts.values()), verdicts
