"""Normalized SASS and the calls left in SASS and PTX, from listings (no disassembler needed)."""

from __future__ import annotations

from linker import sass

NVDISASM = """\t.target\tsm_90a
//--------------------- .text.kl_dispatch         --------------------------
\t.section\t.text.kl_dispatch,"ax",@progbits
kl_dispatch:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   BSSY B0, `(.L_x_7) ;
        /*0020*/               @P0 BRA `(.L_x_9) ;
        /*0030*/                   MOV R6, 0x190 ;
        /*0040*/                   CALL.REL.NOINC `($kl_dispatch$_ZN15kl_unit_hello_16helperEf) ;
.L_x_7:
        /*0050*/                   BSYNC B0 ;
.L_x_9:
        /*0060*/                   EXIT ;
        /*0070*/                   RET.REL.NODEC R6 `(kl_dispatch) ;
"""

CUOBJDUMP = """
\tcode for sm_90a
\t\tFunction : kl_dispatch
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                           /* 0x000fe40000000800 */
        /*0010*/                   BSSY B0, `(.L_x_3) ;                    /* 0x0000004000007945 */
        /*0020*/               @P0 BRA `(.L_x_4) ;                         /* 0x0000000000000947 */
        /*0030*/                   MOV R6, 0x190 ;
        /*0040*/                   CALL.REL.NOINC `($kl_dispatch$_ZN12_GLOBAL__N_16helperEf) ;
        /*0050*/                   BSYNC B0 ;
        /*0060*/                   EXIT ;
        /*0070*/                   RET.REL.NODEC R6 `(kl_dispatch) ;
"""


def test_both_listing_formats_give_the_same_normalized_instructions() -> None:
    a, b = sass.normalized(NVDISASM), sass.normalized(CUOBJDUMP)
    assert list(a) == ["kl_dispatch"] and a == b
    assert a["kl_dispatch"][1:5] == ["BSSY B0, `(L0)", "@P0 BRA `(L1)", "MOV R6, 0x190", "CALL.REL.NOINC `(sym0)"]
    assert sass.unified_diff(a, b) == ""


def test_a_changed_instruction_shows_in_the_diff() -> None:
    changed = sass.normalized(NVDISASM.replace("MOV R6, 0x190", "MOV R6, 0x1a0"))
    diff = sass.unified_diff(sass.normalized(NVDISASM), changed)
    assert "-MOV R6, 0x190" in diff and "+MOV R6, 0x1a0" in diff and "linked/kl_dispatch" in diff


def test_calls_and_returns_are_found_with_their_targets() -> None:
    calls = sass.sass_calls(NVDISASM)
    assert [(c.function, c.op, c.target) for c in calls] == [
        ("kl_dispatch", "CALL", "$kl_dispatch$_ZN15kl_unit_hello_16helperEf"),
        ("kl_dispatch", "RET", None),
    ]


def test_ptx_calls_externs_and_functions() -> None:
    ptx = """
.extern .func  (.param .b32 func_retval0) kl_missing
(
\t.param .b32 kl_missing_param_0
);
.func  (.param .b32 func_retval0) hello_scale(
\t.param .b32 hello_scale_param_0
)
{
\tret;
}
.visible .entry kl_dispatch(
\t.param .align 8 .b8 kl_dispatch_param_0[16]
)
{
\t{ // callseq 0, 0
\tcall.uni (retval0),
\thello_scale,
\t(
\tparam0
\t);
\t}
\tcall.uni (retval0), kl_missing, (param0);
\tret;
}
"""
    calls, externs, defined = sass.ptx_calls(ptx)
    assert [(c.function, c.target) for c in calls] == [("kl_dispatch", "hello_scale"), ("kl_dispatch", "kl_missing")]
    assert externs == ["kl_missing"] and defined == ["hello_scale"]


def test_no_calls_in_straight_line_code() -> None:
    listing = NVDISASM.replace("CALL.REL.NOINC `($kl_dispatch$_ZN15kl_unit_hello_16helperEf)", "NOP").replace(
        "RET.REL.NODEC R6 `(kl_dispatch)", "NOP"
    )
    assert sass.sass_calls(listing) == []
    assert sass.ptx_calls(".visible .entry k()\n{\n\tret;\n}\n") == ([], [], [])
