"""The one answer type of every solver question: sat, unsat, or unknown with a reason (and the witness of a sat)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import z3

from diagnostics import interrupts
from solver import deadline

# Z3 catches SIGINT during a check and answers `unknown` — indistinguishable from a spent
# budget ("canceled"), which an earlier kernlink read as a verdict. Leave SIGINT to Python:
# the interrupt is raised as KeyboardInterrupt when the query returns (its rlimit bounds
# the wait), and the CLI exits 130 with no verdict. One that a finalizer swallowed (a Z3
# object's `__del__`) is raised by the next verdict (diagnostics/interrupts.py).
z3.set_param("ctrl_c", False)


class Answer(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Verdict:
    """What the solver said. ``unknown`` (the budget ran out, or the theory defeated the
    solver) is an answer of its own: callers report it, never read it as sat or unsat."""

    answer: Answer
    reason: str = ""

    @property
    def sat(self) -> bool:
        return self.answer is Answer.SAT

    @property
    def unsat(self) -> bool:
        return self.answer is Answer.UNSAT

    @property
    def unknown(self) -> bool:
        return self.answer is Answer.UNKNOWN


@dataclass(frozen=True)
class Witnessed:
    """A question's verdict with its witness: when ``sat``, the values the model gives the
    question's variables (the counterexample or the example asked for), else nothing."""

    verdict: Verdict
    witness: tuple[tuple[str, int], ...] = ()

    def value(self, name: str) -> int:
        return dict(self.witness)[name]


SAT = Verdict(Answer.SAT)
UNSAT = Verdict(Answer.UNSAT)
UNKNOWN = Verdict(Answer.UNKNOWN)


def verdict_of(result: z3.CheckSatResult, solver: z3.Solver) -> Verdict:
    """The verdict of a finished ``solver.check``; an interrupted check raises instead.

    Z3 answers ``unknown`` for Ctrl-C ("interrupted from keyboard"; a spent ``rlimit``
    reads "canceled"): read as a spent budget it would carry on to a verdict, so an
    interrupt raises :class:`KeyboardInterrupt` and ends the run, and so does one recorded
    while the query ran. A check past its deadline, or cancelled, stops here too
    (:mod:`solver.deadline`).
    """
    interrupts.checkpoint()
    deadline.step()
    if result == z3.unsat:
        return UNSAT
    if result == z3.sat:
        return SAT
    reason = solver.reason_unknown()
    if "interrupt" in reason.lower():
        raise KeyboardInterrupt(reason)
    return Verdict(Answer.UNKNOWN, reason)
