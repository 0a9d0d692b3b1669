"""Byte sizes written as expressions of facts (specs/language.md §7, §8.1, §12).

A claim's ``bytes`` and a ring side's ``expect_tx``, ``tx`` and ``copy`` sizes may be written as
an arithmetic expression of facts: ``claim smem x_tile bytes x_rows * 64 * 2``. A size is compiled
into the component's code, so its value is decided when the stage is built, from the facts whose
value the stage fixes: those it owns with one value (``owns fact x_rows: u32 = 32``) and those it
assumes (``assumes fact x_rows: u32 == 32``, which L-FACT holds equal to the owner's value at the
link). A name without such a value — a fact the linker chooses (``in 16..64``), a run-time
parameter (``uses fact``), no fact of the stage — leaves the size without a value: ``E-VALUE``,
one diagnostic per name with every size that uses it, never a guessed size.

The node keeps the expression as written (the printer writes it back) and its value beside it, so
everything downstream (placement, L-TXBYTES, conformance) reads the integer as if it had been
written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from contract_lang import ast as A
from contract_lang.expr import EvalError, Expr, Int, Name, Not, evaluate, names, to_text
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code

#: A size's bounds: as a literal's (transform.INT_RANGES["size"]).
SIZE_MAX = (1 << 64) - 1

Sized = A.SmemClaim | A.RingBarrierInit | A.RingArrive | A.RingCopy


@dataclass(frozen=True)
class Resolved:
    """A stage's items with every size expression given its value, and what could not be."""

    items: tuple[A.StageItem, ...]
    problems: tuple[Diagnostic, ...]


def written(item: Sized) -> tuple[str, Expr | None]:
    """The size attribute's keyword and its expression, None when it was written as an integer."""
    if isinstance(item, A.SmemClaim):
        return "bytes", item.bytes_expr
    if isinstance(item, A.RingBarrierInit):
        return "expect_tx", item.expect_tx_expr
    if isinstance(item, A.RingArrive):
        return "tx", item.tx_expr
    return "copy", item.bytes_expr


def _step_with_value(step: A.RingItem, value: int | None) -> A.RingItem:
    if value is None:
        return step
    if isinstance(step, A.RingBarrierInit):
        return dataclasses.replace(step, expect_tx=value)
    if isinstance(step, A.RingArrive):
        return dataclasses.replace(step, tx=value)
    if isinstance(step, A.RingCopy):
        return dataclasses.replace(step, bytes=value)
    return step


def stage_facts(items: Sequence[object]) -> dict[str, int]:
    """The facts whose value the stage fixes: owned with one value, else assumed (first written)."""
    env: dict[str, int] = {}
    for item in items:
        if isinstance(item, A.AssumesFact):
            env.setdefault(item.name, item.value)
    for item in items:
        if isinstance(item, A.OwnsFact) and item.value.kind == "exact":
            env[item.name] = item.value.values[0]
    return env


def _sized(items: Sequence[object]) -> Iterator[Sized]:
    for item in items:
        if isinstance(item, A.SmemClaim):
            yield item
        elif isinstance(item, A.Ring):
            for step in item.items:
                if isinstance(step, (A.RingBarrierInit, A.RingArrive, A.RingCopy)):
                    yield step


def resolve(stage: str, items: tuple[A.StageItem, ...]) -> Resolved:
    """Give each size expression of one stage its value (see the module doc)."""
    env = stage_facts(items)
    values: dict[int, int] = {}
    unbound: dict[str, list[Span]] = {}
    problems: list[Diagnostic] = []
    for item in _sized(items):
        keyword, expr = written(item)
        if expr is None:
            continue
        missing = sorted(names(expr) - env.keys())
        if missing:
            for name in missing:
                unbound.setdefault(name, []).extend(_uses(expr, name))
            continue
        try:
            value = evaluate(expr, env)
        except EvalError as err:
            problems.append(_no_value(stage, keyword, expr, f"{err}", env))
            continue
        if not 0 <= value <= SIZE_MAX:
            problems.append(_no_value(stage, keyword, expr, f"it is {value}", env))
            continue
        values[id(item)] = value
    problems.extend(_unbound(stage, name, spans, items, env) for name, spans in unbound.items())
    if not values:
        return Resolved(items, tuple(problems))
    out: list[A.StageItem] = []
    for kept in items:
        if isinstance(kept, A.SmemClaim) and id(kept) in values:
            out.append(dataclasses.replace(kept, bytes=values[id(kept)]))
        elif isinstance(kept, A.Ring):
            steps = tuple(_step_with_value(s, values.get(id(s))) for s in kept.items)
            out.append(dataclasses.replace(kept, items=steps))
        else:
            out.append(kept)
    return Resolved(tuple(out), tuple(problems))


def _uses(expr: Expr, name: str) -> Iterator[Span]:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Name):
            if node.id == name:
                yield node.span
        elif isinstance(node, Not):
            stack.append(node.operand)
        elif not isinstance(node, Int):
            stack.extend((node.right, node.left))


def _kib(value: int) -> str:
    """A literal as the printer writes a byte quantity (printer.size)."""
    return f"{value // 1024}KiB" if value >= 1024 and value % 1024 == 0 else str(value)


def _bound_text(env: dict[str, int], expr: Expr) -> str:
    return ", ".join(f"{n} = {env[n]}" for n in sorted(names(expr)) if n in env)


def _no_value(stage: str, keyword: str, expr: Expr, why: str, env: dict[str, int]) -> Diagnostic:
    bound = _bound_text(env, expr)
    return Diagnostic(
        Code.E_VALUE,
        f"the size `{keyword} {to_text(expr, _kib)}` of stage `{stage}` is no byte size: {why}",
        labels=(Label(expr.span, f"with {bound}" if bound else "this size"),),
        helps=(f"write a size between 0 and {SIZE_MAX} for the facts' values",),
    )


def _unbound(stage: str, name: str, spans: list[Span], items: Sequence[object], env: dict[str, int]) -> Diagnostic:
    owned = next((it for it in items if isinstance(it, A.OwnsFact) and it.name == name), None)
    used = next((it for it in items if isinstance(it, A.UsesFact) and it.name == name), None)
    first, *rest = spans
    others = tuple(Label(s, "and here", primary=False) for s in rest)
    if owned is not None:
        assert owned.value.kind != "exact"
        shown = (
            f"in {owned.value.values[0]}..{owned.value.values[1]}"
            if owned.value.kind == "range"
            else "in {" + ", ".join(map(str, owned.value.values)) + "}"
        )
        return Diagnostic(
            Code.E_VALUE,
            f"a size of stage `{stage}` is written from fact `{name}`, which it owns `{shown}`: the linker "
            "chooses that value, so the size has no value when the stage is built",
            labels=(
                Label(first, "a size compiled into the stage"),
                *others,
                Label(owned.value.span, "the linker chooses", primary=False),
            ),
            notes=("a size is compiled into the component's code: it needs one value of every fact it names",),
            helps=(f"own one value (`owns fact {name}: {owned.type} = …`) or write the size as an integer",),
        )
    if used is not None:
        return Diagnostic(
            Code.E_VALUE,
            f"a size of stage `{stage}` is written from fact `{name}`, which the stage reads at run time "
            f"(`uses fact … as param {used.param}`): the size has no value when the stage is built",
            labels=(
                Label(first, "a size compiled into the stage"),
                *others,
                Label(used.span, "a run-time value", primary=False),
            ),
            notes=("a size is compiled into the component's code: it needs one value of every fact it names",),
            helps=(f"assume the value the code is built for: `assumes fact {name}: {used.type} == …`",),
        )
    facts = {it.name for it in items if isinstance(it, (A.OwnsFact, A.UsesFact, A.AssumesFact))}
    guess = did_you_mean(name, tuple(sorted(facts)))
    return Diagnostic(
        Code.E_VALUE,
        f"a size of stage `{stage}` is written from `{name}`, which is no fact the stage owns or assumes",
        labels=(Label(first, "no value here"), *others),
        notes=("a size is written from facts the stage fixes: `owns fact x: u32 = v` or `assumes fact x: u32 == v`",),
        helps=(f"did you mean `{guess}`?",)
        if guess
        else (f"state the value the code is built for: `assumes fact {name}: u32 == …`",),
    )
