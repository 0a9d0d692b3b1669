"""`kernlink pack --strict` over every example component: a `.kc` under specs/examples/ with its source.

Strict packing turns every conformance finding and every undecided site into an error, so a
component that packs has no note at all. The components listed in ``UNDECIDED`` do not pack
strictly yet; each entry names its cause (the test fails when one of them starts to pass, so
the list shrinks as the analysis learns). The fast tier checks the campaign's components
(``test_cases.test_examples_conform_under_strict``); this is the slow tier's whole sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from diagnostics.model import DiagnosticError
from packing.pack import pack

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
UNDECIDED: dict[str, str] = {}


def _components() -> list[Any]:
    found = []
    for contract in sorted(EXAMPLES.rglob("*.kc")):
        source = next((contract.with_suffix(s) for s in (".cu", ".py") if contract.with_suffix(s).exists()), None)
        if source is None:
            continue  # a contract-only stage (cp/, the ping-pong variants, sm100/epilogue.kc packs ../epilogue.cu)
        name = contract.relative_to(EXAMPLES).with_suffix("").as_posix()
        marks = (
            [pytest.mark.xfail(strict=True, raises=DiagnosticError, reason=UNDECIDED[name])]
            if name in UNDECIDED
            else []
        )
        found.append(pytest.param(name, source, contract, marks=marks, id=name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("name", "source", "contract"), _components())
def test_every_example_component_packs_strictly(name: str, source: Path, contract: Path, tmp_path: Path) -> None:
    compiler: Literal["nvcc", "nvrtc"] = "nvcc" if name.startswith("attention/") else "nvrtc"  # as the family builds
    packed = pack(source, contract, tmp_path / "out.kpkg", compiler=compiler, strict=True)
    assert (tmp_path / "out.kpkg").exists() and packed is not None


def test_the_sweep_finds_the_campaign_components() -> None:
    names = {p.values[0] for p in _components()}
    assert {"gemm_swiglu/mainloop", "gemm_swiglu/mma_sync", "ring/loader", "moe4/act", "hello/caller"} <= names
    assert "attention/load_paged" in names  # a box sized by a field with stated values (`page_size … in {…}`)
    assert set(UNDECIDED) <= names
