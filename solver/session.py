"""Solvers in contexts of their own, and assertions tracked by label."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

import z3

from diagnostics.span import Span
from solver import deadline
from solver.verdict import Verdict, verdict_of

L = TypeVar("L")


def context() -> z3.Context:
    """A fresh Z3 context: Z3's search depends on term identities, so a model built in a
    context of its own answers the same whatever this process solved before. The check that
    runs in this thread interrupts its queries when it must stop (:mod:`solver.deadline`)."""
    ctx = z3.Context()
    running = deadline.current()
    if running is not None:
        running.watch(ctx)
    return ctx


class Solver:
    """One Z3 solver (in ``ctx``, else a fresh context) under a per-check ``rlimit``.

    ``text`` adds assertions written in SMT-LIB (Z3's parser is far cheaper than building
    many terms through the Python API); ``check`` answers a :class:`Verdict`.
    """

    def __init__(
        self,
        ctx: z3.Context | None = None,
        *,
        rlimit: int | None = None,
        logic: str | None = None,
        arith_solver: int | None = None,
    ) -> None:
        self.ctx = ctx if ctx is not None else context()
        self.z3 = z3.SolverFor(logic, ctx=self.ctx) if logic else z3.Solver(ctx=self.ctx)
        self.checks = 0
        if rlimit is not None:
            self.z3.set("rlimit", rlimit)
        if arith_solver is not None:
            self.z3.set("smt.arith.solver", arith_solver)

    def set_rlimit(self, rlimit: int) -> None:
        self.z3.set("rlimit", rlimit)

    def add(self, *exprs: z3.BoolRef) -> None:
        self.z3.add(*exprs)

    def text(self, smt2: str) -> None:
        self.z3.from_string(smt2)

    def check(self, *assumptions: z3.BoolRef) -> Verdict:
        self.checks += 1
        return verdict_of(self.z3.check(*assumptions), self.z3)

    def model(self) -> z3.ModelRef:
        return self.z3.model()

    def core(self) -> list[z3.BoolRef]:
        return list(self.z3.unsat_core())


class Tracked(Generic[L]):
    """Labels of tracked assertions: one Boolean literal per label, a span per label where known.

    An assertion ``Implies(literal(a) ∧ literal(b) …, fact)`` is switched on by assuming
    its labels' literals; an unsat core of such assumptions reads back as labels.
    """

    def __init__(self, ctx: z3.Context) -> None:
        self.ctx = ctx
        self.literal: dict[L, z3.BoolRef] = {}
        self.span: dict[L, Span] = {}
        self._by_id: dict[int, L] = {}

    def __contains__(self, label: object) -> bool:
        return label in self.literal

    def __len__(self) -> int:
        return len(self.literal)

    def add(self, label: L, name: str, span: Span | None = None) -> z3.BoolRef:
        """The literal of ``label`` (a new Boolean named ``name`` the first time)."""
        lit = self.literal.get(label)
        if lit is None:
            lit = self.literal[label] = z3.Bool(name, self.ctx)
            self._by_id[lit.get_id()] = label
            if span is not None:
                self.span[label] = span
        return lit

    def literals(self, labels: Iterable[L]) -> list[z3.BoolRef]:
        return [self.literal[k] for k in labels]

    def labels(self, core: Iterable[z3.BoolRef]) -> list[L]:
        """The labels of the tracked literals in ``core`` (other literals are left out)."""
        by_id = self._by_id
        return [by_id[i] for c in core if (i := c.get_id()) in by_id]
