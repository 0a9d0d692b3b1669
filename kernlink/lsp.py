"""`kernlink lsp`: a minimal language server (pygls) that publishes kernlink's diagnostics.

What it does, over stdio:
* on every change of a ``.kc``/``.kp`` buffer, the buffer is parsed as typed and its syntax
  diagnostics (E-SYNTAX, E-NAME, …) are published once the edits pause (:data:`DEBOUNCE`);
* on open and on save, the composition is checked from disk as ``kernlink check`` does: a
  pipeline (``.kp``) itself, a contract (``.kc``) through every pipeline beside it (alone
  when there is none); every diagnostic is published on the file its primary span is in,
  with the other labels as related information and the helps appended to the message.
A file that had diagnostics and has none after a check is cleared. A span inside a package
is shown in the user's files (kernlink/spans.py): at the same item of a `.kc` that holds the
same contract, at the CUDA line a PTX line's ``.loc`` names, else on the `use` line of the
pipeline; when a packed stage's `.kc` was edited, the composition is also checked with the
edited contract, and both are shown. Hover (a code's explain text, the values the last link
folded an item's handles to) and go-to-definition are in kernlink/lsp_nav.py; quick fixes,
for a diagnostic whose help is a mechanical edit, in kernlink/lsp_fixes.py.

The message loop never parses or checks: it hands each request to one worker thread
(:class:`Worker`) and answers the next message. A newer request replaces an older one of
the same file (or folder, for checks) that has not started, and cancels one that is
running (it stops at its next solver verdict, :mod:`solver.deadline`); a result that
became stale while it was computed is never published. A buffer over
:data:`~diagnostics.files.SOURCE_LIMIT` bytes is not parsed at all: it gets one
``E-TOO-LARGE``. A check runs under the time budget of ``kernlink check``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from checker.memo import Memo
from diagnostics.files import SOURCE_LIMIT, too_large
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from kernlink import __version__
from solver import BUDGETS, Cancelled, Deadline, within

if TYPE_CHECKING:
    from package.loader import Inputs

DEBOUNCE = 0.3
"""Seconds without an edit before a changed buffer is parsed (one parse per burst of typing)."""

_SEVERITY = {
    Severity.ERROR: T.DiagnosticSeverity.Error,
    Severity.WARNING: T.DiagnosticSeverity.Warning,
    Severity.NOTE: T.DiagnosticSeverity.Information,
}


def uri_to_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _range(span: Span) -> T.Range:
    return T.Range(T.Position(span.line - 1, span.col - 1), T.Position(span.end_line - 1, span.end_col - 1))


def _file_of(span_file: str, root: Path) -> Path | None:
    """The file a span names (relative to the server's working directory); None for embedded text."""
    if "!" in span_file or span_file.startswith("<"):
        return None
    path = Path(span_file)
    return (path if path.is_absolute() else root / path).resolve()


def to_lsp(diags: Iterable[Diagnostic], root: Path, fallback: Path | None = None) -> dict[Path, list[T.Diagnostic]]:
    """kernlink diagnostics as LSP diagnostics, on every file one of their labels is in.

    A two-sided finding (the init in one contract, the arrivals in another) shows in both
    files: at the primary label in its file, at the first secondary label in each other
    file, every other label as related information. One with no label in a file (an input
    that could not be read, an internal error) shows at the start of ``fallback``.
    """
    out: dict[Path, list[T.Diagnostic]] = {}
    for d in diags:
        located = [(label, _file_of(label.span.file, root)) for label in d.labels]
        located = [(label, path) for label, path in located if path is not None]
        if not located and fallback is not None:
            located = [(Label(Span.point(str(fallback), 1, 1), ""), fallback)]
        located.sort(key=lambda lp: not lp[0].primary)
        text = "\n".join([d.message, *(f"note: {n}" for n in d.notes), *(f"help: {h}" for h in d.helps)])
        shown: set[Path] = set()
        fix = _fix(d, located[0][0].span, located[0][1]) if located else None
        for label, path in located:
            assert path is not None
            if path in shown:
                continue
            shown.add(path)
            related = [
                T.DiagnosticRelatedInformation(T.Location(other.as_uri(), _range(lab.span)), lab.text or "related")
                for lab, other in located
                if lab is not label and other is not None
            ]
            out.setdefault(path, []).append(
                T.Diagnostic(
                    range=_range(label.span),
                    message=text + (f"\n{label.text}" if label.text else ""),
                    severity=_SEVERITY.get(d.severity),
                    code=d.code,
                    source="kernlink",
                    related_information=related or None,
                    data=fix if path == located[0][1] else None,
                )
            )
    return out


def _fix(d: Diagnostic, at: Span, path: Path | None) -> dict[str, object] | None:
    """The quick fix of ``d`` at its primary label in a contract (kernlink/lsp_fixes.py), as LSP data."""
    from kernlink.lsp_fixes import fix_for

    if path is None or path.suffix != ".kc":
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = fix_for(d, at, text)
    if found is None:
        return None
    edits = [{"range": _json_range(e.line, e.col, e.end_line, e.end_col), "newText": e.text} for e in found.edits]
    return {"fix": found.title, "edits": edits}


def _json_range(line: int, col: int, end_line: int, end_col: int) -> dict[str, dict[str, int]]:
    return {
        "start": {"line": line - 1, "character": col - 1},
        "end": {"line": end_line - 1, "character": end_col - 1},
    }


def syntax_diagnostics(path: Path, text: str) -> list[Diagnostic]:
    """What parsing ``text`` as typed finds; a buffer over the size limit is not parsed."""
    from contract_lang.parser import parse_text

    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > SOURCE_LIMIT:
        found = too_large(os.path.relpath(path), size)
        return [dataclasses.replace(found, labels=(Label(Span.point(str(path), 1, 1), "the whole buffer"),))]
    try:
        parse_text(text, os.path.relpath(path), "pipeline" if path.suffix == ".kp" else "contract")
    except DiagnosticError as err:
        return list(err.diagnostics)
    return []


def check_diagnostics(path: Path, memo: Memo | None = None, deadline: Deadline | None = None) -> list[Diagnostic]:
    """What `kernlink check` reports for the composition(s) ``path`` belongs to (``memo``: the session's;
    ``deadline``: the check's time budget and cancel switch), every span in a file of the user's
    (:func:`kernlink.spans.editor_spans`); when a `.kc` was edited since its package was packed, also
    what the check finds with the edited contract in the package's place."""
    from kernlink.api import check
    from kernlink.spans import editor_spans
    from package.loader import UsageError

    targets: Sequence[Path] = [path]
    if path.suffix == ".kc":
        targets = sorted(path.parent.glob("*.kp")) or [path]
    found: list[Diagnostic] = []
    for target in targets:
        try:
            result = check([os.path.relpath(target)], memo=memo, deadline=deadline)
        except UsageError:
            continue
        if result.inputs is None:
            found.extend(result.diagnostics)
            continue
        told = editor_spans(result.diagnostics, result.inputs)
        found.extend(told)
        found.extend(d for d in edited_diagnostics(result.diagnostics, result.inputs, memo) if d not in told)
    return found


def edited_diagnostics(diags: Sequence[Diagnostic], inputs: Inputs, memo: Memo | None) -> list[Diagnostic]:
    """The check of the composition with each stage a `W-STALE-CONTRACT` names taken from its edited
    `.kc` instead of its package: what the edit will do once packed, shown before a rebuild."""
    from analysis.pipeline import AnalysisContext, analyse
    from kernlink.spans import editor_spans

    stale = {dict(d.data).get("stage") for d in diags if d.code == Code.W_STALE_CONTRACT}
    if not stale:
        return []
    swapped = dataclasses.replace(
        inputs,
        candidates=[c for c in inputs.candidates if not (c.package is not None and c.name in stale)],
        diagnostics=[d for d in inputs.diagnostics if d.code != Code.W_STALE_CONTRACT],
    )
    result = analyse(swapped, AnalysisContext(memo=memo or Memo()))
    names = ", ".join(f"`{s}`" for s in sorted(n for n in stale if n))
    note = (
        f"found with the edited contract of {names}, not yet packed: "
        "`kernlink build` or `kernlink pack` makes it the one checked"
    )
    return [dataclasses.replace(d, notes=(*d.notes, note)) for d in editor_spans(result.diagnostics, swapped)]


Key = tuple[str, Path]
"""What a request is about: ``("syntax", file)`` or ``("check", folder)``; a newer one replaces it."""

Work = Callable[[Deadline], Callable[[], None]]
"""A request's computation (on the worker): it returns the publication of its result."""


@dataclass
class _Request:
    key: Key
    about: Path  # the file the request came from: where a failure is shown
    due: float
    work: Work
    seconds: float | None


class Worker:
    """The one thread that parses and checks for the server, newest request first, stale ones cancelled."""

    def __init__(self, failed: Callable[[Path, BaseException], Callable[[], None]]) -> None:
        self._failed = failed
        self._lock = threading.Condition()
        self._pending: dict[Key, _Request] = {}
        self._running: tuple[Key, Deadline] | None = None
        self._thread: threading.Thread | None = None

    def submit(self, key: Key, about: Path, work: Work, *, delay: float = 0.0, seconds: float | None = None) -> None:
        """Run ``work`` for the file ``about`` after ``delay`` seconds (with ``seconds`` of time budget),
        in place of any request for ``key`` not started yet; a running one for ``key`` is cancelled."""
        with self._lock:
            self._pending[key] = _Request(key, about, time.monotonic() + delay, work, seconds)
            self.cancel(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="kernlink-lsp-worker", daemon=True)
                self._thread.start()
            self._lock.notify()

    def cancel(self, key: Key) -> None:
        """Cancel the running request for ``key`` (it publishes nothing)."""
        with self._lock:
            if self._running is not None and self._running[0] == key:
                self._running[1].cancel()

    def _next(self) -> tuple[_Request, Deadline]:
        with self._lock:
            while True:
                now = time.monotonic()
                due = min(self._pending.values(), key=lambda r: r.due, default=None)
                if due is not None and due.due <= now:
                    del self._pending[due.key]
                    deadline = Deadline(due.seconds)
                    self._running = (due.key, deadline)
                    return due, deadline
                self._lock.wait(None if due is None else due.due - now)

    def _loop(self) -> None:
        while True:
            request, deadline = self._next()
            try:
                with within(deadline):
                    publish = request.work(deadline)
            except Cancelled:
                publish = None
            except Exception as exc:  # a kernlink bug: shown in the editor, and the server goes on
                publish = self._failed(request.about, exc)
            with self._lock:
                self._running = None
                if publish is not None and not deadline.cancelled:
                    publish()


class KernlinkServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernlink", __version__)
        self.published: set[Path] = set()
        self.shown: dict[Path, list[T.Diagnostic]] = {}  # what each file shows now: the codes a hover explains
        self.memo = Memo()  # verdicts on the protocol's meaning, kept across the session's checks (worker only)
        self.worker = Worker(self._failed)

    def publish(self, grouped: dict[Path, list[T.Diagnostic]], clear: Iterable[Path]) -> None:
        for path in sorted(set(clear) | set(grouped)):
            self.text_document_publish_diagnostics(
                T.PublishDiagnosticsParams(uri=path.as_uri(), diagnostics=grouped.get(path, []))
            )
        self.published = (self.published - set(clear)) | set(grouped)
        for path in set(clear) | set(grouped):
            self.shown[path] = grouped.get(path, [])

    def _failed(self, about: Path, exc: BaseException) -> Callable[[], None]:
        from diagnostics.internal import internal_error

        found = internal_error(exc, f"the language server's work on `{os.path.relpath(about)}`")
        return lambda: self.publish(to_lsp([found], Path.cwd(), about), set())


server = KernlinkServer()


def _full(ls: KernlinkServer, uri: str, text: str | None = None) -> None:
    """Check the composition(s) of ``uri`` from disk on the worker (``text``: the buffer as opened)."""
    path = uri_to_path(uri)
    if path.suffix not in (".kc", ".kp"):
        return
    if text is not None and len(text.encode("utf-8", errors="surrogatepass")) > SOURCE_LIMIT:
        _syntax(ls, uri, text)  # too large to check: its one diagnostic says so
        return

    def work(deadline: Deadline) -> Callable[[], None]:
        grouped = to_lsp(check_diagnostics(path, ls.memo, deadline), Path.cwd(), path.resolve())
        clear = {p for p in ls.published if p.parent == path.parent} | {path.resolve()}
        return lambda: ls.publish(grouped, clear)

    ls.worker.submit(("check", path.resolve().parent), path.resolve(), work, seconds=BUDGETS.check_seconds)


def _syntax(ls: KernlinkServer, uri: str, text: str, delay: float = 0.0) -> None:
    """Parse ``text`` (the buffer of ``uri`` now) on the worker after ``delay`` seconds without an edit."""
    path = uri_to_path(uri)
    if path.suffix not in (".kc", ".kp"):
        return

    def work(deadline: Deadline) -> Callable[[], None]:
        grouped = to_lsp(syntax_diagnostics(path, text), Path.cwd(), path.resolve())
        return lambda: ls.publish(grouped, {path.resolve()})

    ls.worker.submit(("syntax", path.resolve()), path.resolve(), work, delay=delay)


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: KernlinkServer, params: T.DidOpenTextDocumentParams) -> None:
    _full(ls, params.text_document.uri, params.text_document.text)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: KernlinkServer, params: T.DidSaveTextDocumentParams) -> None:
    _full(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: KernlinkServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    _syntax(ls, uri, ls.workspace.get_text_document(uri).source, DEBOUNCE)


@server.feature(T.TEXT_DOCUMENT_HOVER)
@server.thread()
def on_hover(ls: KernlinkServer, params: T.HoverParams) -> T.Hover | None:
    """A code's explain text; the values a link folded an item's handles to (kernlink/lsp_nav.py)."""
    from kernlink.docs import known_codes
    from kernlink.lsp_nav import hover

    path = uri_to_path(params.text_document.uri)
    if path.suffix not in (".kc", ".kp"):
        return None
    pos = params.position
    here = [str(d.code) for d in ls.shown.get(path.resolve(), []) if _inside(pos, d.range) and d.code is not None]
    text = ls.workspace.get_text_document(params.text_document.uri).source
    said = hover(path, text, pos.line + 1, pos.character + 1, here, known_codes())
    if said is None:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=said))


def _inside(pos: T.Position, r: T.Range) -> bool:
    return (r.start.line, r.start.character) <= (pos.line, pos.character) <= (r.end.line, r.end.character)


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
@server.thread()
def on_definition(ls: KernlinkServer, params: T.DefinitionParams) -> list[T.Location]:
    """A ring's other side, a fact's owner, a used stage's header (kernlink/lsp_nav.py)."""
    from kernlink.lsp_nav import definition

    path = uri_to_path(params.text_document.uri)
    if path.suffix not in (".kc", ".kp"):
        return []
    text = ls.workspace.get_text_document(params.text_document.uri).source
    found = definition(path, text, params.position.line + 1, params.position.character + 1)
    return [T.Location(Path(s.file).resolve().as_uri(), _range(s)) for s in found]


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
def on_code_action(ls: KernlinkServer, params: T.CodeActionParams) -> list[T.CodeAction]:
    """The quick fix each diagnostic of the request carries (computed when it was published)."""
    actions: list[T.CodeAction] = []
    for d in params.context.diagnostics:
        fix = d.data if isinstance(d.data, dict) else None
        if fix is None or not isinstance(fix.get("edits"), list) or not isinstance(fix.get("fix"), str):
            continue
        edits = [e for e in (_text_edit(raw) for raw in fix["edits"]) if e is not None]
        if len(edits) != len(fix["edits"]):
            continue
        actions.append(
            T.CodeAction(
                title=fix["fix"],
                kind=T.CodeActionKind.QuickFix,
                diagnostics=[d],
                is_preferred=True,
                edit=T.WorkspaceEdit(changes={params.text_document.uri: edits}),
            )
        )
    return actions


def _text_edit(e: object) -> T.TextEdit | None:
    """An edit as :func:`_fix` wrote it into a diagnostic's data, back as a text edit (None if malformed)."""
    try:
        start, end, text = e["range"]["start"], e["range"]["end"], e["newText"]  # type: ignore[index]
        at = [int(start["line"]), int(start["character"]), int(end["line"]), int(end["character"])]
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(text, str):
        return None
    return T.TextEdit(T.Range(T.Position(at[0], at[1]), T.Position(at[2], at[3])), text)


def serve() -> None:
    server.start_io()
