"""The clause base class: metadata validated when the class is built, docs from the docstring.

A clause is a rule with a stable code. Its module docstring (or class docstring)
has four sections — ``## What it checks``, ``## Why it matters``, ``## Example``
(a fenced ``kernlink`` block of contracts that triggers the clause) and ``## Fix`` —
from which ``kernlink explain``, ``kernlink clauses`` and specs/clauses.md are made.
Building a class checks only that the four section headers are there; the sections are
parsed when they are read (:meth:`Clause.docs`), and tests/test_registry.py checks
that each is non-empty and that the example triggers its clause.
"""

from __future__ import annotations

import abc
import os
import re
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from checker.composition import Composition
from diagnostics.model import Diagnostic, Severity
from diagnostics.symbols import Code

if TYPE_CHECKING:
    from checker.context import CheckContext

CATEGORIES = ("composition", "roles", "storage", "protocol", "callables", "tensors", "facts", "communication", "link")
# Where a clause's verdict comes from: the contracts alone, an SMT model, the joint
# placement, the transfer model's routes, what a package captured, or the device link.
DECIDERS = ("structure", "smt", "placement", "transfer", "package", "link")
SECTIONS = ("What it checks", "Why it matters", "Example", "Fix")
_CODE = re.compile(r"^L-[A-Z]+$")
_NAME = re.compile(r"^[a-z]+(-[a-z]+)*$")
_EXAMPLE = re.compile(r"```kernlink\n(.*?)```", re.S)
_HEADER = re.compile(r"^\s*## (.+?)\s*$")


@dataclass(frozen=True)
class ClauseDocs:
    sections: dict[str, str]

    @property
    def example_source(self) -> str | None:
        match = _EXAMPLE.search(self.sections.get("Example", ""))
        return match.group(1) if match else None


def parse_docs(text: str) -> ClauseDocs:
    """Split a docstring into its ``## Section`` bodies."""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            if current is not None:
                sections[current] = _dedent("\n".join(lines))
            current, lines = header.group(1), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = _dedent("\n".join(lines))
    return ClauseDocs(sections)


def _section_titles(text: str) -> set[str]:
    """The ``## Section`` titles of a docstring: the keys :func:`parse_docs` gives, without parsing the bodies."""
    return {m.group(1) for line in text.splitlines() if "## " in line and (m := _HEADER.match(line))}


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")


class Clause(abc.ABC):
    """One rule of the composition. Subclasses set the metadata and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    category: ClassVar[str]
    decided_by: ClassVar[str] = "structure"

    def __init_subclass__(cls, base: bool = False, **kwargs: object) -> None:
        """Validate a clause's metadata and docs; ``base=True`` marks a shared base, which has none."""
        super().__init_subclass__(**kwargs)
        if base:
            return
        problems = []
        code = getattr(cls, "code", "")
        if not _CODE.match(code):
            problems.append(f"code {code!r} is not of the form L-NAME")
        if not _NAME.match(getattr(cls, "name", "")):
            problems.append("name must be kebab-case")
        summary = getattr(cls, "summary", "")
        if not summary or summary.endswith(".") or summary[0].isupper():
            problems.append("summary must be a lowercase phrase without a trailing period")
        if getattr(cls, "category", None) not in CATEGORIES:
            problems.append(f"category must be one of {CATEGORIES}")
        if cls.decided_by not in DECIDERS:
            problems.append(f"decided_by must be one of {DECIDERS}")
        titles = _section_titles(cls._doc_text())
        missing = [s for s in SECTIONS if s not in titles]
        if missing:
            problems.append(f"docs lack sections: {', '.join(missing)}")
        if problems:
            raise TypeError(f"clause {cls.__name__}: " + "; ".join(problems))

    @classmethod
    def docs(cls) -> ClauseDocs:
        return parse_docs(cls._doc_text())

    @classmethod
    def _doc_text(cls) -> str:
        """The clause's documentation: its module docstring, else its class docstring."""
        import sys

        module = sys.modules.get(cls.__module__)
        return (module.__doc__ if module is not None else None) or cls.__doc__ or ""

    @abc.abstractmethod
    def check(self, comp: Composition) -> Iterable[Diagnostic]:
        """Every violation of this clause in the composition (empty when it holds)."""

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterable[Diagnostic]:
        """The violations within one check (``ctx`` holds analyses the clauses share)."""
        return self.check(comp)

    @classmethod
    def word(cls, found: object) -> Diagnostic:
        """A typed finding of this clause, or a question it left undecided, in words.

        A clause whose decider returns typed findings words them here; the engine asks the
        clause a finding's ``code`` names (``checker/engine.py``, :func:`~checker.engine.word`).
        """
        raise TypeError(f"clause {cls.code} words no {type(found).__name__}")


def internal_error(cls: type[Clause], exc: Exception) -> Diagnostic:
    """E-INTERNAL for a clause that raised: a clause bug must not look like a pass or crash the CLI."""
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f"{_module_path(frame.filename)}:{frame.lineno}" if frame else "unknown location"
    return Diagnostic(
        Code.E_INTERNAL,
        f"clause `{cls.code}` failed with {type(exc).__name__}: {exc}",
        severity=Severity.ERROR,
        labels=(),
        notes=(f"raised at {where}", "the composition was not fully checked; this is a kernlink bug"),
        helps=("report it with the inputs that trigger it",),
    )


def _module_path(filename: str) -> str:
    """A source file as a path inside the project (`checker/facts.py`), never the install's absolute path."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    full = os.path.abspath(filename)
    return os.path.relpath(full, root) if full.startswith(root + os.sep) else os.path.basename(full)
