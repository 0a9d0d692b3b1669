"""The fact-constraint decision procedure agrees with the language's evaluator, exactly."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checker.facts import ENUMERATED, counterexample, describe_value, single_value
from contract_lang import ast as A
from contract_lang.expr import ARITH_OPS, BOOL_OPS, COMPARE_OPS, BinOp, EvalError, Expr, Int, Name, Not, evaluate
from tests.tiers import examples


def _leaf() -> st.SearchStrategy[Expr]:
    return st.one_of(st.integers(0, 6).map(Int), st.sampled_from(["a", "b"]).map(Name))


def _exprs() -> st.SearchStrategy[Expr]:
    ops = (*ARITH_OPS, *COMPARE_OPS, *BOOL_OPS)
    return st.recursive(
        _leaf(),
        lambda inner: st.one_of(st.builds(BinOp, st.sampled_from(ops), inner, inner), inner.map(Not)),
        max_leaves=6,
    )


def _values() -> st.SearchStrategy[A.FactValue]:
    exact = st.integers(0, 5).map(lambda v: A.FactValue("exact", (v,)))
    ranged = st.tuples(st.integers(0, 4), st.integers(0, 4)).map(lambda t: A.FactValue("range", (min(t), max(t))))
    sets = st.lists(st.integers(0, 6), min_size=1, max_size=3).map(lambda v: A.FactValue("set", tuple(v)))
    return st.one_of(exact, ranged, sets)


def _members(value: A.FactValue) -> tuple[int, ...]:
    found = value.candidates()
    assert found is not None
    return found


def _brute(expr: Expr, values: dict[str, A.FactValue]) -> tuple[tuple[str, int], ...] | None:
    """The lexicographically smallest failing assignment, or None when the constraint holds."""
    names = sorted(values)
    for combo in itertools.product(*(_members(values[n]) for n in names)):
        env = dict(zip(names, combo, strict=True))
        try:
            ok = bool(evaluate(expr, env))
        except EvalError:
            ok = False
        if not ok:
            return tuple(env.items())
    return None


@pytest.mark.parametrize("enumerated", [0, ENUMERATED], ids=["solver", "evaluated"])
@examples(3)
@given(_exprs(), _values(), _values())
def test_counterexample_matches_evaluate(enumerated: int, expr: Expr, a: A.FactValue, b: A.FactValue) -> None:
    """The solver's answer, and the evaluation of every combination of small domains, are both the
    brute force's."""
    values = {"a": a, "b": b}
    expected = _brute(expr, values)
    found = counterexample(expr, values, enumerated=enumerated)
    if expected is None:
        assert found.verdict.unsat
    else:
        assert found.verdict.sat
        assert found.witness == expected


def _c(op: str, left: Expr, right: Expr) -> Expr:
    return BinOp(op, left, right)


@pytest.mark.parametrize(
    ("expr", "env"),
    [
        (_c("/", Int(7), _c("-", Int(0), Int(2))), {}),  # 7 // -2 == -4
        (_c("%", Int(7), _c("-", Int(0), Int(2))), {}),  # 7 % -2 == -1
        (_c("/", _c("-", Int(0), Int(7)), Int(2)), {}),  # -7 // 2 == -4
        (_c("%", _c("-", Int(0), Int(7)), Int(2)), {}),  # -7 % 2 == 1
    ],
)
def test_floor_semantics_on_negative_operands(expr: Expr, env: dict[str, int]) -> None:
    target = evaluate(expr, env)
    for probe in (target, target + 1):
        constraint = _c("==", expr, Int(probe) if probe >= 0 else _c("-", Int(0), Int(-probe)))
        assert counterexample(constraint, {}).verdict.unsat == (probe == target)


def test_division_by_zero_fails_only_when_evaluated() -> None:
    n = Name("n")
    guarded = _c("or", _c("==", n, Int(0)), _c(">", _c("/", Int(100), n), Int(1)))
    assert counterexample(guarded, {"n": A.FactValue("range", (0, 50))}).verdict.unsat
    unguarded = _c(">", _c("/", Int(100), n), Int(1))
    found = counterexample(unguarded, {"n": A.FactValue("range", (0, 50))})
    assert found.verdict.sat and found.witness == (("n", 0),)


def test_wide_range_gives_the_smallest_counterexample() -> None:
    expr = _c("==", _c("%", Name("tile_k"), Int(16)), Int(0))
    found = counterexample(expr, {"tile_k": A.FactValue("range", (16, 2**64 - 1))})
    assert found.witness == (("tile_k", 17),)


def test_unknown_is_reported_not_passed() -> None:
    a, b, c = Name("a"), Name("b"), Name("c")
    hard = _c("!=", _c("-", _c("*", _c("*", a, a), a), _c("*", _c("*", b, b), c)), Int(12345677))
    big = A.FactValue("range", (1, 2**40))
    found = counterexample(hard, {"a": big, "b": big, "c": big}, rlimit=1)
    assert found.verdict.unknown and not found.witness


def test_value_helpers() -> None:
    assert describe_value(A.FactValue("range", (16, 128))) == "in 16..128"
    assert describe_value(A.FactValue("set", (64, 128))) == "in {64, 128}"
    assert single_value(A.FactValue("range", (8, 8))) == 8
    assert single_value(A.FactValue("set", (64, 128))) is None
