"""Shared pieces of the property tests: budgets, targets, checking a bundle as a user's file."""

from __future__ import annotations

from hypothesis import settings

from checker.hardware import TargetSpec, target
from contract_lang.compositions.bundle import Bundle
from kernlink.api import CheckResult, check_text

CI_EXAMPLES = 10
"""Examples per property in CI; the ``slow`` variants run ``SLOW_EXAMPLES``."""
SLOW_EXAMPLES = 100 * CI_EXAMPLES

TARGETS = ("sm_90", "sm_90a", "sm_100a", "sm_120a")


def ci(factor: int = 1) -> settings:
    """The CI budget: ``factor × CI_EXAMPLES`` examples, derandomized.

    CI checks a checker that others change every day, so a run must not fail at random:
    it tests the same examples each time. The ``slow`` campaigns explore at random.
    """
    return settings(max_examples=CI_EXAMPLES * factor, derandomize=True)


def spec(name: str) -> TargetSpec:
    found = target(name)
    assert found is not None
    return found


def check_bundle(bundle: Bundle) -> CheckResult:
    """Check a bundle exactly as a user's file: printed, parsed, resolved, every clause run."""
    return check_text(bundle.text(), "bundle.kc")


def error_codes(result: CheckResult) -> list[str]:
    return sorted({d.code for d in result.diagnostics if d.is_error})


def explain(result: CheckResult) -> str:
    return "\n".join(f"{d.code}: {d.message}" for d in result.diagnostics if d.is_error)
