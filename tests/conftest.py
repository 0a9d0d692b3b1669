"""Shared test configuration: the test tier (tests/tiers.py), snapshot updates, GPU tests skipped without a GPU,
and the reference examples' packages (``packed``), built once per session for tests/pack and tests/hostile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import tiers
from tests.snapshots import set_update

if TYPE_CHECKING:
    from packing.pack import PackResult

COMPONENTS = ("hello/provider", "hello/caller", "ring/loader", "ring/reduce")


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
    from runtime.launch import gpu_available

    if not gpu_available():
        pytest.skip("needs an NVIDIA GPU with a CUDA driver")


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PackResult]:
    """The hello and ring examples' components, packed once into a temporary folder."""
    from packing.pack import pack
    from tests.link.examples import EXAMPLES

    out = tmp_path_factory.mktemp("packages")
    results = {}
    for component in COMPONENTS:
        source = EXAMPLES / f"{component}.cu"
        results[component] = pack(source, source.with_suffix(".kc"), out / f"{Path(component).name}.kpkg")
    return results
