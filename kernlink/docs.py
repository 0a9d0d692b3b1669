"""Documentation of every code for people and tools: clauses from their docstrings, the
E-/W-/I- codes from diagnostics/codes.py."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from checker.engine import by_code, registry
from diagnostics.codes import BY_CODE, CODES, SECTIONS


def known_codes() -> list[str]:
    """Every code `explain` answers for: the clauses' and the registered E-/W-/I- codes."""
    return sorted([*by_code(), *BY_CODE])


def explain_text(code: str) -> str:
    if code in BY_CODE:
        import textwrap

        info = BY_CODE[code]
        sections = {t: b if t == "Example" else textwrap.fill(b, 88) for t, b in info.sections.items()}
        head = f"{info.code} ({info.name}, {info.severity}): {info.summary}"
    else:
        cls = by_code()[code]
        sections, head = cls.docs().sections, f"{cls.code} ({cls.name}): {cls.summary}"
    out = [head, ""]
    for title in ("What it checks", "Why it matters", "Example", "Fix"):
        body = sections[title].replace("```kernlink\n", "").replace("```", "").rstrip()
        out.append(title)
        out.append("-" * len(title))
        out.extend(body.splitlines())
        out.append("")
    return "\n".join(out)


def _entry(code: str) -> dict[str, object]:
    if code in BY_CODE:
        info = BY_CODE[code]
        return {
            "code": info.code,
            "name": info.name,
            "summary": info.summary,
            "category": info.category,
            "severity": info.severity,
            "sections": info.sections,
            "example": info.example,
        }
    cls = by_code()[code]
    docs = cls.docs()
    return {
        "code": cls.code,
        "name": cls.name,
        "summary": cls.summary,
        "category": cls.category,
        "decided_by": cls.decided_by,
        "sections": docs.sections,
        "example": docs.example_source,
    }


def explain_json(code: str) -> str:
    return json.dumps({"schema": "kernlink.clause", "version": 1, **_entry(code)}, indent=2, sort_keys=True) + "\n"


def catalogue_json() -> str:
    entries = [_entry(c.code) for c in registry()]
    return json.dumps({"schema": "kernlink.clauses", "version": 1, "clauses": entries}, indent=2, sort_keys=True) + "\n"


def catalogue_table(color: bool | None = None) -> None:
    table = Table(title=f"kernlink clauses ({len(registry())})", show_lines=False)
    for col in ("code", "category", "decided by", "rejects when"):
        table.add_column(col)
    for cls in sorted(registry(), key=lambda c: (c.category, c.code)):
        table.add_row(cls.code, cls.category, cls.decided_by, cls.summary)
    Console(force_terminal=color, no_color=color is False, width=120).print(table)


def catalogue_markdown() -> str:
    """specs/clauses.md: the catalogue, generated; a test keeps the checked-in copy current."""
    lines = [
        "# Clause catalogue",
        "",
        "Generated from the clause docstrings by `kernlink clauses --format markdown`;",
        "do not edit by hand. `kernlink explain CODE` prints one entry.",
        "",
    ]
    lines += ["| code | category | decided by | rejects when |", "|---|---|---|---|"]
    ordered = sorted(registry(), key=lambda c: c.code)
    lines += [f"| [{c.code}](#{c.code.lower()}) | {c.category} | {c.decided_by} | {c.summary} |" for c in ordered]
    for cls in ordered:
        sections = cls.docs().sections
        lines += ["", f"## {cls.code}", "", f"*{cls.name}* — {cls.summary}.", ""]
        for title in ("What it checks", "Why it matters", "Example", "Fix"):
            lines += [f"### {title}", "", sections[title].rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def codes_markdown() -> str:
    """specs/codes.md: the E-/W-/I- codes, generated; a test keeps the checked-in copy current."""
    lines = [
        "# Other codes",
        "",
        "Every diagnostic code that is not a clause, generated from `diagnostics/codes.py`;",
        "do not edit by hand. `kernlink explain CODE` prints one entry; clauses are in",
        "[clauses.md](clauses.md).",
        "",
    ]
    lines += ["| code | severity | category | reports |", "|---|---|---|---|"]
    ordered = sorted(CODES, key=lambda c: c.code)
    lines += [f"| [{c.code}](#{c.code.lower()}) | {c.severity} | {c.category} | {c.summary} |" for c in ordered]
    for info in ordered:
        lines += ["", f"## {info.code}", "", f"*{info.name}* — {info.summary}.", ""]
        for title in SECTIONS:
            body = info.sections[title]
            if title == "Example":
                body = f"```\n{body}\n```"
            lines += [f"### {title}", "", body, ""]
    return "\n".join(lines).rstrip() + "\n"
