"""Packages of the reference examples, built once per test session into a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from linker import binding
from linker.pack import PackResult, pack
from tests.link.examples import EXAMPLES

COMPONENTS = ("hello/provider", "hello/caller", "ring/loader", "ring/reduce")


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PackResult]:
    out = tmp_path_factory.mktemp("packages")
    results = {}
    for component in COMPONENTS:
        source = EXAMPLES / f"{component}.cu"
        results[component] = pack(source, source.with_suffix(".kc"), out / f"{Path(component).name}.kpkg")
    return results


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``KERNLINK_CACHE`` with the binding cache on, and no binding verdict kept in this process."""
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINK_NO_BINDING_CACHE", raising=False)
    binding._cached.cache_clear()
    return tmp_path / "cache"
