"""The fact table seen from its consumers, and the exact meaning of a fact constraint.

A fact is a typed constant that one stage owns (``owns fact tile_k: u32 in 16..128``)
and others consume: as a kernel parameter the linker writes (``uses fact … as param``,
or a params field ``= fact X``), as a compiled-in assumption (``assumes fact … == V``)
or through a constraint (``requires fact tile_k % 16 == 0``). L-OWNER, L-FACT and
L-ASSUME read this module; the constraint encoding follows
:func:`contract_lang.expr.evaluate` exactly (Python floor division and modulo,
booleans as 0/1, short-circuit ``and``/``or``, division by zero is an error).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import z3

from checker.composition import Composition
from checker.memo import Memo
from checker.pins import Pin as Pin
from checker.pins import allows as allows
from checker.pins import effective_value as effective_value
from checker.pins import pins as pins
from checker.pins import single_value as single_value
from checker.pins import sole_owner as sole_owner
from contract_lang import ast as A
from contract_lang.expr import BinOp, EvalError, Expr, Int, Name, Not, evaluate
from diagnostics.span import Span
from package.loader import StageEntry
from solver import BUDGETS, SAT, UNSAT, Solver, Witnessed

ConsumerKind = Literal["uses", "assumes", "requires", "param"]

# The values each integer-valued scalar type can hold (a fact of another type has no range check).
INT_RANGES: Mapping[str, tuple[int, int]] = {
    "bool": (0, 1),
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
}


@dataclass(frozen=True)
class FactConsumer:
    """One place a stage depends on a fact, with the span naming it."""

    fact: str
    kind: ConsumerKind
    stage: StageEntry
    span: Span
    item: A.Node

    @property
    def stage_name(self) -> str:
        return self.stage.name


def consumers(comp: Composition) -> dict[str, tuple[FactConsumer, ...]]:
    """Fact name → every consumer, in stage then source order."""
    found: dict[str, list[FactConsumer]] = defaultdict(list)
    for entry in comp.stages:
        for item in entry.stage.items:
            for consumer in _consumers_of(entry, item):
                found[consumer.fact].append(consumer)
    return {k: tuple(v) for k, v in found.items()}


def _consumers_of(entry: StageEntry, item: A.Node) -> Iterator[FactConsumer]:
    if isinstance(item, A.UsesFact):
        yield FactConsumer(item.name, "uses", entry, item.span, item)
    elif isinstance(item, A.AssumesFact):
        yield FactConsumer(item.name, "assumes", entry, item.span, item)
    elif isinstance(item, A.RequiresFact):
        seen: set[str] = set()
        for ref in name_refs(item.expr):
            if ref.id not in seen:
                seen.add(ref.id)
                yield FactConsumer(ref.id, "requires", entry, ref.span, item)
    elif isinstance(item, A.Params):
        for param in item.fields:
            if param.fact is not None:
                yield FactConsumer(param.fact, "param", entry, param.span, param)


def name_refs(expr: Expr) -> Iterator[Name]:
    """Every name node of an expression, left to right."""
    if isinstance(expr, Name):
        yield expr
    elif isinstance(expr, Not):
        yield from name_refs(expr.operand)
    elif isinstance(expr, BinOp):
        yield from name_refs(expr.left)
        yield from name_refs(expr.right)


def describe_value(value: A.FactValue) -> str:
    """``= 256``, ``in 16..128`` or ``in {64, 128}``, as the contract writes it."""
    if value.kind == "exact":
        return f"= {value.values[0]}"
    if value.kind == "range":
        return f"in {value.values[0]}..{value.values[1]}"
    return "in {" + ", ".join(str(v) for v in value.values) + "}"


def value_bounds(value: A.FactValue) -> tuple[int, int]:
    return min(value.values), max(value.values)


# ----------------------------------------------------------------- constraints as SMT


class Encoded:
    """A constraint over facts in Z3: its integer value and when evaluating it fails."""

    def __init__(self, expr: Expr, variables: Mapping[str, z3.ArithRef]) -> None:
        self.variables = variables
        self.value, self.error = self._encode(expr)

    def _encode(self, expr: Expr) -> tuple[z3.ArithRef, z3.BoolRef]:
        if isinstance(expr, Int):
            return z3.IntVal(expr.value), z3.BoolVal(False)
        if isinstance(expr, Name):
            return self.variables[expr.id], z3.BoolVal(False)
        if isinstance(expr, Not):
            value, error = self._encode(expr.operand)
            return z3.If(value == 0, z3.IntVal(1), z3.IntVal(0)), error
        left, left_err = self._encode(expr.left)
        right, right_err = self._encode(expr.right)
        one, zero = z3.IntVal(1), z3.IntVal(0)
        if expr.op == "and":  # the right side is evaluated only when the left is true
            return (z3.If(z3.And(left != 0, right != 0), one, zero), z3.Or(left_err, z3.And(left != 0, right_err)))
        if expr.op == "or":  # … and only when the left is false
            return (z3.If(z3.Or(left != 0, right != 0), one, zero), z3.Or(left_err, z3.And(left == 0, right_err)))
        error = z3.Or(left_err, right_err)
        match expr.op:
            case "+":
                return left + right, error
            case "-":
                return left - right, error
            case "*":
                return left * right, error
            case "/":
                return _floor_div(left, right), z3.Or(error, right == 0)
            case "%":
                return _floor_mod(left, right), z3.Or(error, right == 0)
        compare = {
            "==": left == right,
            "!=": left != right,
            "<": left < right,
            "<=": left <= right,
            ">": left > right,
            ">=": left >= right,
        }[expr.op]
        return z3.If(compare, one, zero), error

    @property
    def fails(self) -> z3.BoolRef:
        """Evaluation raises, or the result is false."""
        return z3.Or(self.error, self.value == 0)


def _floor_mod(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    """Python's ``a % b``: the sign of ``b``. Z3's ``mod`` is Euclidean (never negative)."""
    euclid = a % b
    return z3.If(z3.Or(b > 0, euclid == 0), euclid, euclid + b)


def _floor_div(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    """Python's ``a // b``: floor. Euclidean division rounds up instead when ``b < 0`` and the
    remainder is not zero."""
    quotient = a / b
    return z3.If(z3.Or(b > 0, a % b == 0), quotient, quotient - 1)


def domain(var: z3.ArithRef, value: A.FactValue) -> z3.BoolRef:
    """Every value the owner lets the fact take."""
    if value.kind == "exact":
        return var == value.values[0]
    if value.kind == "range":
        return z3.And(var >= value.values[0], var <= value.values[1])
    return z3.Or(*[var == v for v in sorted(set(value.values))])


# Resource limit of one solver query (deterministic, unlike a wall-clock timeout).
RLIMIT = BUDGETS.fact_query

ENUMERATED = 4096
"""Facts whose values combine in at most this many ways are decided by evaluating every
combination (microseconds) rather than by a solver query (milliseconds each)."""


def counterexample(
    expr: Expr,
    values: Mapping[str, A.FactValue],
    rlimit: int | None = None,
    memo: Memo | None = None,
    *,
    enumerated: int = ENUMERATED,
) -> Witnessed:
    """Whether some value of its facts makes ``expr`` fail (every name must be in ``values``).

    The solver's verdict on that question: ``unsat``, the constraint holds for every value the
    owners allow; ``sat``, it fails, and the witness is the lexicographically smallest
    counterexample (names in sorted order); ``unknown`` carries the solver's reason and is
    never read as either.

    ``rlimit`` bounds each solver query (default :data:`RLIMIT`); values that combine in at
    most ``enumerated`` ways are evaluated instead, with the same answer. Kept in ``memo`` on
    the meaning of the question (expressions and values compare without their spans).
    """
    domains = tuple((name, values[name].kind, values[name].values) for name in sorted(values))
    limit = rlimit if rlimit is not None else RLIMIT
    decide = functools.partial(_decide, expr, domains, limit, enumerated)
    return (memo or Memo()).fact_verdicts.get((expr, domains, limit), decide)


def _decide(
    expr: Expr,
    domains: tuple[tuple[str, Literal["exact", "range", "set"], tuple[int, ...]], ...],
    rlimit: int,
    enumerated: int,
) -> Witnessed:
    values = {name: A.FactValue(kind, vals) for name, kind, vals in domains}
    names = sorted(values)
    members = [values[name].candidates(enumerated + 1) for name in names]
    if all(m is not None for m in members) and math.prod(len(m or ()) for m in members) <= enumerated:
        return _evaluated(expr, names, [m or () for m in members])
    variables = {n: z3.Int(n) for n in names}
    encoded = Encoded(expr, variables)
    solver = Solver(z3.main_ctx(), rlimit=rlimit)
    for name in names:
        solver.add(domain(variables[name], values[name]))
    solver.add(encoded.fails)
    first = solver.check()
    if not first.sat:
        return Witnessed(first)  # holds (unsat), or undecided (unknown, with the solver's reason)
    witness = {n: solver.model().eval(variables[n], model_completion=True).as_long() for n in names}
    for name in names:  # shrink each name in turn to its smallest failing value
        lo, hi = value_bounds(values[name])[0], witness[name]
        while lo < hi:
            mid = (lo + hi) // 2
            solver.z3.push()
            solver.add(variables[name] <= mid)
            outcome = solver.check()
            if outcome.sat:
                model = solver.model()
                witness = {n: model.eval(variables[n], model_completion=True).as_long() for n in names}
                hi = witness[name]
            solver.z3.pop()
            if outcome.unsat:
                lo = mid + 1
            elif outcome.unknown:
                break  # keep the counterexample found so far
        solver.add(variables[name] == witness[name])
    return Witnessed(first, tuple((n, witness[n]) for n in names))


def _evaluated(expr: Expr, names: list[str], members: list[tuple[int, ...]]) -> Witnessed:
    """Every combination in lexicographic order (names sorted, values ascending): the first that
    fails is the smallest counterexample, as the solver's search finds it."""
    for combo in itertools.product(*members):
        env = dict(zip(names, combo, strict=True))
        try:
            holds = evaluate(expr, env) != 0
        except EvalError:
            holds = False
        if not holds:
            return Witnessed(SAT, tuple(env.items()))
    return Witnessed(UNSAT)
