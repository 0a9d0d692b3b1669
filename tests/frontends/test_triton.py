"""A Triton kernel as a component: its PTX wrapped as a role entry, packed, linked and proved link-free on the CPU.

These tests pack from the lowering record beside the stage (Triton's driver printed it); the one
that compiles again runs only where ``KERNLINK_TRITON_PYTHON`` names a Python with Triton.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from contract_lang import ast as A
from diagnostics import DiagnosticError
from kernlink.cli import main
from packing.frontends import triton
from packing.pack import choose_stage, pack
from tests.link.examples import EXAMPLES

FOLDER = EXAMPLES / "triton"
STAGE = FOLDER / "act"


def _record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((STAGE / "silu_mul.triton.json").read_text())
    return data


def _header() -> A.Stage:
    return choose_stage(STAGE / "silu_mul.kc", None)


def test_the_role_and_params_come_from_what_triton_compiled() -> None:
    derived = triton.derived_stage(_record(), _header())
    role = derived.roles[0]
    assert (role.name, role.entry, role.warps) == ("act", "act_triton_act_main", 4)
    params = next(i for i in derived.items if isinstance(i, A.Params))
    assert [(f.name, f.type, f.offset) for f in params.fields] == [
        ("gate_ptr", "ptr", 0),
        ("up_ptr", "ptr", 8),
        ("out_ptr", "ptr", 16),
        ("n", "i32", 24),
    ]
    assert (params.size, params.align) == (32, 8)


def test_the_component_holds_tritons_ptx_as_one_asm_block() -> None:
    source = triton.component(_record(), _header())
    assert source.count("asm volatile(") == 1
    assert "ld.param" not in source and "ret;" not in source, "parameters are operands; `ret` branches to the end"
    assert '"mov.b64 %%klrd25, %0;\\n"' in source
    assert '"r"(kl_params->n)' in source and '"r"(kl_tid)' in source
    assert "%%tid.x" not in source


def test_a_kernel_that_reads_what_the_wrapper_does_not_map_is_refused() -> None:
    record = _record()
    ptx = record["kernel"]["ptx"].replace("mov.u32 \t%r28, %tid.x;", "mov.u32 \t%r28, %ntid.x;")
    assert ptx != record["kernel"]["ptx"]
    with pytest.raises(DiagnosticError) as err:
        triton.component({**record, "kernel": {**record["kernel"], "ptx": ptx}}, _header())
    assert "block size, shared memory or the cluster" in err.value.diagnostics[0].message


@pytest.mark.toolchain
def test_pack_link_and_parity_on_the_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "triton"
    shutil.copytree(FOLDER, root, ignore=shutil.ignore_patterns("build"))
    assert main(["pack", str(root / "act" / "silu_mul.py"), "--contract", str(root / "act" / "silu_mul.kc")]) == 0
    assert main(["check", str(root / "silu_mul.kp")]) == 0
    assert "no diagnostics" in capsys.readouterr().out
    assert main(["link", str(root / "silu_mul.kp"), "-o", str(tmp_path / "linked")]) == 0
    assert main(["parity", str(root / "silu_mul.kp"), "-o", str(tmp_path / "parity")]) == 0
    report = json.loads((tmp_path / "parity" / "parity.json").read_text())
    assert report["proved"] is True, report


@pytest.mark.toolchain
def test_a_record_of_another_program_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if triton.has_triton():
        pytest.skip("this interpreter has Triton: it compiles the edited program instead")
    monkeypatch.delenv("KERNLINK_TRITON_PYTHON", raising=False)
    folder = tmp_path / "act"
    shutil.copytree(STAGE, folder, ignore=shutil.ignore_patterns("build"))
    (folder / "silu_mul.py").write_text((folder / "silu_mul.py").read_text() + "\n# edited\n")
    with pytest.raises(DiagnosticError) as err:
        pack(folder / "silu_mul.py", folder / "silu_mul.kc", folder / "build" / "silu_mul.kpkg")
    assert "is of another version of `silu_mul.py`" in err.value.diagnostics[0].message
    assert not (folder / "build").exists()


@pytest.mark.skipif(not os.environ.get("KERNLINK_TRITON_PYTHON"), reason="KERNLINK_TRITON_PYTHON names no Triton")
def test_the_committed_record_is_what_triton_prints() -> None:
    command = [os.environ["KERNLINK_TRITON_PYTHON"], str(triton.DRIVER), "silu_mul.py", "--arch", "sm_90a"]
    done = subprocess.run(command, cwd=STAGE, capture_output=True, text=True, check=True)
    assert done.stdout == (STAGE / "silu_mul.triton.json").read_text()


def test_the_committed_record_names_no_path_of_the_machine_that_wrote_it() -> None:
    """The driver compiles without line information: no `.file` directive or DWARF section in the PTX."""
    ptx = json.loads((STAGE / "silu_mul.triton.json").read_text())["kernel"]["ptx"]
    assert ".file" not in ptx and ".debug_" not in ptx and ".loc" not in ptx


@pytest.mark.toolchain
@pytest.mark.skipif(
    triton.has_triton() or bool(os.environ.get("KERNLINK_TRITON_PYTHON")),
    reason="Triton lowers here: the build packs a Triton stage every time",
)
def test_kernlink_build_packs_the_triton_stage_from_its_record(tmp_path: Path) -> None:
    """`act/silu_mul.py` beside `act/silu_mul.kc` is the source of `act/build/silu_mul.kpkg`: one command
    gives the hand-packed package and cubin, and reuses it while its record is unchanged."""
    by_hand, built = tmp_path / "by_hand", tmp_path / "built"
    for root in (by_hand, built):
        shutil.copytree(FOLDER, root, ignore=shutil.ignore_patterns("build"))
    assert main(["pack", str(by_hand / "act" / "silu_mul.py"), "--contract", str(by_hand / "act" / "silu_mul.kc")]) == 0
    assert main(["link", str(by_hand / "silu_mul.kp"), "-o", str(tmp_path / "by_hand_out")]) == 0
    for _ in range(2):
        assert main(["build", str(built / "silu_mul.kp"), "-o", str(tmp_path / "built_out"), "--no-server"]) == 0
    package = Path("act") / "build" / "silu_mul.kpkg"
    assert (built / package).read_bytes() == (by_hand / package).read_bytes()
    cubin = (tmp_path / "built_out" / "kernel.cubin").read_bytes()
    assert cubin == (tmp_path / "by_hand_out" / "kernel.cubin").read_bytes()
