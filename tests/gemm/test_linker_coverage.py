"""Linker coverage the gemm_swiglu compositions need, each with a failing fixture and a passing twin.

- facts fold: a fact its owner fixes reaches a stage that reads `kl_<stage>_fact_<name>()`
  as a constant LTO folds (and the map says so); a fact owned as a range has no constant,
  and the link says so (L-LINK);
- an export placed in shared memory is read from the producer's claim of the export's
  name; without that claim, or with one too small for the map, the link says so (L-LINK).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from analysis.downstream import verify_downstream
from analysis.plan import Plan
from diagnostics.model import DiagnosticError
from kernlink.api import check_text, link
from linker.artifacts import Generated
from linker.generate import generate
from package.captured import Captured
from tests.gemm.compositions import build


def _errors(result: object) -> set[str]:
    return {d.code for d in result.diagnostics if d.is_error}  # type: ignore[attr-defined]


@pytest.mark.toolchain
def test_a_fixed_fact_folds_into_every_stage_that_reads_its_handle(tmp_path: Path) -> None:
    folder = build(tmp_path / "src", components=("mainloop", "epilogue"))
    result = link([folder / "gemm_swiglu.kp"], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    folded = {(h.stage, h.item): h.value for h in result.output.generated.handles if h.kind == "fact"}
    assert folded == {
        ("gemm.mainloop", "raster_m"): 8,
        ("swiglu.epilogue", "raster_m"): 8,
        ("swiglu.epilogue", "tile_n"): 128,
    }
    source = result.output.generated.source
    assert "__device__ unsigned kl_swiglu_epilogue_fact_tile_n() { return 128u; }" in source
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert "fact" not in ptx  # every read folded away
    assert re.search(r"min\.u32\s+%r\d+, %r\d+, 8;", ptx)  # the raster's group size is an immediate
    text = (tmp_path / "out" / "link.map").read_text()
    assert "folded: `swiglu.epilogue` reads it through `kl_swiglu_epilogue_fact_tile_n`" in text


_FACT_STAGE = """stage "demo.fact" version "1.0.0" {
    target sm_90a
    role main entry demo_main warps 1
    launch fixed threads 32
    owns fact tile: u32 OWNED
}
"""


def _generate_fact(owned: str) -> Generated:
    result = check_text(_FACT_STAGE.replace("OWNED", owned), "demo.kc")
    assert result.accepted and result.composition is not None, [d.message for d in result.diagnostics]
    captured = Captured(frozenset(), frozenset({"kl_demo_fact_fact_tile"}))
    comp = dataclasses.replace(
        result.composition, stages=tuple(dataclasses.replace(s, captured=captured) for s in result.composition.stages)
    )
    placed = verify_downstream(comp).placed
    assert placed is not None
    return generate(Plan(comp, placed))


def test_a_fact_its_owner_fixes_is_a_handle_returning_the_value() -> None:
    generated = _generate_fact("= 96")
    [handle] = generated.handles
    assert (handle.symbol, handle.kind, handle.value) == ("kl_demo_fact_fact_tile", "fact", 96)
    assert "__device__ unsigned kl_demo_fact_fact_tile() { return 96u; }" in generated.source


def test_a_fact_owned_as_a_range_has_no_constant_to_fold() -> None:
    with pytest.raises(DiagnosticError) as err:
        _generate_fact("in 64..128")
    [diag] = err.value.diagnostics
    assert diag.code == "L-LINK"
    assert diag.message == (
        "handle `kl_demo_fact_fact_tile` of `demo.fact` reads fact `tile`, which has no fixed value to fold"
    )


@pytest.mark.toolchain
def test_an_export_placed_in_shared_memory_needs_the_claim_of_its_name(tmp_path: Path) -> None:
    renamed = {
        "claim smem accumulator bytes 66KiB align 16 lifetime until acc.done": (
            "claim smem tile bytes 67584 align 16 lifetime until acc.done handle kl_gemm_smem_acc_accumulator_smem"
        )
    }
    folder = build(tmp_path / "src", {"smem_acc.kc": renamed}, components=("smem_acc", "epilogue"))
    result = link([folder / "gemm_swiglu_smem_acc.kp"], tmp_path / "out")
    assert _errors(result) == {"L-LINK"}
    assert any("claims no shared memory named `accumulator`" in d.message for d in result.diagnostics)


@pytest.mark.toolchain
def test_an_export_placed_in_shared_memory_must_fit_its_claim(tmp_path: Path) -> None:
    folder = build(
        tmp_path / "src",
        {"smem_acc.kc": {"claim smem accumulator bytes 66KiB": "claim smem accumulator bytes 65536"}},
        components=("smem_acc", "epilogue"),
    )
    result = link([folder / "gemm_swiglu_smem_acc.kp"], tmp_path / "out")
    assert _errors(result) == {"L-LINK"}
    assert any(
        "places elements up to byte 67568 of its claim, which holds 65536 B" in d.message for d in result.diagnostics
    )


@pytest.mark.toolchain
def test_the_shared_memory_placement_links_when_its_claim_holds_it(tmp_path: Path) -> None:
    folder = build(tmp_path / "src", components=("smem_acc", "epilogue"))
    result = link([folder / "gemm_swiglu_smem_acc.kp"], tmp_path / "out")
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
