"""Spans inside a package, told in the user's files.

A stage checked from a package (`use … from "build/x.kpkg"`) is read from the package's copy
of its contract, in canonical form: its spans name ``build/x.kpkg!contract.kc`` with lines
that differ from the ``.kc`` the user wrote. When a ``.kc`` of the inputs holds the same
contract (equal items: no ``W-STALE-CONTRACT``), every such span is told at the same item of
that ``.kc`` (:func:`user_spans`, for every verb). An editor also needs a file for the rest
(:func:`editor_spans`): a PTX line goes to the CUDA line its ``.loc`` names when that source
is the package's, beside it; anything else inside a package to the `use` line naming it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from package.loader import Inputs, StageEntry

SpanMap = Mapping[Span, Span]


def _spans(node: object) -> Iterator[Span]:
    """Every span of an AST node, in field order (children included)."""
    if isinstance(node, Span):
        yield node
    elif isinstance(node, tuple):
        for item in node:
            yield from _spans(item)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from _spans(getattr(node, f.name))


def _pairs(packed: StageEntry, written: StageEntry) -> dict[Span, Span]:
    """The package's spans of a stage paired with the written file's (the same items, walked together)."""
    ours, theirs = list(_spans(packed.stage)), list(_spans(written.stage))
    if len(ours) != len(theirs):
        return {packed.stage.span: written.stage.span}
    return dict(zip(ours, theirs, strict=True))


def contract_map(inputs: Inputs) -> dict[str, dict[Span, Span]]:
    """For each package's contract (``x.kpkg!contract.kc``) a `.kc` of the inputs holds unchanged:
    its spans paired with that file's."""
    written = [c for c in inputs.candidates if c.package is None]
    out: dict[str, dict[Span, Span]] = {}
    for packed in (c for c in inputs.candidates if c.package is not None):
        same = next((c for c in written if c.name == packed.name and c.stage == packed.stage), None)
        if same is not None:
            out.setdefault(packed.source, {}).update(_pairs(packed, same))
    return out


def _moved(span: Span, pairs: SpanMap) -> Span | None:
    """``span`` in the written file: its pair, or the pair of the smallest span around it, shifted alike."""
    if span in pairs:
        return pairs[span]
    around = [
        s
        for s in pairs
        if (s.line, s.col) <= (span.line, span.col) and (span.end_line, span.end_col) <= (s.end_line, s.end_col)
    ]
    if not around:
        return None
    outer = min(around, key=lambda s: (s.end_line - s.line, s.end_col - s.col if s.end_line == s.line else 0))
    to = pairs[outer]
    line, end_line = to.line + span.line - outer.line, to.line + span.end_line - outer.line
    col = to.col + span.col - outer.col if span.line == outer.line else span.col
    end_col = to.col + span.end_col - outer.col if span.end_line == outer.line else span.end_col
    try:
        return Span(to.file, line, max(col, 1), max(end_line, line), end_col)
    except ValueError:
        return to


_CITED = re.compile(r"([^\s()`]+![\w.]+):(\d+):(\d+)")


def relabel(diags: Sequence[Diagnostic], move: Mapping[str, SpanMap]) -> list[Diagnostic]:
    """``diags`` with every span (and every ``file:line:col`` a note cites) of a mapped file moved."""

    def span(s: Span) -> Span:
        pairs = move.get(s.file)
        moved = _moved(s, pairs) if pairs is not None else None
        return moved if moved is not None else s

    def cite(m: re.Match[str]) -> str:
        if m.group(1) not in move:
            return m.group(0)
        return str(span(Span.point(m.group(1), int(m.group(2)), int(m.group(3)))))

    out = []
    for d in diags:
        labels = tuple(dataclasses.replace(lab, span=span(lab.span)) for lab in d.labels)
        notes = tuple(_CITED.sub(cite, n) for n in d.notes)
        out.append(dataclasses.replace(d, labels=labels, notes=notes) if (labels, notes) != (d.labels, d.notes) else d)
    return out


def user_spans(diags: Sequence[Diagnostic], inputs: Inputs | None) -> list[Diagnostic]:
    """``diags`` told in the user's `.kc` files wherever a package holds the same contract."""
    if inputs is None:
        return list(diags)
    move = contract_map(inputs)
    return relabel(diags, move) if move else list(diags)


def editor_spans(diags: Sequence[Diagnostic], inputs: Inputs) -> list[Diagnostic]:
    """:func:`user_spans`, then every span still inside a package moved to a file of the user's: a PTX
    line to its CUDA line (``.loc``) in the package's source beside it, anything else to the `use`
    line that names the package (or dropped to the next label when none does)."""
    mapped = user_spans(diags, inputs)
    packages = {c.package: c for c in inputs.candidates if c.package is not None}
    cuda = {f"{name}!code.ptx": _ptx_lines(entry, name) for name, entry in packages.items()}

    def place(lab: Label) -> Label | None:
        file = lab.span.file
        if "!" not in file:
            return lab
        name, _, part = file.partition("!")
        if part == "code.ptx":
            where = cuda.get(file, {}).get(lab.span.line)
            if where is not None:
                return dataclasses.replace(lab, span=where, text=lab.text or "the CUDA line")
        entry = packages.get(name)
        if entry is not None and entry.use is not None:
            return dataclasses.replace(lab, span=entry.use.span, text=f"in `{name}` ({part}): {lab.text}".rstrip(": "))
        return None

    out = []
    for d in mapped:
        placed = [p for p in (place(lab) for lab in d.labels) if p is not None]
        if placed and not any(p.primary for p in placed):
            placed[0] = dataclasses.replace(placed[0], primary=True)
        out.append(dataclasses.replace(d, labels=tuple(placed)) if placed or not d.labels else d)
    return out


def _ptx_lines(entry: StageEntry, package: str) -> dict[int, Span]:
    """Each PTX line of a package's code that a `.loc` ties to the package's own source, beside it."""
    ptx = entry.captured.ptx if entry.captured is not None else None
    if not ptx:
        return {}
    from package.codefacts.ptx import parse

    folder = Path(package).parent
    folder = folder.parent if folder.name == "build" else folder
    out: dict[int, Span] = {}
    for fn in parse(ptx).functions:
        for ins in fn.body:
            if ins.src is None or ins.src[1] < 1:
                continue
            source = folder / ins.src[0]
            if source.is_file():
                out[ins.line] = Span(str(source), ins.src[1], 1, ins.src[1], 2)
    return out
