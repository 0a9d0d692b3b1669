"""`loops N` (specs/language.md §8.8): the side item parses, prints and is modelled exactly as without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError
from tests.checker.protocol.helpers import contract_protocol

PASS = Path(__file__).resolve().parents[1] / "clauses" / "L-DEADLOCK" / "pass_peeled_lag_across_rings.kc"
SIDE = "    ring k produce by load {\n        depth 1\n"


def _with_loops(text: str, item: str = "        loops 2\n") -> str:
    assert text.count(SIDE) == 1
    return text.replace(SIDE, SIDE + item)


def test_the_side_item_parses_prints_and_rejects_a_second_one() -> None:
    parsed = parse_text(_with_loops(PASS.read_text()), "loops.kc")
    rings = [r for s in parsed.stages for r in s.items if isinstance(r, A.Ring)]
    assert [(r.name, r.side, r.loops) for r in rings] == [("v", "produce", 1), ("k", "produce", 2)] + [
        (r.name, r.side, 1) for r in rings[2:]
    ]
    assert parse_text(print_file(parsed), "again.kc") == parsed  # parse . print = id (spans aside)
    with pytest.raises(DiagnosticError) as err:
        parse_text(_with_loops(PASS.read_text(), "        loops 2\n        loops 2\n"), "twice.kc")
    assert [d.code for d in err.value.diagnostics] == ["E-DUPLICATE"]


def _shape(value: object) -> object:
    """A protocol model's value with its provenance (contract spans and words) left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple(
                (f.name, _shape(getattr(value, f.name)))
                for f in dataclasses.fields(value)
                if f.name not in ("prov", "provenance")
            ),
        )
    if isinstance(value, (tuple, list)):
        return tuple(_shape(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _shape(v)) for k, v in value.items()))
    return value


def test_a_side_with_loops_is_modelled_exactly_as_without(tmp_path: Path) -> None:
    # every alternative runs the side's steps once per iteration and carries one ring position (§8.8):
    # the model's events are the same whichever loop ran
    plain = contract_protocol(PASS.read_text(), tmp_path / "plain", 1)
    looped = contract_protocol(_with_loops(PASS.read_text()), tmp_path / "looped", 1)
    assert _shape(looped) == _shape(plain)
    assert looped.rings and looped.programs  # the comparison saw a model, not two empty ones
