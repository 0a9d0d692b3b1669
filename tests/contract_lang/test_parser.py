"""Parser behaviour beyond the corpus: whole words, file kinds, empty files, readable names."""

from __future__ import annotations

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text, terminals
from diagnostics.model import Diagnostic, DiagnosticError


def stage(*items: str) -> str:
    return 'stage "t" version "1" {\n' + "".join(f"    {item}\n" for item in items) + "}\n"


def only_error(text: str, kind: str = "any") -> Diagnostic:
    with pytest.raises(DiagnosticError) as info:
        parse_text(text, "t.kc", kind)  # type: ignore[arg-type]
    (diag,) = info.value.diagnostics
    return diag


@pytest.mark.parametrize(
    ("item", "word", "helps"),
    [
        ("claim smemtiles bytes 16", "smemtiles", ("did you mean `smem tiles`?",)),
        ("role load warps1", "warps1", ("did you mean `warps 1`?",)),
        ("launch persistentthreads 4", "persistentthreads", ("did you mean `persistent threads`?",)),
        ("requires featuretma", "featuretma", ("did you mean `feature tma`?",)),
        ("ring kv produceby load {\n    }", "produceby", ("did you mean `produce by`?",)),
        ("ring kv produce by load {\n        fullwait\n    }", "fullwait", ("did you mean `full wait`?",)),
        ("ringg kv produce by load {\n    }", "ringg", ("did you mean `ring`?",)),
    ],
)
def test_keywords_are_whole_words(item: str, word: str, helps: tuple[str, ...]) -> None:
    """Regression: the contextual lexer split `smemtiles` into `smem tiles` and accepted it."""
    diag = only_error(stage(item))
    assert (diag.code, diag.message, diag.helps) == ("E-SYNTAX", f"unexpected `{word}`", helps)


def test_keywords_still_name_things_where_a_name_is_expected() -> None:
    (role, claim) = (
        parse_text(stage("role depth entry warps warps 1", "claim barrier sync participants depth")).items[0].items
    )
    assert role == A.Role("depth", entry="warps", warps=1)
    assert claim == A.BarrierClaim("sync", participants=("depth",))


@pytest.mark.parametrize(
    ("literal", "what"),
    [
        ("4x", "integer"),
        ("0xZZ", "integer"),
        ("16kb", "integer"),
        ("2x1", "cluster shape"),
        ("2x1x1x1", "cluster shape"),
    ],
)
def test_malformed_literals(literal: str, what: str) -> None:
    item = f"cluster {literal}" if what == "cluster shape" else f"claim smem s bytes {literal}"
    diag = only_error(stage(item))
    assert diag.message == f"invalid {what} `{literal}`"
    assert diag.primary is not None
    assert diag.primary.span.end_col - diag.primary.span.col == len(literal)


@pytest.mark.parametrize("requirement", ["1.x", "^1.0.0.0", "1.0a"])
def test_malformed_version_requirements(requirement: str) -> None:
    diag = only_error(f'pipeline "p" {{\n    use "s" version {requirement}\n}}\n')
    assert diag.message.startswith("invalid version requirement `")


@pytest.mark.parametrize("text", ["", "\n\n", "   \t\n", "# only a comment\n", "# a\x85stage\n", "# a\u2028pipeline\n"])
def test_files_without_blocks_are_empty(text: str) -> None:
    """Regression: a comment holding U+0085 or U+2028 looked like content and parsed to no blocks at all."""
    assert only_error(text, "contract").code == "E-EMPTY"


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        ('pipeline "p" {}\n', "contract", "a contract file holds `stage` blocks, not a `pipeline`"),
        ('stage "s" version "1" {}\n', "pipeline", "a pipeline file holds one `pipeline` block, not stages"),
        ('pipeline "p" {}\npipeline "q" {}\n', "pipeline", "a pipeline file holds exactly one `pipeline` block"),
    ],
)
def test_file_kinds(text: str, kind: str, message: str) -> None:
    diag = only_error(text, kind)
    assert diag.message == message
    parse_text(text, "t", "any")


def test_blocks_close_on_their_line() -> None:
    source = parse_text('stage "s" version "1" { target sm_90a }\npipeline "p" {}\n')
    assert [type(b).__name__ for b in source.items] == ["Stage", "Pipeline"]


def test_line_counting_ignores_other_line_separators() -> None:
    """Positions count "\\n" only, as the parser does, even past a form feed or U+2028 in a string."""
    diag = only_error('stage "a\x0cb\u2028c" version "1" {\n    role r warps\n}\n')
    assert diag.primary is not None
    assert (diag.primary.span.line, diag.primary.span.col) == (2, 17)


def test_readable_names() -> None:
    readable, expected_text = terminals().readable, terminals().expected_text
    assert readable("LBRACE") == ["`{`"]
    assert readable("NAME") == ["identifier"]
    assert readable("BARRIER_KIND") == ["`full`", "`empty`"]
    assert expected_text({"INT", "STRING", "RBRACE", "_NL"}) == "`}`, end of line, integer, string"
    many = expected_text({"ROLE", "RING", "CLAIM", "TARGET", "LAUNCH", "PARAMS", "COUNTER", "EXPORT", "CALL", "OWNS"})
    assert many.endswith(" and 2 more") and many.startswith("`call`, `claim`, ")
