"""A placement core as a finding: the items placement cannot give their resource together.

Placement decides (an unsat core, shown minimal by the solver layer); the clause that
owns the code words it (l_overlap, l_barrier). This module holds the parts every
core's diagnostic shares: one label per member, the co-liveness notes, the data.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnostics.model import Label
from diagnostics.span import Span


@dataclass(frozen=True)
class Member:
    """One item of a core: where it is declared, what it needs, and when it is live."""

    span: Span
    name: str
    need: str  # e.g. "needs 4096 B"
    lifetime: str  # e.g. "kernel", "phase dispatch"


@dataclass(frozen=True)
class Core:
    """A set of items of one resource that cannot all be placed; ``primary`` is the largest."""

    members: tuple[Member, ...]
    primary: int
    needs: int
    needs_exact: bool
    offers: int
    minimal: bool
    co_live: tuple[str, ...] = ()  # why the members are live together

    @property
    def needs_text(self) -> str:
        return str(self.needs) if self.needs_exact else f"at least {self.needs}"

    def labels(self) -> tuple[Label, ...]:
        return tuple(
            Label(m.span, f"`{m.name}` {m.need} ({m.lifetime})", k == self.primary) for k, m in enumerate(self.members)
        )

    def notes(self, unit: str) -> list[str]:
        """The notes every core carries, in order: members, why together, shortfall."""
        members = ", ".join(f"`{m.name}` ({m.lifetime})" for m in self.members)
        notes = [f"these claims may be live at the same time: {members}"]
        if self.co_live:
            notes.append("live together because " + "; ".join(self.co_live))
        if self.needs_exact:
            notes.append(f"short by {self.needs - self.offers} {unit}")
        return notes

    def budget_notes(self) -> list[str]:
        notes = []
        if not self.needs_exact:
            notes.append("the solver budget ran out before the exact need was found; the figure is a lower bound")
        if not self.minimal:
            notes.append("the solver budget ran out before this set was shown minimal")
        return notes

    def data(self, domain: str) -> tuple[tuple[str, str], ...]:
        return (
            ("domain", domain),
            ("capacity", str(self.offers)),
            ("needs", str(self.needs)),
            ("needs_exact", str(self.needs_exact).lower()),
            ("shortfall", str(self.needs - self.offers)),
            ("core", ", ".join(m.name for m in self.members)),
            ("minimal", str(self.minimal).lower()),
        )
