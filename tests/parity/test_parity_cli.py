"""`kernlink parity` on the CPU: the control, `.text` identity, folded handles, and what is not proved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernlink.cli import main
from kernlink.cmd_parity import parity
from linker.sass import find_disassembler
from packing.pack import pack
from tests.link.tensor_cases import CASES, build_case

pytestmark = pytest.mark.toolchain


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("name", ["hello", "ring", "moe4", "gemm_swiglu"])
def test_the_examples_are_proved_identical_and_folded(
    name: str, compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / name
    assert main(["parity", str(compositions[name]), "-o", str(out), "--format", "json"]) == 0
    said = _json(capsys)
    report = said["report"]
    assert isinstance(report, dict)
    assert said["proved"] is True and report["verdict"] == "identical" and report["folded"] is True
    [text] = report["text"]
    assert text["function"] == "kl_dispatch" and text["identical"] and text["linked_bytes"] == text["control_bytes"] > 0
    assert text["linked_sha256"] == text["control_sha256"]
    assert all(r["equal"] for r in report["resources"]) and report["calls"] == []
    assert report["front_end"]["control"].startswith("nvrtc ")
    for product in ("control.cu", "control.cubin", "control.ptx", "kernel.cubin", "kernel.ptx", "parity.json"):
        assert (out / product).is_file(), product
    assert json.loads((out / "parity.json").read_text()) == said
    if find_disassembler() is not None:
        assert (
            report["sass"]["identical"] is True
            and (out / "linked.sass").read_text() == (out / "control.sass").read_text()
        )
        assert not (out / "sass.diff").exists()


def test_the_text_report_is_a_table_with_a_verdict(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", str(compositions["ring"]), "-o", str(tmp_path), "--color", "never", "--no-sass"]) == 0
    said = capsys.readouterr().out
    assert ".text per function" in said and "resources of the kernel" in said and "registers" in said
    assert "SASS: not compared" in said and "front end: packages ring.loader: nvrtc" in said
    assert said.rstrip().endswith("every handle folded)") and "\x1b[" not in said


def test_an_unfoldable_handle_is_reported_and_fails(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", str(compositions["unfoldable"]), "-o", str(tmp_path), "--format", "json"]) == 1
    report = _json(capsys)["report"]
    assert isinstance(report, dict)
    assert report["folded"] is False and report["proved"] is False
    assert report["verdict"] == "identical"  # the one unit keeps the same call: nothing hidden, nothing extra
    linked_ptx = [c for c in report["calls"] if c["build"] == "linked" and c["where"] == "ptx"]
    assert [(c["op"], c["target"], c["kind"]) for c in linked_ptx] == [("call", "hello_scale", "unfolded")]
    assert "serving call `scale` through `kl_call_scale`" in linked_ptx[0]["seam"]
    if find_disassembler() is not None:
        sass_calls = [c for c in report["calls"] if c["build"] == "linked" and c["where"] == "sass"]
        assert [(c["op"], c["target"]) for c in sass_calls] == [("CALL", "hello_scale")]
    assert main(["parity", str(compositions["unfoldable"]), "-o", str(tmp_path), "--color", "never"]) == 1
    said = capsys.readouterr().out
    assert "UNFOLDED: export of `hello.provider`" in said and "not proved: seams not folded: `hello_scale`" in said


def test_a_link_that_differs_from_one_unit_fails(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provider's code depends on its file name (`sizeof(__FILE__)`): the one unit is not the link."""
    assert main(["parity", str(compositions["file_dependent"]), "-o", str(tmp_path), "--format", "json"]) == 1
    report = _json(capsys)["report"]
    assert isinstance(report, dict)
    assert report["verdict"] == "differs" and report["notes"] == [] and report["folded"] is True
    assert not report["text"][0]["identical"]
    if find_disassembler() is not None:
        assert report["sass"]["identical"] is False and (tmp_path / "sass.diff").read_text().startswith("---")


def test_a_binary_only_package_is_a_diagnostic(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", str(compositions["binary_only"]), "-o", str(tmp_path), "--color", "never"]) == 1
    said = capsys.readouterr().out
    assert "error[E-PARITY]: stage `hello.caller` has no source" in said and "Traceback" not in said
    assert (tmp_path / "kernel.cubin").is_file() and not (tmp_path / "control.cubin").exists()


def test_a_rejected_composition_stops_before_the_control(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contracts = [str(compositions["hello"].parent / f"{n}.kc") for n in ("provider", "caller")]
    assert main(["parity", *contracts, "-o", str(tmp_path), "--color", "never"]) == 1
    assert "error[L-STAGE]" in capsys.readouterr().out and not (tmp_path / "control.cu").exists()


def test_bad_timing_arguments_are_a_usage_error(
    compositions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", str(compositions["hello"]), "-o", str(tmp_path), "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
def test_nvcc_packages_get_an_nvcc_control_and_another_front_end_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ring"
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "specs" / "examples" / "ring",
        folder,
        ignore=shutil.ignore_patterns("build"),
    )
    for component in ("loader", "reduce"):
        pack(
            folder / f"{component}.cu",
            folder / f"{component}.kc",
            folder / "build" / f"{component}.kpkg",
            compiler="nvcc",
        )
    assert main(["parity", str(folder / "ring.kp"), "-o", str(tmp_path / "same"), "--format", "json"]) == 0
    report = _json(capsys)["report"]
    assert isinstance(report, dict)
    assert report["verdict"] == "identical" and report["front_end"]["control"].startswith("nvcc ")
    assert (
        main(
            [
                "parity",
                str(folder / "ring.kp"),
                "-o",
                str(tmp_path / "nvrtc"),
                "--front-end",
                "nvrtc",
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = _json(capsys)["report"]
    assert isinstance(report, dict)
    assert report["verdict"] == "explained" and "as asked (`--front-end`)" in report["notes"][0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_tensor_routes_are_proved_identical(case: str, tmp_path: Path) -> None:
    """The generated transfers (register copy, shuffle, staging) fold into the one-unit build's code too."""
    run = parity([build_case(CASES[case], tmp_path / "src")], tmp_path / "out", disassemble=False)
    assert run.report is not None and not run.diagnostics, [d.message for d in run.diagnostics]
    assert run.report.verdict == "identical" and run.report.folded
    assert run.report.text[0].linked_sha256 == run.report.text[0].control_sha256
