"""bench/gpu/code_mutants.py rebuilds a PTX mutant from one CUDA line: the edit it makes for each form."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MOE4 = ROOT / "specs" / "examples" / "moe4"


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_code_mutants", ROOT / "bench" / "gpu" / "code_mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()


def _edit(file: str, helper_line: int, site: int, kind: str, opcode: str) -> Any:
    lines = (MOE4 / file).read_text().split("\n")
    mutant = {"kind": kind, "opcode": opcode, "mutant": f"PTX line 1 (CUDA {file}:{site}): {kind}"}
    return lines, RUNNER._one_line(lines, [file, helper_line], mutant)


def _helper_asm_line(file: str, opcode: str) -> int:
    lines = (MOE4 / file).read_text().split("\n")
    return next(i for i, line in enumerate(lines, 1) if "asm" in line and f'"{opcode} ' in line)


def _call_line(file: str, text: str) -> int:
    lines = (MOE4 / file).read_text().split("\n")
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(text))


def test_a_helper_called_twice_is_edited_at_the_one_call_its_ptx_line_came_from() -> None:
    helper = _helper_asm_line("gemm.cu", "bar.sync")
    site = _call_line("gemm.cu", "bar_sync(kl_moe_gemm_expert_sync_bar_id()")
    lines, edit = _edit("gemm.cu", helper, site, "delete", "bar.sync")
    assert edit is not None and edit[0] == site and "bar_sync" not in edit[1].split("//")[0]
    _, twice = _edit("gemm.cu", helper, site, "duplicate", "bar.sync")
    code, _, comment = twice[1].partition("//")
    assert code.count("bar_sync(") == 2 and comment.strip() == lines[site - 1].partition("//")[2].strip()


def test_an_intrinsic_statement_is_its_own_line_and_a_call_of_another_function_is_not_the_instruction() -> None:
    fence = _call_line("comm.cu", "__threadfence();")
    _, edit = _edit("comm.cu", fence, fence, "drop-fence", "membar.gl")
    assert edit is not None and edit[0] == fence and "__threadfence" not in edit[1].split("//")[0]
    # the fence's PTX line inlined at `dispatch(...)`: deleting that call would delete the whole phase
    dispatch = _call_line("comm.cu", "dispatch(params, smem, tid);")
    _, edit = _edit("comm.cu", fence, dispatch, "drop-fence", "membar.gl")
    assert edit is not None and edit[0] == fence
    # a reorder has no one-line form
    _, edit = _edit("comm.cu", fence, fence, "reorder", "membar.gl")
    assert edit is None
