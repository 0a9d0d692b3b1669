"""Conformance compares the code's constants with a size's value decided from facts (issue 27).

The swap-AB producer writes its slot's sizes from its fact ``x_rows`` (16KiB + x_rows * 128).
Its code conforms; the contract edited to another ``x_rows`` while the code is still built for
32 (its generated header unchanged) is rejected with the expression's value, and the same one
edit with the header regenerated (``kernlink header``) conforms again: ``x_rows`` is one edit.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from diagnostics.model import Diagnostic
from kernlink.cli import main
from packing.pack import build, conformance_findings

PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
OWNED = "owns fact x_rows: u32 = 32"


def _producer(tmp_path: Path, x_rows: int, *, header: bool) -> list[Diagnostic]:
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    contract = folder / "producer_swapab.kc"
    text = contract.read_text()
    assert text.count(OWNED) == 1
    contract.write_text(text.replace(OWNED, f"owns fact x_rows: u32 = {x_rows}"))
    if header:
        assert main(["header", str(contract), "-o", str(folder / "kl_gemm_producer_swapab.h")]) == 0
    built = build(folder / "producer_swapab.cu", contract)
    return conformance_findings(built, tmp_path / "producer_swapab.kpkg", strict=True)


def test_the_swapab_producer_conforms(tmp_path: Path) -> None:
    assert _producer(tmp_path, 32, header=False) == []


def test_code_built_for_another_value_is_rejected_with_the_expression_value(tmp_path: Path) -> None:
    found = _producer(tmp_path, 16, header=False)
    assert sorted(dict(d.data)["check"] for d in found) == ["copy-bytes", "expect-tx"]
    assert all(d.code == "L-CONFORM" for d in found)
    # 16KiB + 16 * 128 = 18432 stated; the code, built for 32, moves 20480
    assert all("20480" in d.message and "18432" in d.message for d in found), [d.message for d in found]


def test_one_edit_and_its_header_conform(tmp_path: Path) -> None:
    assert _producer(tmp_path, 16, header=True) == []
