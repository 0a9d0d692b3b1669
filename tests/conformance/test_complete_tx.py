"""`mbarrier.complete_tx`: transaction bytes a thread completes without a copy count with the copies.

A producer whose tensor-map box is clipped (the gemm mainloop at M < 128) completes the
bytes its copy leaves out itself, so the phase still completes on the ring's declared
bytes. The code facts record each `complete_tx` (fact `complete-tx`); the `copy-bytes`
check adds its bytes to the bulk copies of the same barrier, and a count the analysis
cannot trace is a note, never a pass. Cases: ``cases/complete-tx/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from checker.conformance import derive
from diagnostics.model import Diagnostic, Severity
from packing.pack import build, conformance_findings

CASE = Path(__file__).parent / "cases" / "complete-tx"
#: The producer's credit in ``pass.cu`` (one 16 KiB copy and 16 KiB completed: the contract's 32 KiB)
CREDIT = '"r"(16384u) : "memory");'
#: The other variants change that credit alone: 4 KiB (20 KiB per fill: the phase waits for bytes
#: that never come), or a count read from the params at run time (the analysis cannot tell).
VARIANTS = {"fail": '"r"(4096u) : "memory");', "undecided": '"r"(static_cast<const unsigned*>(params)[2]) : "memory");'}


def _findings(variant: str, tmp_path: Path) -> list[Diagnostic]:
    folder = tmp_path / "complete-tx"
    shutil.copytree(CASE, folder)
    source = (folder / "pass.cu").read_text()
    assert source.count(CREDIT) == 1
    (folder / f"{variant}.cu").write_text(source.replace(CREDIT, VARIANTS.get(variant, CREDIT)))
    built = build(folder / f"{variant}.cu", folder / "stage.kc")
    return conformance_findings(built, tmp_path / "out.kpkg")


def test_the_ptx_fact_records_barrier_and_bytes() -> None:
    ptx = """
.visible .func f(.param .b64 f_param_0, .param .b64 f_param_1)
{
	.reg .b32 %r<3>;
	mov.u32 %r1, 64;
	mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r1], 4096;
	ret;
}
"""
    (fact,) = [f for f in derive(ptx).facts if f.kind == "complete-tx"]
    assert fact.opcode.startswith("mbarrier.complete_tx")
    nbytes = fact.operand("bytes")
    assert nbytes is not None and (nbytes.kind, nbytes.value) == ("constant", 4096)
    assert fact.operand("addr") is not None


def test_a_copy_and_a_credit_that_make_the_declared_bytes_conform(tmp_path: Path) -> None:
    assert _findings("pass", tmp_path) == []


def test_a_credit_that_falls_short_is_a_copy_bytes_violation(tmp_path: Path) -> None:
    (diag,) = _findings("fail", tmp_path)
    assert diag.code == "L-CONFORM" and dict(diag.data)["check"] == "copy-bytes"
    assert "completes 20480 bytes per fill of ring `kv` (4096 of them by `mbarrier.complete_tx`)" in diag.message
    assert "the contract declares 32768 bytes" in diag.message


def test_a_run_time_credit_is_a_note_not_a_pass(tmp_path: Path) -> None:
    (note,) = _findings("undecided", tmp_path)
    assert note.code == "I-CONFORM" and note.severity is Severity.NOTE
    assert dict(note.data)["check"] == "copy-bytes"
    # the credit is a params field, so the fill's sum is that field plus 16 KiB: no constant
    assert "completed bytes" in note.message and "an expression of params `credit`" in note.message
