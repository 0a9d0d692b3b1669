"""A copy or credit that some fills skip: `copy-bytes` reads the conditions it runs under.

``copy-bytes`` adds the bytes of a fill's copies and credits. A site under a thread-invariant
condition (a params value, the block's index) that the fill's own ``arrive.expect_tx`` does not
run under may be skipped on some fills, which then complete fewer bytes: the sum is undecided
(a note, an error under ``--strict``), never a pass. A credit skipped only when it is 0
(``if (credit != 0)``) completes the same bytes either way, so that condition is left out.
The campaign's ``guard`` mutants put each copy and credit of the examples under such a condition.
"""

from __future__ import annotations

import pytest

from package.codefacts import derive

HEAD = """.version 8.0
.target sm_90a
.visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)
{
	.reg .pred %p<4>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [f_param_0];
	ld.u32 %r1, [%rd1+48];
	ld.u32 %r2, [%rd1+52];
	mov.u32 %r6, 32768;
	mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r7], %r6;
"""
CREDIT = """	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra $L__BB0_2;
	mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r7], %r1;
$L__BB0_2:
	ret;
}
"""


def _conds(body: str) -> dict[str, tuple[str, ...]]:
    return {f.kind: f.conds for f in derive(HEAD + body).facts if f.kind in ("expect-tx", "complete-tx")}


@pytest.mark.parametrize(
    "test",
    [
        "setp.eq.s32 %p1, %r1, 0;\n\t@%p1 bra",
        "setp.ne.s32 %p1, 0, %r1;\n\t@!%p1 bra",
        "setp.ls.u32 %p1, %r1, 0;\n\t@%p1 bra",
    ],
    ids=["eq-zero", "not-ne-zero", "unsigned-le-zero"],
)
def test_a_credit_skipped_only_when_it_is_zero_runs_on_every_fill(test: str) -> None:
    found = _conds(CREDIT.replace("setp.eq.s32 %p1, %r1, 0;\n\t@%p1 bra", test))
    assert found == {"expect-tx": (), "complete-tx": ()}


@pytest.mark.parametrize(
    "test",
    ["setp.eq.s32 %p1, %r2, 0;", "setp.eq.s32 %p1, %r1, 8;", "setp.ne.s32 %p1, %r1, 0;"],
    ids=["another-field", "another-constant", "skipped-when-nonzero"],
)
def test_a_credit_under_another_condition_records_it(test: str) -> None:
    found = _conds(CREDIT.replace("setp.eq.s32 %p1, %r1, 0;", test))
    assert found["expect-tx"] == () and len(found["complete-tx"]) == 1


def test_a_guard_of_its_own_is_a_condition_and_one_the_arrive_shares_is_not_extra() -> None:
    body = "\tmov.u32 %r3, %ctaid.x;\n\tsetp.ne.u32 %p2, %r3, 0;\n"
    own = body + "\t@%p2 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r7], %r1;\n\tret;\n}\n"
    assert _conds(own)["complete-tx"] == ("@%p2",)
    both = HEAD.replace("\tmbarrier.arrive", body + "\t@%p2 mbarrier.arrive") + (
        "\t@%p2 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r7], %r1;\n\tret;\n}\n"
    )
    found = {f.kind: f.conds for f in derive(both).facts if f.kind in ("expect-tx", "complete-tx")}
    assert found == {"expect-tx": ("@%p2",), "complete-tx": ("@%p2",)}
