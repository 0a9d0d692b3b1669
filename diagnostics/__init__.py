"""Diagnostics: the model, source lookup and renderers. Depends on no other kernlink package."""

from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
from diagnostics.sources import SourceMap
from diagnostics.span import Span

__all__ = ["Diagnostic", "DiagnosticError", "Label", "Severity", "SourceMap", "Span", "sort_diagnostics"]
