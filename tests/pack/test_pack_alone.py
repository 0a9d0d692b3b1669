"""`kernlink pack` compiles a component as the link's binding check rebuilds it, when that is provably
the compile beside its folder, and records the binding pass; otherwise it compiles beside the folder.

packing/pack.py ``alone_inputs``: every file beside the source is given to NVRTC under its relative
name, a carried header as itself and any other as an ``#error`` header, so a compile that succeeds
opened exactly what the package carries. The pass is recorded only when the package read back from
its file asks for the very compile that made it (packing/binding.py ``remember_pass``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from contract_lang import ast as A
from diagnostics.model import DiagnosticError
from packing import binding
from packing import pack as pack_module
from packing.pack import CompileFlags, alone_inputs, choose_stage, pack
from tests.link.examples import EXAMPLES


@pytest.fixture
def ring(tmp_path: Path) -> Path:
    folder = tmp_path / "ring"
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host", "out"))
    return folder


def _stage(folder: Path) -> A.Stage:
    return choose_stage(folder / "loader.kc", None)


def _no_compiler(*_: object, **__: object) -> object:
    raise AssertionError("compiled a package whose binding pass was recorded when it was packed")


def _modes(cache: Path) -> list[str]:
    """The modes of the binding verdicts on disk (packing/binding.py: `lowered`, `rebuilt`)."""
    return sorted(json.loads(p.read_text())["mode"] for p in (cache / "binding").glob("*.json"))


def test_a_packed_package_passes_the_binding_check_without_a_second_compile(
    ring: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = pack(ring / "loader.cu", ring / "loader.kc", ring / "build" / "loader.kpkg")
    assert _modes(cache) == ["lowered", "rebuilt"]
    binding.forget()
    monkeypatch.setattr(binding, "compile_lto_and_ptx", _no_compiler)
    monkeypatch.setattr(binding, "isolated", _no_compiler)
    assert binding.rebuild_problems(str(result.path), _stage(ring)) == []


def test_the_compile_alone_gives_the_bytes_of_the_compile_beside_the_folder(ring: Path, cache: Path) -> None:
    alone = pack(ring / "loader.cu", ring / "loader.kc", ring / "a.kpkg")
    beside = pack(ring / "loader.cu", ring / "loader.kc", ring / "b.kpkg", flags=CompileFlags(include_dirs=(ring,)))
    assert alone.path.read_bytes() == beside.path.read_bytes()
    assert _modes(cache) == ["lowered", "rebuilt"], "a `-I` compile is not the rebuild: its lowering only (the same)"


SHADOW = """#pragma once
#define KL_LOCAL_FP16 1
"""


def _defining(folder: Path, header: str) -> None:
    """loader.cu includes ``<header>`` first, and defines `kl_local_fp16` when that is the folder's file."""
    (folder / header).write_text(SHADOW)
    local = 'extern "C" __device__ int kl_local_fp16() { return 1; }'
    prefix = f"#include <{header}>\n#ifdef KL_LOCAL_FP16\n{local}\n#endif\n"
    (folder / "loader.cu").write_text(prefix + (folder / "loader.cu").read_text())


def test_a_file_beside_the_source_that_shadows_a_system_header_is_never_replaced(
    ring: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`<cuda_fp16.h>` is found beside the source first; alone, NVRTC would take its own: the
    package is compiled beside its folder, and records no binding pass."""
    _defining(ring, "cuda_fp16.h")
    text = (ring / "loader.cu").read_text()
    assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", _stage(ring), CompileFlags()) is None
    result = pack(ring / "loader.cu", ring / "loader.kc", ring / "x.kpkg")
    assert "kl_local_fp16" in result.captured.defined_symbols
    assert _modes(cache) == ["lowered"], "not the rebuild's compile: no rebuild pass recorded"
    # alone, the source takes NVRTC's header: the link's rebuild sees other payloads (as before this change)
    found = binding.rebuild_problems(str(result.path), _stage(ring))
    assert [d.code for d in found] == ["L-INTEGRITY", "L-INTEGRITY"]
    # the guard carries the argument: without the folder's listing the compile alone takes NVRTC's header
    monkeypatch.setattr(pack_module, "_mirror", lambda folder, carried: ())
    unguarded = pack(ring / "loader.cu", ring / "loader.kc", ring / "y.kpkg")
    assert "kl_local_fp16" not in unguarded.captured.defined_symbols


def test_an_uncarried_file_the_compile_opens_is_an_error_alone(ring: Path, cache: Path) -> None:
    """`<kl_local.h>` (an angle include: not carried) is beside the source; alone, its `#error`
    stand-in fails the compile, and the package is compiled beside its folder."""
    _defining(ring, "kl_local.h")
    text = (ring / "loader.cu").read_text()
    found = alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", _stage(ring), CompileFlags())
    assert found is not None and "kl_local.h" in found[1]
    with pytest.raises(DiagnosticError, match="does not carry it"):
        found[0].run(found[1])
    result = pack(ring / "loader.cu", ring / "loader.kc", ring / "x.kpkg")
    assert "kl_local_fp16" in result.captured.defined_symbols
    assert _modes(cache) == ["lowered"]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('#if __has_include("kl_extra.h")\n#endif\n', "__has_include sees a file without opening it"),
        ('#include "./kl_ring_loader.h"\n', "a `.` segment"),
        ('#include "../ring/kl_ring_loader.h"\n', "a `..` segment"),
        ("#define KL_H <kl_ring_loader.h>\n#include KL_H\n", "a macro include"),
        ("#include_next <cuda_fp16.h>\n", "#include_next"),
    ],
)
def test_includes_the_mirror_cannot_vouch_for_compile_beside_the_folder(ring: Path, line: str, why: str) -> None:
    text = line + (ring / "loader.cu").read_text()
    assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", _stage(ring), CompileFlags()) is None, why


def test_a_file_without_a_suffix_beside_the_source_compiles_beside_the_folder(ring: Path) -> None:
    """A system header may probe `<random>` with `__has_include`: beside the source it would see the file."""
    text = (ring / "loader.cu").read_text()
    stage = _stage(ring)
    (ring / "random").write_text("")
    assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", stage, CompileFlags()) is None


def test_a_symbolic_link_beside_the_source_compiles_beside_the_folder(ring: Path) -> None:
    text = (ring / "loader.cu").read_text()
    stage = _stage(ring)
    assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", stage, CompileFlags()) is not None
    os.symlink(ring / "kl_ring_loader.h", ring / "other.h")
    assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", stage, CompileFlags()) is None


def test_a_binary_only_pack_or_an_include_folder_is_not_the_rebuild(ring: Path) -> None:
    text = (ring / "loader.cu").read_text()
    stage = _stage(ring)
    for flags in (CompileFlags(source=False), CompileFlags(include_dirs=(ring,))):
        assert alone_inputs(text, ring / "loader.cu", "loader.cu", "sm_90a", stage, flags) is None
