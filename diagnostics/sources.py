"""Source text lookup for renderers: file name → text, registered by whoever read it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SourceMap:
    texts: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, text: str) -> None:
        self.texts[name] = text

    def line(self, name: str, line: int) -> str | None:
        text = self.texts.get(name)
        if text is None:
            return None
        lines = text.split("\n")  # the lexer counts only \n as a line break
        return lines[line - 1] if 1 <= line <= len(lines) else ("" if line == len(lines) + 1 else None)
