"""The binding verdict is remembered on disk: a pass for the same bytes is not compiled again.

packing/binding.py keeps a pass (no finding) under ``$KERNLINK_CACHE/binding``, keyed by the
package's bytes, the stage, the NVRTC version, the header wheels and its own deciding code.
A package whose bytes changed is rebuilt; a forged one is L-INTEGRITY however warm the cache.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contract_lang import ast as A
from package.kpkg import PAYLOADS_KEY, pack_bytes, parse_package
from package.manifest import LTO_PAYLOAD
from packing import binding
from packing.pack import PackResult, choose_stage
from tests.link.examples import EXAMPLES


def _stage() -> A.Stage:
    return choose_stage(EXAMPLES / "ring" / "loader.kc", None)


def _no_compiler(*_: object, **__: object) -> object:
    raise AssertionError("the binding check compiled a package the cache has a pass for")


def test_a_pass_is_kept_and_not_compiled_again(
    tmp_path: Path, cache: Path, packed: dict[str, PackResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    stage = _stage()
    assert binding.rebuild_problems(str(path), stage) == []
    assert len(list((cache / "binding").glob("*.json"))) == 1
    binding.forget()  # a new process: only the disk remembers
    monkeypatch.setattr(binding, "compile_lto_and_ptx", _no_compiler)
    assert binding.rebuild_problems(str(path), stage) == []


def test_changed_bytes_are_rebuilt_and_a_forgery_is_caught(
    tmp_path: Path, cache: Path, packed: dict[str, PackResult]
) -> None:
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    stage = _stage()
    assert binding.rebuild_problems(str(path), stage) == []
    pkg = parse_package(path.read_bytes(), name=str(path))
    manifest = {k: v for k, v in pkg.manifest.items() if k != PAYLOADS_KEY}
    payloads = dict(pkg.payloads)
    payloads[LTO_PAYLOAD] = packed["ring/reduce"].path.read_bytes()[:64] + payloads[LTO_PAYLOAD][64:]
    path.write_bytes(pack_bytes(manifest, payloads))  # hashes recomputed: only the rebuild can tell
    binding.forget()
    found = binding.rebuild_problems(str(path), stage)
    assert [d.code for d in found] == ["L-INTEGRITY"]
    assert len(list((cache / "binding").glob("*.json"))) == 1, "a finding is never cached"


def test_the_cache_can_be_turned_off(
    tmp_path: Path, cache: Path, packed: dict[str, PackResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNLINK_NO_BINDING_CACHE", "1")
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/loader"].path, path)
    assert binding.rebuild_problems(str(path), _stage()) == []
    assert not (cache / "binding").exists()


def test_a_package_replaced_between_the_links_two_reads_is_l_integrity(
    tmp_path: Path, cache: Path, packed: dict[str, PackResult]
) -> None:
    """The link reads a package for its LTO IR, the binding reads it again: other bytes the second time are refused."""
    path = tmp_path / "loader.kpkg"
    shutil.copy(packed["ring/reduce"].path, path)
    first = parse_package(path.read_bytes()).sha256
    shutil.copy(packed["ring/loader"].path, path)
    (found,) = binding.rebuild_problems(str(path), _stage(), sha256=first)
    assert found.code == "L-INTEGRITY" and "changed while it was linked" in found.message
    assert binding.rebuild_problems(str(path), _stage(), sha256=parse_package(path.read_bytes()).sha256) == []
