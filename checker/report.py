"""Building diagnostics for clauses: a seam has a primary side and secondary sides."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span


def seam(
    code: str,
    message: str,
    primary: tuple[Span, str],
    secondary: Iterable[tuple[Span, str]] = (),
    *,
    notes: Iterable[str] = (),
    helps: Iterable[str] = (),
    data: Mapping[str, object] | None = None,
    severity: Severity = Severity.ERROR,
) -> Diagnostic:
    """A diagnostic with one primary label and any number of secondary ones."""
    labels = [Label(primary[0], primary[1], True)]
    labels.extend(Label(span, text, False) for span, text in secondary)
    pairs = tuple(sorted((str(k), str(v)) for k, v in (data or {}).items()))
    return Diagnostic(
        code, message, severity=severity, labels=tuple(labels), notes=tuple(notes), helps=tuple(helps), data=pairs
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def size(n: int, unit: str = " bytes") -> str:
    """A byte count as contracts write it: ``16384KiB`` when whole KiB, else ``100 bytes``."""
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}KiB"
    return f"{n}{unit}"
