"""A callable (or helper) addresses the shared memory its caller passes it; the caller answers for the address.

The analysis reads each function alone, and only a role entry's second argument is the
shared-memory base. A callable's access relative to one of its own arguments is therefore
decided at the caller, which passes a claim's address (``smem-arg`` facts, judged by
``smem-literal``; the failing case is ``cases/smem-arg``). An access the callable computes
from nothing it was given stays undecided. Two pointer arguments look like a role entry's
(params, smem): for a callable they are still its caller's values.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checker.conformance import check
from package.codefacts import derive
from packing.pack import choose_stage

CONTRACT = """stage "fx.call" version "1.0.0" {
    target sm_90a
    export callable fx_two (ptr, ptr) -> void = fx_two_impl
    export callable fx_stage (ptr, u32) -> void = fx_stage_impl
}
"""

TWO_POINTERS = """
.visible .func fx_two_impl(.param .b64 fx_two_impl_param_0, .param .b64 fx_two_impl_param_1)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [fx_two_impl_param_0];
	ld.param.u64 %rd2, [fx_two_impl_param_1];
	ld.u32 %r1, [%rd2+4];
	st.u32 [%rd1+8], %r1;
	ret;
}
"""

STAGING = """
.visible .func fx_stage_impl(.param .b64 fx_stage_impl_param_0, .param .b32 fx_stage_impl_param_1)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [fx_stage_impl_param_0];
	ld.param.u32 %r1, [fx_stage_impl_param_1];
	mov.u32 %r2, %tid.x;
	shl.b32 %r3, %r2, 2;
	add.s32 %r4, %r1, %r3;
	st.shared.u32 [%r4], %r2;
	ret;
}
"""


def _checks(ptx: str, tmp_path: Path) -> list[tuple[str, bool]]:
    (tmp_path / "call.kc").write_text(CONTRACT)
    stage = choose_stage(tmp_path / "call.kc", None)
    return [(f.check, f.decided) for f in check(stage, derive(".version 8.0\n.target sm_90a\n" + ptx))]


@pytest.mark.parametrize("ptx", [TWO_POINTERS, STAGING], ids=["two-pointers", "staging-argument"])
def test_an_access_relative_to_the_callables_argument_is_the_callers(ptx: str, tmp_path: Path) -> None:
    assert _checks(ptx, tmp_path) == []


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (("add.s32 %r4, %r1, %r3;", "ld.shared.u32 %r4, [%r3];"), "an address loaded from memory"),
        (("ld.param.u32 %r1, [fx_stage_impl_param_1];", "ld.u32 %r1, [%rd1];"), "an address read through a pointer"),
    ],
)
def test_an_address_the_callable_was_not_given_stays_undecided(edit: tuple[str, str], why: str, tmp_path: Path) -> None:
    assert edit[0] in STAGING, why
    assert ("smem-literal", False) in _checks(STAGING.replace(*edit), tmp_path)


PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
CLAIM_STAGING = "base + kl_gemm_mainloop_out_stage_staging_smem() + w"


@pytest.mark.parametrize(
    ("staging", "expected"),
    [(CLAIM_STAGING, []), ("65536u + w", [("smem-literal", "fixed", True)])],
    ids=["a-claim-address", "a-literal-address"],
)
def test_the_caller_answers_for_the_address_a_callable_writes(
    tmp_path: Path, staging: str, expected: list[tuple[str, str, bool]]
) -> None:
    """The SwiGLU epilogue's `gs_swiglu_write` stores into the staging address it is given (`smem-param`);
    the consumer passes it a claim's address. Passing a literal u32 instead is a fixed offset, which only
    the composition sees (the epilogue is another stage's code): `callable_addresses`."""
    from checker.conformance.checks import callable_addresses
    from packing.pack import build

    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build", "ringfed"))
    source = (folder / "consumer.cu").read_text()
    assert source.count(CLAIM_STAGING) == 1
    (folder / "consumer.cu").write_text(source.replace(CLAIM_STAGING, staging))
    parts = []
    for name in ("consumer", "epilogue"):
        built = build(folder / f"{name}.cu", folder / f"{name}.kc")
        assert built.ptx is not None
        parts.append((built.stage, derive(built.ptx)))
    assert any(f.kind == "smem-param" and f.function == "gs_swiglu_epilogue_write" for f in parts[1][1].facts)
    found = [(f.check, f.problem, f.decided) for _, f in callable_addresses(parts)]
    assert found == expected


def test_the_callers_literal_is_worded_as_passed() -> None:
    from checker.clauses.l_conform import describe
    from checker.conformance.context import found
    from package.codefacts.facts import Fact

    call = Fact("call-arg", "gs_consumer_main", 12, "call.uni", (), None, "gs_consumer_swiglu_write")
    words = describe(found("smem-literal", "fixed", call, None, offset="", claimed=True))
    assert "passes `gs_consumer_swiglu_write` a shared-memory address computed without" in words.message


USER = """stage "fx.user" version "1.0.0" {
    target sm_90a
    role r entry fx_user_main warps 1
    call fx_stage (ptr, u32) -> void as fx_user_stage from role r
}
"""

USER_PTX = """
.extern .func fx_user_stage(.param .b64 fx_user_stage_param_0, .param .b32 fx_user_stage_param_1);
.func fx_user_helper(.param .b64 fx_user_helper_param_0, .param .b32 fx_user_helper_param_1)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [fx_user_helper_param_0];
	ld.param.u32 %r1, [fx_user_helper_param_1];
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1], %r1;
	call.uni fx_user_stage, (param0, param1);
	}
	ret;
}
.visible .func fx_user_main(.param .b64 fx_user_main_param_0, .param .b64 fx_user_main_param_1)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [fx_user_main_param_0];
	mov.u32 %r1, 1024;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1], %r1;
	call.uni fx_user_helper, (param0, param1);
	}
	ret;
}
"""


def test_a_call_from_a_helper_of_the_role_stays_undecided(tmp_path: Path) -> None:
    """The role hands a literal to its own helper, which passes it on to the callable: the call the
    composition judges is the helper's, whose argument is its caller's value. That is undecided
    (an I-CONFORM note, an error under --strict), never skipped as if no role made the call."""
    from checker.conformance.checks import callable_addresses

    (tmp_path / "call.kc").write_text(CONTRACT)
    (tmp_path / "user.kc").write_text(USER)
    callee = (choose_stage(tmp_path / "call.kc", None), derive(".version 8.0\n.target sm_90a\n" + STAGING))
    caller = (choose_stage(tmp_path / "user.kc", None), derive(".version 8.0\n.target sm_90a\n" + USER_PTX))
    assert any(f.kind == "call-arg" and f.function == "fx_user_helper" for f in caller[1].facts)
    found = [(f.check, f.decided, f.fact.function) for _, f in callable_addresses([callee, caller])]
    assert found == [("smem-literal", False, "fx_user_helper")]


LOCAL_USER = """stage "fx.local" version "1.0.0" {
    target sm_90a
    role r entry fx_local_main warps 1
    call fx_two (ptr, ptr) -> void as fx_local_two from role r
}
"""

LOCAL_PTX = """
.extern .func fx_local_two(.param .b64 fx_local_two_param_0, .param .b64 fx_local_two_param_1);
.visible .func fx_local_main(.param .b64 fx_local_main_param_0, .param .b64 fx_local_main_param_1)
{
	.local .align 4 .b8 __local_depot0[40];
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .b32 %r<2>;
	.reg .b64 %rd<4>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd3, [fx_local_main_param_1];
	add.u64 %rd1, %SP, 0;
	add.u64 %rd2, %SP, 24;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b64 param1;
	st.param.b64 [param1], %rd2;
	call.uni fx_local_two, (param0, param1);
	}
	ret;
}
"""


@pytest.mark.parametrize(
    ("second", "expected"),
    [("add.u64 %rd2, %SP, 24;", []), ("add.u64 %rd2, %rd3, 24;", [("smem-literal", "fixed", True)])],
    ids=["its-own-stack-object", "the-smem-base-plus-a-literal"],
)
def test_a_pointer_to_the_callers_own_local_object_is_no_shared_address(
    second: str, expected: list[tuple[str, str, bool]], tmp_path: Path
) -> None:
    """A persistent role hands the scheduler's callable `&sched, &problem`, objects on its own stack
    (`%SP` from `cvta.local` of the function's `__local_depot`): the callable's accesses through them
    are no shared memory, so the composition decides the call. The same argument built from the role's
    shared-memory base instead is a fixed offset (the failing twin)."""
    from checker.conformance.checks import callable_addresses

    (tmp_path / "call.kc").write_text(CONTRACT)
    (tmp_path / "local.kc").write_text(LOCAL_USER)
    callee = (choose_stage(tmp_path / "call.kc", None), derive(".version 8.0\n.target sm_90a\n" + TWO_POINTERS))
    ptx = LOCAL_PTX.replace("add.u64 %rd2, %SP, 24;", second)
    caller = (choose_stage(tmp_path / "local.kc", None), derive(".version 8.0\n.target sm_90a\n" + ptx))
    assert any(f.kind == "smem-param" and f.function == "fx_two_impl" for f in callee[1].facts)
    found = [(f.check, f.problem, f.decided) for _, f in callable_addresses([callee, caller])]
    assert found == expected
