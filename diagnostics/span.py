"""Source positions: a file, a 1-based start line/column and an exclusive end."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Span:
    """A region of one source file.

    Lines and columns are 1-based; ``end_line``/``end_col`` point one past the last
    character (half-open), so a one-character token at column 5 has ``end_col == 6``.
    """

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __post_init__(self) -> None:
        if self.line < 1 or self.col < 1:
            raise ValueError(f"span starts before 1:1: {self}")
        if (self.end_line, self.end_col) < (self.line, self.col):
            raise ValueError(f"span ends before it starts: {self}")

    @classmethod
    def point(cls, file: str, line: int, col: int) -> Span:
        return cls(file, line, col, line, col + 1)

    def cover(self, other: Span) -> Span:
        """The smallest span of this file covering both spans."""
        if other.file != self.file:
            raise ValueError("cannot cover spans of different files")
        start = min((self.line, self.col), (other.line, other.col))
        end = max((self.end_line, self.end_col), (other.end_line, other.end_col))
        return Span(self.file, start[0], start[1], end[0], end[1])

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_SPAN = Span("<unknown>", 1, 1, 1, 1)
