"""`kernlink lsp`: a minimal language server (pygls) that publishes kernlink's diagnostics.

What it does, over stdio:
* on every change of a ``.kc``/``.kp`` buffer, the buffer is parsed as typed and its syntax
  diagnostics (E-SYNTAX, E-NAME, …) are published at once;
* on open and on save, the composition is checked from disk as ``kernlink check`` does: a
  pipeline (``.kp``) itself, a contract (``.kc``) through every pipeline beside it (alone
  when there is none); every diagnostic is published on the file its primary span is in,
  with the other labels as related information and the helps appended to the message.
A file that had diagnostics and has none after a check is cleared.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from checker.memo import Memo
from diagnostics.model import Diagnostic, DiagnosticError, Severity
from diagnostics.span import Span
from kernlink import __version__

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


def to_lsp(diags: Iterable[Diagnostic], root: Path) -> dict[Path, list[T.Diagnostic]]:
    """kernlink diagnostics as LSP diagnostics, on every file one of their labels is in.

    A two-sided finding (the init in one contract, the arrivals in another) shows in both
    files: at the primary label in its file, at the first secondary label in each other
    file, every other label as related information.
    """
    out: dict[Path, list[T.Diagnostic]] = {}
    for d in diags:
        located = [(label, _file_of(label.span.file, root)) for label in d.labels]
        located = [(label, path) for label, path in located if path is not None]
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
    from contract_lang.parser import parse_text

    try:
        parse_text(text, os.path.relpath(path), "pipeline" if path.suffix == ".kp" else "contract")
    except DiagnosticError as err:
        return list(err.diagnostics)
    return []


def check_diagnostics(path: Path, memo: Memo | None = None) -> list[Diagnostic]:
    """What `kernlink check` reports for the composition(s) ``path`` belongs to (``memo``: the session's)."""
    from kernlink.api import check
    from package.loader import UsageError

    targets: Sequence[Path] = [path]
    if path.suffix == ".kc":
        targets = sorted(path.parent.glob("*.kp")) or [path]
    found: list[Diagnostic] = []
    for target in targets:
        try:
            found.extend(check([os.path.relpath(target)], memo=memo).diagnostics)
        except UsageError:
            continue
    return found


class KernlinkServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernlink", __version__)
        self.published: set[Path] = set()
        self.memo = Memo()  # verdicts on the protocol's meaning, kept across the session's checks

    def publish(self, grouped: dict[Path, list[T.Diagnostic]], clear: Iterable[Path]) -> None:
        for path in sorted(set(clear) | set(grouped)):
            self.text_document_publish_diagnostics(
                T.PublishDiagnosticsParams(uri=path.as_uri(), diagnostics=grouped.get(path, []))
            )
        self.published = (self.published - set(clear)) | set(grouped)


server = KernlinkServer()


def _full(ls: KernlinkServer, uri: str) -> None:
    path = uri_to_path(uri)
    if path.suffix not in (".kc", ".kp"):
        return
    grouped = to_lsp(check_diagnostics(path, ls.memo), Path.cwd())
    ls.publish(grouped, {p for p in ls.published if p.parent == path.parent} | {path.resolve()})


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: KernlinkServer, params: T.DidOpenTextDocumentParams) -> None:
    _full(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: KernlinkServer, params: T.DidSaveTextDocumentParams) -> None:
    _full(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: KernlinkServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path.suffix not in (".kc", ".kp"):
        return
    text = ls.workspace.get_text_document(uri).source
    grouped = to_lsp(syntax_diagnostics(path, text), Path.cwd())
    ls.publish(grouped, {path.resolve()})


def serve() -> None:
    server.start_io()
