"""The explicit state of one check: the composition, the selected codes, the model options.

Clauses that share an analysis (the protocol clauses share one model of the composition)
read it from the context the engine passes them, computed once per check. What may be
kept between checks (verdicts on the protocol's meaning, facts of a PTX payload) lives in
the context's :class:`~checker.memo.Memo`, which the caller owns: nothing is module-level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from checker.composition import Composition
from checker.memo import Memo
from checker.protocol.adapter import (
    Declared,
    ModelOptions,
    ModelReport,
    TooDeep,
    Unmodelled,
    analyse,
    unexplained,
)
from diagnostics.model import Diagnostic

F = TypeVar("F", bound=Declared)


@dataclass
class CheckContext:
    """One check of ``comp`` by the clauses ``codes``."""

    comp: Composition
    codes: frozenset[str]
    options: ModelOptions = field(default_factory=ModelOptions)
    memo: Memo = field(default_factory=Memo, repr=False)
    _protocol: ModelReport | None = field(default=None, repr=False)

    def protocol(self) -> ModelReport:
        """The protocol model's report (decided on first use)."""
        if self._protocol is None:
            self._protocol = analyse(self.comp, self.options, self.memo)
        return self._protocol

    def protocol_for(self, code: str) -> list[Diagnostic]:
        """The model's diagnostics of one protocol clause, tiered over the selected codes."""
        return [d for d in self.protocol().tiered(self.codes) if isinstance(d, Diagnostic) and d.code == code]

    def declared_for(self, code: str, kind: type[F]) -> list[F]:
        """The declarations' findings of one protocol clause (its module words them), tiered as the model's."""
        return [d for d in self.protocol().tiered(self.codes) if isinstance(d, kind) and d.code == code]

    def leftovers(self, reported: list[Diagnostic]) -> list[Diagnostic | TooDeep | Unmodelled]:
        """What no selected clause owns: undecided queries, channels the model left out, hangs.

        They are never filtered by the selection, and the model runs whatever the selection
        (a check of other clauses must not accept a composition that hangs): an undecided
        check is never an accept, and the finding that proves a hang is always shown.
        Rings too deep for the model and channels it left out come typed: L-DEADLOCK words them
        (``checker/clauses/l_deadlock.py``, whose ``leftovers`` is what the engine reports).
        """
        report = self.protocol()
        undecided = [
            d for d in report.tiered(self.codes) if isinstance(d, (Diagnostic, TooDeep)) and not d.code.startswith("L-")
        ]
        hangs = list(report.hang_proofs(self.codes))
        unmodelled = unexplained(self.comp, report.unmodelled, reported)
        return [*undecided, *hangs, *unmodelled, *report.notes]


__all__ = ["CheckContext"]
