"""A fill decided at each value a params field states (`rows: u32 @ 8 in {16, 32, 64}`).

The conditions a copy runs under are recorded as expressions of params words
(``package/codefacts/conds.py``); the check evaluates them, and the box sized by the field,
at every stated value (``checker/conformance/stated.py``). The decided violations are the
cases ``copy-bytes-values`` and ``copy-count-values``; here: the evaluator against Python's
32-bit arithmetic, the expressions the facts record, and a condition that reads something
else, which is undecided at the first value, never a pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from diagnostics.model import Severity
from package.codefacts.conds import Definitions, evaluate, fields_of
from package.codefacts.ptx import parse
from package.codefacts.values import analyse
from packing.pack import build, conformance_findings

CASE = Path(__file__).parent / "cases" / "copy-bytes-values"
WORD = 1 << 32
words = st.integers(min_value=0, max_value=WORD - 1)


def _signed(v: int) -> int:
    return v - WORD if v >= 1 << 31 else v


@given(words, words)
def test_signed_division_truncates_toward_zero_as_ptx_does(a: int, b: int) -> None:
    got, rem = evaluate("div.s32(f0,f4)", {0: a, 4: b}), evaluate("rem.s32(f0,f4)", {0: a, 4: b})
    if b == 0:
        assert got is None and rem is None
        return
    x, y = _signed(a), _signed(b)
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    assert got == q % WORD and rem == (x - q * y) % WORD
    assert abs(_signed(rem)) < abs(y) or y == -1  # the remainder keeps the dividend's sign


@given(words, words)
def test_comparisons_follow_the_type(a: int, b: int) -> None:
    assert evaluate("setp.lt.s32(f0,f4)", {0: a, 4: b}) == int(_signed(a) < _signed(b))
    assert evaluate("setp.lo.u32(f0,f4)", {0: a, 4: b}) == int(a < b)
    assert evaluate("not.pred(setp.ge.u32(f0,f4))", {0: a, 4: b}) == int(a < b)
    assert evaluate("add.s32(f0,f4)", {0: a, 4: b}) == (a + b) % WORD


def test_a_field_without_a_value_or_bad_text_is_no_value() -> None:
    assert evaluate("add.s32(f0,f8)", {0: 1}) is None
    assert evaluate("add.s32(f0,", {0: 1}) is None
    assert evaluate("bogus.s32(1,2)", {}) is None
    assert fields_of("setp.lt.s32(div.s32(128,f396),2)") == {396}


PTX = """
.visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)
{
	.reg .pred %p<4>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [f_param_0];
	add.s64 %rd2, %rd1, 400;
	ld.v2.u32 {%r1, %r2}, [%rd2+-8];
	mov.u32 %r3, 128;
	div.s32 %r4, %r3, %r2;
	setp.lt.s32 %p1, %r4, 2;
	ld.u64 %rd3, [%rd1+8];
	ld.global.u32 %r5, [%rd3];
	setp.lt.s32 %p2, %r5, 2;
	mov.u32 %r6, 1;
	mov.u32 %r6, 2;
	setp.lt.s32 %p3, %r6, %r2;
	ret;
}
"""


def test_conditions_are_followed_to_params_words_through_single_definitions() -> None:
    (fn,) = parse(PTX).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    defs = Definitions(fn, env)
    assert defs.condition("%p1", True) == "setp.lt.s32(div.s32(128,f396),2)"  # the vector's second word
    assert defs.condition("!%p1", True) == "not.pred(setp.lt.s32(div.s32(128,f396),2))"
    assert defs.condition("%p1", False) == "not.pred(setp.lt.s32(div.s32(128,f396),2))"
    assert defs.condition("%p2", True) is None  # a load through a pointer the params hold
    assert defs.condition("%p3", True) is None  # %r6 is defined twice


def test_a_condition_of_other_values_is_undecided_at_a_stated_value(tmp_path: Path) -> None:
    folder = tmp_path / "case"
    shutil.copytree(CASE, folder)
    source = folder / "pass.cu"
    text = source.read_text()
    text = text.replace(
        "    const unsigned pages = 128u / rows;\n",
        "    const unsigned pages = 128u / rows;\n"
        "    const unsigned limit = __ldg(reinterpret_cast<const unsigned*>(p->out));\n",
    ).replace("            if (j < pages) {", "            if (j < pages && j < limit) {")
    source.write_text(text)
    found = conformance_findings(build(source, folder / "stage.kc"), tmp_path / "x.kpkg")
    [note] = found
    assert note.code == "I-CONFORM" and note.severity is Severity.NOTE
    assert "when `rows` = 16" in note.message and "not computed from params fields with stated values" in note.message
    [strict] = conformance_findings(build(source, folder / "stage.kc"), tmp_path / "y.kpkg", strict=True)
    assert strict.code == "L-CONFORM" and strict.severity is Severity.ERROR
