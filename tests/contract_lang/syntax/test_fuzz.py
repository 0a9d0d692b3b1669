"""Random edits of well-formed files: the parser answers with diagnostics, never a traceback.

Every diagnostic points inside the text, names what was expected in readable words
(never a Lark terminal such as ``LBRACE`` or ``__ANON_0``) and caps the list.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from contract_lang.ast import SourceFile
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError
from diagnostics.render_text import render_text
from diagnostics.sources import SourceMap
from diagnostics.syntax_errors import MAX_EXPECTED
from fuzzing.strategies import source_files
from tests.tiers import examples

PIECES = st.sampled_from(
    [
        "{",
        "}",
        '"',
        "\n",
        " ",
        "\t",
        "x",
        "1",
        "..",
        "(",
        ")",
        "->",
        "=",
        "==",
        "#",
        "$",
        ",",
        ":",
        "0x",
        "KiB",
        "1x1",
        "stage",
        "role",
        "warps",
        "full",
        "é",
        "\x85",
        "\u2028",
        "\0",
    ]
)
EDITS = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 4), PIECES), min_size=1, max_size=4)
TERMINAL_NAME = re.compile(r"\b(?:[A-Z][A-Z0-9]*_[A-Z0-9_]*|__ANON_\d+|LBRACE|RBRACE|LPAR|RPAR|NAME|INT|STRING)\b")


def edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    for pos, delete, insert in edits:
        pos %= len(text) + 1
        text = text[:pos] + insert + text[pos + delete :]
    return text


def check_diagnostics(text: str) -> None:
    try:
        parse_text(text, "fuzz.kc", "any")
    except DiagnosticError as err:
        assert err.diagnostics
        lines = text.split("\n")
        for diag in err.diagnostics:
            assert diag.code in ("E-SYNTAX", "E-NAME", "E-DUPLICATE", "E-VALUE", "E-EMPTY")
            assert diag.primary is not None
            for label in diag.labels:
                assert label.span.file == "fuzz.kc"
                assert label.span.line <= len(lines) + 1
                assert not TERMINAL_NAME.search(label.text), label.text
                if label.text.startswith("expected one of: "):
                    shown = label.text.removeprefix("expected one of: ").split(" and ")[0]
                    assert shown.count(", ") < MAX_EXPECTED
        sources = SourceMap()
        sources.add("fuzz.kc", text)
        assert render_text(err.diagnostics, sources, color=False)


@examples(2)
@given(source_files(), EDITS)
def test_edited_files_get_clean_diagnostics(source: SourceFile, edits: list[tuple[int, int, str]]) -> None:
    check_diagnostics(edit(print_file(source), edits))


@examples(2)
@given(st.text(max_size=200))
def test_arbitrary_text_gets_clean_diagnostics(text: str) -> None:
    check_diagnostics(text)
