"""The terminal renderer: rustc-style snippets with labelled underlines, built on rich.

Each diagnostic prints its headline, then one snippet per file (the primary
file under ``-->``, the others under ``:::``) with every labelled line and its
underline (``^`` primary, ``-`` secondary), then its notes and helps, and a
pointer to ``kernlink explain`` for clause codes.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable
from io import StringIO

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from diagnostics.escape import escape_controls
from diagnostics.model import Diagnostic, Label, Severity, sort_diagnostics
from diagnostics.sources import SourceMap


class _Lines:
    """Each file's lines, split once per rendering (a diagnostic may carry thousands of labels)."""

    def __init__(self, sources: SourceMap) -> None:
        self.sources = sources
        self.cache: dict[str, list[str] | None] = {}

    def line(self, name: str, line: int) -> str | None:
        if name not in self.cache:
            text = self.sources.texts.get(name)
            self.cache[name] = None if text is None else text.split("\n")  # only \n breaks a line
        lines = self.cache[name]
        if lines is None:
            return None
        return lines[line - 1] if 1 <= line <= len(lines) else ("" if line == len(lines) + 1 else None)


_SEVERITY_STYLE = {
    Severity.ERROR: "bold red",
    Severity.WARNING: "bold yellow",
    Severity.NOTE: "bold green",
}
_GUTTER_STYLE = "bold blue"
_SECONDARY_STYLE = "bold blue"
_TAB_SIZE = 4
_MIN_WRAP = 40


def render_text(
    diags: Iterable[Diagnostic],
    sources: SourceMap,
    *,
    color: bool | None = None,
    width: int = 100,
    summary: str | None = None,
) -> str:
    """Render diagnostics for a terminal, in deterministic order.

    ``color=None`` colours only when stdout is a terminal and ``NO_COLOR`` is
    unset. ``width`` bounds the wrapping of notes and helps (source lines are
    never wrapped). With ``summary`` (e.g. ``"composition rejected"``) the
    output ends with a line such as ``error: composition rejected with 2 errors``.
    """
    ordered = sort_diagnostics(diags)
    lines: list[Text] = []
    cache = _Lines(sources)
    for diag in ordered:
        if lines:
            lines.append(Text())
        lines.extend(_render_diagnostic(diag, cache, width))
    if summary is not None:
        if lines:
            lines.append(Text())
        lines.append(_summary_line(ordered, summary))
    if not lines:
        return ""
    use_color = _stdout_wants_color() if color is None else color
    buffer = StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=use_color,
        no_color=not use_color,
        color_system="standard" if use_color else None,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(Text("\n").join(lines))
    return buffer.getvalue()


def _stdout_wants_color() -> bool:
    stream = sys.stdout
    return stream is not None and stream.isatty() and not os.environ.get("NO_COLOR")


def _render_diagnostic(diag: Diagnostic, sources: _Lines, width: int) -> list[Text]:
    style = _SEVERITY_STYLE[diag.severity]
    gutter = max((len(str(lab.span.line)) for lab in diag.labels), default=1)
    pad = " " * gutter
    headline = Text.assemble(
        (f"{diag.severity.value}[{escape_controls(diag.code)}]", style),
        (f": {escape_controls(diag.message)}", "bold"),
    )
    out = [headline]
    for index, (anchor, labels) in enumerate(_file_groups(diag)):
        if index:
            out.append(_bar(pad))
        arrow = "-->" if index == 0 else ":::"
        out.append(Text.assemble(pad, (arrow, _GUTTER_STYLE), f" {escape_controls(str(anchor.span))}"))
        out.append(_bar(pad))
        out.extend(_snippet(labels, sources, gutter, style))
    trailers = [("note", note) for note in diag.notes] + [("help", help_) for help_ in diag.helps]
    explain = diag.code.startswith("L-")
    if diag.labels and (trailers or explain):
        out.append(_bar(pad))
    for kind, body in trailers:
        out.extend(_trailer(pad, kind, body, width))
    if explain:
        run = f"run `kernlink explain {diag.code}`"
        out.append(Text.assemble(pad, (" = ", _GUTTER_STYLE), run))
    return out


def _file_groups(diag: Diagnostic) -> list[tuple[Label, list[Label]]]:
    """Labels grouped by file, the primary's file first, each group with its header label."""
    by_file: dict[str, list[Label]] = {}
    lead = diag.primary or (diag.labels[0] if diag.labels else None)
    if lead is not None:
        by_file[lead.span.file] = []
    for label in diag.labels:
        by_file.setdefault(label.span.file, []).append(label)
    groups = []
    for index, labels in enumerate(by_file.values()):
        labels.sort(key=lambda lab: (lab.span, not lab.primary, lab.text))
        anchor = lead if index == 0 and lead is not None else labels[0]
        groups.append((anchor, labels))
    return groups


def _snippet(labels: list[Label], sources: _Lines, gutter: int, style: str) -> list[Text]:
    pad = " " * gutter
    out: list[Text] = []
    previous: int | None = None
    for label in labels:
        line = label.span.line
        source = sources.line(label.span.file, line)
        marker, mark_style = ("^", style) if label.primary else ("-", _SECONDARY_STYLE)
        if source is None:
            where = f"{line}:{label.span.col}"
            text = f"{where}: {escape_controls(label.text)}" if label.text else where
            out.append(Text.assemble(_gutter_text(pad), (f"{marker} {text}", mark_style)))
            continue
        if line != previous:
            # Labels are sorted: the first on a line places the window of a long line.
            shift = _shift(source, label.span.col)
            between = sources.line(label.span.file, line - 1)
            if previous == line - 2 and between is not None:
                out.append(_source_line(line - 1, _window(between, _shift(between, label.span.col)), gutter))
            elif previous is not None and line > previous + 1:
                out.append(Text("...", style=_GUTTER_STYLE))
            out.append(_source_line(line, _window(source, shift), gutter))
            previous = line
        start, length, more = _underline(source, label, shift)
        underline = marker * length + ("..." if more else "")
        body = f"{underline} {escape_controls(label.text)}" if label.text else underline
        out.append(Text.assemble(_gutter_text(pad), " " * start, (body, mark_style)))
    return out


def _source_line(line: int, source: str, gutter: int) -> Text:
    shown = escape_controls(source.expandtabs(_TAB_SIZE)).rstrip()
    return Text.assemble((f"{line:>{gutter}} |", _GUTTER_STYLE), f" {shown}" if shown else "")


def _underline(source: str, label: Label, shift: int) -> tuple[int, int, bool]:
    """Display offset and width of a label's underline on its first line (a long line seen
    through its window, see :func:`_window`); whether the underline continues."""
    span = label.span
    view = _window(source, shift)
    more = span.end_line > span.line or (shift + len(view) < len(source) and span.end_col - 1 > shift + len(view))
    first = min(max(0, span.col - 1 - shift), len(view))
    last = len(view) if more else max(first, span.end_col - 1 - shift)
    start = _cells(view, first)
    return start, max(1, _cells(view, last) - start), more


# A source line longer than this is shown as a window of it around its first label.
_MAX_LINE = 160
_CONTEXT = 40


def _shift(source: str, col: int) -> int:
    """How far the window of ``source`` around column ``col`` moves the columns: the characters
    cut from the start, less the one ellipsis that stands in for them."""
    if len(source) <= _MAX_LINE:
        return 0
    start = max(0, min(col - 1 - _CONTEXT, len(source) - _MAX_LINE))
    return start - 1 if start else 0


def _window(source: str, shift: int) -> str:
    """The part of a long line the snippet shows, with `…` where it was cut."""
    if len(source) <= _MAX_LINE:
        return source
    start = shift + 1 if shift else 0
    head = "…" if start else ""
    tail = "…" if start + _MAX_LINE < len(source) else ""
    return head + source[start : start + _MAX_LINE] + tail


def _cells(source: str, index: int) -> int:
    """Terminal cells taken by the first ``index`` characters, counting columns past the end."""
    shown = escape_controls(source[:index].expandtabs(_TAB_SIZE))
    return cell_len(shown) + max(0, index - len(source))


def _gutter_text(pad: str) -> Text:
    return Text.assemble(pad, (" |", _GUTTER_STYLE), " ")


def _bar(pad: str) -> Text:
    return Text.assemble(pad, (" |", _GUTTER_STYLE))


def _trailer(pad: str, kind: str, body: str, width: int) -> list[Text]:
    body = escape_controls(body)
    lead = f"{pad} = {kind}: "
    room = max(_MIN_WRAP, width - len(lead))
    # Indented lines are preformatted (tables, traces): kept as they are, never wrapped.
    wrapped = [
        piece
        for paragraph in body.splitlines() or [""]
        for piece in (
            [paragraph]
            if paragraph.startswith(" ")
            else textwrap.wrap(paragraph, room, break_long_words=False, break_on_hyphens=False) or [""]
        )
    ]
    head = f" {wrapped[0]}".rstrip()
    out = [Text.assemble(pad, (" = ", _GUTTER_STYLE), (f"{kind}:", "bold"), head)]
    out.extend(Text(" " * len(lead) + piece) if piece else Text() for piece in wrapped[1:])
    return out


def _summary_line(diags: list[Diagnostic], summary: str) -> Text:
    counts = {severity: 0 for severity in Severity}
    for diag in diags:
        counts[diag.severity] += 1
    parts = [_plural(n, severity.value) for severity, n in counts.items() if n]
    worst = min((d.severity for d in diags), key=lambda s: s.rank, default=Severity.NOTE)
    tally = ", ".join(parts) if parts else "no diagnostics"
    tail = f": {summary} with {tally}"
    return Text.assemble((worst.value, _SEVERITY_STYLE[worst]), (tail, "bold"))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
