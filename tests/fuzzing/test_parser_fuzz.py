"""The parser and the checker never raise on hostile text: only diagnostics come back.

Inputs: arbitrary bytes (read through the same file reader as ``kernlink check``),
arbitrary text, and token-level mutations of the reference contracts (a token
dropped, duplicated, swapped with its neighbour, or replaced by a keyword, a
punctuation mark, a number or a string). Every failure is a ``DiagnosticError``
whose diagnostics name a code and point at the input. Texts that still parse are
checked as a composition, which must not raise either.

The budget is the tier's (tests/tiers.py): ``--tier slow`` runs the same properties at 100×.
"""

from __future__ import annotations

import re
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from contract_lang.parser import parse_file, parse_text
from diagnostics.model import DiagnosticError
from fuzzing.strategies import KEYWORDS
from kernlink.api import check_text
from tests.tiers import examples

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
INPUT_CODES = frozenset(
    {"E-SYNTAX", "E-EMPTY", "E-NAME", "E-VALUE", "E-DUPLICATE", "E-BINARY", "E-ENCODING", "E-TOO-LARGE", "E-IO"}
)
_TOKEN = re.compile(r'"[^"\n]*"|#[^\n]*|(?:[\^~]|[<>]=?|=)\d[\w.]*|\w[\w.]*|->|==|!=|<=|>=|\S|\n')
_PUNCT = ("{", "}", "(", ")", ",", ":", "@", "=", "..", "->", "*", "+", "%", "/", "\n", '"', "#")


@cache
def _contracts() -> tuple[str, ...]:
    return tuple(p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*/*.k[cp]")))


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _join(tokens: list[str]) -> str:
    out: list[str] = []
    for tok in tokens:
        if out and tok != "\n" and out[-1] != "\n":
            out.append(" ")
        out.append(tok)
    return "".join(out)


def assert_clean_failure(err: DiagnosticError) -> None:
    assert err.diagnostics, "a DiagnosticError without diagnostics"
    for diag in err.diagnostics:
        assert diag.code in INPUT_CODES, f"unexpected code {diag.code}: {diag.message}"
        assert diag.labels or diag.code in ("E-IO", "E-EMPTY", "E-TOO-LARGE"), f"{diag.code} without a span"


def assert_parses_or_diagnoses(text: str, kind: str = "any") -> None:
    try:
        parse_text(text, "<fuzz>", kind)  # type: ignore[arg-type]
    except DiagnosticError as err:
        assert_clean_failure(err)
        return
    result = check_text(text, "<fuzz>")  # a text that parses is checked without raising
    assert all(d.code != "E-INTERNAL" for d in result.diagnostics), [d.message for d in result.diagnostics]


@st.composite
def token_mutants(draw: st.DrawFn) -> str:
    """A reference contract or pipeline with 1–4 token-level edits."""
    tokens = _tokens(draw(st.sampled_from(_contracts())))
    words = sorted(KEYWORDS)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(("drop", "dup", "swap", "keyword", "punct", "number", "string")))
        if op == "drop":
            del tokens[i]
        elif op == "dup":
            tokens.insert(i, tokens[i])
        elif op == "swap" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif op == "keyword":
            tokens[i] = draw(st.sampled_from(words))
        elif op == "punct":
            tokens[i] = draw(st.sampled_from(_PUNCT))
        elif op == "number":
            tokens[i] = draw(
                st.sampled_from(("0", "1", "0x", "0x1G", "16KiB", "99999999999999999999", "1.5", "-1", "007"))
            )
        elif op == "string":
            tokens[i] = draw(st.sampled_from(('""', '"x"', '"unterminated', '"a\\"b"')))
        if not tokens:
            tokens = ["\n"]
    return _join(tokens)


def test_reference_contracts_tokenise_and_rejoin() -> None:
    for text in _contracts():
        assert_parses_or_diagnoses(_join(_tokens(text)))
        parse_text(_join(_tokens(text)), "<rejoined>")


@examples(1.5)
@given(token_mutants())
def test_token_mutations_give_diagnostics(text: str) -> None:
    assert_parses_or_diagnoses(text)


@examples(1.5)
@given(st.text(max_size=400))
def test_arbitrary_text_gives_diagnostics(text: str) -> None:
    assert_parses_or_diagnoses(text)


@examples(0.5, suppress=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_give_diagnostics(data: bytes) -> None:
    _bytes_property(data)


def _bytes_property(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".kc", ".kp"):
            path = Path(tmp) / f"fuzz{suffix}"
            path.write_bytes(data)
            try:
                parse_file(path)
            except DiagnosticError as err:
                assert_clean_failure(err)
