"""Linked examples, built once per session: packed into a scratch folder and linked with the PTX kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernlink.api import LinkResult, link
from tests.link.examples import build_example


@pytest.fixture(scope="session")
def pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    return {name: build_example(name, root) for name in ("hello", "ring")}


@pytest.fixture(scope="session")
def linked(pipelines: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[LinkResult, Path]]:
    out = tmp_path_factory.mktemp("linked")
    results = {}
    for name, pipeline in pipelines.items():
        result = link([pipeline], out / name, emit_ptx=True)
        assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
        results[name] = (result, out / name)
    return results
