"""The SMT verdict equals the explicit-state explorer's on random small protocols."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checker.protocol import DEFAULT_RLIMIT, Protocol, check_protocol
from checker.protocol.check import MAX_RLIMIT
from checker.protocol.explore import explore
from tests.checker.protocol.helpers import (
    kv_ring,
    loader_with_rendezvous,
    two_operand_rings,
    waits_on_unfed_barrier,
)
from tests.checker.protocol.strategies import mixed_protocols, pattern_protocols, small_protocols
from tests.tiers import examples


def assert_agree(protocol: Protocol, bound: int | None = None, rlimit: int = DEFAULT_RLIMIT) -> None:
    """The bounded model and the oracle find the same. A peeled protocol's check stops at the first
    trip count whose run finds something (its shortest counterexample), while the oracle collects
    every trip count up to its bound: the oracle is asked up to the run the check stopped at."""
    verdict = check_protocol(protocol, bound=bound, rlimit=rlimit)
    oracle = explore(protocol, verdict.stats.bound if protocol.peeled else bound)
    assert not verdict.undecided, verdict.undecided
    assert verdict.deadlock == oracle.deadlock
    assert verdict.races == oracle.races
    assert verdict.static == oracle.static


VARIANTS = {
    "depth1": lambda: kv_ring(1),
    "depth3": lambda: kv_ring(3),
    "late-release": lambda: kv_ring(2, consume={"lag": 1}),
    "late-release-depth1": lambda: kv_ring(1, consume={"lag": 1}),
    "no-empty-wait": lambda: kv_ring(2, produce={"wait_empty": False}),
    "full-parity-1": lambda: kv_ring(2, consume={"parity": 1}),
    "prearm-parity-1": lambda: kv_ring(2, consume={"prearm": True}),
    "empty-parity-0": lambda: kv_ring(2, produce={"parity": 0}),
    "per-thread-release": lambda: kv_ring(2, consume={"release": 256}),
    "half-expect-tx": lambda: kv_ring(2, produce={"tx": 8192, "copies": [8192, 8192]}),
    "unfed-barrier": waits_on_unfed_barrier,
    "rendezvous": loader_with_rendezvous,
    "rendezvous-short": lambda: loader_with_rendezvous(threads=160),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_reference_variants_agree(variant: str) -> None:
    assert_agree(VARIANTS[variant]())


def test_agreement_at_other_bounds() -> None:
    b = two_operand_rings(2)
    b.produce("a")
    b.produce("b", wait_empty=False)
    b.consume("a")
    b.consume("b")
    for bound in (1, 2, 3, 6):
        assert_agree(b.build(), bound)


@examples(2)
@given(small_protocols())
def test_smt_agrees_with_explorer(protocol: Protocol) -> None:
    assert_agree(protocol)


@pytest.mark.slow
@examples(1)
@given(small_protocols())
def test_smt_agrees_with_explorer_campaign(protocol: Protocol) -> None:
    """The campaign checks semantics, so it runs at the largest budget: about one drawn
    protocol in a thousand (a named barrier some role only arrives on, beside a ring with
    two consumers) needs more than the default per-check budget to be decided."""
    assert_agree(protocol, rlimit=MAX_RLIMIT)


@examples(0.5)
@given(pattern_protocols(), st.integers(2, 3))
def test_smt_agrees_with_explorer_on_production_patterns(protocol: Protocol, bound: int) -> None:
    """Issue 27: CTAs of a cluster and of a tile's group, parts, multicast and remote steps, turns,
    grid counters, asynchronous reads, staging, pre-armed named barriers, any trip count; and
    across CTAs the phase encoding the probe proves, or the counting one where it cannot."""
    assert_agree(protocol, bound, rlimit=MAX_RLIMIT)


@pytest.mark.slow
@examples(1)
@given(pattern_protocols(), st.integers(2, 4))
def test_smt_agrees_with_explorer_on_production_patterns_campaign(protocol: Protocol, bound: int) -> None:
    assert_agree(protocol, bound, rlimit=MAX_RLIMIT)


@examples(0.5)
@given(mixed_protocols())
def test_smt_agrees_with_explorer_on_mixed_protocols(protocol: Protocol) -> None:
    """The production steps sprinkled into random protocols at random: any mix of targets, parts,
    turns, asynchronous reads, pre-armed named barriers and grid counters, sound or not."""
    assert_agree(protocol, 2, rlimit=MAX_RLIMIT)


@pytest.mark.slow
@examples(1)
@given(mixed_protocols())
def test_smt_agrees_with_explorer_on_mixed_protocols_campaign(protocol: Protocol) -> None:
    assert_agree(protocol, 2, rlimit=MAX_RLIMIT)
