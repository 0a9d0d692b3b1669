"""The SARIF 2.1.0 renderer, for code-scanning services and IDEs.

One run whose driver is kernlink; each diagnostic is a result whose
``locations`` are its primary labels and whose ``relatedLocations`` are its
secondary labels. Output is deterministic: rules sorted by code, results in
:func:`sort_diagnostics` order, keys sorted, two-space indent, trailing newline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from diagnostics.model import Diagnostic, Label, sort_diagnostics
from diagnostics.rules import RuleInfo
from diagnostics.span import UNKNOWN_SPAN

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# Characters kept as they are in artifact URIs (RFC 3986 unreserved, sub-delims, "/" "@").
_URI_SAFE = "/@!$&'()*+,;=-._~"


def render_sarif(diags: Iterable[Diagnostic], *, tool_version: str, rules: Sequence[RuleInfo]) -> str:
    """Render diagnostics as a SARIF 2.1.0 log with one run.

    ``rules`` describes the codes; a result whose code has a rule gets its
    ``ruleIndex``. Raises ``ValueError`` when two rules share a code.
    """
    ordered_rules = sorted(rules, key=lambda rule: rule.code)
    index = {rule.code: position for position, rule in enumerate(ordered_rules)}
    if len(index) != len(ordered_rules):
        raise ValueError("two rules share a code")
    log = {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kernlink",
                        "version": tool_version,
                        "rules": [_rule(rule) for rule in ordered_rules],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index.get(d.code)) for d in sort_diagnostics(diags)],
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _rule(rule: RuleInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.full_description or rule.summary},
    }
    if rule.help_uri is not None:
        entry["helpUri"] = rule.help_uri
    return entry


def _result(diag: Diagnostic, rule_index: int | None) -> dict[str, Any]:
    notes = [f"note: {note}" for note in diag.notes]
    helps = [f"help: {help_}" for help_ in diag.helps]
    text = "\n".join([diag.message, *notes, *helps])
    located = [label for label in diag.labels if label.span.file != UNKNOWN_SPAN.file]
    result: dict[str, Any] = {
        "ruleId": diag.code,
        "level": diag.severity.value,
        "message": {"text": text},
        "locations": [_location(label) for label in located if label.primary],
    }
    related = [label for label in located if not label.primary]
    if related:
        result["relatedLocations"] = [{"id": number, **_location(label)} for number, label in enumerate(related)]
    if rule_index is not None:
        result["ruleIndex"] = rule_index
    return result


def _location(label: Label) -> dict[str, Any]:
    span = label.span
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": quote(span.file.replace("\\", "/"), safe=_URI_SAFE)},
            "region": {
                "startLine": span.line,
                "startColumn": span.col,
                "endLine": span.end_line,
                "endColumn": span.end_col,
            },
        }
    }
    if label.text:
        location["message"] = {"text": label.text}
    return location
