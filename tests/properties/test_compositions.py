"""Properties of the valid-by-construction strategies and of the checker on their mutants.

- every generated composition is accepted, on every target, and places: the placement
  passes the independent verifier and is the same when solved twice;
- parse ∘ print is the identity on generated compositions and on their mutants;
- the checker never raises (nor reports ``E-INTERNAL``) on a generated or mutated
  composition, nor on the syntactic ASTs of ``fuzzing.strategies``;
- every rejection carries a registered code and at least one source span;
- checking is deterministic: the same text gives the same diagnostics, spans included;
- monotonicity: shrinking a claim never turns an accepted composition into an
  L-OVERLAP rejection.

Each property runs on its share of the tier's budget (tests/tiers.py: derandomized in
``ci``); the tests marked ``slow`` draw what CI leaves out (a block size the linker
chooses, every target, more edits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checker.engine import run_clauses
from checker.resolve import resolve
from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from fuzzing.check import Checker, registered_codes
from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.draw import mutated_compositions
from fuzzing.compositions.edit import Mutation
from fuzzing.compositions.generate import compositions
from fuzzing.strategies import source_files
from fuzzing.subject import bundle_subject
from kernlink.api import check_text
from package.loader import StageEntry
from tests.properties.helpers import (
    TARGETS,
    check_bundle,
    costly,
    error_codes,
    spec,
)

REGISTERED = registered_codes()


# ----------------------------------------------------------------- valid by construction


def _accepted(bundle: Bundle) -> None:
    """The clauses accept, and the composition places, verifiably and deterministically.

    This is ``check_text``'s path (parse, resolve, clauses, then placement), with the
    placement run twice and handed to the independent verifier.
    """
    from analysis.downstream import verify_downstream
    from placement import verify

    text = bundle.text()
    source = parse_text(text, "bundle.kc")
    stages = [StageEntry(s, "bundle.kc", None) for s in source.stages]
    comp = resolve(source.pipelines[0], "bundle.kc", stages)
    diags = [d for d in run_clauses(comp) if d.is_error]
    assert not diags, "\n".join(f"{d.code}: {d.message}" for d in diags) + "\n" + text
    first, second = verify_downstream(comp), verify_downstream(comp)
    assert first.placed is not None, "\n".join(f"{d.code}: {d.message}" for d in first.diagnostics) + "\n" + text
    assert verify(first.placed.problem, first.placed.placement) == []
    assert first.placed == second.placed, "placement is not deterministic"


@pytest.mark.parametrize("name", TARGETS)
def test_generated_compositions_are_accepted_and_place(name: str) -> None:
    # CI states the block size: placing a block whose size the linker must choose takes
    # seconds per composition (the slow campaign draws both).
    costly()(given(compositions(spec(name), launch=True))(_accepted))()


def test_generated_compositions_without_a_launch_line_place() -> None:
    costly(0.3)(given(compositions(spec("sm_90a"), max_stages=2, launch=False))(_accepted))()


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGETS)
def test_generated_compositions_are_accepted_and_place_campaign(name: str) -> None:
    costly()(given(compositions(spec(name)))(_accepted))()


def _round_trip(bundle: Bundle) -> None:
    source = bundle.source_file()
    text = print_file(source)
    assert parse_text(text, "<printed>").items == source.items, text


@costly()
@given(compositions(spec("sm_90a")))
def test_generated_compositions_round_trip(bundle: Bundle) -> None:
    _round_trip(bundle)


# ----------------------------------------------------------------- mutants


def _mutant_properties(pair: tuple[Bundle, Mutation]) -> None:
    bundle, mutation = pair
    mutant = mutation.apply(bundle)
    _round_trip(mutant)
    verdict = Checker(bundle_subject(bundle), oracles=[]).check(mutation)
    assert verdict.status != "bug", (verdict, mutation.describe(bundle))
    result = check_bundle(mutant)
    for diag in result.diagnostics:
        if diag.is_error:
            assert diag.code in REGISTERED, f"unregistered code {diag.code}: {diag.message}"
            assert diag.labels, f"{diag.code} carries no span: {diag.message}"


@pytest.mark.parametrize("name", ("sm_90a", "sm_100a"))
def test_mutants_round_trip_and_never_crash_the_checker(name: str) -> None:
    costly(2)(given(mutated_compositions(spec(name), max_edits=3, launch=True))(_mutant_properties))()


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGETS)
def test_mutants_campaign(name: str) -> None:
    costly()(given(mutated_compositions(spec(name), max_edits=3))(_mutant_properties))()


def _syntactic(source: A.SourceFile) -> None:
    result = check_text(print_file(source), "syntax.kc")
    for diag in result.diagnostics:
        assert diag.code != "E-INTERNAL", diag.message
        if diag.is_error and diag.code.startswith("L-"):
            assert diag.code in REGISTERED and diag.labels, diag


@costly(2)
@given(source_files())
def test_checker_never_raises_on_syntactic_asts(source: A.SourceFile) -> None:
    _syntactic(source)


# ----------------------------------------------------------------- determinism


def _deterministic(pair: tuple[Bundle, Mutation]) -> None:
    bundle, mutation = pair
    text = mutation.apply(bundle).text()
    first, second = check_text(text, "m.kc"), check_text(text, "m.kc")
    assert first.diagnostics == second.diagnostics


@costly()
@given(mutated_compositions(spec("sm_90a"), launch=True))
def test_check_is_deterministic(pair: tuple[Bundle, Mutation]) -> None:
    _deterministic(pair)


@pytest.mark.slow
@costly()
@given(mutated_compositions(spec("sm_90a")))
def test_check_is_deterministic_campaign(pair: tuple[Bundle, Mutation]) -> None:
    _deterministic(pair)


# ----------------------------------------------------------------- monotonicity

Shrink = Callable[[A.StageItem], A.StageItem | None]


def _shrunk_claims(item: A.StageItem) -> list[A.StageItem]:
    """Every way of making one claim smaller (or its ring shallower)."""
    rep = dataclasses.replace
    if isinstance(item, A.SmemClaim) and item.bytes:
        return [rep(item, bytes=b) for b in (item.bytes // 2, item.bytes - 16) if b > 0]
    if isinstance(item, A.TmemClaim) and item.columns:
        return [rep(item, columns=c) for c in (item.columns // 2,) if c >= 32]
    if isinstance(item, A.CounterClaim) and item.slots and item.slots > 1:
        return [rep(item, slots=item.slots // 2)]
    if isinstance(item, A.Ring):
        depths = [d for d in item.items if isinstance(d, A.RingDepth) and d.lo > 1]
        return [
            rep(item, items=tuple(A.RingDepth(d.lo - 1, d.hi) if d is depth else d for d in item.items))
            for depth in depths
        ]
    return []


@st.composite
def shrunk_pairs(draw: st.DrawFn, launch: bool | None = True) -> tuple[Bundle, Bundle]:
    """An accepted composition and the same with one claim made smaller (or a ring shallower)."""
    bundle = draw(compositions(spec(draw(st.sampled_from(TARGETS))), launch=launch))
    sites = [
        (u, i, new)
        for u, stage in enumerate(bundle.stages)
        for i, item in enumerate(stage.items)
        for new in _shrunk_claims(item)
    ]
    if not sites:
        return bundle, bundle
    u, i, new = draw(st.sampled_from(sites))
    stage = bundle.stages[u]
    items = (*stage.items[:i], new, *stage.items[i + 1 :])
    stages = (*bundle.stages[:u], dataclasses.replace(stage, items=items), *bundle.stages[u + 1 :])
    return bundle, Bundle(bundle.pipeline, stages)


def _monotone(pair: tuple[Bundle, Bundle]) -> None:
    before, after = pair
    if not check_bundle(before).accepted:
        return
    codes = error_codes(check_bundle(after))
    assert "L-OVERLAP" not in codes, after.text()


@costly()
@given(shrunk_pairs())
def test_shrinking_a_claim_never_causes_overlap(pair: tuple[Bundle, Bundle]) -> None:
    _monotone(pair)


@pytest.mark.slow
@costly()
@given(shrunk_pairs(None))
def test_shrinking_a_claim_never_causes_overlap_campaign(pair: tuple[Bundle, Bundle]) -> None:
    _monotone(pair)
