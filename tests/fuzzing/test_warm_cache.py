"""What a fuzz campaign keeps between mutants (protocol verdicts on their meaning, ring
slices, warp layouts, parsed units, placements) never changes an answer: every mutant's
verdict and diagnostics are the same from a checker that has seen other mutants (in any
order) as from a fresh one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from diagnostics.model import Diagnostic
from fuzzing.check import Checker, Classification
from fuzzing.compositions.edit import Mutation
from fuzzing.mutation import Plan
from fuzzing.subject import Subject, load_subject
from tests.tiers import examples

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "specs" / "examples"


@pytest.fixture(scope="module")
def ring() -> Subject:
    return load_subject([str(EXAMPLES / "ring" / "ring.kp")])


@pytest.fixture(scope="module")
def attention() -> Subject:
    return load_subject([str(EXAMPLES / "attention" / "attention.kp")])


Seen = tuple[Classification, tuple[Diagnostic, ...] | None]


def seen(checker: Checker, mutation: Mutation) -> Seen:
    """The verdict and, when the mutant was analysed, every diagnostic of its analysis."""
    analysis = checker.analysis(mutation)
    diags = None if isinstance(analysis, Classification) else tuple(analysis.diagnostics)
    return checker.check(mutation), diags


def assert_warm_is_cold(subject: Subject, seed: int, indices: Sequence[int]) -> bool:
    """Every mutant answered alike by a warm and a fresh checker; whether the warm one kept anything."""
    plan = Plan.make(subject.bundle, seed)
    mutations = [m for m in (plan.mutation(i) for i in indices) if m is not None]
    warm = Checker(subject)
    first = [seen(warm, m) for m in mutations]
    again = [seen(warm, m) for m in reversed(mutations)][::-1]  # every answer now comes from the memo
    kept = len(warm.context.memo.verdicts) + len(warm.context.memo.proofs) > 0
    for mutation, one, two in zip(mutations, first, again, strict=True):
        cold = seen(Checker(subject), mutation)
        assert one == cold, mutation
        assert two == cold, mutation
    return kept


@given(seed=st.integers(0, 3), indices=st.lists(st.integers(0, 300), min_size=2, max_size=6, unique=True))
@examples(0.05)
def test_a_warm_checker_answers_every_ring_mutant_as_a_fresh_one(ring: Subject, seed: int, indices: list[int]) -> None:
    # a draw whose every mutant is rejected before the protocol model runs (a version or fact clash) keeps
    # nothing in the memo: it tests no cache
    assume(assert_warm_is_cold(ring, seed, indices))


def test_a_warm_checker_answers_attention_mutants_as_a_fresh_one(attention: Subject) -> None:
    # attention has several rings: its races are decided on ring slices kept in the memo
    assert assert_warm_is_cold(attention, 1, range(0, 300, 41))
