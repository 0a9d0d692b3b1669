"""Parse contract text into the typed AST, turning every mistake into a diagnostic.

``parse_text`` and ``parse_file`` never raise anything but ``DiagnosticError``:
syntax errors name file:line:col, underline the offending token and list what
was expected in readable names; wrong vocabulary gets a "did you mean".
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Literal

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from contract_lang.ast import Pipeline, SourceFile, Stage
from contract_lang.transform import AstBuilder
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span

FileKind = Literal["contract", "pipeline", "any"]
MAX_EXPECTED = 8

# Readable names of the terminals that are not a single literal string.
_CLASS_NAMES: dict[str, str] = {
    "NAME": "identifier",
    "INT": "integer",
    "STRING": "string",
    "SHAPE": "cluster shape (like `1x1x1`)",
    "VERSION_REQ": "version requirement (like `^1.0`)",
    "_NL": "end of line",
    "$END": "end of file",
}
# Terminals that are alternations of keywords: shown as their keywords.
_KEYWORD_SETS: dict[str, tuple[str, ...]] = {
    "LAUNCH_KIND": ("persistent", "fixed"),
    "SIDE": ("produce", "consume"),
    "BARRIER_KIND": ("full", "empty"),
    "ACCESS": ("writes", "reads"),
    "PROXY": ("generic", "async"),
    "COUNT_UNIT": ("per_warp", "per_thread", "per_warpgroup"),
    "RDV_MODE": ("arrive", "sync"),
    "MAP_KIND": ("regs", "tmem", "smem"),
    "PHASE_MODE": ("exclusive", "concurrent"),
    "COMPARE_OP": ("==", "!=", "<", "<=", ">", ">="),
    "ADD_OP": ("+", "-"),
    "MUL_OP": ("*", "/", "%"),
}


@functools.cache
def _lark() -> Lark:
    return Lark.open("grammar.lark", rel_to=__file__, parser="lalr", lexer="contextual",
                     propagate_positions=True, strict=True, maybe_placeholders=True)


@functools.cache
def _literal_names() -> dict[str, str]:
    """Terminal name → its literal text, for keyword and punctuation terminals."""
    out: dict[str, str] = {}
    for term in _lark().terminals:
        if type(term.pattern).__name__ == "PatternStr":
            out[term.name] = term.pattern.value
    return out


def readable(terminal: str) -> list[str]:
    """How a terminal is named in messages: `keyword`, `{`, or a class like `identifier`."""
    if terminal in _CLASS_NAMES:
        return [_CLASS_NAMES[terminal]]
    if terminal in _KEYWORD_SETS:
        return [f"`{word}`" for word in _KEYWORD_SETS[terminal]]
    literal = _literal_names().get(terminal)
    return [f"`{literal}`"] if literal is not None else [terminal.lower()]


def _keywords(expected: set[str]) -> list[str]:
    words: list[str] = []
    for name in expected:
        if name in _KEYWORD_SETS:
            words.extend(w for w in _KEYWORD_SETS[name] if w.isidentifier())
        literal = _literal_names().get(name)
        if literal is not None and literal.isidentifier():
            words.append(literal)
    return sorted(set(words))


def expected_text(expected: set[str]) -> str:
    names = sorted({r for t in expected for r in readable(t)}, key=lambda s: (not s.startswith("`"), s))
    shown = names[:MAX_EXPECTED]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def parse_text(text: str, path: str = "<input>", kind: FileKind = "any") -> SourceFile:
    """Parse one file's text; raise DiagnosticError with one clean diagnostic on bad input."""
    if not _has_content(text):
        raise DiagnosticError([_empty(path, kind)])
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise DiagnosticError([_syntax_diagnostic(err, text, path)]) from None
    source = AstBuilder(path).build(tree)
    _check_kind(source, kind)
    return source


def parse_file(path: str | Path, kind: FileKind | None = None, display: str | None = None) -> tuple[SourceFile, str]:
    """Read and parse a file; the kind defaults from the extension (.kc contract, .kp pipeline)."""
    from diagnostics.files import read_source

    name = display if display is not None else str(path)
    text = read_source(path, display=name)
    if kind is None:
        suffix = Path(path).suffix
        kind = "contract" if suffix == ".kc" else "pipeline" if suffix == ".kp" else "any"
    return parse_text(text, name, kind), text


# ----------------------------------------------------------------- structure of a file

def _has_content(text: str) -> bool:
    return any(line.split("#", 1)[0].strip() for line in text.splitlines())


def _empty(path: str, kind: FileKind) -> Diagnostic:
    what = {"contract": "a `stage` block", "pipeline": "a `pipeline` block",
            "any": "a `stage` or `pipeline` block"}[kind]
    return Diagnostic("E-EMPTY", f"`{path}` is empty", labels=(Label(Span(path, 1, 1, 1, 1), "nothing here"),),
                      helps=(f"a file needs {what}",))


def _check_kind(source: SourceFile, kind: FileKind) -> None:
    if kind == "contract":
        wrong: list[Stage | Pipeline] = list(source.pipelines)
        if wrong:
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a contract file holds `stage` blocks, not a `pipeline`",
                labels=(Label(wrong[0].span, "pipeline found here"),),
                helps=("move the pipeline into its own `.kp` file",))])
    elif kind == "pipeline":
        if source.stages:
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a pipeline file holds one `pipeline` block, not stages",
                labels=(Label(source.stages[0].span, "stage found here"),),
                helps=("move stage contracts into `.kc` files beside the pipeline",))])
        if len(source.pipelines) > 1:
            first, second = source.pipelines[0], source.pipelines[1]
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a pipeline file holds exactly one `pipeline` block",
                labels=(Label(second.span, "second pipeline"), Label(first.span, "first pipeline", primary=False)),
                helps=("split the compositions into separate `.kp` files",))])


# ----------------------------------------------------------------- syntax errors

def _syntax_diagnostic(err: UnexpectedInput, text: str, path: str) -> Diagnostic:
    if (isinstance(err, UnexpectedToken) and err.token.type == "$END") or isinstance(err, UnexpectedEOF):
        expected = set(getattr(err, "expected", ()) or ())
        unclosed = _unclosed_brace(text)
        if unclosed is not None:
            return _unterminated(path, text, unclosed)
        return _at_eof(path, text, expected)
    if isinstance(err, UnexpectedToken):
        return _unexpected_token(path, err.token, set(err.expected))
    if isinstance(err, UnexpectedCharacters):
        return _unexpected_chars(path, text, err)
    line, col = max(err.line, 1), max(err.column, 1)
    return Diagnostic("E-SYNTAX", "invalid syntax", labels=(Label(Span.point(path, line, col), "here"),))


def _describe(tok: Token) -> str:
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "NAME":
        return f"identifier `{tok.value}`"
    if tok.type == "INT":
        return f"integer `{tok.value}`"
    if tok.type == "STRING":
        return f"string {tok.value}"
    return f"`{tok.value}`"


def _unexpected_token(path: str, tok: Token, expected: set[str]) -> Diagnostic:
    line, col = tok.line or 1, tok.column or 1
    if tok.type == "_NL":
        span = Span.point(path, line, col)
    else:
        span = Span(path, line, col, tok.end_line or line, tok.end_column or col + max(len(tok.value), 1))
    helps: list[str] = []
    if isinstance(tok.value, str) and tok.value.isidentifier():
        guess = did_you_mean(tok.value, _keywords(expected))
        if guess is not None and guess != tok.value:
            helps.append(f"did you mean `{guess}`?")
    exp = expected_text(expected)
    return Diagnostic("E-SYNTAX", f"unexpected {_describe(tok)}",
                      labels=(Label(span, f"expected one of: {exp}"),), helps=tuple(helps))


def _unexpected_chars(path: str, text: str, err: UnexpectedCharacters) -> Diagnostic:
    line, col = err.line, err.column
    lines = text.splitlines()
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    word = _word_at(here, col - 1)
    allowed = set(err.allowed or ())
    helps: list[str] = []
    if (word and word[0].isalpha()) or word.startswith("_"):
        guess = did_you_mean(word, _keywords(allowed))
        if guess is not None:
            helps.append(f"did you mean `{guess}`?")
        span = Span(path, line, col, line, col + len(word))
        what = f"unexpected `{word}`"
    else:
        ch = here[col - 1] if 0 < col <= len(here) else "?"
        span = Span.point(path, line, col)
        what = f"unexpected character `{ch}`"
        if ch == '"':
            what = "unterminated string"
            helps.append("strings close with `\"` on the same line")
    label = f"expected one of: {expected_text(allowed)}" if allowed else "not valid here"
    return Diagnostic("E-SYNTAX", what, labels=(Label(span, label),), helps=tuple(helps))


def _word_at(line: str, idx: int) -> str:
    end = idx
    while end < len(line) and (line[end].isalnum() or line[end] in "_."):
        end += 1
    return line[idx:end]


def _end_point(path: str, text: str) -> Span:
    lines = text.splitlines() or [""]
    return Span.point(path, len(lines), len(lines[-1]) + 1)


def _at_eof(path: str, text: str, expected: set[str]) -> Diagnostic:
    return Diagnostic("E-SYNTAX", "unexpected end of file",
                      labels=(Label(_end_point(path, text), f"expected one of: {expected_text(expected)}"),))


def _unterminated(path: str, text: str, opener: tuple[int, int, str]) -> Diagnostic:
    line, col, what = opener
    return Diagnostic(
        "E-SYNTAX", f"unterminated {what}block: `{{` is never closed",
        labels=(Label(Span.point(path, line, col), "block opened here"),
                Label(_end_point(path, text), "file ends here", primary=False)),
        helps=("close the block with `}`",))


def _unclosed_brace(text: str) -> tuple[int, int, str] | None:
    """The innermost `{` left open at the end of the text (outside strings and comments)."""
    stack: list[tuple[int, int, str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        in_string = False
        for idx, ch in enumerate(line):
            if ch == '"':
                in_string = not in_string
            elif in_string:
                continue
            elif ch == "#":
                break
            elif ch == "{":
                head = line[:idx].split()
                word = f"`{head[0]}` " if head and head[0].isidentifier() else ""
                stack.append((lineno, idx + 1, word))
            elif ch == "}" and stack:
                stack.pop()
    return stack[-1] if stack else None
