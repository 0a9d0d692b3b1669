"""The test tiers: one knob, ``pytest --tier ci|slow``, sets the budget of every property test.

``ci`` (the default) runs each property on ``CI_EXAMPLES`` examples, derandomized: CI checks
code that others change every day, so a run must test the same examples each time.
``slow`` runs 100× as many, drawn at random, and adds the tests marked ``slow``.

A property never states an example count. One whose example costs far more or far less
than the usual states its *share* of the tier's budget with :func:`examples`
(``examples(0.1)``: a tenth), so the knob scales it with every other property.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 100
SLOW_EXAMPLES = 100 * CI_EXAMPLES
TIERS = ("ci", "slow")

settings.register_profile(
    "ci",
    max_examples=CI_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("slow", max_examples=SLOW_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def load(tier: str) -> None:
    """Make ``tier``'s profile the default of every property (before the test modules are imported)."""
    settings.load_profile(tier)


def examples(share: float = 1.0, *, suppress: Sequence[HealthCheck] = ()) -> settings:
    """The loaded tier's settings with ``share`` of its examples (at least one), and the health
    checks in ``suppress`` suppressed besides the tier's own."""
    tier = settings.default
    return settings(
        max_examples=max(1, round(share * tier.max_examples)),
        suppress_health_check=[*tier.suppress_health_check, *suppress],
    )
