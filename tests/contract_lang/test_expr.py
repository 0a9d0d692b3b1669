"""Canonical expression text: it parses back to the same tree, with no needless parentheses."""

from __future__ import annotations

import pytest
from hypothesis import given

from contract_lang import ast as A
from contract_lang.expr import BinOp, Expr, Int, Name, Not, to_text
from contract_lang.parser import parse_text
from diagnostics.model import DiagnosticError
from fuzzing.strategies import expressions
from tests.tiers import examples

NAMES = ("a", "b", "tile_k", "n")


def parse_expr(text: str) -> Expr:
    """An expression through the parser, as the condition of a `requires fact` line."""
    (item,) = parse_text(f'stage "e" version "0" {{\n    requires fact {text}\n}}\n').items[0].items
    assert isinstance(item, A.RequiresFact)
    return item.expr


def try_parse(text: str) -> Expr | None:
    try:
        return parse_expr(text)
    except DiagnosticError:
        return None


@examples(5)
@given(expressions(NAMES, max_depth=4))
def test_to_text_parses_back(expr: Expr) -> None:
    assert parse_expr(to_text(expr)) == expr


def _paren_pairs(text: str) -> list[tuple[int, int]]:
    pairs, stack = [], []
    for i, ch in enumerate(text):
        if ch == "(":
            stack.append(i)
        elif ch == ")":
            pairs.append((stack.pop(), i))
    return pairs


def _kept_for_reading(text: str, open_at: int, close_at: int) -> bool:
    """The two forms that keep parentheses a parser would not need, for the reader:
    ``not (a == b)`` (a `not` of anything but a name, a number or another `not`) and
    ``(t % 32) / 4`` (a product inside a product of another operator)."""
    if text[:open_at].endswith("not "):
        return True
    inner = try_parse(text[open_at + 1 : close_at])
    after = text[close_at + 1 : close_at + 4]
    return (
        isinstance(inner, BinOp)
        and inner.op in ("*", "/", "%")
        and after in (" * ", " / ", " % ")
        and after.strip() != inner.op
    )


@examples(3)
@given(expressions(NAMES, max_depth=4))
def test_to_text_has_no_needless_parentheses(expr: Expr) -> None:
    text = to_text(expr)
    for open_at, close_at in _paren_pairs(text):
        without = text[:open_at] + text[open_at + 1 : close_at] + text[close_at + 1 :]
        if try_parse(without) == expr:
            assert _kept_for_reading(text, open_at, close_at), f"needless parentheses in {text!r}"


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (BinOp("-", BinOp("-", Name("a"), Name("b")), Name("n")), "a - b - n"),
        (BinOp("-", Name("a"), BinOp("-", Name("b"), Name("n"))), "a - (b - n)"),
        (BinOp("*", BinOp("+", Name("a"), Int(1)), Int(2)), "(a + 1) * 2"),
        (BinOp("/", BinOp("%", Name("t"), Int(32)), Int(4)), "(t % 32) / 4"),
        (BinOp("/", BinOp("/", Name("t"), Int(32)), Int(4)), "t / 32 / 4"),
        (BinOp("==", BinOp("==", Name("a"), Name("b")), Int(0)), "(a == b) == 0"),
        (BinOp("and", Name("a"), Not(Name("b"))), "a and not b"),
        (BinOp("and", Not(Name("a")), Name("b")), "not a and b"),
        (BinOp("or", BinOp("and", Name("a"), Name("b")), Name("n")), "a and b or n"),
        (BinOp("and", BinOp("or", Name("a"), Name("b")), Name("n")), "(a or b) and n"),
        (BinOp("+", Name("a"), Not(Name("b"))), "a + (not b)"),
        (Not(BinOp("==", Name("a"), Int(0))), "not (a == 0)"),
        (Not(Not(Name("a"))), "not not a"),
        (BinOp("<=", Name("a"), Int(256)), "a <= 256"),
    ],
)
def test_canonical_forms(expr: Expr, text: str) -> None:
    assert to_text(expr) == text
    assert parse_expr(text) == expr


def test_hex_and_kib_literals_are_integers() -> None:
    assert parse_expr("0x40 + 1KiB") == BinOp("+", Int(64), Int(1024))
