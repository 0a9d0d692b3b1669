"""A mutant's changed items are parsed back alone, at their places: the unit that gives is the
one its whole printed text parses to, spans and all, and a printer/parser disagreement on a
changed item is still a round-trip bug."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_node
from fuzzing.check import Checker, Classification, _Printed, mutant_name
from fuzzing.mutation import Plan
from fuzzing.subject import load_subject

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"


def spelled(node: Any) -> Any:
    """Everything in ``node``, the fields equality leaves out (spans) included."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (type(node), *(spelled(getattr(node, f.name)) for f in dataclasses.fields(node)))
    if isinstance(node, tuple | list):
        return tuple(spelled(x) for x in node)
    return node


@pytest.mark.parametrize("name", ["ring", "attention", "gemm_swiglu"])
def test_changed_items_parsed_alone_give_the_whole_texts_unit(name: str) -> None:
    subject = load_subject([str(EXAMPLES / name / f"{name}.kp")])
    plan = Plan.make(subject.bundle, 1)
    printed: dict[int, _Printed | None] = {}
    alone = 0
    for index in range(160):
        mutation = plan.mutation(index)
        assert mutation is not None
        units = Checker(subject, oracles=[]).units(mutation)
        for u in mutation.changed_units():
            unit = units[u]
            kind = "pipeline" if isinstance(unit, A.Pipeline) else "contract"
            path = mutant_name(f"unit{u}")
            base = printed.setdefault(u, _Printed.of(subject.bundle.units[u], path, kind))
            assert base is not None
            text = print_node(unit)
            found = base.reparse(unit, text)
            if found is not None:
                alone += 1
                assert spelled(found) == spelled(parse_text(text, path, kind).items[0]), mutation
    assert alone > 100  # most edits rewrite their lines in place


def test_a_changed_item_that_prints_wrong_is_still_a_round_trip_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    subject = load_subject([str(EXAMPLES / "ring" / "ring.kp")])
    plan = Plan.make(subject.bundle, 1)
    mutation = next(m for m in map(plan.mutation, range(100)) if m is not None and m.kind == "arrival-count")
    checker = Checker(subject, oracles=[])
    assert checker.check(mutation).status != "bug"

    import fuzzing.check as check

    def misprint(node: A.Stage | A.Pipeline) -> str:  # the unmutated units print right, mutants wrong
        text = print_node(node)
        return text if node in subject.bundle.units else text.replace("arrive", "arrive 1 +", 1)

    monkeypatch.setattr(check, "print_node", misprint)
    verdict = Checker(subject, oracles=[]).check(mutation)
    assert isinstance(verdict, Classification) and verdict.bug == "round-trip"
