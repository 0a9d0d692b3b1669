"""An mbarrier in a stage's own claim whose contract states no `signal`: its protocol is undecided, never a pass."""

from __future__ import annotations

import shutil
from pathlib import Path

from diagnostics.model import Severity
from packing.pack import build, conformance_findings

EXAMPLE = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "sm100"
SIGNAL = " signal by mma init 1 arrive commit wait parity 0"


def _findings(tmp_path: Path, signal: str, *, strict: bool) -> list[tuple[str, Severity, str]]:
    folder = tmp_path / "sm100"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    contract = folder / "tcgen05.kc"
    text = contract.read_text()
    assert text.count(SIGNAL) == 1
    contract.write_text(text.replace(SIGNAL, signal))
    found = conformance_findings(build(folder / "tcgen05.cu", contract), tmp_path / "x.kpkg", strict=strict)
    return [(d.code, d.severity, d.message) for d in found]


def test_a_claimed_mbarrier_without_a_signal_is_one_undecided_note(tmp_path: Path) -> None:
    ((code, severity, message),) = _findings(tmp_path, "", strict=False)
    assert (code, severity) == ("I-CONFORM", Severity.NOTE)
    assert "states no `signal`" in message and "gemm_tcgen05_mma_main" in message


def test_strict_rejects_it_and_accepts_the_stated_signal(tmp_path: Path) -> None:
    ((code, severity, _),) = _findings(tmp_path / "bare", "", strict=True)
    assert (code, severity) == ("L-CONFORM", Severity.ERROR)
    assert _findings(tmp_path / "stated", SIGNAL, strict=True) == []
