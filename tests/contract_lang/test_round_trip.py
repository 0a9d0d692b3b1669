"""Printer and parser agree on every AST the syntax strategies generate.

``parse_text(print_file(x)) == x`` for arbitrary well-formed files, printing is a
fixed point, the strategies reach every node type and variant of the AST, and
``format_text`` keeps every comment where it was written.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang import expr as E
from contract_lang.parser import FileKind, parse_text
from contract_lang.printer import format_text, print_file
from fuzzing.strategies import (
    KEYWORDS,
    counts,
    expressions,
    fact_values,
    identifiers,
    lifetimes,
    map_specs,
    pipeline_item_kinds,
    ring_items,
    source_files,
    stage_item_kinds,
)
from tests.tiers import examples


def assert_round_trip(source: A.SourceFile, kind: FileKind = "any") -> None:
    text = print_file(source)
    parsed = parse_text(text, "<printed>", kind)
    assert parsed == source, text
    assert print_file(parsed) == text


@examples(3)
@given(source_files())
def test_round_trip(source: A.SourceFile) -> None:
    assert_round_trip(source)


@examples(1)
@given(source_files("contract"))
def test_round_trip_contract_files(source: A.SourceFile) -> None:
    assert_round_trip(source, "contract")


@examples(1)
@given(source_files("pipeline"))
def test_round_trip_pipeline_files(source: A.SourceFile) -> None:
    assert_round_trip(source, "pipeline")


@examples(3)
@given(identifiers())
def test_identifiers_are_never_keywords(name: str) -> None:
    assert name not in KEYWORDS
    assert name.isidentifier() and name.isascii()


def test_keywords_come_from_the_grammar() -> None:
    assert {
        "stage",
        "pipeline",
        "ring",
        "claim",
        "smem",
        "produce",
        "consume",
        "per_warp",
        "full",
        "empty",
        "not",
        "and",
        "or",
        "exclusive",
        "writes",
        "async",
    } <= KEYWORDS
    assert "load" not in KEYWORDS and "NAME" not in KEYWORDS


# ------------------------------------------------------------------ coverage of the AST

_EXPR_CLASSES: tuple[type, ...] = (E.Int, E.Name, E.BinOp, E.Not)


def _node_classes() -> list[type]:
    nodes = [c for c in vars(A).values() if isinstance(c, type) and issubclass(c, A.Node) and c is not A.Node]
    return [*nodes, *_EXPR_CLASSES]


def _compared_fields(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.compare:
            yield f, hints[f.name]


def _variant_tags(cls: type) -> set[str]:
    """What a generator must reach for ``cls``: the node, every literal of its Literal
    fields, each boolean flag set, and each optional or repeated attribute present."""
    tags = {cls.__name__}
    for f, hint in _compared_fields(cls):
        if get_origin(hint) is Literal:
            tags.update(f"{cls.__name__}.{f.name}={value}" for value in get_args(hint))
        elif hint is bool or f.default is None or f.default == ():
            tags.add(f"{cls.__name__}.{f.name}")
    if cls is E.BinOp:
        tags |= _operator_tags()
    return tags


def _tags_of(value: object, out: set[str]) -> None:
    if isinstance(value, tuple):
        for element in value:
            _tags_of(element, out)
        return
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    cls = type(value)
    out.add(cls.__name__)
    for f, hint in _compared_fields(cls):
        field_value = getattr(value, f.name)
        if get_origin(hint) is Literal:
            out.add(f"{cls.__name__}.{f.name}={field_value}")
        elif hint is bool:
            if field_value:
                out.add(f"{cls.__name__}.{f.name}")
        elif (f.default is None or f.default == ()) and field_value not in (None, ()):
            out.add(f"{cls.__name__}.{f.name}")
        _tags_of(field_value, out)
    if isinstance(value, E.BinOp):
        out.add(f"BinOp.op={value.op}")


def _unreached(sweeps: list[tuple[st.SearchStrategy[Any], float]], wanted: set[str]) -> list[str]:
    """The tags in ``wanted`` that sweeps of the strategies (each with its share of the tier's budget)
    do not produce."""
    seen: set[str] = set()
    for strategy, share in sweeps:

        @settings(examples(share), phases=[Phase.generate])
        @given(strategy)
        def collect(value: object) -> None:
            _tags_of(value, seen)

        collect()
    return sorted(wanted - seen)


@pytest.mark.parametrize(
    ("name", "strategy"),
    [*stage_item_kinds().items(), *pipeline_item_kinds().items()],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_item_kind_produces_its_type(name: str, strategy: st.SearchStrategy[Any]) -> None:
    @examples(0.1)
    @given(strategy)
    def check(item: object) -> None:
        assert type(item).__name__ == name

    check()


def test_strategies_reach_every_node_type_and_variant() -> None:
    """A new node, field or literal in contract_lang.ast fails here until the strategies produce it.

    source_files() draws its items from the per-kind strategies and the structure
    strategies swept here, so what they reach it reaches; a sweep of each is a far
    surer witness than one sweep of whole files, where a variant nested three levels
    deep (a `tmem` map in a tensor in a stage) is rare.
    """
    wanted = set().union(*(_variant_tags(cls) for cls in _node_classes())) - _operator_tags()
    sweeps = [
        (source_files(), 0.3),
        *((kind, 0.6) for kind in stage_item_kinds().values()),
        *((kind, 0.3) for kind in pipeline_item_kinds().values()),
        (lifetimes(), 0.6),
        (ring_items(), 1.0),
        (counts(), 0.6),
        (map_specs(), 1.0),
        (fact_values(), 0.6),
    ]
    assert _unreached(sweeps, wanted) == []


def test_expressions_reach_every_operator() -> None:
    wanted = _operator_tags() | {cls.__name__ for cls in _EXPR_CLASSES}
    assert _unreached([(expressions(), 10.0)], wanted) == []


def _operator_tags() -> set[str]:
    return {f"BinOp.op={op}" for op in E.PRECEDENCE}


# ------------------------------------------------------------------ format_text and comments


@examples(1)
@given(source_files())
def test_format_is_identity_on_canonical_text(source: A.SourceFile) -> None:
    text = print_file(source)
    assert format_text(text) == text


_COMMENT_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=12)
_INDENTS = st.sampled_from(("", "    ", "\t", "  "))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


@examples(3)
@given(source_files(), st.data())
def test_format_keeps_every_comment_in_place(source: A.SourceFile, data: st.DataObject) -> None:
    """Comment lines anywhere and comments after any line survive formatting, where they were.

    An own-line comment lands before the line it preceded, indented like it (one level
    deeper before a closing brace); a trailing comment stays on its line. Blank lines
    are the printer's to choose, so the comparison ignores them.
    """
    lines = print_file(source).split("\n")[:-1]
    n = len(lines)
    own = data.draw(st.lists(st.tuples(st.integers(0, n), _COMMENT_TEXT, _INDENTS), max_size=5))
    code_lines = [i for i, line in enumerate(lines) if line.strip()]
    trailing = data.draw(st.dictionaries(st.sampled_from(code_lines), _COMMENT_TEXT, max_size=4))

    before: dict[int, list[tuple[str, str]]] = {}
    for index, body, pad in own:
        before.setdefault(index, []).append(("#" + body, pad))
    written: list[str] = []
    expected: list[str] = []
    for index in range(n + 1):
        target = next((i for i in range(index, n) if lines[i].strip()), n)
        deeper = target < n and lines[target].strip() == "}"
        indent = "" if target == n else _indent(lines[target]) + ("    " if deeper else "")
        for comment, pad in before.get(index, []):
            written.append(pad + comment)
            expected.append(indent + comment.rstrip())
        if index < n:
            line = lines[index]
            if index in trailing:
                line_comment = "#" + trailing[index]
                written.append(f"{line}  {line_comment}")
                expected.append(f"{line}  {line_comment.rstrip()}")
            else:
                written.append(line)
                expected.append(line)
    text = "\n".join(written) + "\n"

    formatted = format_text(text)
    assert [ln for ln in formatted.split("\n") if ln.strip()] == [ln for ln in expected if ln.strip()]
    assert format_text(formatted) == formatted
    assert parse_text(formatted) == source


def test_comments_on_tensor_attribute_lines_stay_on_their_lines() -> None:
    """Regression: `elem` and `generation` lines (no span of their own) lost their comments to the end of file."""
    text = (
        'stage "a" version "1" {\n'
        "    export tensor acc from role mma {\n"
        "        # what the threads hold\n"
        "        generation once  # one per tile\n"
        "        elem f32  # fp32 accumulators\n"
        "    }\n"
        "}\n"
        "\n"
        'stage "b" version "1" {}\n'
    )
    assert format_text(text) == (
        'stage "a" version "1" {\n'
        "    export tensor acc from role mma {\n"
        "        # what the threads hold\n"
        "        elem f32  # fp32 accumulators\n"
        "        generation once  # one per tile\n"
        "    }\n"
        "}\n"
        "\n"
        'stage "b" version "1" {}\n'
    )


@pytest.mark.parametrize("separator", ["\x0c", "\x1e", "\x85", "\u2028"])
def test_comments_survive_line_separators_inside_strings(separator: str) -> None:
    """Regression: the printer split lines where Python does (form feed, U+2028, …), not where the parser does."""
    text = f'stage "a" version "{separator}" {{\n    target sm_90a  # the target\n}}  # end\n'
    assert format_text(text) == text


@pytest.mark.parametrize("line", ["full copy 16KiB into a_tiles", "full copy 16KiB", "full copy 100 into b"])
def test_copy_into_round_trips(line: str) -> None:
    text = (
        'stage "s" version "1.0.0" {\n    target sm_90a\n    role load entry m warps 1\n'
        f"    ring kv produce by load {{\n        {line}\n    }}\n}}\n"
    )
    source = parse_text(text, "<copy>", "any")
    copy = source.stages[0].items[-1].items[0]  # type: ignore[attr-defined]
    assert isinstance(copy, A.RingCopy)
    assert copy.into == (line.split(" into ")[1] if " into " in line else None)
    assert_round_trip(source)
    assert format_text(text, "<copy>") == text
