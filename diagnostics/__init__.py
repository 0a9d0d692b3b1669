"""Diagnostics: the model, source lookup and file helpers; the renderers are its submodules.

Depends on no other kernlink package. The renderers (``diagnostics.render_text``, which
needs rich, ``render_json``, ``render_sarif``) are imported from their own modules, so a
command that prints nothing never loads them.
"""

from diagnostics.files import atomic_write_bytes, atomic_write_text, read_source
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
from diagnostics.rules import RuleInfo
from diagnostics.sources import SourceMap
from diagnostics.span import Span

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
