"""The Diagnostic model shared by every stage of kernlink.

A diagnostic has a stable code (``L-PAIR`` for a clause, ``E-SYNTAX`` for input
errors, ``I-…`` for informational notes), a severity, a one-line message in
rustc style (lowercase, no trailing period, names in backticks), labelled
spans (one or more primary, any number of secondary, in any files), notes
(circumstances) and helps (the fix).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from diagnostics.span import Span


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "note": 2}[self.value]


@dataclass(frozen=True)
class Label:
    span: Span
    text: str = ""
    primary: bool = True


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    severity: Severity = Severity.ERROR
    labels: tuple[Label, ...] = ()
    notes: tuple[str, ...] = ()
    helps: tuple[str, ...] = ()
    # Structured facts for tools (JSON/SARIF): conflicting values, traces, cores.
    data: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.code or not self.message:
            raise ValueError("a diagnostic needs a code and a message")
        if self.message.endswith("."):
            raise ValueError(f"diagnostic messages end without a period: {self.message!r}")

    @property
    def primary(self) -> Label | None:
        return next((lab for lab in self.labels if lab.primary), None)

    def sort_key(self) -> tuple[object, ...]:
        """Errors first, then warnings, then notes (an undecided site never hides the mistake); each by location."""
        first = self.primary.span if self.primary else None
        loc = (first.file, first.line, first.col) if first else ("", 0, 0)
        return (self.severity.rank, loc, self.code, self.message)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Deterministic order: by severity, primary location, code, message; duplicates dropped."""
    unique = {(d.code, d.message, d.labels, d.notes, d.helps, d.data): d for d in diags}
    return sorted(unique.values(), key=Diagnostic.sort_key)


class DiagnosticError(Exception):
    """Raised to abort a stage with diagnostics (never escapes the CLI as a traceback)."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(f"{d.code}: {d.message}" for d in self.diagnostics))
