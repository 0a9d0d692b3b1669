"""`kernlink link` and `kernlink run` from the command line: exit codes, outputs, diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernlink.cli import main
from runtime.launch import gpu_available

pytestmark = pytest.mark.toolchain


def test_link_writes_its_outputs_and_says_where(
    pipelines: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["link", str(pipelines["hello"]), "-o", str(tmp_path / "out"), "--color", "never"]) == 0
    said = capsys.readouterr().out
    assert "linked `hello` for sm_90a" in said and "link.map" in said
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "kernel.cubin",
        "kernel.ptx",
        "generated.cu",
        "link.map",
        "link.json",
        "kernel.h",
    }  # kernel.ptx: what audit reads


def test_a_failed_link_exits_1_with_diagnostics_and_a_map(
    pipelines: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contracts = [str(pipelines["hello"].parent / f"{name}.kc") for name in ("provider", "caller")]
    assert main(["link", *contracts, "-o", str(tmp_path / "out"), "--color", "never"]) == 1
    said = capsys.readouterr().out
    assert "error[L-STAGE]" in said and "Traceback" not in said
    assert json.loads((tmp_path / "out" / "link.json").read_text())["status"] == "failed"


@pytest.mark.skipif(gpu_available(), reason="checks the error path on a machine without a GPU")
def test_run_without_a_gpu_is_a_diagnostic(
    pipelines: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["link", str(pipelines["hello"]), "-o", str(tmp_path / "out")]) == 0
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"grid": 1, "values": {"n": 4}, "buffers": {"data": {"bytes": 64}}}))
    capsys.readouterr()
    assert main(["run", str(tmp_path / "out"), "--args", str(args), "--color", "never"]) == 1
    assert "error[E-CUDA]" in capsys.readouterr().out


def test_run_of_a_failed_link_is_e_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "link.json").write_text(json.dumps({"status": "failed"}))
    (tmp_path / "kernel.cubin").write_bytes(b"")
    args = tmp_path / "args.json"
    args.write_text("{}")
    assert main(["run", str(tmp_path), "--args", str(args), "--color", "never"]) == 1
    assert "error[E-RUN]: the link in" in capsys.readouterr().out
