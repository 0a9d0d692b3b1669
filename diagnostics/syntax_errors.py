"""Explain a syntax error of the contract language: what was found, what was expected, the likely fix.

The parser hands over plain data: the terminals' literal texts read from the grammar
(``Terminals``), the offending token and the one before it (``Tok``), and the set of
terminal names the parser expected. Terminal names are the grammar's (``NAME``,
``_NL``, ``$END``…); how each reads in a message is decided here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code

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

WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NUMBER_CHARS = WORD_CHARS | {"."}
_VERSION_OPERATORS = frozenset("^~<>=")
# What an integer, a version requirement and a cluster shape look like, for "invalid …" messages.
_LITERALS: dict[str, tuple[str, str]] = {
    "INT": ("integer", "integers are decimal (`64`), hexadecimal (`0x40`) or whole KiB (`16KiB`)"),
    "VERSION_REQ": (
        "version requirement",
        "a requirement is one to three numbers with an optional `^`, `~`, `>=`, `<=`, `>`, `<` "
        "or `=`: `^1.0`, `~1.2.3`, `>=2`",
    ),
    "SHAPE": ("cluster shape", "a cluster shape has three extents: `2x1x1`"),
}
# Punctuation that is easily mistyped for what was expected.
_LOOKALIKES: dict[str, str] = {"=>": "->", "=": "=="}
_VALUE_CLASSES = frozenset({"INT", "NAME", "STRING", "SHAPE", "VERSION_REQ"})
_ENDS = frozenset({"_NL", "RBRACE", "$END"})
_OPERATORS = frozenset({"COMPARE_OP", "ADD_OP", "MUL_OP", "PLUS", "STAR", "AND", "OR", "NOT"})


@dataclass(frozen=True)
class Tok:
    """A token as the lexer produced it: its terminal, text and position (as the parser reports them)."""

    type: str
    value: str
    start_pos: int | None
    end_pos: int | None
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None


@dataclass(frozen=True)
class Terminals:
    """The grammar's keyword and punctuation terminals, each with its literal text."""

    literals: Mapping[str, str]

    def readable(self, terminal: str) -> list[str]:
        """How a terminal is named in messages: `keyword`, `{`, or a class like `identifier`."""
        if terminal in _CLASS_NAMES:
            return [_CLASS_NAMES[terminal]]
        if terminal in _KEYWORD_SETS:
            return [f"`{word}`" for word in _KEYWORD_SETS[terminal]]
        literal = self.literals.get(terminal)
        return [f"`{literal}`"] if literal is not None else [terminal.lower()]

    def keywords(self, expected: set[str]) -> list[str]:
        words: list[str] = []
        for name in expected:
            if name in _KEYWORD_SETS:
                words.extend(w for w in _KEYWORD_SETS[name] if w.isidentifier())
            literal = self.literals.get(name)
            if literal is not None and literal.isidentifier():
                words.append(literal)
        return sorted(set(words))

    def readable_set(self, expected: set[str]) -> set[str]:
        return {r for t in expected for r in self.readable(t)}

    def expected_text(self, expected: set[str]) -> str:
        names = sorted(self.readable_set(expected), key=lambda s: (not s.startswith("`"), s))
        shown = names[:MAX_EXPECTED]
        more = len(names) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    def expected_label(self, expected: set[str]) -> str:
        names = self.expected_text(expected)
        return f"expected {names}" if len(self.readable_set(expected)) == 1 else f"expected one of: {names}"

    @functools.cached_property
    def all_keywords(self) -> frozenset[str]:
        return frozenset(self.keywords(set(self.literals) | set(_KEYWORD_SETS)))

    def terminal_of(self, word: str) -> str | None:
        """The terminal that lexes ``word`` as a keyword."""
        for name, literal in self.literals.items():
            if literal == word:
                return name
        return next((name for name, words in _KEYWORD_SETS.items() if word in words), None)


# ----------------------------------------------------------------- positions


def source_lines(text: str) -> list[str]:
    """The lines as the parser counts them: only "\n" ends a line (not a form feed or U+2028)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def span_at(path: str, text: str, start: int, length: int) -> Span:
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return Span(path, line, col, line, col + max(length, 1))


def _word_from(text: str, start: int, chars: frozenset[str]) -> str:
    end = start
    while end < len(text) and text[end] in chars:
        end += 1
    return text[start:end]


# ----------------------------------------------------------------- the kinds of syntax error


def split_word(terms: Terminals, path: str, text: str, token: Tok, expected: set[str]) -> Diagnostic:
    """A keyword or literal glued to the characters after it: `warps1`, `fullwait`, `4x`, `2x1x1x1`."""
    start = token.start_pos or 0
    if token.type in _LITERALS:
        return _invalid_literal(path, text, start, token.type)
    word = _word_from(text, start, WORD_CHARS)
    span = span_at(path, text, start, len(word))
    keyword = token.value
    rest = word[len(keyword) :]
    helps: list[str] = []
    if keyword in terms.keywords(expected):
        # `warps1`, `fullwait`, `produceby`: a missing space; `ringg`: a typo.
        missing_space = rest[0].isdigit() or len(rest) > 2 or rest in terms.all_keywords
        helps.append(f"did you mean `{keyword} {rest}`?" if missing_space else f"did you mean `{keyword}`?")
    return Diagnostic(
        Code.E_SYNTAX, f"unexpected `{word}`", labels=(Label(span, terms.expected_label(expected)),), helps=tuple(helps)
    )


def unexpected_end(terms: Terminals, path: str, text: str, expected: set[str]) -> Diagnostic:
    """The file ended early: an unclosed block if one is open, else what was still expected."""
    unclosed = _unclosed_block(text)
    if unclosed is not None:
        return _unterminated(path, text, unclosed)
    return Diagnostic(
        Code.E_SYNTAX, "unexpected end of file", labels=(Label(_end_point(path, text), terms.expected_label(expected)),)
    )


def unexpected_token(
    terms: Terminals,
    path: str,
    text: str,
    tok: Tok,
    expected: set[str],
    *,
    stack_top: Tok | None,
    last_token: Tok | None,
    accepts_after_newline: Callable[[str], bool] | None,
) -> Diagnostic:
    """A token the parser cannot take here.

    ``stack_top`` is the token the parser shifted last (None when its stack ends in a rule),
    ``last_token`` the last token read at all, and ``accepts_after_newline(word)`` whether the
    parser would take the keyword ``word`` after a line break (None when it cannot be asked).
    """
    start = tok.start_pos or 0
    literal = _literal_attempt(text, start, expected, last_token)
    if literal is not None:
        return _invalid_literal(path, text, start, literal)
    line, col = tok.line or 1, tok.column or 1
    value = tok.value
    shown = "=>" if value == "=" and text.startswith("=>", start) else value
    if tok.type == "_NL":
        span = Span.point(path, line, col)
    elif shown != value:
        span = span_at(path, text, start, len(shown))
    else:
        span = Span(path, line, col, tok.end_line or line, tok.end_column or col + max(len(value), 1))
    previous = stack_top.value if stack_top is not None else ""
    after_keyword = previous in terms.all_keywords
    helps: list[str] = []
    labels = [Label(span, terms.expected_label(expected))]
    message = f"unexpected {_describe(terms, tok)}" if shown == value else f"unexpected `{shown}`"
    if tok.type == "RBRACE" and not _open_blocks(text, start):
        message = "unmatched `}`"
        labels = [Label(span, "no block is open here")]
        helps.append("remove this `}`")
    elif tok.type in _ENDS and after_keyword and expected & _VALUE_CLASSES:
        message = f"missing value after `{previous}`"
    elif shown in _LOOKALIKES and f"`{_LOOKALIKES[shown]}`" in terms.readable_set(expected):
        helps.append(f"did you mean `{_LOOKALIKES[shown]}`?")
    elif value in terms.all_keywords:
        helps.extend(_misplaced_keyword(terms, value, expected, accepts_after_newline))
    elif stack_top is not None and stack_top.type in _OPERATORS and (tok.type in _OPERATORS or tok.type in _ENDS):
        helps.append(f"`{previous}` needs an operand after it")
    elif tok.type == "NAME" and (guess := did_you_mean(value, terms.keywords(expected))) is not None:
        helps.append(f"did you mean `{guess}`?")
    elif tok.type == "NAME" and "STRING" in expected and "NAME" not in expected:
        word = text[start:].split(maxsplit=1)[0]
        helps.append(f'names of stages, domains and files are strings: write `"{word}"`')
    elif expected == {"DOT"}:
        helps.append("an event names a tensor connection and one of its events: `acc.ready`")
    elif len(keywords := terms.keywords(expected)) == 1 == len(terms.readable_set(expected)) and after_keyword:
        helps.append(f"did you mean `{previous} {keywords[0]} {value}`?")
    elif expected == {"VERSION"}:
        helps.append('a stage states its version after its name: `stage "name" version "1.0.0" {`')
    helps.extend(_swallowed_by_string(terms, tok, expected, stack_top))
    if tok.type != "RBRACE":
        opener = _outdented_in(text, tok)
        if opener is not None:
            ln, oc, what = opener
            labels.append(Label(Span.point(path, ln, oc), f"{what}block opened here", primary=False))
            helps.append(f"is a `}}` missing? the {what}block is still open here")
    return Diagnostic(Code.E_SYNTAX, message, labels=tuple(labels), helps=tuple(helps))


def unexpected_chars(
    terms: Terminals,
    path: str,
    text: str,
    *,
    pos: int,
    line: int,
    column: int,
    allowed: set[str],
    last_token: Tok | None,
) -> Diagnostic:
    """Characters no terminal starts with here (the lexer's error)."""
    literal = _literal_attempt(text, pos, allowed, last_token)
    if literal is not None:
        return _invalid_literal(path, text, pos, literal)
    lines = source_lines(text)
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    ch = here[column - 1] if 0 < column <= len(here) else "?"
    span = Span.point(path, line, column)
    if ch == '"':
        return Diagnostic(
            Code.E_SYNTAX,
            "unterminated string",
            labels=(Label(span, "this string is never closed"),),
            helps=('strings close with `"` on the same line',),
        )
    label = terms.expected_label(allowed) if allowed else "not valid here"
    return Diagnostic(Code.E_SYNTAX, f"unexpected character `{ch}`", labels=(Label(span, label),))


def invalid_syntax(path: str, line: int, column: int) -> Diagnostic:
    """A syntax error the parser could not place more precisely."""
    return Diagnostic(
        Code.E_SYNTAX, "invalid syntax", labels=(Label(Span.point(path, max(line, 1), max(column, 1)), "here"),)
    )


# ------------------------------------------------------------ malformed literals


def _literal_attempt(text: str, pos: int, expected: set[str], previous: Tok | None) -> str | None:
    """The literal terminal (INT, VERSION_REQ, SHAPE) that a malformed number-like word at ``pos`` was meant as."""
    if (
        previous is not None
        and previous.type in _LITERALS
        and previous.end_pos == pos
        and pos > 0
        and text[pos - 1] in _NUMBER_CHARS
        and pos < len(text)
        and text[pos] in _NUMBER_CHARS
    ):
        return previous.type
    if pos < len(text) and text[pos].isdigit():
        for terminal in ("SHAPE", "VERSION_REQ", "INT"):
            if terminal in expected:
                return terminal
    return None


def _invalid_literal(path: str, text: str, pos: int, terminal: str) -> Diagnostic:
    start = _literal_start(text, pos)
    word = _word_from(text, start, _NUMBER_CHARS | _VERSION_OPERATORS)
    what, how = _LITERALS[terminal]
    return Diagnostic(
        Code.E_SYNTAX,
        f"invalid {what} `{word}`",
        labels=(Label(span_at(path, text, start, len(word)), f"not a valid {what}"),),
        helps=(how,),
    )


def _literal_start(text: str, pos: int) -> int:
    start = pos
    while start > 0 and text[start - 1] in _NUMBER_CHARS:
        start -= 1
    while start > 0 and text[start - 1] in _VERSION_OPERATORS:
        start -= 1
    return start


# ------------------------------------------------------------ unexpected tokens


def _describe(terms: Terminals, tok: Tok) -> str:
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "NAME":
        return f"`{tok.value}`" if tok.value in terms.all_keywords else f"identifier `{tok.value}`"
    if tok.type == "INT":
        return f"integer `{tok.value}`"
    if tok.type == "STRING":
        return f"string {tok.value}"
    return f"`{tok.value}`"


def _misplaced_keyword(
    terms: Terminals, word: str, expected: set[str], accepts_after_newline: Callable[[str], bool] | None
) -> list[str]:
    """Help for a keyword that is valid elsewhere: at top level, after a line break, or a near miss."""
    if expected <= {"STAGE", "PIPELINE", "_NL", "$END"}:
        return [f"`{word}` goes inside a `stage` or `pipeline` block"]
    if accepts_after_newline is not None and "_NL" in expected and accepts_after_newline(word):
        return [f"start `{word}` on a new line: every item takes a line of its own"]
    guess = did_you_mean(word, [k for k in terms.keywords(expected) if k != word])
    return [f"did you mean `{guess}`?"] if guess is not None else []


def _swallowed_by_string(terms: Terminals, tok: Tok, expected: set[str], previous: Tok | None) -> list[str]:
    """A string that ran on past its end and took the keyword the parser now misses."""
    if previous is None or previous.type != "STRING" or previous.end_pos != tok.start_pos:
        return []
    inside = previous.value[1:-1].split()
    swallowed = [w for w in terms.keywords(expected) if w in inside]
    if not swallowed:
        return []
    return [f'is a closing `"` missing? the string {previous.value} runs on past `{swallowed[0]}`']


# ------------------------------------------------------------ end of file and blocks


def _end_point(path: str, text: str) -> Span:
    lines = source_lines(text)
    return Span.point(path, len(lines), len(lines[-1]) + 1)


_Opener = tuple[int, int, str]


def _unterminated(path: str, text: str, opener: _Opener) -> Diagnostic:
    line, col, what = opener
    return Diagnostic(
        Code.E_SYNTAX,
        f"unterminated {what}block: `{{` is never closed",
        labels=(
            Label(Span.point(path, line, col), "block opened here"),
            Label(_end_point(path, text), "file ends here", primary=False),
        ),
        helps=("close the block with `}`",),
    )


def _blocks(text: str, stop: int | None = None) -> tuple[list[_Opener], list[_Opener]]:
    """Scan braces outside strings and comments up to offset ``stop``.

    Returns the blocks still open and those that a `}` indented like an outer block
    skipped over (the likely culprits of a missing `}`), each as (line, column, "`word` ").
    """
    stack: list[tuple[int, int, str, int]] = []
    skipped: list[_Opener] = []
    offset = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        indent = len(line) - len(line.lstrip(" \t"))
        in_string = False
        for idx, ch in enumerate(line):
            if stop is not None and offset + idx >= stop:
                return [s[:3] for s in stack], skipped
            if ch == '"':
                in_string = not in_string
            elif in_string:
                continue
            elif ch == "#":
                break
            elif ch == "{":
                head = line[:idx].split()
                word = f"`{head[0]}` " if head and head[0].isidentifier() else ""
                stack.append((lineno, idx + 1, word, indent))
            elif ch == "}" and stack:
                if idx == indent:
                    while len(stack) > 1 and stack[-1][3] > indent and any(s[3] == indent for s in stack):
                        skipped.append(stack.pop()[:3])
                stack.pop()
        offset += len(line) + 1
    return [s[:3] for s in stack], skipped


def _open_blocks(text: str, stop: int) -> list[_Opener]:
    return _blocks(text, stop)[0]


def _unclosed_block(text: str) -> _Opener | None:
    """The block a missing `}` most likely belongs to: one skipped by indentation, else the innermost."""
    still_open, skipped = _blocks(text)
    if skipped:
        return skipped[0]
    return still_open[-1] if still_open else None


def _outdented_in(text: str, tok: Tok) -> _Opener | None:
    """The innermost open block when the error's line is indented no deeper than that block's opening line."""
    start = tok.start_pos or 0
    still_open = _open_blocks(text, start)
    if not still_open:
        return None
    lines = source_lines(text)
    line_of = (tok.line or 1) - 1
    opener = still_open[-1]
    if not (0 <= line_of < len(lines)) or opener[0] - 1 >= len(lines) or opener[0] == tok.line:
        return None

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip(" \t"))

    return opener if indent(lines[line_of]) <= indent(lines[opener[0] - 1]) else None
