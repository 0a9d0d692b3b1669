"""Parse contract text into the typed AST, turning every mistake into a diagnostic.

``parse_text`` and ``parse_file`` never raise anything but ``DiagnosticError``:
syntax errors name file:line:col, underline the offending token and list what
was expected in readable names; wrong vocabulary gets a "did you mean".
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
from pathlib import Path
from typing import Any, Literal

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.grammar import Rule
from lark.lexer import TerminalDef

from contract_lang.ast import Pipeline, SourceFile, Stage
from contract_lang.transform import AstBuilder
from diagnostics import syntax_errors
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.private import read_sealed, write_sealed
from diagnostics.span import Span
from diagnostics.symbols import Code
from diagnostics.syntax_errors import WORD_CHARS, Terminals, Tok, source_lines, span_at

FileKind = Literal["contract", "pipeline", "any"]


@functools.cache
def _lark() -> Lark:
    """The parser: its analysed LALR tables from the grammar cache (~0.65 s -> ~40 ms a start), else built
    from the grammar and cached."""
    cache = _grammar_cache()
    if cache is not None:
        sealed = read_sealed(*cache)
        if sealed is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError, IndexError, AttributeError, LarkError):
                data = json.loads(sealed, object_hook=_int_keys)
                loaded: Lark = Lark._load_from_dict(data["data"], data["memo"])  # type: ignore[no-untyped-call]
                return loaded
    parser = Lark.open(
        "grammar.lark",
        rel_to=__file__,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        strict=True,
        maybe_placeholders=True,
    )
    if cache is not None:
        data, memo = parser.memo_serialize([TerminalDef, Rule])
        text = json.dumps(_json_ready({"data": data, "memo": memo}), separators=(",", ":"), sort_keys=True)
        write_sealed(*cache, text.encode("utf-8"))
    return parser


def _grammar_cache() -> tuple[Path, str] | None:
    """Where the analysed grammar is kept: (the user cache folder, the entry's name), keyed by the grammar
    and the lark version; None with ``KERNLINK_NO_GRAMMAR_CACHE``.

    The entry is JSON, read without running anything (lark's own cache is a pickle, which runs
    whatever a planted file says), and sealed (diagnostics/private.py): a planted, damaged or
    stale entry reads as absent and is built again. ``E-IO`` when the cache folder is refused.
    """
    import hashlib
    import os

    import lark

    if os.environ.get("KERNLINK_NO_GRAMMAR_CACHE"):
        return None
    from diagnostics.files import user_cache_dir

    grammar = Path(__file__).with_name("grammar.lark").read_bytes()
    key = hashlib.sha256(grammar + lark.__version__.encode()).hexdigest()[:16]
    return user_cache_dir(), f"grammar-{key}.json"


def _json_ready(value: Any) -> Any:
    """Lark's serialized tables as JSON: tuples as lists, and a dict with keys JSON cannot keep (the LALR
    states' integers) as ``{"#": [[key, value], ...]}``."""
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        if "#" not in value and all(isinstance(k, str) for k in value):
            return {k: _json_ready(v) for k, v in value.items()}
        return {"#": [[k, _json_ready(v)] for k, v in value.items()]}
    return value


def _int_keys(obj: dict[str, Any]) -> dict[Any, Any]:
    return {k: v for k, v in obj["#"]} if "#" in obj else obj


@functools.cache
def terminals() -> Terminals:
    """The grammar's keyword and punctuation terminals with their literal texts, for syntax errors."""
    literals: dict[str, str] = {}
    for term in _lark().terminals:
        if type(term.pattern).__name__ == "PatternStr":
            literals[term.name] = term.pattern.value
    return Terminals(literals)


def parse_text(text: str, path: str = "<input>", kind: FileKind = "any") -> SourceFile:
    """Parse one file's text; raise DiagnosticError with one clean diagnostic on bad input.

    The AST is frozen and a pure function of the arguments, so it is kept per process: a
    build parses each contract several times (the ``.kc``, the copy a package embeds), a
    resident build (`kernlink build --watch`, `check --watch`) again on every round.
    """
    return _parse_text(text, path, kind)


@functools.lru_cache(maxsize=256)
def _parse_text(text: str, path: str, kind: FileKind) -> SourceFile:
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


def _has_content(text: str) -> bool:
    return any(line.split("#", 1)[0].strip() for line in source_lines(text))


def _empty(path: str, kind: FileKind, text: str) -> Diagnostic:
    what = {"contract": "a `stage` block", "pipeline": "a `pipeline` block", "any": "a `stage` or `pipeline` block"}[
        kind
    ]
    message = f"`{path}` holds nothing but comments" if text.strip() else f"`{path}` is empty"
    return Diagnostic(
        Code.E_EMPTY, message, labels=(Label(Span(path, 1, 1, 1, 1), "nothing here"),), helps=(f"a file needs {what}",)
    )


def _check_kind(source: SourceFile, kind: FileKind) -> None:
    if kind == "contract":
        wrong: list[Stage | Pipeline] = list(source.pipelines)
        if wrong:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_SYNTAX,
                        "a contract file holds `stage` blocks, not a `pipeline`",
                        labels=(Label(_keyword_span(wrong[0].span, "pipeline"), "pipeline found here"),),
                        helps=("move the pipeline into its own `.kp` file",),
                    )
                ]
            )
    elif kind == "pipeline":
        if source.stages:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_SYNTAX,
                        "a pipeline file holds one `pipeline` block, not stages",
                        labels=(Label(_keyword_span(source.stages[0].span, "stage"), "stage found here"),),
                        helps=("move stage contracts into `.kc` files beside the pipeline",),
                    )
                ]
            )
        if len(source.pipelines) > 1:
            first, second = source.pipelines[0], source.pipelines[1]
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_SYNTAX,
                        "a pipeline file holds exactly one `pipeline` block",
                        labels=(
                            Label(_keyword_span(second.span, "pipeline"), "second pipeline"),
                            Label(_keyword_span(first.span, "pipeline"), "first pipeline", primary=False),
                        ),
                        helps=("split the compositions into separate `.kp` files",),
                    )
                ]
            )


def _keyword_span(block: Span, keyword: str) -> Span:
    """The keyword that opens a block: the locus of a block in the wrong file."""
    return Span(block.file, block.line, block.col, block.line, block.col + len(keyword))


# ----------------------------------------------------------------- syntax errors

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
                span = span_at(self.path, self.text, token.start_pos or 0, len(str(token.value)))
                raise DiagnosticError(
                    [
                        Diagnostic(
                            Code.E_TOO_LARGE,
                            f"an expression holds at most {MAX_OPERATORS} operators",
                            labels=(Label(span, f"operator {MAX_OPERATORS + 1} is here"),),
                            helps=("split the constraint into several `requires fact` lines, which must all hold",),
                        )
                    ]
                )


def _parse_tree(text: str, path: str) -> Tree[Token]:
    """Parse, refusing a word the lexer would otherwise split (`smemtiles` as `smem tiles`)
    and an expression past its bounds."""
    parser = _lark().parse_interactive(text)
    last: Token | None = None
    bounds = _ExprBounds(path, text)
    for token in parser.iter_parse():
        end = token.end_pos
        if end is not None and 0 < end < len(text) and text[end - 1] in WORD_CHARS and text[end] in WORD_CHARS:
            expected = {t for t in parser.choices() if t.isupper()}  # type: ignore[no-untyped-call]
            raise DiagnosticError([syntax_errors.split_word(terminals(), path, text, _tok(token), expected)])
        bounds.feed(token)
        last = token
    tree: Tree[Token] = parser.feed_eof(last)  # type: ignore[no-untyped-call]
    return tree


def _syntax_diagnostic(err: UnexpectedInput, text: str, path: str) -> Diagnostic:
    """Hand the parser's error to the explanation in diagnostics as plain data."""
    terms = terminals()
    if (isinstance(err, UnexpectedToken) and err.token.type == "$END") or isinstance(err, UnexpectedEOF):
        return syntax_errors.unexpected_end(terms, path, text, set(getattr(err, "expected", ()) or ()))
    if isinstance(err, UnexpectedToken):
        state = err.state
        return syntax_errors.unexpected_token(
            terms,
            path,
            text,
            _tok(err.token),
            set(err.expected),
            stack_top=_stack_top(state),
            last_token=_last_token(err),
            accepts_after_newline=None if state is None else functools.partial(_accepts_after_newline, state),
        )
    if isinstance(err, UnexpectedCharacters):
        return syntax_errors.unexpected_chars(
            terms,
            path,
            text,
            pos=err.pos_in_stream or 0,
            line=err.line,
            column=err.column,
            allowed=set(err.allowed or ()),
            last_token=_last_token(err),
        )
    return syntax_errors.invalid_syntax(path, err.line, err.column)


def _tok(token: Token) -> Tok:
    return Tok(
        token.type,
        str(token.value),
        token.start_pos,
        token.end_pos,
        token.line,
        token.column,
        token.end_line,
        token.end_column,
    )


def _stack_top(state: Any) -> Tok | None:
    """The token the parser shifted last, when its stack ends in a token."""
    stack = getattr(state, "value_stack", None)
    return _tok(stack[-1]) if stack and isinstance(stack[-1], Token) else None


def _last_token(err: UnexpectedInput) -> Tok | None:
    """The token read just before the error, when the parser still holds it."""
    top = _stack_top(getattr(err, "state", None))
    if top is not None:
        return top
    history = getattr(err, "token_history", None)
    return _tok(history[-1]) if history and isinstance(history[-1], Token) else None


def _accepts_after_newline(state: Any, word: str) -> bool:
    """Whether the parser in ``state`` would take the keyword ``word`` after a line break."""
    terminal = terminals().terminal_of(word)
    if terminal is None:
        return False
    trial = state.copy()
    try:
        trial.feed_token(Token("_NL", "\n"))
        trial.feed_token(Token(terminal, word))
    except UnexpectedInput:
        return False
    return True
