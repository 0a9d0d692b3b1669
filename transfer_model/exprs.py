"""Expression utilities for layout maps: builders, substitution, bounds and fast evaluation.

Layout maps are closed-form integer expressions (``contract_lang.expr``) over bounded
variables. This module adds what the transfer model needs on top of the expression
nodes: builders that fold constants, substitution, interval bounds of every node (they
size the bit-vectors of the SMT encoding and prove the absence of negative values), and
compilation to Python functions for enumeration and simulation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from contract_lang.expr import ARITH_OPS, BinOp, Expr, Int, Name, Not

Bounds = tuple[int, int]
"""Inclusive ``(lo, hi)`` interval of the values a node can take."""


class BoundsError(ValueError):
    """An expression divides by a value that may be zero (or negative)."""

    def __init__(self, node: BinOp) -> None:
        self.node = node
        super().__init__("divisor may be zero or negative")


def _fold(op: str, left: Expr, right: Expr) -> Expr:
    if isinstance(left, Int) and isinstance(right, Int):
        if op in ("/", "%") and right.value == 0:
            return BinOp(op, left, right)
        a, b = left.value, right.value
        value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0, "%": a % b if b else 0}
        return Int(value[op])
    return BinOp(op, left, right)


def add(left: Expr, right: Expr) -> Expr:
    """``left + right``, dropping a zero operand and folding constants."""
    if isinstance(right, Int) and right.value == 0:
        return left
    if isinstance(left, Int) and left.value == 0:
        return right
    return _fold("+", left, right)


def mul(left: Expr, right: Expr) -> Expr:
    """``left * right``, simplifying multiplication by 0 and 1."""
    for a, b in ((left, right), (right, left)):
        if isinstance(a, Int) and a.value == 0:
            return Int(0)
        if isinstance(a, Int) and a.value == 1:
            return b
    return _fold("*", left, right)


def div(left: Expr, right: Expr) -> Expr:
    """``left / right`` (floor), simplifying division by 1."""
    if isinstance(right, Int) and right.value == 1:
        return left
    return _fold("/", left, right)


def mod(left: Expr, right: Expr) -> Expr:
    """``left % right``, simplifying modulo 1."""
    if isinstance(right, Int) and right.value == 1:
        return Int(0)
    return _fold("%", left, right)


def sub(left: Expr, right: Expr) -> Expr:
    if isinstance(right, Int) and right.value == 0:
        return left
    return _fold("-", left, right)


_BUILDERS = {"+": add, "-": sub, "*": mul, "/": div, "%": mod}


def compare(op: str, left: Expr, right: Expr) -> Expr:
    return BinOp(op, left, right)


def disj(parts: Sequence[Expr]) -> Expr:
    """Disjunction of boolean expressions (``0`` when empty)."""
    if not parts:
        return Int(0)
    out = parts[0]
    for part in parts[1:]:
        out = BinOp("or", out, part)
    return out


def negate(expr: Expr) -> Expr:
    return Not(expr)


def substitute(expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace names by expressions, folding constant subtrees; keeps spans of kept nodes."""
    memo: dict[int, Expr] = {}

    def go(node: Expr) -> Expr:
        key = id(node)
        if key in memo:
            return memo[key]
        result: Expr
        if isinstance(node, Int):
            result = node
        elif isinstance(node, Name):
            result = mapping.get(node.id, node)
        elif isinstance(node, Not):
            inner = go(node.operand)
            result = node if inner is node.operand else Not(inner, node.span)
        else:
            left, right = go(node.left), go(node.right)
            if left is node.left and right is node.right:
                result = node
            elif node.op in ARITH_OPS:
                result = _BUILDERS[node.op](left, right)
            else:
                result = BinOp(node.op, left, right, node.span)
        memo[key] = result
        return result

    return go(expr)


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents before children."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, BinOp):
            stack.extend((node.right, node.left))
        elif isinstance(node, Not):
            stack.append(node.operand)


def first_non_arith(expr: Expr) -> Expr | None:
    """The first node that is not integer arithmetic (a comparison, ``and``, ``not``), if any."""
    for node in walk(expr):
        if isinstance(node, Not) or (isinstance(node, BinOp) and node.op not in ARITH_OPS):
            return node
    return None


class BoundsTable:
    """Interval bounds of every node of a set of expressions over bounded variables.

    ``ranges`` gives each variable's inclusive interval. Division and modulo require a
    divisor that is strictly positive over its interval (``BoundsError`` otherwise);
    that is the only way the language applies them, and it makes floor semantics agree
    between Python, Z3 integers and unsigned bit-vectors.
    """

    def __init__(self, ranges: Mapping[str, Bounds]) -> None:
        self.ranges = dict(ranges)
        self._memo: dict[int, Bounds] = {}
        self._keep: list[Expr] = []
        self.lo = 0
        self.hi = 1

    def of(self, expr: Expr) -> Bounds:
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        if isinstance(expr, Int):
            result = (expr.value, expr.value)
        elif isinstance(expr, Name):
            if expr.id not in self.ranges:
                raise KeyError(expr.id)
            result = self.ranges[expr.id]
        elif isinstance(expr, Not):
            self.of(expr.operand)
            result = (0, 1)
        else:
            result = self._binop(expr)
        self._memo[key] = result
        self._keep.append(expr)
        self.lo = min(self.lo, result[0])
        self.hi = max(self.hi, result[1])
        return result

    def _binop(self, node: BinOp) -> Bounds:
        (alo, ahi), (blo, bhi) = self.of(node.left), self.of(node.right)
        op = node.op
        if op == "+":
            return alo + blo, ahi + bhi
        if op == "-":
            return alo - bhi, ahi - blo
        if op == "*":
            corners = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return min(corners), max(corners)
        if op in ("/", "%"):
            if blo <= 0:
                raise BoundsError(node)
            if op == "/":
                corners = (alo // blo, alo // bhi, ahi // blo, ahi // bhi)
                return min(corners), max(corners)
            if alo >= 0:
                return 0, min(ahi, bhi - 1)
            return 0, bhi - 1
        return 0, 1


def bounds(expr: Expr, ranges: Mapping[str, Bounds]) -> Bounds:
    """Inclusive interval of ``expr`` given each variable's interval."""
    return BoundsTable(ranges).of(expr)


def compile_function(params: Sequence[str], exprs: Sequence[Expr]) -> Callable[..., tuple[int, ...]]:
    """A Python function of the parameters (positionally) returning every expression's value.

    Uses Python's floor ``//`` and ``%``, the semantics of ``contract_lang.expr.evaluate``.
    Only arithmetic nodes are compiled; a map with other nodes is rejected by L-MAP first.
    """
    index = {name: i for i, name in enumerate(params)}

    def text(node: Expr) -> str:
        if isinstance(node, Int):
            return f"({node.value})"
        if isinstance(node, Name):
            if node.id not in index:
                raise KeyError(node.id)
            return f"a{index[node.id]}"
        if isinstance(node, Not):
            return f"(int(not {text(node.operand)}))"
        op = {"/": "//", "and": "and", "or": "or"}.get(node.op, node.op)
        if node.op in ("and", "or"):
            return f"(int(bool({text(node.left)}) {op} bool({text(node.right)})))"
        if node.op in ("==", "!=", "<", "<=", ">", ">="):
            return f"(int({text(node.left)} {op} {text(node.right)}))"
        return f"({text(node.left)} {op} {text(node.right)})"

    args = ", ".join(f"a{i}" for i in range(len(params)))
    body = ", ".join(text(e) for e in exprs)
    source = f"lambda {args}: ({body}{',' if len(exprs) == 1 else ''})"
    function: Callable[..., tuple[int, ...]] = eval(compile(source, "<layout map>", "eval"), {})
    return function
