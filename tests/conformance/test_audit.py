"""The link audit (issue 16 item 2): the constants in the linked code are the link map's.

`kernlink link` audits every link (so every link output of the suite is audited);
`kernlink audit DIR` re-runs it, passes on an intact output and fails on a tampered
map, PTX or cubin with both values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernlink.api import link
from kernlink.cli import main
from tests.link.examples import build_example


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("audit")
    found = {}
    for name in ("hello", "ring"):
        result = link([build_example(name, root / "src")], root / name)
        assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
        found[name] = root / name
    return found


def _copy(outputs: dict[str, Path], name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(outputs[name], dest)
    return dest


def _edit_map(out: Path, edit: Any) -> None:
    data = json.loads((out / "link.json").read_text())
    edit(data)
    (out / "link.json").write_text(json.dumps(data))


def _audit(out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["audit", str(out), "--color", "never", *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("name", ["hello", "ring"])
def test_audit_passes_on_link_outputs(outputs: dict[str, Path], name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _audit(outputs[name], capsys)
    assert code == 0, text
    assert "agree with the map" in text and "register budgets" in text


def test_link_writes_the_ptx_the_audit_reads(outputs: dict[str, Path]) -> None:
    assert (outputs["ring"] / "kernel.ptx").read_text().count("setmaxnreg") == 2  # dec 40; inc 232 (warps 4..11)


def test_a_map_with_another_ring_depth_fails(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "ring", tmp_path)

    def shallower(data: dict[str, Any]) -> None:
        for h in data["generated"]["handles"]:
            if h["kind"] == "ring_depth":
                h["value"] = 5

    _edit_map(out, shallower)
    code, text = _audit(out, capsys)
    assert code == 1
    assert "error[L-LINK]: the linked code initialises an mbarrier at offset 196648" in text
    assert "the code runs at least depth 6, the map's depth is 5" in text


def test_a_map_with_another_register_budget_fails_with_both_values(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "ring", tmp_path)

    def budget(data: dict[str, Any]) -> None:
        data["dispatch"]["groups"][1]["budget"] = 224

    _edit_map(out, budget)
    code, text = _audit(out, capsys)
    assert code == 1
    assert "the linked code runs `setmaxnreg.inc 232`; the map's budgets are dec 40, inc 224" in text


def test_a_map_with_another_arrival_count_fails(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "ring", tmp_path)

    def count(data: dict[str, Any]) -> None:
        for h in data["generated"]["handles"]:
            if h["kind"] == "ring_empty_count":
                h["value"] = 4

    _edit_map(out, count)
    code, text = _audit(out, capsys)
    assert code == 1 and "with 8 arrivals; the map says 4" in text


def test_a_tampered_cubin_fails(outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(outputs, "hello", tmp_path)
    data = bytearray((out / "kernel.cubin").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (out / "kernel.cubin").write_bytes(bytes(data))
    code, text = _audit(out, capsys)
    assert code == 1 and "`kernel.cubin` has SHA-256" in text and "the map records" in text


def test_an_unassigned_barrier_id_in_the_code_fails(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "ring", tmp_path)
    ptx = (out / "kernel.ptx").read_text()
    (out / "kernel.ptx").write_text(ptx.replace("\tbar.sync \t0;", "\tbar.sync \t5, 64;", 1))
    code, text = _audit(out, capsys)
    assert code == 1 and "syncs on named barrier 5; the map assigns 0" in text


def test_an_unprovable_site_is_a_note_and_strict_makes_it_an_error(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "ring", tmp_path)
    ptx = (out / "kernel.ptx").read_text()
    (out / "kernel.ptx").write_text(ptx.replace("\tbar.sync \t0;", "\tbar.sync \t%r1;", 1))
    code, text = _audit(out, capsys)
    assert code == 0 and "note[I-AUDIT]" in text
    code, text = _audit(out, capsys, "--strict")
    assert code == 1 and "error[L-LINK]" in text


def test_a_directory_without_the_ptx_is_an_io_error(
    outputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(outputs, "hello", tmp_path)
    (out / "kernel.ptx").unlink()
    code, text = _audit(out, capsys)
    assert code == 2 and "kernel.ptx" in text


def test_link_fails_when_the_linked_code_disagrees_with_the_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import linker.link as link_module

    real = link_module._link_ptx

    def skewed(*args: Any, **kwargs: Any) -> str:
        return str(real(*args, **kwargs)).replace(
            "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.dec.sync.aligned.u32 48;"
        )

    monkeypatch.setattr(link_module, "_link_ptx", skewed)
    result = link([build_example("ring", tmp_path / "src")], tmp_path / "out")
    assert not result.ok
    errors = [d for d in result.diagnostics if d.is_error]
    assert errors and all(d.code == "L-LINK" for d in errors)
    assert any("`setmaxnreg.dec 48`; the map's budgets are dec 40" in d.message for d in errors)
    assert not (tmp_path / "out" / "kernel.cubin").exists()
