"""One table of item kinds (``contract_lang.ast.ITEM_KINDS``): the AST's unions and every per-kind dispatch follow it.

A new kind of item fails here, once for each place that does not know it yet: the union it
belongs to, the printer, the syntax strategies and the mutation catalogue. Rules that concern
a few kinds (the handles a kind binds, the features it implies, what a stage offers) are the
clauses' and name their kinds themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

import pytest

from contract_lang import ast as A
from contract_lang.printer import ITEM_BLOCKS, ITEM_LINES
from fuzzing.compositions.catalogue import ITEM_EDITS
from fuzzing.strategies import pipeline_item_kinds, stage_item_kinds


def _names(kinds: Iterable[type]) -> set[str]:
    return {kind.__name__ for kind in kinds}


def _table(block: A.Block | None = None) -> set[str]:
    return _names(k.node for k in A.ITEM_KINDS if block is None or block in k.blocks)


def gaps(expected: set[str], known: Iterable[str]) -> tuple[list[str], list[str]]:
    """The kinds a place lacks, and the names it knows that are no kind."""
    seen = set(known)
    return sorted(expected - seen), sorted(seen - expected)


PLACES = {
    "the StageItem union": ("stage", lambda: _names(get_args(A.StageItem))),
    "the PipelineItem union": ("pipeline", lambda: _names(get_args(A.PipelineItem))),
    "the printer": (None, lambda: _names([*ITEM_LINES, *ITEM_BLOCKS])),
    "the stage item strategies": ("stage", lambda: set(stage_item_kinds())),
    "the pipeline item strategies": ("pipeline", lambda: set(pipeline_item_kinds())),
    "the mutation catalogue": (None, lambda: _names(ITEM_EDITS)),
}


@pytest.mark.parametrize("place", PLACES)
def test_every_kind_is_known_to(place: str) -> None:
    block, known = PLACES[place]
    missing, unknown = gaps(_table(block), known())
    assert not missing, f"{place} lacks {', '.join(missing)}"
    assert not unknown, f"{place} has {', '.join(unknown)}, which ITEM_KINDS does not list"


def test_a_place_that_lacks_a_kind_is_named() -> None:
    expected = _table()
    assert gaps(expected, expected - {"Ring"}) == (["Ring"], [])
    assert gaps(expected, expected | {"Stage"}) == ([], ["Stage"])


def test_each_kind_is_listed_once_and_printed_one_way() -> None:
    nodes = [k.node for k in A.ITEM_KINDS]
    assert len(nodes) == len(set(nodes))
    assert not set(ITEM_LINES) & set(ITEM_BLOCKS)
    assert all(k.blocks and k.noun.startswith(("a ", "an ")) for k in A.ITEM_KINDS)


def test_item_kind_looks_an_item_up_by_its_class() -> None:
    assert A.item_kind(A.Ring("kv", "produce", "load")).noun == "a ring"
    assert A.item_kind(A.Use("ring.loader", "^1.0")).blocks == ("pipeline",)
    with pytest.raises(KeyError):
        A.item_kind(A.Stage("s", "1.0.0"))
