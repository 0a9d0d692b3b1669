"""Our tidy: every clause registered, documented, exampled, tested; codes unique, never reused.

Modelled on rustc's `tidy` for error codes: the catalogue in the design (CLAUSES.md's
51 codes) is the target; a clause module that is not registered, a registered clause
without docs or fixtures, an example that does not trigger its own clause, or a
reused or retired code fails this test.
"""

from __future__ import annotations

import ast
import functools
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
    "toolchain",
    "packing",
    "linker",
    "runtime",
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


@functools.cache
def _sources() -> list[tuple[str, ast.Module]]:
    """Every source file, parsed once per test process (the scans only read the trees)."""
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

#: Fields that hold wording: a type outside the clauses with one is a diagnostic worded outside its clause.
WORDING_FIELDS = frozenset({"message", "help", "helps"})
#: The one type outside the clauses that holds wording: the diagnostic itself, which every clause returns.
DIAGNOSTIC = ("diagnostics/model.py", "Diagnostic")


def _fields(node: ast.ClassDef) -> set[str]:
    """The names a class body assigns (fields, class variables)."""
    names: set[str] = set()
    for st in node.body:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _worded_types(sources: list[tuple[str, ast.Module]]) -> list[str]:
    """Every type outside `checker/clauses/` with a message or help field (the diagnostic itself aside)."""
    return sorted(
        f"{rel}:{node.lineno}: {node.name}"
        for rel, tree in sources
        if not rel.startswith("checker/clauses/")
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and _fields(node) & WORDING_FIELDS and (rel, node.name) != DIAGNOSTIC
    )


def _typed(sources: list[tuple[str, ast.Module]]) -> dict[str, set[str]]:
    """Per module, the names under which it builds typed findings: classes that carry a code (a `code` or
    `clause` field) and no wording, defined there or imported from where they are defined. Building one
    from `Code.L_X` is a decider's tag, which its clause words."""
    typed = {
        (rel, node.name)
        for rel, tree in sources
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and {"code", "clause"} & _fields(node) and not _fields(node) & WORDING_FIELDS
    }
    names: dict[str, set[str]] = {}
    for rel, tree in sources:
        known = names.setdefault(rel, {name for where, name in typed if where == rel})
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                base = node.module.replace(".", "/")
                for alias in node.names:
                    if {(f"{base}.py", alias.name), (f"{base}/__init__.py", alias.name)} & typed:
                        known.add(alias.asname or alias.name)
    return names


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Names bound to a code in a module (`L_INIT = Code.L_INIT`) and class attributes (`Kind.ARRIVE`)."""
    found: dict[str, str] = {}
    for node in tree.body:
        scopes = [("", node)] if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.ClassDef):
            scopes = [(f"{node.name}.", st) for st in node.body if isinstance(st, ast.Assign)]
        for prefix, st in scopes:
            assert isinstance(st, ast.Assign)
            code = _code_of(st.value, {})
            for target in st.targets:
                if code is not None and isinstance(target, ast.Name):
                    found[prefix + target.id] = code
    return found


def _code_of(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The L- code an expression names: `Code.L_X`, an alias of it, or an alias's attribute (`Kind.ARRIVE`)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "Code" and node.attr.startswith("L_"):
            return node.attr.replace("_", "-")
        return aliases.get(f"{node.value.id}.{node.attr}")
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return None


def _codes_built(tree: ast.Module, typed: set[str]) -> set[str]:
    """The L- codes of every call in ``tree`` that builds a diagnostic from a code (typed findings aside)."""
    aliases = _aliases(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in typed:
            continue
        for arg in [*node.args[:2], *(k.value for k in node.keywords if k.arg == "code")]:
            code = _code_of(arg, aliases)
            if code is not None:
                found.add(code)
    return found


def _worded_outside(sources: list[tuple[str, ast.Module]]) -> set[tuple[str, str]]:
    """(file, code) of every call outside `checker/clauses/l_<code>.py` that builds an L- diagnostic from a code."""
    typed = _typed(sources)
    return {
        (rel, code)
        for rel, tree in sources
        for code in _codes_built(tree, typed.get(rel, set()))
        if rel != f"checker/clauses/l_{code[2:].lower()}.py"
    }


def test_clauses_word_their_findings() -> None:
    """Every L- diagnostic is worded by its clause module, aliases resolved: a decider returns a typed finding."""
    outside = set(_worded_outside(_sources()))
    assert not outside, f"word these in their clause module (checker/clauses/): {sorted(outside)}"


def test_no_type_outside_the_clauses_holds_wording() -> None:
    """A decider's finding is typed: no message or help field on a type outside `checker/clauses/` (issue 30)."""
    worded = list(_worded_types(_sources()))
    assert not worded, f"make these typed findings and word them in their clause module: {worded}"


def test_the_wording_scan_finds_sites() -> None:
    """The scan is not vacuous: it sees the clause modules' own wording."""
    sources = _sources()
    typed = _typed(sources)
    clauses = [(rel, tree) for rel, tree in sources if rel.startswith("checker/clauses/l_")]
    found = {(rel, c) for rel, tree in clauses for c in _codes_built(tree, typed[rel])}
    assert {("checker/clauses/l_deadlock.py", "L-DEADLOCK"), ("checker/clauses/l_arrive.py", "L-ARRIVE")} <= found
    # typed findings, where they are defined and where they are imported: handles' Finding, not HandleSpec
    assert {"Finding", "HandleSpec"} & typed["checker/handles.py"] == {"Finding"}
    assert "WarpConflict" in typed["placement/_warps.py"] and "RaceWitness" in typed["checker/clauses/l_race.py"]


#: A decider that words a clause's finding through an alias, a class attribute and a worded type.
_PROBE = """
from diagnostics.symbols import Code
L_PAIR = Code.L_PAIR
class Kind:
    SCOPE = Code.L_SCOPE
class Told:
    code: str
    message: str
def decide(span):
    yield seam(L_PAIR, "pairs disagree", (span, "here"))
    yield Diagnostic(code=Kind.SCOPE, message="too narrow")
    yield Told(Code.L_FENCE, "no fence")
"""


def test_the_scans_see_through_aliases_and_worded_types() -> None:
    """An alias probe: wording hidden behind `L_PAIR = Code.L_PAIR`, a class attribute or a type with a
    `message` field fails the registry, wherever outside the clause module it is."""
    probe = [("checker/probe.py", ast.parse(_PROBE))]
    assert _worded_outside(probe) == {
        ("checker/probe.py", "L-PAIR"),
        ("checker/probe.py", "L-SCOPE"),
        ("checker/probe.py", "L-FENCE"),
    }
    assert _worded_types(probe) == ["checker/probe.py:6: Told"]
    assert _worded_outside([("checker/clauses/l_pair.py", ast.parse(_PROBE.replace("Kind.SCOPE", "L_PAIR")))]) == {
        ("checker/clauses/l_pair.py", "L-FENCE")
    }
