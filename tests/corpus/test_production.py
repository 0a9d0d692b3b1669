"""Issue 27 item 4: the kernels people ship are accepted; their broken twins are rejected by the right clause.

``production/<pattern>/pass/`` holds a pipeline (``.kp``) and the contracts beside it, written
from the public description of a production kernel (CUTLASS stream-K, serial split-K, FA3 and
CUTLASS ping-pong, DeepGEMM's 2-CTA multicast load, a persistent cooperative GEMM with an
epilogue-load ring, a ring-fed export to another owner's epilogue, a dynamic tile scheduler);
``production/<pattern>/broken/`` the same with one realistic mistake, its ``EXPECTED`` file
naming the one clause that must reject it and ``broken.stderr`` its rendering. The persistent
GEMM + SwiGLU's contracts (``specs/examples/gemm_swiglu/persistent/``) are controls too.
Every one of them was rejected, or could not be written, before the issue.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diagnostics.render_text import render_text
from kernlink.api import check
from tests.snapshots import assert_text_snapshot

ROOT = Path(__file__).parent / "production"
PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
PATTERNS = sorted(p.name for p in ROOT.iterdir() if p.is_dir())


def _pipeline(folder: Path) -> Path:
    (kp,) = folder.glob("*.kp")
    return kp


def _check(kp: Path) -> tuple[list[str], str]:
    old = Path.cwd()
    os.chdir(kp.parent)
    try:
        result = check([kp.name])
        text = render_text(result.diagnostics, result.sources, color=False)
    finally:
        os.chdir(old)
    return sorted({d.code for d in result.diagnostics if d.is_error}), text


def test_every_pattern_has_both_twins() -> None:
    assert len(PATTERNS) >= 8
    for name in PATTERNS:
        assert _pipeline(ROOT / name / "pass").exists()
        assert (ROOT / name / "broken" / "EXPECTED").read_text().strip().startswith("L-")


@pytest.mark.parametrize("name", PATTERNS)
def test_the_production_pattern_is_accepted(name: str) -> None:
    codes, text = _check(_pipeline(ROOT / name / "pass"))
    assert codes == [], text


@pytest.mark.parametrize("name", PATTERNS)
def test_its_broken_twin_is_rejected_by_the_right_clause(name: str) -> None:
    folder = ROOT / name / "broken"
    codes, text = _check(_pipeline(folder))
    assert codes == [(folder / "EXPECTED").read_text().strip()], text
    assert_text_snapshot(folder / "broken.stderr", text)


@pytest.mark.parametrize("kp", sorted(PERSISTENT.glob("*.kp")), ids=lambda p: p.name)
def test_the_persistent_gemm_swiglu_contracts_are_accepted(kp: Path) -> None:
    codes, text = _check(kp)
    assert codes == [], text
