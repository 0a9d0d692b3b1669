"""Hover and go-to-definition for the language server, over the contracts beside a file.

* hover on a diagnostic code (``L-PAIR`` written anywhere, or a position a published
  diagnostic covers): the code's ``kernlink explain`` text;
* hover on an item of a stage (a ring, a claim, a role, a fact) when a link of the composition
  exists: the value each of its handles folded to, from that link's ``link.json`` (the newest
  one below the file's folder);
* definition of a ring name: the other side's ``ring`` block (the consumers of a produced ring,
  the producer of a consumed one); of a fact's name (``uses``, ``assumes``, ``requires``, a param's
  ``= fact``): the ``owns fact`` line of its owner; of a stage
  named in a pipeline's ``use``: its ``stage`` header.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from contract_lang import ast as A
from diagnostics.model import DiagnosticError
from diagnostics.span import Span

_WORD = re.compile(r"[A-Za-z_][\w.\-]*")
LINK_SEARCH_DEPTH = 3
"""How many folders below a file's folder the hover looks for a `link.json`."""
LINK_JSON_LIMIT = 16 << 20
"""The largest `link.json` the hover reads (a link map of real kernels is a few hundred KiB)."""


def word_at(text: str, line: int, col: int) -> str | None:
    """The identifier (dots and dashes allowed: stage names, codes) at 1-based ``line``/``col``."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    for m in _WORD.finditer(lines[line - 1]):
        if m.start() < col <= m.end() + 1 and m.start() + 1 <= col:
            return m.group(0).strip(".-")
    return None


def _parsed(path: Path, text: str | None = None) -> A.SourceFile | None:
    from contract_lang.parser import parse_text

    try:
        body = text if text is not None else path.read_text(encoding="utf-8")
        return parse_text(body, str(path), "pipeline" if path.suffix == ".kp" else "contract")
    except (OSError, UnicodeDecodeError, DiagnosticError):
        return None


def _contracts(folder: Path, current: Path, text: str) -> Iterator[tuple[Path, A.SourceFile]]:
    """Every `.kc` of ``folder`` parsed (``current`` as its buffer ``text``)."""
    for path in sorted(folder.glob("*.kc")):
        parsed = _parsed(path, text if path == current else None)
        if parsed is not None:
            yield path, parsed


def _stage_at(source: A.SourceFile, line: int) -> A.Stage | None:
    return next((s for s in source.stages if s.span.line <= line <= s.span.end_line), None)


def definition(path: Path, text: str, line: int, col: int) -> list[Span]:
    """Where the name at ``line``/``col`` of ``path`` (whose buffer is ``text``) is defined elsewhere."""
    word = word_at(text, line, col)
    if word is None:
        return []
    here = _parsed(path, text)
    if here is None:
        return []
    contracts = list(_contracts(path.parent, path, text))
    if path.suffix == ".kp":
        return [
            _head(s.span, path_)
            for p in here.pipelines
            for u in p.uses
            if u.stage == word and u.span.line == line
            for path_, src in contracts
            for s in src.stages
            if s.name == word
        ]
    stage = _stage_at(here, line)
    if stage is None:
        return []
    mine = [r for r in stage.of(A.Ring) if r.name == word]
    if mine:
        sides = {r.side for r in mine}
        return [
            _head(r.span, p)
            for p, src in contracts
            for s in src.stages
            if s.name != stage.name
            for r in s.of(A.Ring)
            if r.name == word and r.side not in sides
        ]
    return [
        _head(f.span, p)
        for p, src in contracts
        for s in src.stages
        for f in s.of(A.OwnsFact)
        if f.name == word and not (p == path and f.span.line == line)
    ]


def _head(span: Span, path: Path) -> Span:
    """The first line of a declaration, in the file ``path``."""
    return Span(str(path), span.line, span.col, span.line, span.col + 1)


def hover(path: Path, text: str, line: int, col: int, codes_here: Sequence[str], known: Sequence[str]) -> str | None:
    """What to show at ``line``/``col``: explain text for a code, folded handle values for an item."""
    from kernlink.docs import explain_text

    word = word_at(text, line, col)
    parts: list[str] = []
    shown = [word] if word is not None and word in known else []
    shown += [c for c in codes_here if c in known and c not in shown]
    parts.extend(explain_text(c).rstrip() for c in shown)
    if word is not None and path.suffix == ".kc":
        folded = _folded(path, text, line, word)
        if folded:
            parts.append(folded)
    return "\n\n---\n\n".join(parts) if parts else None


def _folded(path: Path, text: str, line: int, word: str) -> str | None:
    here = _parsed(path, text)
    stage = _stage_at(here, line) if here is not None else None
    if stage is None:
        return None
    found = newest_link(path.parent, stage.name)
    if found is None:
        return None
    where, handles = found
    rows = [h for h in handles if h.get("stage") == stage.name and h.get("item") == word]
    if not rows:
        return None
    lines = [f"`{h.get('symbol')}` = {h.get('value')}: {h.get('why')}" for h in rows]
    return "\n".join([f"folded by the link in `{where}`:", *(f"- {x}" for x in lines)])


def newest_link(folder: Path, stage: str) -> tuple[str, list[dict[str, object]]] | None:
    """The newest `link.json` below ``folder`` (``LINK_SEARCH_DEPTH`` levels) that links ``stage``:
    its folder, relative to ``folder``, and its handles."""
    best: tuple[float, Path, list[dict[str, object]]] | None = None
    for depth in range(1, LINK_SEARCH_DEPTH + 1):
        for record in folder.glob("/".join(["*"] * depth) + "/link.json"):
            try:
                when = record.stat().st_mtime
                if record.stat().st_size > LINK_JSON_LIMIT:
                    continue
                data = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                continue  # a file in the workspace, not necessarily kernlink's: anything unreadable is skipped
            generated = data.get("generated") if isinstance(data, dict) else None
            handles = generated.get("handles") if isinstance(generated, dict) else None
            if not isinstance(handles, list) or not any(
                isinstance(h, dict) and h.get("stage") == stage for h in handles
            ):
                continue
            if best is None or (when, str(record)) > (best[0], str(best[1])):
                best = (when, record, [h for h in handles if isinstance(h, dict)])
    if best is None:
        return None
    return str(best[1].parent.relative_to(folder)), best[2]
