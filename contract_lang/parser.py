"""Parse contract text into the typed AST, turning every mistake into a diagnostic.

``parse_text`` and ``parse_file`` never raise anything but ``DiagnosticError``:
syntax errors name file:line:col, underline the offending token and list what
was expected in readable names; wrong vocabulary gets a "did you mean".
"""

from __future__ import annotations

import difflib
import functools
import gc
from pathlib import Path
from typing import Any, Literal

from lark import Lark, Token, Tree
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
    # The analysed LALR tables are cached (lark checks the grammar, options, lark and Python
    # versions against the file's hash and rebuilds on any mismatch): ~0.65 s -> ~40 ms a start.
    return Lark.open("grammar.lark", rel_to=__file__, parser="lalr", lexer="contextual",
                     propagate_positions=True, strict=True, maybe_placeholders=True,
                     cache=_grammar_cache() or False)


def _grammar_cache() -> str | None:
    """Where the analysed grammar is kept: the user cache directory, keyed by grammar and lark version."""
    import hashlib
    import os

    import lark

    if os.environ.get("KERNLINK_NO_GRAMMAR_CACHE"):
        return None
    base = os.environ.get("KERNLINK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kernlink")
    grammar = Path(__file__).with_name("grammar.lark").read_bytes()
    key = hashlib.sha256(grammar + lark.__version__.encode()).hexdigest()[:16]
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return None
    return os.path.join(base, f"grammar-{key}.lark-cache")


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


def _readable_set(expected: set[str]) -> set[str]:
    return {r for t in expected for r in readable(t)}


def expected_text(expected: set[str]) -> str:
    names = sorted(_readable_set(expected), key=lambda s: (not s.startswith("`"), s))
    shown = names[:MAX_EXPECTED]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def parse_text(text: str, path: str = "<input>", kind: FileKind = "any") -> SourceFile:
    """Parse one file's text; raise DiagnosticError with one clean diagnostic on bad input."""
    if not _has_content(text):
        raise DiagnosticError([_empty(path, kind, text)])
    # Parsing allocates many small objects that all stay alive until the AST is built;
    # the cyclic collector would only rescan them (half the time on large files).
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            tree = _parse_tree(text, path)
        except UnexpectedInput as err:
            raise DiagnosticError([_syntax_diagnostic(err, text, path)]) from None
        source = AstBuilder(path).build(tree)
    finally:
        if collecting:
            gc.enable()
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

def _lines(text: str) -> list[str]:
    """The lines as the parser counts them: only "\n" ends a line (not a form feed or U+2028)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def _has_content(text: str) -> bool:
    return any(line.split("#", 1)[0].strip() for line in _lines(text))


def _empty(path: str, kind: FileKind, text: str) -> Diagnostic:
    what = {"contract": "a `stage` block", "pipeline": "a `pipeline` block",
            "any": "a `stage` or `pipeline` block"}[kind]
    message = f"`{path}` holds nothing but comments" if text.strip() else f"`{path}` is empty"
    return Diagnostic("E-EMPTY", message, labels=(Label(Span(path, 1, 1, 1, 1), "nothing here"),),
                      helps=(f"a file needs {what}",))


def _check_kind(source: SourceFile, kind: FileKind) -> None:
    if kind == "contract":
        wrong: list[Stage | Pipeline] = list(source.pipelines)
        if wrong:
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a contract file holds `stage` blocks, not a `pipeline`",
                labels=(Label(_keyword_span(wrong[0].span, "pipeline"), "pipeline found here"),),
                helps=("move the pipeline into its own `.kp` file",))])
    elif kind == "pipeline":
        if source.stages:
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a pipeline file holds one `pipeline` block, not stages",
                labels=(Label(_keyword_span(source.stages[0].span, "stage"), "stage found here"),),
                helps=("move stage contracts into `.kc` files beside the pipeline",))])
        if len(source.pipelines) > 1:
            first, second = source.pipelines[0], source.pipelines[1]
            raise DiagnosticError([Diagnostic(
                "E-SYNTAX", "a pipeline file holds exactly one `pipeline` block",
                labels=(Label(_keyword_span(second.span, "pipeline"), "second pipeline"),
                        Label(_keyword_span(first.span, "pipeline"), "first pipeline", primary=False)),
                helps=("split the compositions into separate `.kp` files",))])


def _keyword_span(block: Span, keyword: str) -> Span:
    """The keyword that opens a block: the locus of a block in the wrong file."""
    return Span(block.file, block.line, block.col, block.line, block.col + len(keyword))


# ----------------------------------------------------------------- syntax errors

_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NUMBER_CHARS = _WORD_CHARS | {"."}
_VERSION_OPERATORS = frozenset("^~<>=")
# What an integer, a version requirement and a cluster shape look like, for "invalid …" messages.
_LITERALS: dict[str, tuple[str, str]] = {
    "INT": ("integer", "integers are decimal (`64`), hexadecimal (`0x40`) or whole KiB (`16KiB`)"),
    "VERSION_REQ": ("version requirement",
                    "a requirement is one to three numbers with an optional `^`, `~`, `>=`, `<=`, `>`, `<` "
                    "or `=`: `^1.0`, `~1.2.3`, `>=2`"),
    "SHAPE": ("cluster shape", "a cluster shape has three extents: `2x1x1`"),
}
# Punctuation that is easily mistyped for what was expected.
_LOOKALIKES: dict[str, str] = {"=>": "->", "=": "=="}


# Bound of one expression (specs/language.md §13): at most 256 operators. Every operator is
# one node of the expression's tree, so the tree is at most 257 deep and every later walk of
# it stays far from Python's recursion limit; parentheses and line length add no depth (the
# parser and the AST builder are iterative). A hostile file fails at the operator that crosses it.
MAX_OPERATORS = 256
_EXPR_TOKENS = frozenset({"INT", "NAME", "LPAR", "RPAR", "ADD_OP", "MUL_OP", "COMPARE_OP", "AND", "OR", "NOT"})
_EXPR_OPERATORS = frozenset({"ADD_OP", "MUL_OP", "COMPARE_OP", "AND", "OR", "NOT"})


class _ExprBounds:
    """Counts the operators of a run of expression tokens (one expression, or a map's body line)."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.operators = 0

    def feed(self, token: Token) -> None:
        kind = token.type
        if kind not in _EXPR_TOKENS:
            self.operators = 0
        elif kind in _EXPR_OPERATORS:
            self.operators += 1
            if self.operators > MAX_OPERATORS:
                span = _span_at(self.path, self.text, token.start_pos or 0, len(str(token.value)))
                raise DiagnosticError([Diagnostic(
                    "E-TOO-LARGE", f"an expression holds at most {MAX_OPERATORS} operators",
                    labels=(Label(span, f"operator {MAX_OPERATORS + 1} is here"),),
                    helps=("split the constraint into several `requires fact` lines, which must all hold",))])


def _parse_tree(text: str, path: str) -> Tree[Token]:
    """Parse, refusing a word the lexer would otherwise split (`smemtiles` as `smem tiles`)
    and an expression past its bounds."""
    parser = _lark().parse_interactive(text)
    last: Token | None = None
    bounds = _ExprBounds(path, text)
    for token in parser.iter_parse():
        end = token.end_pos
        if end is not None and 0 < end < len(text) and text[end - 1] in _WORD_CHARS and text[end] in _WORD_CHARS:
            expected = {t for t in parser.choices() if t.isupper()}  # type: ignore[no-untyped-call]
            raise DiagnosticError([_split_word(path, text, token, expected)])
        bounds.feed(token)
        last = token
    tree: Tree[Token] = parser.feed_eof(last)  # type: ignore[no-untyped-call]
    return tree


def _split_word(path: str, text: str, token: Token, expected: set[str]) -> Diagnostic:
    """A keyword or literal glued to the characters after it: `warps1`, `fullwait`, `4x`, `2x1x1x1`."""
    start = token.start_pos or 0
    literal = _LITERALS.get(token.type)
    if literal is not None:
        return _invalid_literal(path, text, start, token.type)
    word = _word_from(text, start, _WORD_CHARS)
    span = _span_at(path, text, start, len(word))
    keyword = str(token.value)
    rest = word[len(keyword):]
    helps: list[str] = []
    if keyword in _keywords(expected):
        # `warps1`, `fullwait`, `produceby`: a missing space; `ringg`: a typo.
        missing_space = rest[0].isdigit() or len(rest) > 2 or rest in _all_keywords()
        helps.append(f"did you mean `{keyword} {rest}`?" if missing_space else f"did you mean `{keyword}`?")
    return Diagnostic("E-SYNTAX", f"unexpected `{word}`", labels=(Label(span, _expected_label(expected)),),
                      helps=tuple(helps))


def _syntax_diagnostic(err: UnexpectedInput, text: str, path: str) -> Diagnostic:
    if (isinstance(err, UnexpectedToken) and err.token.type == "$END") or isinstance(err, UnexpectedEOF):
        expected = set(getattr(err, "expected", ()) or ())
        unclosed = _unclosed_block(text)
        if unclosed is not None:
            return _unterminated(path, text, unclosed)
        return _at_eof(path, text, expected)
    if isinstance(err, UnexpectedToken):
        expected = set(err.expected)
        literal = _literal_attempt(text, err.token.start_pos or 0, expected, _previous_token(err))
        if literal is not None:
            return _invalid_literal(path, text, err.token.start_pos or 0, literal)
        return _unexpected_token(path, text, err.token, expected, err.state)
    if isinstance(err, UnexpectedCharacters):
        allowed = set(err.allowed or ())
        pos = err.pos_in_stream or 0
        literal = _literal_attempt(text, pos, allowed, _previous_token(err))
        if literal is not None:
            return _invalid_literal(path, text, pos, literal)
        return _unexpected_chars(path, text, err)
    line, col = max(err.line, 1), max(err.column, 1)
    return Diagnostic("E-SYNTAX", "invalid syntax", labels=(Label(Span.point(path, line, col), "here"),))


# ------------------------------------------------------------ malformed literals

def _previous_token(err: UnexpectedInput) -> Token | None:
    """The token shifted just before the error, when the parser still holds it."""
    state = getattr(err, "state", None)
    stack = getattr(state, "value_stack", None)
    if stack and isinstance(stack[-1], Token):
        return stack[-1]
    history = getattr(err, "token_history", None)
    return history[-1] if history and isinstance(history[-1], Token) else None


def _literal_attempt(text: str, pos: int, expected: set[str], previous: Token | None) -> str | None:
    """The literal terminal (INT, VERSION_REQ, SHAPE) that a malformed number-like word at ``pos`` was meant as."""
    if previous is not None and previous.type in _LITERALS and previous.end_pos == pos and pos > 0 \
            and text[pos - 1] in _NUMBER_CHARS and pos < len(text) and text[pos] in _NUMBER_CHARS:
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
    return Diagnostic("E-SYNTAX", f"invalid {what} `{word}`",
                      labels=(Label(_span_at(path, text, start, len(word)), f"not a valid {what}"),),
                      helps=(how,))


def _literal_start(text: str, pos: int) -> int:
    start = pos
    while start > 0 and text[start - 1] in _NUMBER_CHARS:
        start -= 1
    while start > 0 and text[start - 1] in _VERSION_OPERATORS:
        start -= 1
    return start


def _word_from(text: str, start: int, chars: frozenset[str]) -> str:
    end = start
    while end < len(text) and text[end] in chars:
        end += 1
    return text[start:end]


def _span_at(path: str, text: str, start: int, length: int) -> Span:
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return Span(path, line, col, line, col + max(length, 1))


# ------------------------------------------------------------ unexpected tokens

def _describe(tok: Token) -> str:
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "NAME":
        return f"`{tok.value}`" if tok.value in _all_keywords() else f"identifier `{tok.value}`"
    if tok.type == "INT":
        return f"integer `{tok.value}`"
    if tok.type == "STRING":
        return f"string {tok.value}"
    return f"`{tok.value}`"


def _expected_label(expected: set[str]) -> str:
    names = expected_text(expected)
    return f"expected {names}" if len(_readable_set(expected)) == 1 else f"expected one of: {names}"


@functools.cache
def _all_keywords() -> frozenset[str]:
    return frozenset(_keywords(set(_literal_names()) | set(_KEYWORD_SETS)))


_VALUE_CLASSES = frozenset({"INT", "NAME", "STRING", "SHAPE", "VERSION_REQ"})
_ENDS = frozenset({"_NL", "RBRACE", "$END"})


def _unexpected_token(path: str, text: str, tok: Token, expected: set[str], state: Any) -> Diagnostic:
    line, col = tok.line or 1, tok.column or 1
    value = str(tok.value)
    start = tok.start_pos or 0
    shown = "=>" if value == "=" and text.startswith("=>", start) else value
    if tok.type == "_NL":
        span = Span.point(path, line, col)
    elif shown != value:
        span = _span_at(path, text, start, len(shown))
    else:
        span = Span(path, line, col, tok.end_line or line, tok.end_column or col + max(len(value), 1))
    previous = _previous_value(state)
    after_keyword = previous in _all_keywords()
    helps: list[str] = []
    labels = [Label(span, _expected_label(expected))]
    message = f"unexpected {_describe(tok)}" if shown == value else f"unexpected `{shown}`"
    if tok.type == "RBRACE" and not _open_blocks(text, start):
        message = "unmatched `}`"
        labels = [Label(span, "no block is open here")]
        helps.append("remove this `}`")
    elif tok.type in _ENDS and after_keyword and expected & _VALUE_CLASSES:
        message = f"missing value after `{previous}`"
    elif shown in _LOOKALIKES and f"`{_LOOKALIKES[shown]}`" in _readable_set(expected):
        helps.append(f"did you mean `{_LOOKALIKES[shown]}`?")
    elif value in _all_keywords():
        helps.extend(_misplaced_keyword(value, expected, state))
    elif _previous_type(state) in _OPERATORS and (tok.type in _OPERATORS or tok.type in _ENDS):
        helps.append(f"`{previous}` needs an operand after it")
    elif tok.type == "NAME" and (guess := did_you_mean(value, _keywords(expected))) is not None:
        helps.append(f"did you mean `{guess}`?")
    elif tok.type == "NAME" and "STRING" in expected and "NAME" not in expected:
        word = text[start:].split(maxsplit=1)[0]
        helps.append(f'names of stages, domains and files are strings: write `"{word}"`')
    elif expected == {"DOT"}:
        helps.append("an event names a tensor connection and one of its events: `acc.ready`")
    elif len(keywords := _keywords(expected)) == 1 == len(_readable_set(expected)) and after_keyword:
        helps.append(f"did you mean `{previous} {keywords[0]} {value}`?")
    elif expected == {"VERSION"}:
        helps.append('a stage states its version after its name: `stage "name" version "1.0.0" {`')
    helps.extend(_swallowed_by_string(tok, expected, state))
    if tok.type != "RBRACE":
        opener = _outdented_in(text, tok)
        if opener is not None:
            ln, oc, what = opener
            labels.append(Label(Span.point(path, ln, oc), f"{what}block opened here", primary=False))
            helps.append(f"is a `}}` missing? the {what}block is still open here")
    return Diagnostic("E-SYNTAX", message, labels=tuple(labels), helps=tuple(helps))


_OPERATORS = frozenset({"COMPARE_OP", "ADD_OP", "MUL_OP", "PLUS", "STAR", "AND", "OR", "NOT"})


def _previous_type(state: Any) -> str | None:
    stack = getattr(state, "value_stack", None)
    return stack[-1].type if stack and isinstance(stack[-1], Token) else None


def _previous_value(state: Any) -> str:
    stack = getattr(state, "value_stack", None)
    return str(stack[-1].value) if stack and isinstance(stack[-1], Token) else ""


def _misplaced_keyword(word: str, expected: set[str], state: Any) -> list[str]:
    """Help for a keyword that is valid elsewhere: at top level, after a line break, or a near miss."""
    if expected <= {"STAGE", "PIPELINE", "_NL", "$END"}:
        return [f"`{word}` goes inside a `stage` or `pipeline` block"]
    if state is not None and "_NL" in expected and _accepts_after_newline(state, word):
        return [f"start `{word}` on a new line: every item takes a line of its own"]
    guess = did_you_mean(word, [k for k in _keywords(expected) if k != word])
    return [f"did you mean `{guess}`?"] if guess is not None else []


def _accepts_after_newline(state: Any, word: str) -> bool:
    terminal = _keyword_terminal(word)
    if terminal is None:
        return False
    trial = state.copy()
    try:
        trial.feed_token(Token("_NL", "\n"))
        trial.feed_token(Token(terminal, word))
    except UnexpectedInput:
        return False
    return True


def _keyword_terminal(word: str) -> str | None:
    for name, literal in _literal_names().items():
        if literal == word:
            return name
    return next((name for name, words in _KEYWORD_SETS.items() if word in words), None)


def _swallowed_by_string(tok: Token, expected: set[str], state: Any) -> list[str]:
    """A string that ran on past its end and took the keyword the parser now misses."""
    stack = getattr(state, "value_stack", None)
    previous = stack[-1] if stack else None
    if not isinstance(previous, Token) or previous.type != "STRING" or previous.end_pos != tok.start_pos:
        return []
    inside = str(previous.value)[1:-1].split()
    swallowed = [w for w in _keywords(expected) if w in inside]
    if not swallowed:
        return []
    return [f"is a closing `\"` missing? the string {previous.value} runs on past `{swallowed[0]}`"]


def _unexpected_chars(path: str, text: str, err: UnexpectedCharacters) -> Diagnostic:
    line, col = err.line, err.column
    lines = _lines(text)
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    allowed = set(err.allowed or ())
    ch = here[col - 1] if 0 < col <= len(here) else "?"
    span = Span.point(path, line, col)
    if ch == '"':
        return Diagnostic("E-SYNTAX", "unterminated string", labels=(Label(span, "this string is never closed"),),
                          helps=("strings close with `\"` on the same line",))
    label = _expected_label(allowed) if allowed else "not valid here"
    return Diagnostic("E-SYNTAX", f"unexpected character `{ch}`", labels=(Label(span, label),))


# ------------------------------------------------------------ end of file and blocks

def _end_point(path: str, text: str) -> Span:
    lines = _lines(text)
    return Span.point(path, len(lines), len(lines[-1]) + 1)


def _at_eof(path: str, text: str, expected: set[str]) -> Diagnostic:
    return Diagnostic("E-SYNTAX", "unexpected end of file",
                      labels=(Label(_end_point(path, text), _expected_label(expected)),))


_Opener = tuple[int, int, str]


def _unterminated(path: str, text: str, opener: _Opener) -> Diagnostic:
    line, col, what = opener
    return Diagnostic(
        "E-SYNTAX", f"unterminated {what}block: `{{` is never closed",
        labels=(Label(Span.point(path, line, col), "block opened here"),
                Label(_end_point(path, text), "file ends here", primary=False)),
        helps=("close the block with `}`",))


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


def _outdented_in(text: str, tok: Token) -> _Opener | None:
    """The innermost open block when the error's line is indented no deeper than that block's opening line."""
    start = tok.start_pos or 0
    still_open = _open_blocks(text, start)
    if not still_open:
        return None
    lines = _lines(text)
    line_of = (tok.line or 1) - 1
    opener = still_open[-1]
    if not (0 <= line_of < len(lines)) or opener[0] - 1 >= len(lines) or opener[0] == tok.line:
        return None

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip(" \t"))

    return opener if indent(lines[line_of]) <= indent(lines[opener[0] - 1]) else None
