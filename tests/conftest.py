"""Shared test configuration: the test tier (tests/tiers.py), snapshot updates, and GPU tests skipped without a GPU."""

from __future__ import annotations

import pytest

from tests import tiers
from tests.snapshots import set_update


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite every snapshot a test compares (a missing snapshot fails otherwise)",
    )
    parser.addoption(
        "--tier",
        choices=tiers.TIERS,
        default="ci",
        help="ci: every property on its share of 100 examples, derandomized (the default); "
        "slow: 100x the examples at random, and the tests marked slow",
    )


def pytest_configure(config: pytest.Config) -> None:
    set_update(bool(config.getoption("--update-snapshots")))
    tier = config.getoption("--tier")
    tiers.load(tier)
    chosen = any(arg.startswith("-m") for arg in config.invocation_params.args)
    if tier == "slow" and not chosen:  # the slow tier adds the tests the default `-m 'not slow'` leaves out
        config.option.markexpr = ""


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `gpu`-marked test, anywhere in the suite, skips cleanly on a machine without a GPU."""
    if item.get_closest_marker("gpu") is None:
        return
    from linker.launch import gpu_available

    if not gpu_available():
        pytest.skip("needs an NVIDIA GPU with a CUDA driver")
