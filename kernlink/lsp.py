"""`kernlink lsp`: a minimal language server (pygls) that publishes kernlink's diagnostics.

What it does, over stdio:
* on every change of a ``.kc``/``.kp`` buffer, the buffer is parsed as typed and its syntax
  diagnostics (E-SYNTAX, E-NAME, …) are published once the edits pause (:data:`DEBOUNCE`);
* on open and on save, the composition is checked from disk as ``kernlink check`` does: a
  pipeline (``.kp``) itself, a contract (``.kc``) through every pipeline beside it (alone
  when there is none); every diagnostic is published on the file its primary span is in,
  with the other labels as related information and the helps appended to the message.
A file that had diagnostics and has none after a check is cleared.

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
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from checker.memo import Memo
from diagnostics.files import SOURCE_LIMIT, too_large
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.span import Span
from kernlink import __version__
from solver import BUDGETS, Cancelled, Deadline, within

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
                )
            )
    return out


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
    ``deadline``: the check's time budget and cancel switch)."""
    from kernlink.api import check
    from package.loader import UsageError

    targets: Sequence[Path] = [path]
    if path.suffix == ".kc":
        targets = sorted(path.parent.glob("*.kp")) or [path]
    found: list[Diagnostic] = []
    for target in targets:
        try:
            found.extend(check([os.path.relpath(target)], memo=memo, deadline=deadline).diagnostics)
        except UsageError:
            continue
    return found


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
        self.memo = Memo()  # verdicts on the protocol's meaning, kept across the session's checks (worker only)
        self.worker = Worker(self._failed)

    def publish(self, grouped: dict[Path, list[T.Diagnostic]], clear: Iterable[Path]) -> None:
        for path in sorted(set(clear) | set(grouped)):
            self.text_document_publish_diagnostics(
                T.PublishDiagnosticsParams(uri=path.as_uri(), diagnostics=grouped.get(path, []))
            )
        self.published = (self.published - set(clear)) | set(grouped)

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


def serve() -> None:
    server.start_io()
