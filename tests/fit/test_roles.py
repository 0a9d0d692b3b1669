"""Issue 12 items 7 and 18: roles in declaration order, no padding bought with idle warps,
one register formula for the check and placement, L-TMEM's round-up help."""

from __future__ import annotations

from kernlink.api import check_text

TWO_WARPS = """
stage "t.a" version "1.0.0" {
    target sm_90a
    role zed entry zed_main warps 1
    role alpha entry alpha_main warps 1
}
"""


def _placed(text: str):  # type: ignore[no-untyped-def]
    result = check_text(text)
    assert result.accepted, [d.message for d in result.diagnostics]
    from analysis.downstream import verify_downstream

    assert result.composition is not None
    placed = verify_downstream(result.composition).placed
    assert placed is not None
    return placed.placement


def test_roles_are_placed_in_declaration_order_not_by_name() -> None:
    p = _placed(TWO_WARPS)
    assert [(r.name, r.first_warp) for r in sorted(p.roles, key=lambda r: r.first_warp)] == [("zed", 0), ("alpha", 1)]
    renamed = _placed(TWO_WARPS.replace("zed", "aaa").replace("alpha", "zzz"))
    assert [r.name for r in sorted(renamed.roles, key=lambda r: r.first_warp)] == ["aaa", "zzz"]


def test_two_one_warp_roles_are_not_padded() -> None:
    p = _placed(TWO_WARPS)
    assert p.block_warps == 2 and p.idle_warps == ()


THIRTEEN = """
stage "wide.main" version "1.0.0" {{
    target sm_90a
    requires feature setmaxnreg
    role a entry a_main warps 4 regs {regs} warpgroup
    role b entry b_main warps 8 regs {regs} warpgroup
    role c entry c_main warps 1
    launch fixed threads 416
}}
"""


def test_check_and_placement_agree_on_a_13_warp_block() -> None:
    # pool 128 × 416 = 53 248; 152 × 384 + 24 × 32 = 59 136 does not fit, 136 × 384 + 768 does
    rejected = check_text(THIRTEEN.format(regs=152))
    codes = {d.code for d in rejected.diagnostics if d.is_error}
    assert codes == {"L-REGS"}
    # the check-time clause rejects it (not only placement): the clause names the 416 threads
    assert any("416 threads" in d.message for d in rejected.diagnostics)
    p = _placed(THIRTEEN.format(regs=136))
    assert p.block_warps == 13 and p.register_pool == 128 * 416


def test_tmem_round_up_help_notes_the_overflow_it_causes() -> None:
    text = """
stage "bw.gemm" version "1.0.0" {
    target sm_100a
    requires feature tmem, tcgen05
    role mma entry bw_mma_main warps 1
    role epilogue entry bw_epilogue_main warps 4 warpgroup
    claim tmem acc columns 384 read by epilogue lanes 0..127
    claim tmem aux columns 128 read by epilogue lanes 0..127
}
"""
    result = check_text(text)
    tmem = next(d for d in result.diagnostics if d.code == "L-TMEM")
    assert any("take 640 of the 512 columns" in n for n in tmem.notes)
    alone = check_text(text.replace("    claim tmem aux columns 128 read by epilogue lanes 0..127\n", ""))
    tmem = next(d for d in alone.diagnostics if d.code == "L-TMEM")
    assert not any("overflow" in n for n in tmem.notes)
