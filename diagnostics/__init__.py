"""Diagnostics: the model, source lookup, file helpers and renderers.

Depends on no other kernlink package.
"""

from diagnostics.files import atomic_write_bytes, atomic_write_text, read_source
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
from diagnostics.render_json import render_json
from diagnostics.render_sarif import render_sarif
from diagnostics.render_text import render_text
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
    "render_json",
    "render_sarif",
    "render_text",
    "sort_diagnostics",
]
