"""Suggestions for a mistyped word: the one "did you mean" of every diagnostic."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest of ``choices`` to ``word`` when one is close enough to suggest, else None."""
    import difflib  # only for a mistake: no check that passes needs it

    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None
