"""Everything a user or a diagnostic cites is in the repository: no shipped file names a document
outside it (issue 31 item 9: 41 citations of a `HARDWARE.md` the repository does not hold)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a document cited in prose or code: ``HARDWARE.md §3``, `specs/hardware.md §1`, `design/X.md`; a bare
# lower-case name (`code_mutants.md`) is a file a tool writes, not a citation
_CITED = re.compile(r"(?<![\w.-])((?:\.{1,2}/|[\w-]+/)+[\w-]+\.md|[A-Z][A-Z0-9_-]*\.md)\b")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")  # a Markdown link
# a source quoted with its repository (`owner/name` `path/in/it.md`): a citation of that repository
_QUOTED_SOURCE = re.compile(r"`[\w-]+/[\w.-]+` `[^`]+`")


def _shipped() -> list[Path]:
    """Production code, the user docs and what they ship: every tracked `.py` outside tests/, every
    `.md` outside bench/results (records of past runs), and the clause snapshots users see."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = [Path(p) for p in listed.split("\n") if p]
    return sorted(
        ROOT / p
        for p in paths
        if (p.suffix == ".py" and p.parts[0] != "tests") or (p.suffix == ".md" and p.parts[:2] != ("bench", "results"))
    )


def _resolves(name: str, beside: Path) -> bool:
    return any((base / name).exists() for base in (beside.parent, ROOT, ROOT / "specs"))


def cited_outside(path: Path, shown: str | None = None) -> list[str]:
    """The documents ``path`` cites that the repository does not hold (``file:line: name``)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        line = _QUOTED_SOURCE.sub("", line)
        names = set(_CITED.findall(line))
        if path.suffix == ".md":
            names |= {m for m in _LINK.findall(line) if "://" not in m and not m.startswith("mailto:")}
        for name in sorted(names):
            if not _resolves(name, path):
                out.append(f"{shown or path.relative_to(ROOT)}:{n}: {name}")
    return out


def test_no_shipped_file_cites_a_document_outside_the_repository() -> None:
    missing = [c for p in _shipped() for c in cited_outside(p)]
    assert missing == [], "\n".join(missing)


def test_the_check_finds_a_citation_outside(tmp_path: Path) -> None:
    cited = tmp_path / "x.py"
    cited.write_text('"""Sizes as in HARDWARE.md §3 and specs/hardware.md §1 (design/STYLE.md); writes notes.md."""\n')
    assert cited_outside(cited, "x.py") == ["x.py:1: HARDWARE.md", "x.py:1: design/STYLE.md"]
    doc = tmp_path / "x.md"
    doc.write_text("See [clauses](specs/clauses.md), [gone](specs/gone.md#a) and [web](https://e.org/a.md).\n")
    assert cited_outside(doc, "x.md") == ["x.md:1: specs/gone.md"]
