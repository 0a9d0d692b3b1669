"""Quick fixes for the language server: a diagnostic whose help is a mechanical edit of a contract.

Three helps are edits a tool can make without choosing for the author:
* ``add `fence proxy_async` to the … side of `RING``` (L-FENCE): a ``fence proxy_async`` line
  after the ring's ``writes``/``reads`` line the diagnostic points at;
* ``… first wait on `BARRIER` uses parity P`` (L-PARITY): that wait's ``parity`` set to P;
* ``add `FEATURE` to the stage's `requires feature` line`` (L-CONFORM): the feature appended
  to that line, or the line added after the stage's ``target``.

A fix is offered only when the edited text still parses, so an action never breaks a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.span import Span
from diagnostics.symbols import Code


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, col) to (end_line, end_col), 1-based and half-open, with ``text``."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]


_FENCE = re.compile(r"add `fence proxy_async` to the (producer|consumer) side of `([^`]+)`")
_PARITY = re.compile(r"first wait on `([^`]+)` uses parity ([01])")
_FEATURE = re.compile(r"add `([\w.]+)` to the stage's `requires feature` line")
_REQUIRES = re.compile(r"^(\s*)requires\s+feature\b[^#\n]*?(\s*)(#.*)?$")


def fix_for(d: Diagnostic, at: Span, text: str) -> Fix | None:
    """The quick fix of ``d`` in the file ``text`` whose label ``at`` it is shown at, if its help is one."""
    lines = text.split("\n")
    if not 1 <= at.line <= len(lines):
        return None
    helps = " ".join(d.helps)
    found: Fix | None = None
    if d.code == Code.L_FENCE and (m := _FENCE.search(helps)):
        found = _fence(lines, at)
    elif d.code == Code.L_PARITY and (m := _PARITY.search(helps)):
        found = _parity(lines, at, m.group(2))
    elif d.code in (Code.L_CONFORM, Code.I_CONFORM) and (m := _FEATURE.search(helps)):
        found = _feature(lines, at, m.group(1))
    return found if found is not None and _parses(text, found, at.file) else None


def _fence(lines: list[str], at: Span) -> Fix | None:
    line = lines[at.line - 1]
    if not re.match(r"\s*(writes|reads)\b", line):
        return None
    indent = line[: len(line) - len(line.lstrip())]
    return Fix("add `fence proxy_async`", (Edit(at.line + 1, 1, at.line + 1, 1, f"{indent}fence proxy_async\n"),))


def _parity(lines: list[str], at: Span, parity: str) -> Fix | None:
    line = lines[at.line - 1]
    if not re.match(r"\s*(full|empty)\s+wait\b", line):
        return None
    code = line.split("#", 1)[0].rstrip()
    stated = re.search(r"\bparity\s+\d+", code)
    if stated is not None:
        edit = Edit(at.line, stated.start() + 1, at.line, stated.end() + 1, f"parity {parity}")
    else:
        edit = Edit(at.line, len(code) + 1, at.line, len(code) + 1, f" parity {parity}")
    return Fix(f"wait with parity {parity}", (edit,))


def _feature(lines: list[str], at: Span, feature: str) -> Fix | None:
    start, end = _stage_around(lines, at.line)
    if start is None:
        return None
    for n in range(start, end):
        m = _REQUIRES.match(lines[n])
        if m is not None:
            code = lines[n].split("#", 1)[0].rstrip()
            return Fix(
                f"require feature `{feature}`", (Edit(n + 1, len(code) + 1, n + 1, len(code) + 1, f", {feature}"),)
            )
    after = next((n for n in range(start, end) if re.match(r"\s*target\b", lines[n])), start - 1)
    indent = "    "
    if after + 1 < len(lines):
        below = lines[after + 1]
        indent = below[: len(below) - len(below.lstrip())] or indent
    return Fix(
        f"require feature `{feature}`", (Edit(after + 2, 1, after + 2, 1, f"{indent}requires feature {feature}\n"),)
    )


def _stage_around(lines: list[str], line: int) -> tuple[int | None, int]:
    """The 0-based line after the `stage` header above ``line``, and the end of the file's lines."""
    for n in range(line - 1, -1, -1):
        if re.match(r"\s*stage\s+\"", lines[n]):
            return n + 1, len(lines)
    return None, len(lines)


def apply(text: str, fix: Fix) -> str:
    """``text`` with the fix's edits made (last first, so earlier positions hold)."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for e in sorted(fix.edits, key=lambda e: (e.line, e.col), reverse=True):
        start = offsets[e.line - 1] + e.col - 1
        end = offsets[e.end_line - 1] + e.end_col - 1
        text = text[:start] + e.text + text[end:]
    return text


def _parses(text: str, fix: Fix, name: str) -> bool:
    from contract_lang.parser import parse_text

    try:
        parse_text(apply(text, fix), name, "contract")
    except DiagnosticError:
        return False
    return True
