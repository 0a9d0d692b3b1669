"""The one home of SMT solving: budgets, verdicts, tracked assertions, unsat cores, undecided diagnostics.

Every question kernlink asks Z3 goes through this package and gets a :class:`Verdict`
(``sat``, ``unsat`` or ``unknown`` with the solver's reason: *unknown* is an answer of
every question, never read as either of the others); every check runs under a
reproducible budget (:mod:`solver.budget`, one table of them all, Z3 ``rlimit`` units);
assertions are tracked by labels (:class:`Tracked`: a literal per label, cores read back
as labels, labels carry the spans they come from); one deletion-based minimiser turns a
core into a minimal one (:func:`minimise_core`); and ``E-SOLVER-UNKNOWN`` is built in one
place (:func:`unknown_diagnostic`), always with a span.

Where Z3 is imported. Only here, and in the modules that *encode* a model into Z3 terms:

- ``checker.protocol.smt`` — the bounded interleaving model of a protocol;
- ``checker.protocol.parametric`` — the counter abstraction proving a protocol for every depth;
- ``checker.facts`` — fact constraints (L-ASSUME), exactly as ``contract_lang.expr`` evaluates;
- ``transfer_model.smt`` — layout and routing queries over bounded integers;
- ``placement._storage`` and ``placement._warps`` — the placement models.

Everything else (the protocol's decision procedure, placement's searches, the clauses)
reads verdicts, labels and models through this package.
"""

from __future__ import annotations

from solver.budget import BUDGETS, DEFAULT_RLIMIT, MAX_RLIMIT, Budget, Budgets, rlimit_count, validate_rlimit
from solver.core import minimise_core
from solver.deadline import Cancelled, Deadline, TimeBudgetSpent, within
from solver.diagnostic import UNKNOWN_CODE, time_budget_diagnostic, unknown_diagnostic
from solver.session import Solver, Tracked, context
from solver.verdict import SAT, UNKNOWN, UNSAT, Answer, Verdict, Witnessed, verdict_of

__all__ = [
    "BUDGETS",
    "DEFAULT_RLIMIT",
    "MAX_RLIMIT",
    "SAT",
    "UNKNOWN",
    "UNKNOWN_CODE",
    "UNSAT",
    "Answer",
    "Budget",
    "Budgets",
    "Cancelled",
    "Deadline",
    "Solver",
    "TimeBudgetSpent",
    "Tracked",
    "Verdict",
    "Witnessed",
    "context",
    "minimise_core",
    "rlimit_count",
    "time_budget_diagnostic",
    "unknown_diagnostic",
    "validate_rlimit",
    "verdict_of",
    "within",
]
