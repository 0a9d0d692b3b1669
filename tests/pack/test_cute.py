"""A component written with CUTLASS's CuTe packs (`--cutlass`: the nvidia-cutlass wheel's headers) and links."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernlink.api import link
from kernlink.cli import main
from toolchain.cuda import cutlass_include_dir

HERE = Path(__file__).parent / "cute"
pytestmark = [
    pytest.mark.toolchain,
    pytest.mark.skipif(cutlass_include_dir() is None, reason="the nvidia-cutlass wheel is not installed"),
]


def test_a_cute_component_packs_and_links_without_calls(tmp_path: Path) -> None:
    folder = tmp_path / "cute"
    shutil.copytree(HERE, folder)
    assert (
        main(
            [
                "pack",
                str(folder / "scale.cu"),
                "--contract",
                str(folder / "scale.kc"),
                "--cutlass",
                "-o",
                str(folder / "build" / "scale.kpkg"),
            ]
        )
        == 0
    )
    result = link([folder / "scale.kp"], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert "call" not in ptx.replace("// ", "")  # the handle and CuTe's helpers are inlined
    assert not [d for d in result.diagnostics if d.code == "I-BINDING"], "the rebuild finds the CuTe headers"


def test_without_cutlass_the_include_is_a_compile_error_naming_the_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cute"
    shutil.copytree(HERE, folder)
    assert (
        main(
            [
                "pack",
                str(folder / "scale.cu"),
                "--contract",
                str(folder / "scale.kc"),
                "-o",
                str(folder / "build" / "scale.kpkg"),
            ]
        )
        == 1
    )
    assert "cute/tensor.hpp" in capsys.readouterr().out
