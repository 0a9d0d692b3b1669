"""The binding cache of one test (the examples' packages, ``packed``, are built once per session: tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packing import binding


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``KERNLINK_CACHE`` with the binding cache on, and no binding verdict kept in this process."""
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINK_NO_BINDING_CACHE", raising=False)
    binding.forget()
    return tmp_path / "cache"
