"""Integer expressions of the contract language (fact constraints and layout maps).

Values are unbounded integers; ``/`` and ``%`` are floor division and modulo, as in
Python (the language only ever applies them to non-negative operands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from diagnostics.span import UNKNOWN_SPAN, Span

ARITH_OPS = ("+", "-", "*", "/", "%")
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
BOOL_OPS = ("and", "or")

# Binding strength, loosest first; used by the printer to parenthesise minimally.
PRECEDENCE: dict[str, int] = {
    "or": 1,
    "and": 2,
    **dict.fromkeys(COMPARE_OPS, 3),
    "+": 4,
    "-": 4,
    "*": 5,
    "/": 5,
    "%": 5,
}


@dataclass(frozen=True)
class Int:
    value: int
    span: Span = field(default=UNKNOWN_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class Name:
    id: str
    span: Span = field(default=UNKNOWN_SPAN, compare=False, repr=False)


@dataclass(frozen=True)
class BinOp:
    """``left op right`` for arithmetic, comparison and boolean operators."""

    op: str
    left: Expr
    right: Expr
    span: Span = field(default=UNKNOWN_SPAN, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.op not in PRECEDENCE:
            raise ValueError(f"unknown operator {self.op!r}")


@dataclass(frozen=True)
class Not:
    operand: Expr
    span: Span = field(default=UNKNOWN_SPAN, compare=False, repr=False)


Expr = Int | Name | BinOp | Not


class EvalError(ValueError):
    """An expression could not be evaluated (unbound name, division by zero)."""


def evaluate(expr: Expr, env: Mapping[str, int]) -> int:
    """Evaluate with Python semantics; booleans are 0/1."""
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Name):
        if expr.id not in env:
            raise EvalError(f"`{expr.id}` has no value")
        return env[expr.id]
    if isinstance(expr, Not):
        return int(not evaluate(expr.operand, env))
    left = evaluate(expr.left, env)
    if expr.op == "and":
        return int(bool(left) and bool(evaluate(expr.right, env)))
    if expr.op == "or":
        return int(bool(left) or bool(evaluate(expr.right, env)))
    right = evaluate(expr.right, env)
    return _apply(expr.op, left, right)


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise EvalError("division by zero")
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return a // b
        case "%":
            return a % b
        case "==":
            return int(a == b)
        case "!=":
            return int(a != b)
        case "<":
            return int(a < b)
        case "<=":
            return int(a <= b)
        case ">":
            return int(a > b)
        case ">=":
            return int(a >= b)
    raise EvalError(f"unknown operator {op!r}")


def names(expr: Expr) -> frozenset[str]:
    """Every variable the expression mentions."""
    if isinstance(expr, Int):
        return frozenset()
    if isinstance(expr, Name):
        return frozenset({expr.id})
    if isinstance(expr, Not):
        return names(expr.operand)
    return names(expr.left) | names(expr.right)


def to_text(expr: Expr, literal: Callable[[int], str] = str) -> str:
    """Canonical text with the fewest parentheses that keep the tree; ``literal`` writes an
    integer (a byte quantity's ``16KiB``)."""
    if isinstance(expr, Int):
        return literal(expr.value)
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Not):
        inner = to_text(expr.operand, literal)
        return f"not {inner}" if isinstance(expr.operand, (Int, Name, Not)) else f"not ({inner})"
    prec = PRECEDENCE[expr.op]
    left = to_text(expr.left, literal)
    if (
        _binds_looser(expr.left, prec)
        or (expr.op in COMPARE_OPS and _is_compare(expr.left))
        or _mixed_product(expr.op, expr.left)
    ):
        left = f"({left})"
    right = to_text(expr.right, literal)
    # Operators are left-associative: an equal-precedence right operand needs parentheses
    # (a prefix `not` does not associate: `a and not b` needs none).
    right_prec = prec if isinstance(expr.right, Not) else prec + 1
    if _binds_looser(expr.right, right_prec) or (expr.op in COMPARE_OPS and _is_compare(expr.right)):
        right = f"({right})"
    return f"{left} {expr.op} {right}"


def _binds_looser(expr: Expr, prec: int) -> bool:
    if isinstance(expr, Not):
        return PRECEDENCE["and"] + 0.5 < prec
    return isinstance(expr, BinOp) and PRECEDENCE[expr.op] < prec


def _mixed_product(op: str, operand: Expr) -> bool:
    """``(t % 32) / 4`` reads better than ``t % 32 / 4``; both are the same tree."""
    return op in ("*", "/", "%") and isinstance(operand, BinOp) and operand.op in ("*", "/", "%") and operand.op != op


def _is_compare(expr: Expr) -> bool:
    return isinstance(expr, BinOp) and expr.op in COMPARE_OPS
