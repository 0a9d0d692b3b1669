"""The malformed-input corpus: each case yields one clean diagnostic, never a traceback.

``cases/NN_description.kc`` (or ``.kp``) holds one mistake; ``cases/NN_description.stderr``
is its rendering, compared exactly. Cases that must not be committed (a file over the
size limit) are generated here. Regenerate the snapshots with `pytest --update-snapshots`
and read every changed one as a user would: does it say what is wrong, point at the
right token, and list what was expected in readable words?
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract_lang.parser import FileKind, parse_text
from diagnostics.files import read_source
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.render_text import render_text
from diagnostics.sources import SourceMap
from kernlink.cli import main as kernlink
from tests.snapshots import assert_text_snapshot

HERE = Path(__file__).parent
CASES = HERE / "cases"
SIZE_LIMIT = 1 << 20  # read_source's default limit
CODES = ("E-SYNTAX", "E-NAME", "E-DUPLICATE", "E-VALUE", "E-EMPTY", "E-BINARY", "E-ENCODING", "E-TOO-LARGE")

# Cases built at test time: name → content.
GENERATED: dict[str, Callable[[], bytes]] = {
    "60_file_over_size_limit.kc": lambda: b'stage "big" version "1.0.0" {}\n' + b"# padding\n" * (SIZE_LIMIT // 10),
    "66_expression_too_many_operators.kc": lambda: _requires(" + ".join(["tile_k"] * 258) + " > 0"),
    "67_expression_nested_too_deep.kc": lambda: _requires("(tile_k + " * 300 + "1" + ")" * 300 + " > 0"),
    "68_deep_not_chain.kc": lambda: _requires("not " * 300 + "tile_k"),
    "69_integer_of_5000_digits.kc": lambda: _requires("tile_k < " + "9" * 5000),
}


def _requires(expr: str) -> bytes:
    return (
        f'stage "demo.loader" version "1.0.0" {{\n    target sm_90a\n    owns fact tile_k: u32 = 64\n'
        f"    requires fact {expr}\n}}\n"
    ).encode()


def _committed() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if p.suffix in (".kc", ".kp"))


def case_names() -> list[str]:
    return sorted([*_committed(), *GENERATED])


def materialise(name: str, tmp_path: Path) -> Path:
    """The case as a file under a ``cases/`` folder (generated ones in ``tmp_path``)."""
    if name not in GENERATED:
        return CASES / name
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(GENERATED[name]())
    return path


def kind_of(name: str) -> FileKind:
    return "contract" if name.endswith(".kc") else "pipeline"


def diagnose(path: Path, display: str) -> tuple[tuple[Diagnostic, ...], SourceMap]:
    """Read and parse as ``kernlink`` does; the diagnostics and the sources they point into."""
    sources = SourceMap()
    try:
        text = read_source(path, display=display)
        sources.add(display, text)
        parse_text(text, display, kind_of(path.name))
    except DiagnosticError as err:
        return err.diagnostics, sources
    pytest.fail(f"{display} parses without a diagnostic")


def snapshot_of(name: str) -> Path:
    return CASES / (Path(name).stem + ".stderr")


def test_corpus_size_and_codes() -> None:
    names = case_names()
    assert len(names) >= 40
    assert all(name[:2].isdigit() and name[2] == "_" for name in names)
    numbers = [name[:2] for name in names]
    assert len(set(numbers)) == len(numbers), "two cases share a number"
    stems = {Path(name).stem for name in names}
    orphans = sorted(p.name for p in CASES.glob("*.stderr") if p.stem not in stems)
    assert orphans == [], "snapshots without a case"


def test_corpus_covers_every_input_error_code() -> None:
    found = {
        line.split("]")[0].removeprefix("error[")
        for p in CASES.glob("*.stderr")
        for line in p.read_text().splitlines()[:1]
    }
    assert found == set(CODES)


@pytest.mark.parametrize("name", case_names())
def test_case(name: str, tmp_path: Path) -> None:
    path = materialise(name, tmp_path)
    display = f"cases/{name}"
    diags, sources = diagnose(path, display)
    assert len(diags) == 1, [d.message for d in diags]
    (diag,) = diags
    assert diag.code in CODES
    text = render_text(diags, sources, color=False)
    snapshot = snapshot_of(name)
    assert_text_snapshot(snapshot, text)


@pytest.mark.parametrize("name", case_names())
def test_kernlink_fmt_reports_the_case(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line reports the same mistake. `kernlink fmt` reads a file whatever its
    extension says it holds, so file-kind cases may pass and helps may name both kinds."""
    path = materialise(name, tmp_path)
    monkeypatch.chdir(path.parent.parent)
    status = kernlink(["fmt", "--check", "--color", "never", f"cases/{name}"])
    out = capsys.readouterr().out
    assert "Traceback" not in out
    try:
        parse_text(read_source(path), name, "any")
    except DiagnosticError:
        assert status == 1
        assert out.splitlines()[:2] == snapshot_of(name).read_text().splitlines()[:2]
    else:
        assert status in (0, 1)
