"""Shared test configuration: Hypothesis profiles for CI and for slow campaigns."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.snapshots import set_update

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", deadline=None, max_examples=10_000,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("KERNLINK_HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help="rewrite every snapshot a test compares (a missing snapshot fails otherwise)")


def pytest_configure(config: pytest.Config) -> None:
    set_update(bool(config.getoption("--update-snapshots")))
