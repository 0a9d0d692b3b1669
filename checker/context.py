"""The explicit state of one check: the composition, the selected codes, the model options.

Clauses that share an analysis (the protocol clauses share one model of the composition)
read it from the context the engine passes them, computed once per check. What may be
kept between checks (verdicts on the protocol's meaning, facts of a PTX payload) lives in
the context's :class:`~checker.memo.Memo`, which the caller owns: nothing is module-level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checker import policy
from checker.composition import Composition
from checker.memo import Memo
from checker.protocol.check import ModelOptions
from checker.protocol.depths import ModelFinding, ModelReport, analyse
from diagnostics.model import Diagnostic


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

    def protocol_for(self, code: str) -> list[ModelFinding]:
        """The findings of one protocol clause that the selection reports (``checker/policy.py``)."""
        return [f for f in policy.reported(self.protocol(), self.codes)[0] if f.code == code]

    def leftovers(self, found: list[Diagnostic]) -> list[policy.Leftover]:
        """What no selected clause owns, given what the clauses ``found`` (:func:`checker.policy.leftovers`)."""
        return policy.leftovers(self.protocol(), self.codes, self.comp, found)


__all__ = ["CheckContext"]
