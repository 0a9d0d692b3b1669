"""Cases of the target, feature and role clauses that the fixture folders cannot express:
`--target` re-checks, captured package facts, and references inside rings and tensors."""

from __future__ import annotations

from checker.engine import run_clauses
from checker.resolve import resolve
from contract_lang.parser import parse_text
from diagnostics.span import Span
from kernlink.api import check_text
from package.captured import Captured
from package.loader import StageEntry, implicit_pipeline

MIXED = """
stage "gemm.load" version "1.0.0" {
    target sm_90a
    role producer entry gemm_producer_main warps 4 warpgroup
}
stage "gemm.mma" version "1.0.0" {
    target sm_100a
    role mma entry gemm_mma_main warps 8 warpgroup
}
"""


def _codes(text: str, target: str | None = None) -> list[str]:
    return sorted(d.code for d in check_text(text, "t.kc", target=target).diagnostics if d.is_error)


def _packaged(toolkits: dict[str, str], built: dict[str, str], target: str | None = None) -> list[str]:
    source = parse_text(MIXED.replace("sm_100a", "sm_90a"), "p.kc")
    entries = [
        StageEntry(
            s,
            f"{s.name}.kpkg!contract.kc",
            None,
            package=f"{s.name}.kpkg",
            captured=Captured(frozenset(), frozenset(), toolkit=toolkits[s.name], target=built[s.name]),
        )
        for s in source.stages
    ]
    pipeline = implicit_pipeline(source.stages, "p", Span("p.kc", 1, 1, 1, 1))
    comp = resolve(pipeline, "p.kc", entries, target)
    return [d.message for d in run_clauses(comp) if d.code == "L-TARGET"]


def test_override_retargets_contract_lines() -> None:
    assert _codes(MIXED) == ["L-TARGET"]
    assert "L-TARGET" not in _codes(MIXED, target="sm_120a")


def test_unknown_override_is_reported_on_the_pipeline() -> None:
    result = check_text(MIXED, "t.kc", target="sm_91a")
    found = [d for d in result.diagnostics if d.code == "L-TARGET"]
    assert len(found) == 1
    assert found[0].message == "unknown target `sm_91a`"
    assert found[0].labels[0].span.file == "t.kc"
    assert any("sm_90a" in h for h in found[0].helps)


def test_toolkit_major_versions_must_agree() -> None:
    same = {"gemm.load": "nvrtc 13.0", "gemm.mma": "nvcc 13.1"}
    differ = {"gemm.load": "nvrtc 13.0", "gemm.mma": "nvcc 12.8"}
    built = {"gemm.load": "sm_90a", "gemm.mma": "sm_90a"}
    assert _packaged(same, built) == []
    assert _packaged(differ, built) == [
        "package `gemm.mma.kpkg` was compiled with `nvcc 12.8`, but `gemm.load.kpkg` with `nvrtc 13.0`"
    ]


def test_packages_are_not_retargeted_by_an_override() -> None:
    toolkits = {"gemm.load": "nvrtc 13.0", "gemm.mma": "nvrtc 13.0"}
    built = {"gemm.load": "sm_90a", "gemm.mma": "sm_100a"}
    assert _packaged(toolkits, built) == [
        "package `gemm.mma.kpkg` holds LTO IR for `sm_100a`, but the pipeline targets `sm_90a`"
    ]
    assert len(_packaged(toolkits, {k: "sm_90a" for k in built}, target="sm_120a")) == 2


def test_feature_follows_the_override() -> None:
    mainloop = """
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    requires feature tma, wgmma
    role mma entry gemm_mma_main warps 8 regs 232 warpgroup
}
"""
    assert _codes(mainloop) == []
    assert _codes(mainloop, target="sm_120a") == ["L-FEATURE"]
    assert _codes(mainloop, target="sm_90") == ["L-FEATURE", "L-FEATURE"]  # wgmma and setmaxnreg


def test_role_references_in_rings_and_tensors() -> None:
    text = """
stage "s" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    role mma entry mma_main warps 4 warpgroup
    ring kv produce by load {
        empty init per_warp(mmma)
        init by load fenced
    }
    ring kv consume by mma {
        empty arrive per_warp(mma)
    }
    export tensor acc from role mm {
        elem f32
        tile m 64 n 64
    }
}
"""
    found = [d for d in check_text(text, "t.kc").diagnostics if d.code == "L-ROLE"]
    assert [d.message for d in found] == [
        "ring `kv` names role `mmma`, which no stage declares",
        "tensor export `acc` names role `mm`, which no stage declares",
    ]
    assert all("did you mean `mma`?" in d.helps for d in found)


def test_warpgroup_alignment_from_library_maps() -> None:
    text = """
stage "s" version "1.0.0" {
    target sm_100a
    role mma entry mma_main warps 4
    role epilogue entry epi_main warps 4 warpgroup
    claim tmem acc columns 256 read by mma lanes 0..127
    export tensor out from role mma {
        elem f32
        tile m 128 n 128
        placement library tcgen05_m128nNk16_f32(n: 128)
    }
}
"""
    found = [d for d in check_text(text, "t.kc").diagnostics if d.code == "L-WARPGROUP"]
    assert len(found) == 1
    assert found[0].message.startswith("role `mma` runs `tcgen05.mma`, which acts")
