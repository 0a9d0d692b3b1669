"""The JSON renderer: a stable, versioned document for tools.

The document follows ``schemas/diagnostics-v1.schema.json``. Output is
byte-deterministic: diagnostics in :func:`sort_diagnostics` order, keys sorted,
two-space indent, UTF-8 text, one trailing newline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from diagnostics.model import Diagnostic, Label, Severity, sort_diagnostics

SCHEMA_NAME = "kernlink.diagnostics"
SCHEMA_VERSION = 1


def render_json(diags: Iterable[Diagnostic], *, tool_version: str, extra: Mapping[str, Any] | None = None) -> str:
    """Render diagnostics as a ``kernlink.diagnostics`` version-1 JSON document.

    ``extra`` is caller context (the pipeline checked, timings) stored under the
    top-level ``extra`` key; it must be JSON-serialisable.
    """
    ordered = sort_diagnostics(diags)
    document: dict[str, Any] = {
        "schema": SCHEMA_NAME,
        "version": SCHEMA_VERSION,
        "tool": {"name": "kernlink", "version": tool_version},
        "summary": {f"{sev.value}s": sum(d.severity is sev for d in ordered) for sev in Severity},
        "diagnostics": [_diagnostic(d) for d in ordered],
    }
    if extra is not None:
        document["extra"] = dict(extra)
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return text + "\n"


def _diagnostic(diag: Diagnostic) -> dict[str, Any]:
    return {
        "code": diag.code,
        "severity": diag.severity.value,
        "message": diag.message,
        "labels": [_label(label) for label in diag.labels],
        "notes": list(diag.notes),
        "helps": list(diag.helps),
        "data": dict(diag.data),
    }


def _label(label: Label) -> dict[str, Any]:
    span = label.span
    return {
        "file": span.file,
        "line": span.line,
        "col": span.col,
        "end_line": span.end_line,
        "end_col": span.end_col,
        "text": label.text,
        "primary": label.primary,
    }
