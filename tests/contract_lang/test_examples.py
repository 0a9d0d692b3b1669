"""Every example the project shows parses, is canonical and round-trips.

* the examples of the design's LANGUAGE.md, kept as fixtures in ``data/`` (and, where
  the design folder sits beside the checkout, checked against it);
* every ``.kc``/``.kp`` file under ``specs/`` (``kernlink fmt --check`` passes on them);
* every fenced ``kernlink`` block of ``specs/language.md`` (``kernlink-items`` blocks are
  stage items, parsed inside a stage).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_file, parse_text
from contract_lang.printer import format_text, print_file
from fuzzing.strategies import KEYWORDS
from kernlink.cli import main as kernlink

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
SPECS = ROOT / "specs"
DESIGN_LANGUAGE = ROOT.parent / "shared" / "design" / "LANGUAGE.md"

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)


def _fixtures() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if p.suffix in (".kc", ".kp"))


def _spec_files() -> list[Path]:
    return sorted(p for p in SPECS.rglob("*") if p.suffix in (".kc", ".kp"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def assert_parses_canonically(path: Path) -> None:
    source, text = parse_file(path, display=_rel(path))
    formatted = format_text(text, _rel(path))
    assert format_text(formatted, _rel(path)) == formatted
    assert parse_text(formatted, _rel(path)) == source
    assert parse_text(print_file(source), _rel(path)) == source


# ------------------------------------------------------------------ LANGUAGE.md


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.name)
def test_language_examples_parse(path: Path) -> None:
    assert_parses_canonically(path)


def test_language_examples_cover_every_construct() -> None:
    sources = [parse_file(p)[0] for p in _fixtures()]
    kinds = {type(item).__name__ for s in sources for block in s.items for item in block.items}
    assert {
        "Target",
        "Features",
        "Role",
        "Params",
        "SmemClaim",
        "TmemClaim",
        "BarrierClaim",
        "CounterClaim",
        "Ring",
        "Counter",
        "ExportCallable",
        "Call",
        "ExportTensor",
        "ImportTensor",
        "OwnsFact",
        "UsesFact",
        "AssumesFact",
        "RequiresFact",
        "Phases",
        "Cluster",
        "Domain",
        "Buffer",
        "HostProvider",
        "Use",
        "PipelineCluster",
        "ProvidesDomain",
        "ProvidesBuffer",
    } <= kinds


@pytest.mark.skipif(not DESIGN_LANGUAGE.exists(), reason="the design folder is not beside this checkout")
def test_fixtures_hold_every_block_of_the_design() -> None:
    copies = "".join(p.read_text() for p in _fixtures())
    blocks = [body for _, body in FENCE.findall(DESIGN_LANGUAGE.read_text())]
    assert blocks
    for body in blocks:
        assert body in copies, f"a LANGUAGE.md example is not in {DATA}: {body[:60]!r}"


# ------------------------------------------------------------------ specs/


@pytest.mark.parametrize("path", _spec_files(), ids=_rel)
def test_spec_files_parse_canonically(path: Path) -> None:
    text = path.read_text()
    assert format_text(text, _rel(path)) == text, "not canonical: run `kernlink fmt` on it"
    assert_parses_canonically(path)


def test_kernlink_fmt_check_passes_on_specs(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in _spec_files()]
    assert files
    assert kernlink(["fmt", "--check", "--color", "never", *files]) == 0, capsys.readouterr().out


# ------------------------------------------------------------------ specs/language.md


def _reference_blocks() -> list[tuple[int, str, str]]:
    text = (SPECS / "language.md").read_text()
    found = []
    for match in FENCE.finditer(text):
        info, body = match.group(1), match.group(2)
        if info in ("kernlink", "kernlink-items"):
            found.append((text.count("\n", 0, match.start()) + 1, info, body))
    return found


def _as_file(info: str, body: str) -> str:
    if info == "kernlink-items":
        indented = "".join(f"    {line}" if line.strip() else line for line in body.splitlines(keepends=True))
        return 'stage "reference.fragment" version "0.0.0" {\n' + indented + "}\n"
    return body


def _node_names(value: object, out: set[str]) -> set[str]:
    if isinstance(value, tuple):
        for element in value:
            _node_names(element, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.add(type(value).__name__)
        for f in dataclasses.fields(value):
            if f.compare:
                _node_names(getattr(value, f.name), out)
    return out


def test_reference_examples_show_every_construct() -> None:
    blocks = _reference_blocks()
    assert {info for _, info, _ in blocks} == {"kernlink", "kernlink-items"}
    shown: set[str] = set()
    for _, info, body in blocks:
        _node_names(parse_text(_as_file(info, body)), shown)
    every = {name for name, cls in vars(A).items() if isinstance(cls, type) and issubclass(cls, A.Node)}
    assert sorted(every - shown - {"Node"}) == []


def test_reference_lists_the_grammar_keywords() -> None:
    text = (SPECS / "language.md").read_text()
    listed = text.split("The keywords are: ", 1)[1].split(".\n\n", 1)[0]
    assert set(re.findall(r"`(\w+)`", listed)) == KEYWORDS


@pytest.mark.parametrize(
    ("info", "body"), [pytest.param(info, body, id=f"language.md:{line}") for line, info, body in _reference_blocks()]
)
def test_reference_examples_parse(info: str, body: str) -> None:
    path = "specs/language.md"
    source = parse_text(_as_file(info, body), path)
    assert source.items
    assert parse_text(print_file(source), path) == source
