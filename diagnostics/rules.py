"""Rule metadata that machine-readable renderers (SARIF) publish beside results."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleInfo:
    """One diagnostic code as a tool rule.

    ``summary`` is the one-line title; ``full_description`` the longer text
    (falls back to the summary when empty); ``help_uri`` an absolute URL to
    the rule's documentation, if it has one.
    """

    code: str
    name: str
    summary: str
    help_uri: str | None = None
    full_description: str = ""

    def __post_init__(self) -> None:
        if not self.code or not self.name or not self.summary:
            raise ValueError(f"a rule needs a code, a name and a summary: {self!r}")
