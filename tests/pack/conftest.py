"""Packages of the reference examples, built once per test session into a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

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
