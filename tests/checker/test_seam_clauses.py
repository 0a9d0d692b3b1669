"""Behaviour of the callable, tensor, fact and communication clauses beyond their fixtures.

Cases here need inputs a fixture folder cannot hold (captured package layouts, a
tiny solver budget) or pin down the division of work between neighbouring clauses.
"""

from __future__ import annotations

import pytest

import checker.facts
from checker.clauses.l_params import ParamsClause
from checker.engine import run_clauses
from checker.resolve import resolve
from contract_lang import ast as A
from contract_lang.parser import parse_text
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from hardware.targets import SCALAR_SIZES, scalar_align, scalar_size
from kernlink.api import check_text
from package.captured import Captured, CapturedParams
from package.loader import StageEntry, implicit_pipeline


def _codes(text: str) -> list[str]:
    return sorted({d.code for d in check_text(text, "t.kc").diagnostics if d.is_error})


def _errors(text: str, code: str) -> list[Diagnostic]:
    return [d for d in check_text(text, "t.kc").diagnostics if d.code == code]


# ----------------------------------------------------------------- facts

_PRODUCT = """
stage "a" version "1.0.0" {
    target sm_90a
    role x entry x_main warps 1
    owns fact p: u64 in 1..1099511627776
    owns fact q: u64 in 1..1099511627776
    owns fact r: u64 in 1..1099511627776
    requires fact p * p * p - q * q * r != 12345677
}
"""


def test_solver_unknown_is_an_error_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker.facts, "RLIMIT", 1)
    found = _errors(_PRODUCT, "E-SOLVER-UNKNOWN")
    assert len(found) == 1 and found[0].is_error
    assert "not a pass" in " ".join(found[0].notes)


def test_division_by_zero_is_a_failing_value() -> None:
    text = """
stage "a" version "1.0.0" {
    target sm_90a
    role x entry x_main warps 1
    owns fact experts: u32 in 0..16
    requires fact 256 % experts == 0
}
"""
    (diag,) = _errors(text, "L-ASSUME")
    assert "`experts = 0`" in diag.message
    assert diag.primary is not None and "division by zero" in diag.primary.text


def test_constraint_over_an_unowned_name_is_left_to_l_owner() -> None:
    text = """
stage "a" version "1.0.0" {
    target sm_90a
    role x entry x_main warps 1
    owns fact tile_k: u32 in 16..128
    requires fact tile_k % 16 == 0 and tile_kk > 0
}
"""
    assert _codes(text) == ["L-OWNER"]


def test_assumption_against_a_one_value_range_is_exact() -> None:
    text = """
stage "a" version "1.0.0" {
    target sm_90a
    role x entry x_main warps 1
    owns fact n: u32 in 512..512
}
stage "b" version "1.0.0" {
    target sm_90a
    role y entry y_main warps 1
    assumes fact n: u32 == 512
}
"""
    assert _codes(text) == []


def test_owner_value_must_fit_its_type() -> None:
    text = """
stage "a" version "1.0.0" {
    target sm_90a
    role x entry x_main warps 1
    owns fact stages: u8 = 300
}
"""
    (diag,) = _errors(text, "L-FACT")
    assert "cannot hold 300" in diag.message


# ----------------------------------------------------------------- tensors

_PAIR = """
stage "gemm.mainloop" version "2.1.0" {{
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {{
        elem f32
        tile m 128 n 256
        ready event acc.ready
    }}
}}
stage "swiglu.epilogue" version "1.0.3" {{
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    claim smem scratch bytes 16KiB align 16 lifetime {lifetime}
    import tensor acc from accumulator into role epilogue {{
        elem f32
        lends smem scratch
{done}    }}
}}
"""


@pytest.mark.parametrize("lifetime", ["kernel", "between acc.ready acc.done", "from acc.ready", "until acc.done"])
def test_lent_scratch_covering_the_transfer_is_accepted(lifetime: str) -> None:
    assert _codes(_PAIR.format(lifetime=lifetime, done="        done event acc.done\n")) == []


@pytest.mark.parametrize("lifetime", ["until acc.ready", "from acc.done", "phase epilogue"])
def test_lent_scratch_not_covering_the_transfer_is_rejected(lifetime: str) -> None:
    text = _PAIR.format(lifetime=lifetime, done="        done event acc.done\n")
    assert "L-RENDEZVOUS" in _codes(text)


def test_reversed_or_unknown_lifetimes_are_left_to_l_lifetime() -> None:
    for lifetime in ("between acc.done acc.ready", "between acc.ready acc.finished"):
        assert "L-RENDEZVOUS" not in _codes(_PAIR.format(lifetime=lifetime, done="        done event acc.done\n"))


def test_lifetime_using_a_missing_done_event() -> None:
    (diag,) = _errors(_PAIR.format(lifetime="between acc.ready acc.done", done=""), "L-RENDEZVOUS")
    assert "declares no `done event`" in diag.message
    assert diag.helps == ("add `done event acc.done` to import `acc` in `swiglu.epilogue`",)


def test_persistent_pipeline_launch_rejects_an_export() -> None:
    text = """
pipeline "p" {
    target sm_90a
    use "gemm.mainloop" version ^2.1
    launch persistent threads 256 blocks_per_sm 1
}
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        ready event acc.ready
    }
}
"""
    (diag,) = _errors(text, "L-GENERATION")
    assert "launched persistent" in diag.message


# ----------------------------------------------------------------- callables


def test_cycles_through_ambiguous_calls_are_not_reported() -> None:
    text = """
stage "a" version "1.0.0" {
    target sm_90a
    role r entry r_main warps 1
    export callable f (u32) -> u32 = f_impl
    call g (u32) -> u32 as kl_call_g from callable f
}
stage "b" version "1.0.0" {
    target sm_90a
    export callable g (u32) -> u32 = g_impl
    call f (u32) -> u32 as kl_call_f from callable g
}
stage "c" version "1.0.0" {
    target sm_90a
    export callable g (u32) -> u32 = g_other
}
"""
    assert _codes(text) == ["L-AMBIGUOUS"]


def test_signature_and_site_are_checked_against_the_resolved_export() -> None:
    text = """
pipeline "p" {
    target sm_90a
    use "core" version ^1.0
    use "m1" version ^1.0
    use "m2" version ^1.0
    resolve call mask to "m2"
}
stage "core" version "1.0.0" {
    target sm_90a
    role r entry r_main warps 4
    call mask (i32, i32) -> bool as kl_call_mask from role r guarantees converged
}
stage "m1" version "1.0.0" {
    target sm_90a
    export callable mask (i32, i32) -> bool = m1_mask requires converged
}
stage "m2" version "1.0.0" {
    target sm_90a
    export callable mask (u32, u32) -> bool = m2_mask requires converged, full_warps
}
"""
    assert _codes(text) == ["L-SIG", "L-SITE"]


# ----------------------------------------------------------------- params, with captured layouts

_PARAMS = """
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    params GemmParams size 24 align 8 {
        tmap_a: ptr @ 0
        k_tiles: u32 @ 8
        tile_n: u32 @ 12
        tmap_b: ptr @ 16
    }
}
"""


def _with_captured(layout: CapturedParams, toolkit: str = "nvcc 13.0") -> list[Diagnostic]:
    source = parse_text(_PARAMS, "gemm.kc")
    captured = Captured(frozenset(), frozenset(), (layout,), toolkit=toolkit, target="sm_90a")
    entry = StageEntry(source.stages[0], "gemm.kc", None, "build/gemm.kpkg", captured)
    comp = resolve(implicit_pipeline(source.stages, "gemm", Span("gemm.kc", 1, 1, 1, 1)), "gemm.kc", [entry])
    return _params_findings(run_clauses(comp, [ParamsClause]))


def _params_findings(diags: list[Diagnostic]) -> list[Diagnostic]:
    """L-PARAMS's own findings: a captured package here carries no PTX, and the note that says so
    is shown under any clause selection (test_a_package_without_ptx_is_named_under_a_selection)."""
    (note,) = [d for d in diags if d.code == "I-CONFORM"]
    assert "carries no PTX" in note.message
    return [d for d in diags if d.code != "I-CONFORM"]


def test_captured_layout_that_matches_is_accepted() -> None:
    fields = (("tmap_a", 0, 8), ("k_tiles", 8, 4), ("tile_n", 12, 4), ("tmap_b", 16, 8))
    assert _with_captured(CapturedParams("GemmParams", 24, 8, fields)) == []


def test_captured_layout_disagreements() -> None:
    fields = (("tmap_a", 0, 8), ("k_tiles", 8, 4), ("split_k", 12, 4), ("tile_n", 16, 4), ("tmap_b", 24, 8))
    diags = _with_captured(CapturedParams("GemmParams", 32, 8, fields))
    messages = sorted(d.message for d in diags)
    assert all(d.code == "L-PARAMS" for d in diags)
    assert messages == sorted(
        [
            "params `GemmParams` of `gemm.mainloop` declares size 24, but the compiled struct has size 32",
            "field `tile_n` of params `GemmParams` is declared at offset 12 (4 bytes), but the compiler placed it "
            "at offset 16 (4 bytes)",
            "field `tmap_b` of params `GemmParams` is declared at offset 16 (8 bytes), but the compiler placed it "
            "at offset 24 (8 bytes)",
            "the compiled struct `GemmParams` of `gemm.mainloop` has field `split_k` (offset 12, 4 bytes) that the "
            "contract does not declare",
        ]
    )
    assert all("build/gemm.kpkg" in d.notes[0] for d in diags)


def test_old_toolkit_gets_the_legacy_parameter_limit() -> None:
    text = _PARAMS.replace("size 24 align 8", "size 4104 align 8")
    source = parse_text(text, "gemm.kc")
    fields = (("tmap_a", 0, 8), ("k_tiles", 8, 4), ("tile_n", 12, 4), ("tmap_b", 16, 8))
    captured = Captured(
        frozenset(), frozenset(), (CapturedParams("GemmParams", 4104, 8, fields),), toolkit="nvcc 12.0", target="sm_90a"
    )
    entry = StageEntry(source.stages[0], "gemm.kc", None, "build/gemm.kpkg", captured)
    comp = resolve(implicit_pipeline(source.stages, "gemm", Span("gemm.kc", 1, 1, 1, 1)), "gemm.kc", [entry])
    (diag,) = _params_findings(run_clauses(comp, [ParamsClause]))
    assert "4096-byte kernel parameter limit" in diag.message


def test_every_contract_scalar_type_has_a_sourced_size() -> None:
    assert set(SCALAR_SIZES) == set(A.SCALAR_TYPES)
    assert [scalar_size(t) for t in ("bool", "bf16", "f32", "ptr")] == [1, 2, 4, 8]
    assert scalar_align("u64") == 8 and scalar_size("void") is None
