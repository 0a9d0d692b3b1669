"""Shared test configuration: Hypothesis profiles for CI and for slow campaigns."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", deadline=None, max_examples=10_000,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("KERNLINK_HYPOTHESIS_PROFILE", "ci"))
