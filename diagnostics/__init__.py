"""Diagnostics: the model, source lookup and file helpers; the renderers are its submodules.

Depends on no other kernlink package. The renderers (``diagnostics.render_text``, which
needs rich, ``render_json``, ``render_sarif``) are imported from their own modules, so a
command that prints nothing never loads them. The names below load their module on first
use: a process that needs only :mod:`diagnostics.private` (a build served by
``kernlink serve``, whose client checks the server's folder) loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diagnostics.files import atomic_write_bytes, atomic_write_text, read_source
    from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
    from diagnostics.rules import RuleInfo
    from diagnostics.sources import SourceMap
    from diagnostics.span import Span

_HOMES = {
    "Diagnostic": "diagnostics.model",
    "DiagnosticError": "diagnostics.model",
    "Label": "diagnostics.model",
    "RuleInfo": "diagnostics.rules",
    "Severity": "diagnostics.model",
    "SourceMap": "diagnostics.sources",
    "Span": "diagnostics.span",
    "atomic_write_bytes": "diagnostics.files",
    "atomic_write_text": "diagnostics.files",
    "read_source": "diagnostics.files",
    "sort_diagnostics": "diagnostics.model",
}

__all__ = [
    "Diagnostic",
    "DiagnosticError",
    "Label",
    "RuleInfo",
    "Severity",
    "SourceMap",
    "Span",
    "atomic_write_bytes",
    "atomic_write_text",
    "read_source",
    "sort_diagnostics",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'diagnostics' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
