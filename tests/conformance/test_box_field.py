"""A TMA box sized by a params field, and the credit that completes the rest of the declared bytes.

gemm_swiglu's mainloop declares A's box as `box 64, a_box_rows elem bf16` and credits
`16384 - 128 * a_box_rows` bytes with `mbarrier.complete_tx`. The value analysis keeps a 32-bit
value of params fields as a linear form, and the trap checks before a site bound the fields
(``package/codefacts/bounds.py``): the fill's sum is then 32 KiB for every row count the code
lets through. A sum that still depends on a field, or a credit that may wrap, is a note (an
error with `--strict`), never a pass. The decided violation is ``cases/copy-bytes-field``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic, Severity
from package.codefacts.bounds import field_bounds
from package.codefacts.flow import Flow
from package.codefacts.ptx import parse
from package.codefacts.values import analyse, linear_of
from packing.pack import build, conformance_findings

EXAMPLE = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu"
CHECK = "    if (a_box_rows == 0 || a_box_rows > kTileM || a_box_rows < (rows < kTileM ? rows : kTileM)) {"
CREDIT = "    return kBytesA - a_box_rows * kTileK * 2u;"
VARIANTS = {
    # the credit forgets bf16's 2 bytes: 16384 - 64 * rows + 128 * rows depends on the rows
    "sum": (CREDIT, "    return kBytesA - a_box_rows * kTileK;"),
    # no check bounds the rows from above: past 128 rows the credit wraps to a count near 2**32
    "unbounded": (CHECK, "    if (a_box_rows == 0 || a_box_rows < (rows < kTileM ? rows : kTileM)) {"),
    # the credit skipped on the last k-tile: that fill completes 128 * (128 - rows) bytes fewer
    "conditional": ("        if (credit != 0) {", "        if (credit != 0 && kt + 1 < params->k_tiles) {"),
}

PTX = """
.visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)
{
	.reg .pred %p<3>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [f_param_0];
	ld.u32 %r1, [%rd1+48];
	add.s32 %r2, %r1, -1;
	setp.gt.u32 %p1, %r2, 127;
	@%p1 bra $L__BB0_2;
	bra.uni $L__BB0_3;
$L__BB0_2:
	trap;
$L__BB0_3:
	shl.b32 %r3, %r1, 7;
	mov.u32 %r4, 16384;
	sub.s32 %r5, %r4, %r3;
	mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r6], %r5;
	ret;
}
"""


def test_a_credit_is_a_linear_form_of_the_field_bounded_by_the_trap_before_it() -> None:
    (fn,) = parse(PTX).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    assert linear_of(env.values["%r5"]) == (16384, ((48, (1 << 32) - 128),))
    assert linear_of(env.values["%r2"]) == ((1 << 32) - 1, ((48, 1),))
    site = next(i for i, ins in enumerate(fn.body) if ins.opcode.startswith("mbarrier.complete_tx"))
    assert field_bounds(Flow(fn), env, site) == {48: (1, 128)}
    # before the check, nothing bounds the field
    assert field_bounds(Flow(fn), env, 2) == {}


def test_the_block_the_compiler_leaves_after_a_trap_does_not_hide_the_bound() -> None:
    # the shape of gemm_swiglu/persistent's producer: the check falls through into the trap, and
    # the compiler places a copy of the load after it, a block no path enters
    ptx = PTX.replace(
        "\tsetp.gt.u32 %p1, %r2, 127;\n\t@%p1 bra $L__BB0_2;\n\tbra.uni $L__BB0_3;\n$L__BB0_2:\n\ttrap;\n",
        "\tsetp.lt.u32 %p1, %r2, 128;\n\t@%p1 bra $L__BB0_3;\n\ttrap;\n\tld.u32 %r1, [%rd1+48];\n",
    )
    assert ptx != PTX
    (fn,) = parse(ptx).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    site = next(i for i, ins in enumerate(fn.body) if ins.opcode.startswith("mbarrier.complete_tx"))
    assert field_bounds(Flow(fn), env, site) == {48: (1, 128)}


def test_both_sides_of_a_conjunction_that_guards_the_trap_bound() -> None:
    # NVRTC's shape of the mainloop's check: `(rows - 1) < 128 && min(m, 128) <= rows` in one predicate
    ptx = PTX.replace(
        "\tsetp.gt.u32 %p1, %r2, 127;\n\t@%p1 bra $L__BB0_2;\n\tbra.uni $L__BB0_3;\n$L__BB0_2:\n\ttrap;\n",
        "\tsetp.lt.u32 %p1, %r2, 128;\n\tsetp.le.u32 %p2, %r7, %r1;\n\tand.pred %p3, %p1, %p2;\n"
        "\t@%p3 bra $L__BB0_3;\n\ttrap;\n",
    )
    assert ptx != PTX
    (fn,) = parse(ptx).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    site = next(i for i, ins in enumerate(fn.body) if ins.opcode.startswith("mbarrier.complete_tx"))
    assert field_bounds(Flow(fn), env, site) == {48: (1, 128)}
    # an `or` that is true says nothing of either side
    (fn,) = parse(ptx.replace("and.pred", "or.pred")).functions
    assert field_bounds(Flow(fn), env, site) == {}


def test_a_register_set_twice_has_no_linear_form() -> None:
    (fn,) = parse(PTX.replace("\tret;", "\tmov.u32 %r5, 0;\n\tret;")).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    assert linear_of(env.values["%r5"]) is None


def _findings(variant: str, tmp_path: Path) -> list[Diagnostic]:
    folder = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    old, new = VARIANTS[variant]
    source = (folder / "mainloop.cu").read_text()
    assert source.count(old) == 1
    (folder / "mainloop.cu").write_text(source.replace(old, new))
    return conformance_findings(build(folder / "mainloop.cu", folder / "mainloop.kc"), tmp_path / "out.kpkg")


@pytest.mark.parametrize(
    ("variant", "words"),
    [
        ("sum", "an expression of params `a_box_rows`, not a constant"),
        ("unbounded", "the range of the bytes"),
        ("conditional", "runs only under a condition"),
    ],
)
def test_an_undecided_fill_is_a_note_not_a_pass(variant: str, words: str, tmp_path: Path) -> None:
    (note,) = _findings(variant, tmp_path)
    assert note.code == "I-CONFORM" and note.severity is Severity.NOTE
    assert dict(note.data)["check"] == "copy-bytes"
    assert words in note.message, note.message
