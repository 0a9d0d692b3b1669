"""Shared pieces of the property tests: budgets, targets, checking a bundle as a user's file."""

from __future__ import annotations

from hypothesis import settings

from fuzzing.compositions.bundle import Bundle
from hardware.targets import TargetSpec, target
from kernlink.api import CheckResult, check_text
from tests.tiers import examples

TARGETS = ("sm_90", "sm_90a", "sm_100a", "sm_120a")


def costly(factor: float = 1) -> settings:
    """The budget of a property that checks whole compositions: ``factor`` tenths of the tier's
    (tests/tiers.py), since one checked composition costs about ten ordinary examples."""
    return examples(0.1 * factor)


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
