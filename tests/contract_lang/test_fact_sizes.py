"""Byte sizes written as expressions of facts (specs/language.md §7, §8.1; contract_lang.fact_sizes).

A size written from facts is the same contract as the size written as its value: the parsed
stages are equal, the printer writes the expression back (``kernlink fmt`` round-trips) and a
size without a value is E-VALUE, never a guess.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract_lang import ast as A
from contract_lang.expr import BinOp, EvalError, Expr, Int, Name, evaluate, to_text
from contract_lang.fact_sizes import SIZE_MAX
from contract_lang.parser import parse_text
from contract_lang.printer import format_text, print_file, size
from diagnostics.model import DiagnosticError
from tests.tiers import examples


def _stage(claim: str, init: str, arrive: str, copy: str, facts: str) -> str:
    return (
        'stage "demo.loader" version "1.0.0" {\n'
        "    target sm_90a\n"
        f"{facts}"
        f"    claim smem x_tiles bytes {claim} align 128 per_slot kv\n"
        "    ring kv produce by load {\n"
        f"        full init 1 expect_tx {init}\n"
        "        empty wait\n"
        f"        full arrive 1 tx {arrive}\n"
        f"        full copy {copy} into x_tiles\n"
        "    }\n"
        "}\n"
    )


FACTS = "    owns fact x_rows: u32 = 32\n    assumes fact k_block: u32 == 64\n"


def _sizes(stage: A.Stage) -> tuple[int | None, ...]:
    (claim,) = (it for it in stage.items if isinstance(it, A.SmemClaim))
    (ring,) = (it for it in stage.items if isinstance(it, A.Ring))
    init = next(it for it in ring.items if isinstance(it, A.RingBarrierInit))
    arrive = next(it for it in ring.items if isinstance(it, A.RingArrive))
    copy = next(it for it in ring.items if isinstance(it, A.RingCopy))
    return claim.bytes, init.expect_tx, arrive.tx, copy.bytes


def _only_stage(text: str) -> A.Stage:
    (stage,) = parse_text(text, "<t>").items
    assert isinstance(stage, A.Stage)
    return stage


def test_sizes_take_the_value_of_owned_and_assumed_facts() -> None:
    text = _stage("x_rows * k_block * 2", "16KiB + x_rows * 128", "(x_rows + 96) * 128", "x_rows * 128", FACTS)
    stage = _only_stage(text)
    assert _sizes(stage) == (4096, 20480, 16384, 4096)
    # the same contract as the one written with the values
    assert stage == _only_stage(_stage("4KiB", "20KiB", "16KiB", "4KiB", FACTS))


def test_printer_writes_the_expression_back() -> None:
    text = _stage("x_rows * k_block * 2", "16KiB + x_rows * 128", "(x_rows + 96) * 128", "x_rows * 128", FACTS)
    printed = print_file(parse_text(text, "<t>"))
    assert "bytes x_rows * k_block * 2 align 128" in printed
    assert "expect_tx 16KiB + x_rows * 128" in printed
    assert "tx (x_rows + 96) * 128" in printed
    assert "full copy x_rows * 128 into x_tiles" in printed
    assert format_text(printed) == printed


def test_a_literal_stays_a_literal() -> None:
    stage = _only_stage(_stage("4KiB", "20KiB", "16KiB", "4KiB", FACTS))
    (claim,) = (it for it in stage.items if isinstance(it, A.SmemClaim))
    assert claim.bytes_expr is None
    assert "bytes 4KiB align" in print_file(parse_text(_stage("4096", "20KiB", "16KiB", "4KiB", FACTS), "<t>"))


def test_one_diagnostic_per_fact_without_a_value() -> None:
    uses = "x_rows * 128"
    text = _stage(uses, uses, uses, uses, "    owns fact x_rows: u32 in 8..64\n")
    with pytest.raises(DiagnosticError) as err:
        parse_text(text, "<t>")
    (diag,) = err.value.diagnostics
    assert diag.code == "E-VALUE" and "in 8..64" in diag.message
    # every use is shown, the first as the primary label, and the owner's choice
    assert [lab.primary for lab in diag.labels] == [True, False, False, False, False]


# ------------------------------------------------------------------ properties

_NAMES = ("x_rows", "k_block")


def _exprs() -> st.SearchStrategy[Expr]:
    leaves: st.SearchStrategy[Expr] = st.one_of(st.integers(0, 1 << 20).map(Int), st.sampled_from(_NAMES).map(Name))
    return st.recursive(
        leaves,
        lambda sub: st.builds(BinOp, st.sampled_from(("+", "-", "*", "/", "%")), sub, sub),
        max_leaves=6,
    )


@examples(2)
@given(_exprs(), st.integers(0, 4096), st.integers(0, 4096))
def test_a_size_from_facts_is_its_value_or_e_value(expr: Expr, x_rows: int, k_block: int) -> None:
    """Every expression over the stage's facts either parses to its exact value, the same stage as
    the value written as an integer, and prints back to itself; or it has no size (a division by
    zero, a negative value) and is E-VALUE."""
    facts = f"    owns fact x_rows: u32 = {x_rows}\n    assumes fact k_block: u32 == {k_block}\n"
    written = to_text(expr, size)
    text = _stage(written, written, written, written, facts)
    try:
        value: int | None = evaluate(expr, {"x_rows": x_rows, "k_block": k_block})
    except EvalError:
        value = None
    if value is None or not 0 <= value <= SIZE_MAX:
        with pytest.raises(DiagnosticError) as err:
            parse_text(text, "<t>")
        assert {d.code for d in err.value.diagnostics} == {"E-VALUE"}
        return
    stage = _only_stage(text)
    assert _sizes(stage) == (value, value, value, value)
    shown = size(value)
    assert stage == _only_stage(_stage(shown, shown, shown, shown, facts))
    printed = print_file(parse_text(text, "<t>"))
    assert printed == text
    assert _only_stage(printed) == stage
