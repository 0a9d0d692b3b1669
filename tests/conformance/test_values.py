"""The PTX value analysis: which operands an instruction defines, and what each register holds.

Only an instruction with a destination defines its first operand. `bar.sync %r4, %r5` reads
`%r4` (the barrier ID), so `mov.u32 %r4, 1; bar.sync %r4, %r5;` keeps the ID 1 that the link
audit proves; the same holds for every destination-less instruction of the PTX ISA (stores,
reductions, barriers, fences, mbarrier inits and transaction counts, bulk copies, wgmma and
tcgen05 control, ...).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from package.codefacts.ptx import parse
from package.codefacts.values import Env, analyse, defines


def _env(body: str) -> Env:
    ptx = f".visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)\n{{\n{body}\n}}\n"
    (fn,) = parse(ptx).functions
    return analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)


@pytest.mark.parametrize(
    "use",
    [
        "bar.sync %r4, %r5;",
        "barrier.sync %r4, %r5;",
        "bar.arrive %r4, %r5;",
        "barrier.sync.aligned %r4, %r5;",
        "st.shared.u32 [%r5], %r4;",
        "red.shared.add.u32 [%r5], %r4;",
        "mbarrier.init.shared::cta.b64 [%r5], %r4;",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r5], %r4;",
        "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r5], %r4;",
        "setmaxnreg.inc.sync.aligned.u32 %r4;",
        "nanosleep.u32 %r4;",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 128;",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd1], %r4, [%r5];",
        "wgmma.wait_group.sync.aligned %r4;",
    ],
)
def test_a_destination_less_instruction_keeps_its_operands(use: str) -> None:
    env = _env(f"mov.u32 %r4, 1;\nmov.u32 %r5, 8;\n{use}\nret;")
    assert env.operand("%r4").const == 1 and env.operand("%r4").is_const


@pytest.mark.parametrize(
    ("ins", "dest"),
    [
        ("bar.red.popc.u32 %r4, 0, %p1;", True),
        ("barrier.red.or.pred %p2, 1, %p1;", True),
        ("mbarrier.arrive.shared::cta.b64 %rd2, [%r5];", True),
        ("mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], %r4;", True),
        ("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r6}, [%r4];", True),
        ("ld.shared.u32 %r4, [%r5];", True),
        ("bar.sync %r4, %r5;", False),
        ("fence.proxy.async.shared::cta;", False),
        ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r5], %r4;", False),
        ("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r4};", False),
        ("multimem.st.global.u32 [%rd1], %r4;", False),
        ("multimem.ld_reduce.global.add.u32 %r4, [%rd1];", True),
    ],
)
def test_which_instructions_define_their_first_operand(ins: str, dest: bool) -> None:
    (fn,) = parse(f".visible .func f()\n{{\n{ins}\nret;\n}}\n").functions
    assert defines(fn.body[0]) is dest


def test_a_destination_is_still_redefined() -> None:
    env = _env("mov.u32 %r4, 1;\nld.shared.u32 %r4, [%r5];\nbar.sync %r4, 128;\nret;")
    assert not env.operand("%r4").is_const


@pytest.mark.parametrize(
    ("ins", "part", "has"),
    [
        ("st.shared::cta.u32 [%r1], %r2;", "shared", True),
        ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;", "shared", True),
        ("st.shared.u32 [%r1], %r2;", "shared", True),
        ("st.global.u32 [%rd1], %r2;", "shared", False),
        ("ld.param.u64 %rd1, [p];", "param", True),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];",
            "mbarrier",
            True,
        ),
    ],
)
def test_an_opcode_part_may_be_qualified(ins: str, part: str, has: bool) -> None:
    (fn,) = parse(f".visible .func f()\n{{\n{ins}\nret;\n}}\n").functions
    assert fn.body[0].has(part) is has


_DEPOT = "\t.local .align 8 .b8 __local_depot0[64];\n\tmov.u64 %SPL, __local_depot0;\n\tcvta.local.u64 %SP, %SPL;\n"
#: Steps that keep a local address local (an integer offset or index into the depot) ...
_LOCAL_STEPS = (
    "add.u64 %rd1, %rd1, 8;",
    "mov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.u64 %rd1, %rd1, %rd2;",
    "mov.u32 %r1, %laneid;\n\tmad.wide.u32 %rd1, %r1, 16, %rd1;",
    "sub.u64 %rd1, %rd1, 4;",
    "mov.b64 %rd1, %rd1;",
)
#: ... and steps after which it may be any address (a params pointer, a loaded value, shared memory).
_OTHER_STEPS = (
    "ld.param.u64 %rd3, [f_param_0];\n\tld.u64 %rd4, [%rd3+8];\n\tadd.u64 %rd1, %rd1, %rd4;",
    "ld.u64 %rd1, [%rd1];",
    "cvta.to.shared.u64 %rd1, %rd1;",
    "ld.param.u64 %rd1, [f_param_1];",
    "cvt.u32.u64 %r2, %rd1;\n\tcvt.u64.u32 %rd1, %r2;",
)


@given(st.lists(st.sampled_from(_LOCAL_STEPS), max_size=6), st.lists(st.sampled_from(_OTHER_STEPS), max_size=2))
def test_a_local_address_stays_local_only_through_integer_offsets(local: list[str], other: list[str]) -> None:
    """`%rd1` starts as the stack depot (`%SP + 0`); it is `local` (never shared memory) exactly when no
    definition of it, on any path, is something other than the depot at an integer offset."""
    body = _DEPOT + "\tadd.u64 %rd1, %SP, 0;\n\t" + "\n\t".join([*local, *other])
    ptx = f".visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)\n{{\n{body}\n}}\n"
    (fn,) = parse(ptx).functions
    env = analyse(fn, handle_names=frozenset(), smem_names=frozenset(), entry_like=True)
    assert (env.values["%rd1"].kind() == "local") == (not other)


# ------------------------------------------------------------------ a value the function keeps in its own frame
#: Frame steps on 8-byte places 0..3 of the depot: (kind, place). ``local``: the store of a local address
#: (`&object`, `%SP + 32`); ``global``: of a params pointer; ``part``: a 4-byte store into the place's upper half;
#: ``wild``: a store at a thread-indexed place; ``escape``: the local address stored outside the frame.
_FRAME_STEPS = {
    "local": "st.local.u64 [%SPL+{o}], %rdL;",
    "global": "st.local.u64 [%SPL+{o}], %rdG;",
    "part": "st.local.u32 [%SPL+{o4}], %r9;",
    "wild": "st.local.u64 [%rdW], %rdG;",
    "escape": "st.global.u64 [%rdG], %rdL;",
}


def _frame_expected(steps: list[tuple[str, int]]) -> bool:
    """Whether the pointer loaded from place 0 is known local: place 0 is stored, only with local addresses, and the
    frame is kept (no part store overlapping another store, no wild store, no escape)."""
    kinds = {k for k, _ in steps}
    whole = {p for k, p in steps if k in ("local", "global")}
    parts = {p for k, p in steps if k == "part"}
    if "wild" in kinds or "escape" in kinds or whole & parts:
        return False
    at0 = [k for k, p in steps if p == 0 and k in ("local", "global", "part")]
    return bool(at0) and all(k == "local" for k in at0)


@given(st.lists(st.tuples(st.sampled_from(sorted(_FRAME_STEPS)), st.integers(0, 3)), max_size=6))
def test_a_pointer_loaded_from_the_frame_is_local_iff_every_store_there_is_one(steps: list[tuple[str, int]]) -> None:
    """`ld.local.u64 %rd9, [%SPL]` then `ld.u32 %r1, [%rd9]`: the second load is of local memory (never a global
    access) exactly when the PTX shows every store of that place and each is a local address; any store the analysis
    cannot place, or an address of the frame that goes elsewhere, leaves it unknown."""
    body = (
        _DEPOT
        + "\tadd.u64 %rdL, %SP, 32;\n\tld.param.u64 %rdG, [f_param_0];\n\tmov.u32 %r1, %tid.x;\n"
        + "\tmul.wide.u32 %rd2, %r1, 8;\n\tadd.u64 %rdW, %SPL, %rd2;\n\t"
        + "\n\t".join(_FRAME_STEPS[k].format(o=8 * p, o4=8 * p + 4) for k, p in steps)
        + "\n\tld.local.u64 %rd9, [%SPL];\n\tld.u32 %r2, [%rd9];"
    )
    env = _env(body)
    assert (env.values["%rd9"].kind() == "local") == _frame_expected(steps), body


def test_every_lane_of_a_vector_load_is_what_it_loads() -> None:
    """The parser drops a vector's braces: every register before the address is a destination. A lane of a load the
    analysis cannot place is unknown (never a value of nothing), a params-block lane its own word."""
    env = _env(
        "ld.param.u64 %rd1, [f_param_0];\n"
        "ld.v2.u32 {%r1, %r2}, [%rd1+8];\n"
        "ld.param.u64 %rd2, [f_param_1];\n"
        "ld.shared.v4.u32 {%r3, %r4, %r5, %r6}, [%rd2];\n"
        "ret;"
    )
    assert [env.values[r].field for r in ("%r1", "%r2")] == [8, 12]
    assert all(env.values[r].kind() == "params" for r in ("%r1", "%r2"))
    assert all(env.values[r].kind() == "unknown" for r in ("%r3", "%r4", "%r5", "%r6"))


def test_a_return_parameter_is_no_argument() -> None:
    """`.func (.param .b32 func_retval0) f(a, b)`: a and b are its arguments 0 and 1 (a summary binds a callable's
    parameter to the caller's argument by index)."""
    ptx = (
        ".visible .func  (.param .b32 func_retval0) next(\n\t.param .b64 next_param_0,\n\t.param .b64 next_param_1\n)\n"
        "{\n\tld.param.u64 %rd1, [next_param_0];\n\tst.param.b32 [func_retval0], 1;\n\tret;\n}\n"
    )
    (fn,) = parse(ptx).functions
    assert fn.params == ("next_param_0", "next_param_1") and fn.returns == ("func_retval0",)
