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
from packing.pack import build, choose_stage

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


def _composed(tmp_path: Path, *stages: tuple[str, str]) -> list[tuple[str, str, bool, str]]:
    """``callable_addresses`` over stages given as (contract, PTX body): (check, problem, decided, function)."""
    from checker.conformance.checks import callable_addresses

    parts = []
    for i, (contract, ptx) in enumerate(stages):
        (tmp_path / f"s{i}.kc").write_text(contract)
        parts.append((choose_stage(tmp_path / f"s{i}.kc", None), derive(".version 8.0\n.target sm_90a\n" + ptx)))
    return [(f.check, f.problem, f.decided, f.fact.function) for _, f in callable_addresses(parts)]


CLAIM_HANDLE = """	{
	.param .b32 retval0;
	call.uni (retval0), kl_fx_user_buf_smem, ();
	ld.param.b32 %r1, [retval0+0];
	}"""


@pytest.mark.parametrize(
    ("passed", "expected"),
    [
        ("mov.u32 %r1, 1024;", [("smem-literal", "fixed", True, "fx_user_main")]),
        (CLAIM_HANDLE, []),
    ],
    ids=["a-literal", "a-claim-address"],
)
def test_an_argument_a_helper_passes_on_is_followed_to_the_role(
    tmp_path: Path, passed: str, expected: list[tuple[str, str, bool, str]]
) -> None:
    """The role hands its own helper a value that the helper passes on to another stage's callable,
    which addresses shared memory with it (`param-pass`): the role's call to the helper is judged.
    A literal is the same mistake as passing it to the callable directly; a claim's address is fine."""
    user = USER.replace("warps 1", "warps 1\n    claim smem buf bytes 1024 align 16")
    caller = USER_PTX.replace("mov.u32 %r1, 1024;", passed).replace(
        ".visible .func fx_user_main",
        ".extern .func (.param .b32 func_retval0) kl_fx_user_buf_smem();\n.visible .func fx_user_main",
    )
    assert _composed(tmp_path, (CONTRACT, STAGING), (user, caller)) == expected


MIDDLE = """stage "fx.mid" version "1.0.0" {
    target sm_90a
    export callable fx_mid (ptr, u32) -> void = fx_mid_impl
    call fx_stage (ptr, u32) -> void as fx_mid_stage from callable fx_mid
}
"""

MIDDLE_PTX = (
    USER_PTX.split(".visible .func fx_user_main")[0]
    .replace("fx_user_stage", "fx_mid_stage")
    .replace(".func fx_user_helper", ".visible .func fx_mid_impl")
    .replace("fx_user_helper_param", "fx_mid_impl_param")
)

OUTER = """stage "fx.outer" version "1.0.0" {
    target sm_90a
    role r entry fx_outer_main warps 1
    claim smem buf bytes 1024 align 16
    call fx_mid (ptr, u32) -> void as fx_outer_mid from role r
}
"""

OUTER_PTX = ".extern .func (.param .b32 func_retval0) kl_fx_outer_buf_smem();\n" + USER_PTX.split(
    ".visible .func fx_user_main"
)[1].join([".visible .func fx_outer_main", ""]).replace("fx_user_main", "fx_outer_main").replace(
    "fx_user_helper", "fx_outer_mid"
).replace(
    ".visible .func fx_outer_main",
    ".extern .func fx_outer_mid(.param .b64 a, .param .b32 b);\n.visible .func fx_outer_main",
)


@pytest.mark.parametrize(
    ("passed", "expected"),
    [
        ("mov.u32 %r1, 1024;", [("smem-literal", "fixed", True, "fx_outer_main")]),
        (CLAIM_HANDLE.replace("fx_user", "fx_outer"), []),
    ],
    ids=["a-literal", "a-claim-address"],
)
def test_a_callable_passing_its_argument_to_another_callable_is_followed(
    tmp_path: Path, passed: str, expected: list[tuple[str, str, bool, str]]
) -> None:
    """Role (fx.outer) -> callable `fx_mid` (fx.mid) -> callable `fx_stage` (fx.call), which stores to
    shared memory at its second argument: `fx_mid` passes its own second parameter on, so it addresses
    shared memory with it too, and the role's call to `fx_mid` is judged. Not followed, a literal
    there was accepted (the middle callable's call was skipped as its callers' business)."""
    outer = OUTER_PTX.replace("mov.u32 %r1, 1024;", passed)
    found = _composed(tmp_path, (CONTRACT, STAGING), (MIDDLE, MIDDLE_PTX), (OUTER, outer))
    assert found == expected


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
	.local .align 8 .b8 	__local_depot0[64];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .b32 %r<3>;
	.reg .b64 %rd<6>;
	mov.u64 	%SPL, __local_depot0;
	cvta.local.u64 	%SP, %SPL;
	ld.param.u64 %rd1, [fx_local_main_param_0];
	add.u64 %rd2, %SP, 0;
	add.u64 %rd3, %SP, 16;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd2;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd3;
	call.uni fx_local_two, (param0, param1);
	}
	ret;
}
"""

LOCAL_OBJECT = "add.u64 %rd3, %SP, 16;"
RESULT_CALL = ("call.uni fx_local_two,", ".param .b32 retval0;\n\tcall.uni (retval0), fx_local_two,")


@pytest.mark.parametrize(
    "edits",
    [
        [],
        [(LOCAL_OBJECT, "mov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd4, %r1, 4;\n\tadd.u64 %rd3, %SP, %rd4;")],
        [(LOCAL_OBJECT, "mov.u32 %r1, %tid.x;\n\tmad.wide.u32 %rd3, %r1, 8, %SPL;")],
        [(LOCAL_OBJECT, "add.u64 %rd4, %SPL, 16;\n\tcvta.local.u64 %rd3, %rd4;")],
        [RESULT_CALL],
    ],
    ids=["an-offset", "a-thread-index", "mad-into-the-depot", "cvta-local", "a-call-with-a-result"],
)
def test_a_pointer_to_the_callers_own_object_is_not_shared_memory(tmp_path: Path, edits: list[tuple[str, str]]) -> None:
    """`gs_sched_init(&sched, &problem)`: the role passes the addresses of its own local objects (nvcc's
    `__local_depot`, `%SP`/`%SPL`, `cvta.local`), which are never shared memory: decided, no finding."""
    ptx = LOCAL_PTX
    for old, new in edits:
        assert old in ptx
        ptx = ptx.replace(old, new)
    assert _composed(tmp_path, (CONTRACT, TWO_POINTERS), (LOCAL_USER, ptx)) == []


@pytest.mark.parametrize(
    ("edits", "decided"),
    [
        ([(LOCAL_OBJECT, "ld.u64 %rd3, [%rd1+8];")], True),
        ([(LOCAL_OBJECT, LOCAL_OBJECT + "\n\tld.u64 %rd3, [%rd1+8];")], True),
        ([(LOCAL_OBJECT, "mov.u64 %rd3, 4096;")], True),
        ([(LOCAL_OBJECT, "ld.u64 %rd5, [%rd2];\n\tadd.u64 %rd3, %SP, %rd5;")], False),
        ([(LOCAL_OBJECT, "ld.u64 %rd3, [%rd1+8];"), RESULT_CALL], True),
    ],
    ids=["a-params-pointer", "local-or-a-params-pointer", "a-literal", "an-unknown-offset", "with-a-result"],
)
def test_a_pointer_that_may_be_shared_memory_is_still_judged(
    tmp_path: Path, edits: list[tuple[str, str]], decided: bool
) -> None:
    """Not every pointer is the caller's own stack: one loaded from the params block (or joined with
    one on another path), a shared address from `cvta.shared`, or the depot at an offset the analysis
    cannot trace (a loaded value: it may be a pointer itself) is judged as before. A call with a result
    (`call (retval0), f, (param0, param1)`) numbers its arguments after the callee's name."""
    ptx = LOCAL_PTX
    for old, new in edits:
        assert old in ptx
        ptx = ptx.replace(old, new)
    assert _composed(tmp_path, (CONTRACT, TWO_POINTERS), (LOCAL_USER, ptx)) == [
        ("smem-literal", "fixed" if decided else "undecided", decided, "fx_local_main")
    ]


SHARED_LITERAL = "mov.u32 %r2, 4096;\n\tcvta.shared.u64 %rd3, %r2;"
SHARED_CLAIM = (
    "{\n\t.param .b32 retval0;\n\tcall.uni (retval0), kl_fx_local_buf_smem, ();\n\tld.param.b32 %r2, [retval0+0];\n\t}"
    "\n\tcvta.shared.u64 %rd3, %r2;"
)


@pytest.mark.parametrize(
    ("passed", "expected"),
    [(SHARED_LITERAL, [("smem-literal", "fixed", True)]), (SHARED_CLAIM, [])],
    ids=["a-literal", "a-claim-address"],
)
def test_a_shared_address_the_code_makes_is_judged_at_pack(
    tmp_path: Path, passed: str, expected: list[tuple[str, str, bool]]
) -> None:
    """A role that converts a literal to a shared-window address (`cvta.shared`) and passes it to another
    stage's callable has decided, in its own code, that it is a shared address: `kernlink pack` reports
    it (the stage's own facts, `smem-arg`), whatever the callee; the composition does not report it again."""
    contract = LOCAL_USER.replace("warps 1", "warps 1\n    claim smem buf bytes 1024 align 16")
    ptx = LOCAL_PTX.replace(LOCAL_OBJECT, passed).replace(
        ".visible .func fx_local_main",
        ".extern .func (.param .b32 func_retval0) kl_fx_local_buf_smem();\n.visible .func fx_local_main",
    )
    (tmp_path / "local.kc").write_text(contract)
    stage = choose_stage(tmp_path / "local.kc", None)
    packed = [(f.check, f.problem, f.decided) for f in check(stage, derive(".version 8.0\n.target sm_90a\n" + ptx))]
    assert packed == expected
    assert _composed(tmp_path, (CONTRACT, TWO_POINTERS), (contract, ptx)) == []


PIPELINES = (
    "gemm_swiglu_persistent",
    "gemm_swiglu_persistent_c1",
    "gemm_swiglu_persistent_small",
    "gemm_swiglu_persistent_swapab",
    "gemm_swiglu_persistent_swapab64",
)


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_the_persistent_pipelines_conform_with_no_undecided_call(pipeline: str) -> None:
    """Each persistent pipeline's packages (built as `kernlink pack` builds them), checked as
    `kernlink check --strict` checks a composition's code: no conformance finding and no undecided
    site, per stage or across the calls (`gs_sched_init(&sched, &problem)` and the fix-up's
    `&site` pass the roles' own stack objects). The ping-pong pipeline is contract-only (no code)."""
    import re

    from checker.conformance.checks import callable_addresses

    names = re.findall(r'from "build/(\w+)\.kpkg"', (PERSISTENT / f"{pipeline}.kp").read_text())
    assert len(names) >= 4  # the swap-AB pipeline runs no stream-K fix-up
    parts = []
    for name in names:
        built = build(PERSISTENT / f"{name}.cu", PERSISTENT / f"{name}.kc")
        assert built.ptx is not None
        parts.append((built.stage, derive(built.ptx)))
    per_stage = [(stage.name, f.check, f.decided) for stage, code in parts for f in check(stage, code)]
    across = [(f.check, f.decided, f.fact.function) for _, f in callable_addresses(parts)]
    assert (per_stage, across) == ([], [])
