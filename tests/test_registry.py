"""Our tidy: every clause registered, documented, exampled, tested; codes unique, never reused.

Modelled on rustc's `tidy` for error codes: the catalogue in the design (CLAUSES.md's
51 codes) is the target; a clause module that is not registered, a registered clause
without docs or fixtures, an example that does not trigger its own clause, or a
reused or retired code fails this test.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import types
from pathlib import Path
from typing import Any

import pytest

import checker.clauses as clauses_pkg
from checker.clause import SECTIONS, Clause
from checker.clauses import CLAUSES, RETIRED
from diagnostics.codes import BY_CODE as CODES_BY
from diagnostics.codes import CODES
from kernlink.api import check_text
from kernlink.docs import catalogue_markdown

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "checker" / "clauses"
# Clauses whose verdict needs a compiled package or a device link: their examples are
# illustrative, and their tests live with the linker (fixtures carry captured facts).
NEEDS_ARTIFACTS = ("package", "link")


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(clauses_pkg.__path__) if m.name.startswith("l_"))


def test_every_module_is_registered() -> None:
    registered = {cls.__module__.rsplit(".", 1)[1] for cls in CLAUSES}
    for name in _modules():
        module = importlib.import_module(f"checker.clauses.{name}")
        classes = [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, Clause) and v is not Clause and v.__module__ == module.__name__
        ]
        assert len(classes) == 1, f"{name} must define exactly one clause"
        assert name in registered, f"checker/clauses/{name}.py is not in the registry"


def test_codes_unique_and_not_retired() -> None:
    codes = [cls.code for cls in CLAUSES]
    assert len(codes) == len(set(codes)), "a clause code is registered twice"
    assert not set(codes) & set(RETIRED), "a retired code was reused"
    for cls in CLAUSES:
        assert cls.__module__ == f"checker.clauses.l_{cls.code[2:].lower()}", cls.code


@pytest.mark.parametrize("cls", CLAUSES, ids=lambda c: c.code)
def test_documented(cls: type[Clause]) -> None:
    sections = cls.docs().sections
    for title in SECTIONS:
        assert sections.get(title, "").strip(), f"{cls.code}: empty `{title}` section"
    assert cls.docs().example_source, f"{cls.code}: the Example has no ```kernlink block"


_DOCS = "## What it checks\nx\n## Why it matters\nx\n## Example\nx\n## Fix\nx\n"


def _define(**attrs: Any) -> type[Clause]:
    """A clause class built outside any module (its class docstring is its documentation)."""
    body = {
        "__module__": "not.a.module",
        "__doc__": _DOCS,
        "code": "L-DEMO",
        "name": "demo-clause",
        "summary": "a demo",
        "category": "composition",
        **attrs,
    }
    return types.new_class("DemoClause", (Clause,), exec_body=lambda ns: ns.update(body))


def test_a_clause_is_validated_when_its_class_is_built() -> None:
    """Metadata and the four section headers are checked when the class is defined, not when it is used."""
    assert set(_define().docs().sections) == set(SECTIONS)
    with pytest.raises(TypeError, match=r"docs lack sections: Fix$"):
        _define(__doc__=_DOCS.split("## Fix")[0])
    with pytest.raises(TypeError, match="docs lack sections: What it checks, Why it matters, Example, Fix"):
        _define(__doc__="What it checks\n# Why it matters\n")
    with pytest.raises(TypeError, match="code 'L-demo' is not of the form L-NAME"):
        _define(code="L-demo")
    with pytest.raises(TypeError, match="name must be kebab-case"):
        _define(name="Demo")
    with pytest.raises(TypeError, match="summary must be a lowercase phrase"):
        _define(summary="A demo.")
    with pytest.raises(TypeError, match="category must be one of"):
        _define(category="misc")
    with pytest.raises(TypeError, match="decided_by must be one of"):
        _define(decided_by="oracle")


@pytest.mark.parametrize("cls", CLAUSES, ids=lambda c: c.code)
def test_example_triggers_clause(cls: type[Clause]) -> None:
    if cls.decided_by in NEEDS_ARTIFACTS:
        pytest.skip(f"{cls.code} is decided from packages or the link; see its fixtures")
    source = cls.docs().example_source
    assert source is not None
    result = check_text(source, f"{cls.code}-example.kc")
    codes = {d.code for d in result.diagnostics if d.is_error}
    assert cls.code in codes, f"{cls.code}: its example yields {sorted(codes)}"


@pytest.mark.parametrize("cls", CLAUSES, ids=lambda c: c.code)
def test_has_fixtures(cls: type[Clause]) -> None:
    folder = FIXTURES / cls.code
    assert folder.is_dir(), f"tests/checker/clauses/{cls.code}/ is missing"
    names = [p.name for p in folder.iterdir()]
    fails = [n for n in names if n.startswith("fail_") and not n.endswith(".stderr")]
    passes = [n for n in names if n.startswith("pass_")]
    assert fails, f"{cls.code}: no fail_* fixture"
    assert passes, f"{cls.code}: no pass_* fixture"
    for fail in fails:
        stem = fail.removesuffix(".kc")
        assert (folder / f"{stem}.stderr").exists(), f"{cls.code}/{fail}: no rendered snapshot"


def test_specs_catalogue_is_current() -> None:
    assert (ROOT / "specs" / "clauses.md").read_text() == catalogue_markdown(), (
        "specs/clauses.md is stale: run `kernlink clauses --format markdown > specs/clauses.md`"
    )


#: Clauses the design's catalogue does not list yet, each with the issue that added it (named in
#: the closing note as a departure from the design): the catalogue plus these, no more, no fewer.
BEYOND_THE_DESIGN = {"L-CONFORM": "issue 16: a component's code against its own contract"}


def test_registry_matches_the_design_catalogue() -> None:
    """Every code of the design's CLAUSES.md is registered, and no other (when the design is beside the checkout)."""
    design = ROOT.parent / "shared" / "design" / "CLAUSES.md"
    if not design.exists():
        pytest.skip("../shared/design/CLAUSES.md is not beside this checkout")
    expected = set(re.findall(r"^\| (L-[A-Z]+) \|", design.read_text(), re.M))
    assert not expected & set(BEYOND_THE_DESIGN), "the design lists it now: drop it from BEYOND_THE_DESIGN"
    assert {cls.code for cls in CLAUSES} == expected | set(BEYOND_THE_DESIGN)


# ----------------------------------------------------------------- every code, not only clauses

CODE_STRING = re.compile(r"[\"'`]([EWIL]-[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*)[\"'`]")
PACKAGES = (
    "contract_lang",
    "package",
    "diagnostics",
    "solver",
    "checker",
    "placement",
    "transfer_model",
    "analysis",
    "linker",
    "kernlink",
    "fuzzing",
    "hardware",
)


def _code_strings() -> dict[str, list[str]]:
    """Every quoted code in the source (strings, docstrings' ``CODE``), with where it is."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for match in CODE_STRING.finditer(path.read_text(encoding="utf-8")):
                found.setdefault(match.group(1), []).append(str(path.relative_to(ROOT)))
    return found


def test_every_code_in_the_source_is_registered() -> None:
    from kernlink.docs import known_codes

    known = set(known_codes())
    unregistered = {code: sorted(set(where))[:3] for code, where in _code_strings().items() if code not in known}
    assert not unregistered, f"codes used but not registered (diagnostics/codes.py or a clause): {unregistered}"


def test_every_registered_code_is_used() -> None:
    """Both directions: a registered E-/W-/I- code that no source emits is stale (retire it instead)."""
    used = {code for code, where in _symbol_uses().items() if where - {SYMBOLS, "diagnostics/codes.py"}}
    assert not [c.code for c in CODES if c.code not in used]


def test_the_scan_finds_codes() -> None:
    """The source scan is not vacuous: it sees clause, error and note codes."""
    found = _code_strings()
    assert {"L-PAIR", "E-SYNTAX", "E-INTERNAL", "I-SPILL"} <= set(found)


@pytest.mark.parametrize("code", [c.code for c in CODES], ids=str)
def test_other_code_documented_and_explained(code: str) -> None:
    from kernlink.cli import main

    info = CODES_BY[code]
    assert code not in {c.code for c in CLAUSES}
    for title, body in info.sections.items():
        assert body.strip(), f"{code}: empty `{title}`"
    assert main(["explain", code]) == 0
    assert main(["explain", code.lower(), "--format", "json"]) == 0


def test_explain_answers_for_every_clause() -> None:
    from kernlink.cli import main

    assert all(main(["explain", cls.code]) == 0 for cls in CLAUSES)
    assert main(["explain", "E-NOT-A-CODE"]) == 2


def test_specs_codes_is_current() -> None:
    from kernlink.docs import codes_markdown

    assert (ROOT / "specs" / "codes.md").read_text() == codes_markdown(), (
        "specs/codes.md is stale: regenerate it with kernlink.docs.codes_markdown()"
    )


# ----------------------------------------------------------------- codes are symbols

SYMBOLS = "diagnostics/symbols.py"
EXACT_CODE = re.compile(r"^[EWIL]-[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*$")


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else ():
            out.append((str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))))
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_codes_are_symbols_spelled_once() -> None:
    """A code is a value only as `Code.X`: the string is spelled in diagnostics/symbols.py alone."""
    spelled = []
    for rel, tree in _sources():
        if rel == SYMBOLS:
            continue
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
                and EXACT_CODE.match(node.value)
            ):
                spelled.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not spelled, f"write Code.X (diagnostics/symbols.py) instead: {spelled[:10]}"


def test_the_symbols_are_the_registry() -> None:
    """Every registered code (clause or not) has its symbol, and every symbol is registered."""
    from diagnostics.symbols import Code

    registered = {cls.code for cls in CLAUSES} | {c.code for c in CODES}
    assert {str(c) for c in Code} == registered


def _symbol_uses() -> dict[str, set[str]]:
    uses: dict[str, set[str]] = {}
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Code":
                uses.setdefault(node.attr.replace("_", "-"), set()).add(rel)
    return uses


# ----------------------------------------------------------------- clauses word their findings

#: Calls that carry a clause code as a typed finding's tag (the clause module words it).
FINDINGS = {"Finding", "WarpConflict"}


def _codes_built(tree: ast.AST) -> set[str]:
    """The L- codes of every call in ``tree`` that builds a diagnostic from `Code.L_X` (typed findings' tags aside)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in FINDINGS:
            continue
        for arg in [*node.args[:2], *(k.value for k in node.keywords if k.arg == "code")]:
            if (
                isinstance(arg, ast.Attribute)
                and isinstance(arg.value, ast.Name)
                and arg.value.id == "Code"
                and arg.attr.startswith("L_")
            ):
                found.add(arg.attr.replace("_", "-"))
    return found


def _worded_outside() -> set[tuple[str, str]]:
    """(file, code) of every call outside `checker/clauses/l_<code>.py` that builds an L- diagnostic from `Code.L_X`."""
    return {
        (rel, code)
        for rel, tree in _sources()
        for code in _codes_built(tree)
        if rel != f"checker/clauses/l_{code[2:].lower()}.py"
    }


def test_clauses_word_their_findings() -> None:
    """Every L- diagnostic is worded by its clause module: a decider returns a typed finding (issue 13 item 1)."""
    outside = _worded_outside()
    assert not outside, f"word these in their clause module (checker/clauses/): {sorted(outside)}"


def test_the_wording_scan_finds_sites() -> None:
    """The scan is not vacuous: it sees the clause modules' own wording."""
    found: set[tuple[str, str]] = set()
    for rel, tree in _sources():
        if rel.startswith("checker/clauses/l_"):
            found |= {(rel, c) for c in _codes_built(tree)}
    assert {("checker/clauses/l_deadlock.py", "L-DEADLOCK"), ("checker/clauses/l_arrive.py", "L-ARRIVE")} <= found
