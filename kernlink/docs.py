"""Clause documentation for people and tools, generated from the clause docstrings."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from checker.engine import by_code, registry


def explain_text(code: str) -> str:
    cls = by_code()[code]
    sections = cls.docs().sections
    out = [f"{cls.code} ({cls.name}): {cls.summary}", ""]
    for title in ("What it checks", "Why it matters", "Example", "Fix"):
        body = sections[title].replace("```kernlink\n", "").replace("```", "").rstrip()
        out.append(title)
        out.append("-" * len(title))
        out.extend(body.splitlines())
        out.append("")
    return "\n".join(out)


def _entry(code: str) -> dict[str, object]:
    cls = by_code()[code]
    docs = cls.docs()
    return {"code": cls.code, "name": cls.name, "summary": cls.summary, "category": cls.category,
            "decided_by": cls.decided_by, "sections": docs.sections, "example": docs.example_source}


def explain_json(code: str) -> str:
    return json.dumps({"schema": "kernlink.clause", "version": 1, **_entry(code)}, indent=2, sort_keys=True) + "\n"


def catalogue_json() -> str:
    entries = [_entry(c.code) for c in registry()]
    return json.dumps({"schema": "kernlink.clauses", "version": 1, "clauses": entries},
                      indent=2, sort_keys=True) + "\n"


def catalogue_table(color: bool | None = None) -> None:
    table = Table(title=f"kernlink clauses ({len(registry())})", show_lines=False)
    for col in ("code", "category", "decided by", "rejects when"):
        table.add_column(col)
    for cls in sorted(registry(), key=lambda c: (c.category, c.code)):
        table.add_row(cls.code, cls.category, cls.decided_by, cls.summary)
    Console(force_terminal=color, no_color=color is False, width=120).print(table)


def catalogue_markdown() -> str:
    """specs/clauses.md: the catalogue, generated; a test keeps the checked-in copy current."""
    lines = ["# Clause catalogue", "",
             "Generated from the clause docstrings by `kernlink clauses --format markdown`;",
             "do not edit by hand. `kernlink explain CODE` prints one entry.", ""]
    lines += ["| code | category | decided by | rejects when |", "|---|---|---|---|"]
    ordered = sorted(registry(), key=lambda c: c.code)
    lines += [f"| [{c.code}](#{c.code.lower()}) | {c.category} | {c.decided_by} | {c.summary} |" for c in ordered]
    for cls in ordered:
        sections = cls.docs().sections
        lines += ["", f"## {cls.code}", "", f"*{cls.name}* — {cls.summary}.", ""]
        for title in ("What it checks", "Why it matters", "Example", "Fix"):
            lines += [f"### {title}", "", sections[title].rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"
