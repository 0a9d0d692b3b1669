"""Z3 encoding and solving of queries over bounded integer variables.

A ``Query`` is a set of variables ``0 <= v < extent`` and boolean assertions written as
``contract_lang`` expressions. ``solve`` looks for a satisfying assignment: for every
check of the transfer model the assertions describe a *defect* (an element out of the
tile, two slots on one element, a value that lands in the wrong thread), so ``unsat``
is a proof that the defect cannot happen and a model is a witness.

Encodings. When interval analysis shows that no node of the query can be negative,
the query is encoded into unsigned bit-vectors just wide enough for the largest node
(bit-blasting makes the power-of-two divisions of GPU layouts cheap); otherwise, and as
the second try of a portfolio, into Z3 integers (linear arithmetic with division by
constants, which suits odd divisors). Each attempt is bounded by Z3's deterministic
resource limit (``rlimit``), first a small one per encoding, then the full one; a query
that exhausts them all is ``UNKNOWN``, a verdict of its own that callers report.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import z3

from contract_lang.expr import BinOp, Expr, Int, Name, Not
from solver import BUDGETS, SAT, Answer, Solver, Verdict, Witnessed
from transfer_model.exprs import BoundsTable

FAST_RLIMIT = BUDGETS.route_first
DEFAULT_RLIMIT = BUDGETS.route


@dataclass(frozen=True)
class Query:
    """Variables ``(name, extent)`` with ``0 <= name < extent`` and boolean assertions."""

    variables: tuple[tuple[str, int], ...]
    assertions: tuple[Expr, ...]


class _Encoder:
    def __init__(self, query: Query, width: int | None, ctx: Any) -> None:
        self.ctx = ctx
        self.width = width
        self.memo: dict[int, Any] = {}
        self.vars: dict[str, Any] = {}
        self.keep: list[Expr] = []
        for name, _ in query.variables:
            self.vars[name] = z3.BitVec(name, width, ctx) if width else z3.Int(name, ctx)

    def const(self, value: int) -> Any:
        return z3.BitVecVal(value, self.width, self.ctx) if self.width else z3.IntVal(value, self.ctx)

    def bounds(self, query: Query) -> list[Any]:
        out = []
        for name, extent in query.variables:
            v = self.vars[name]
            if self.width:
                out.append(z3.ULT(v, self.const(extent)))
            else:
                out.extend((v >= 0, v < extent))
        return out

    def boolean(self, node: Expr) -> Any:
        if isinstance(node, Not):
            return z3.Not(self.boolean(node.operand))
        if isinstance(node, BinOp) and node.op in ("and", "or"):
            parts = (self.boolean(node.left), self.boolean(node.right))
            return z3.And(*parts) if node.op == "and" else z3.Or(*parts)
        if isinstance(node, BinOp) and node.op in _COMPARE:
            a, b = self.integer(node.left), self.integer(node.right)
            return _COMPARE[node.op](a, b, self.width is not None)
        if isinstance(node, Int):
            return z3.BoolVal(node.value != 0, self.ctx)
        return self.integer(node) != self.const(0)

    def integer(self, node: Expr) -> Any:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        result: Any
        if isinstance(node, Int):
            result = self.const(node.value)
        elif isinstance(node, Name):
            result = self.vars[node.id]
        elif isinstance(node, Not) or node.op in _COMPARE or node.op in ("and", "or"):
            result = z3.If(self.boolean(node), self.const(1), self.const(0))
        else:
            a, b = self.integer(node.left), self.integer(node.right)
            bv = self.width is not None
            if node.op == "+":
                result = a + b
            elif node.op == "-":
                result = a - b
            elif node.op == "*":
                result = a * b
            elif node.op == "/":
                result = z3.UDiv(a, b) if bv else a / b
            else:
                result = z3.URem(a, b) if bv else a % b
        self.memo[key] = result
        self.keep.append(node)
        return result


def _cmp(op: str) -> Callable[[Any, Any, bool], Any]:
    unsigned = {"<": z3.ULT, "<=": z3.ULE, ">": z3.UGT, ">=": z3.UGE}

    def build(a: Any, b: Any, bv: bool) -> Any:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if bv:
            return unsigned[op](a, b)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    return build


_COMPARE = {op: _cmp(op) for op in ("==", "!=", "<", "<=", ">", ">=")}


def _bitvector_width(query: Query) -> int | None:
    """Width that holds every node without wrap-around, or None when a node may be negative."""
    table = BoundsTable({name: (0, extent - 1) for name, extent in query.variables})
    for assertion in query.assertions:
        table.of(assertion)
    for _, extent in query.variables:
        table.of(Int(extent))
    if table.lo < 0:
        return None
    return max(table.hi.bit_length() + 1, 2)


_SESSION: contextvars.ContextVar[Any] = contextvars.ContextVar("kernlink_z3_session", default=None)


@contextlib.contextmanager
def session() -> Iterator[None]:
    """Run the enclosed queries in one fresh Z3 context (nested sessions share the outer one).

    Z3's models depend on every term the context has seen; a context per top-level
    check makes its witnesses depend only on its own inputs.
    """
    if _SESSION.get() is not None:
        yield
        return
    token = _SESSION.set(z3.Context())
    try:
        yield
    finally:
        _SESSION.reset(token)


def _attempt(query: Query, width: int | None, rlimit: int) -> Witnessed:
    ctx = _SESSION.get()
    if ctx is None:
        with session():
            return _attempt(query, width, rlimit)
    encoder = _Encoder(query, width, ctx)
    solver = Solver(ctx, rlimit=rlimit, logic="QF_BV" if width else "QF_LIA")
    solver.add(*encoder.bounds(query))
    for assertion in query.assertions:
        solver.add(encoder.boolean(assertion))
    verdict = solver.check()
    if verdict.sat:
        model = solver.model()
        values = tuple(
            (name, model.eval(encoder.vars[name], model_completion=True).as_long()) for name, _ in query.variables
        )
        return Witnessed(SAT, values)
    return Witnessed(verdict)


def solve(query: Query, rlimit: int = DEFAULT_RLIMIT) -> Witnessed:
    """Find an assignment satisfying every assertion, prove there is none, or give up.

    Outside a ``session`` each call gets a context of its own.
    """
    width = _bitvector_width(query)
    encodings: list[int | None] = [width, None] if width else [None]
    limits = (min(FAST_RLIMIT, rlimit), rlimit) if rlimit > FAST_RLIMIT else (rlimit,)
    reasons = []
    for limit in limits:
        for encoding in encodings:
            answer = _attempt(query, encoding, limit)
            if not answer.verdict.unknown:
                return answer
            reasons.append(f"{'bit-vector' if encoding else 'integer'} encoding: {answer.verdict.reason}")
    return Witnessed(Verdict(Answer.UNKNOWN, "; ".join(reasons)))
