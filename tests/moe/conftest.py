"""GPU tests of this folder carry ``gpu`` and are skipped cleanly without a GPU."""

from __future__ import annotations

import pytest

from linker.launch import gpu_available


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not gpu_available():
        pytest.skip("needs an NVIDIA GPU with a CUDA driver")
