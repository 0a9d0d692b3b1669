"""The tree → AST step: vocabulary checks (E-NAME, E-DUPLICATE, E-VALUE), spans, integers."""

from __future__ import annotations

import pytest

from contract_lang import ast as A
from contract_lang.expr import BinOp
from contract_lang.parser import parse_text
from contract_lang.printer import size
from contract_lang.transform import parse_int
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.span import Span


def stage(*items: str) -> str:
    return 'stage "t" version "1" {\n' + "".join(f"    {item}\n" for item in items) + "}\n"


def errors(text: str) -> tuple[Diagnostic, ...]:
    with pytest.raises(DiagnosticError) as info:
        parse_text(text, "t.kc")
    return info.value.diagnostics


def only_error(text: str) -> Diagnostic:
    (diag,) = errors(text)
    return diag


def primary_span(diag: Diagnostic) -> tuple[int, int, int]:
    assert diag.primary is not None
    span = diag.primary.span
    assert span.line == span.end_line
    return span.line, span.col, span.end_col


# ------------------------------------------------------------------ parse_int


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("7", 7),
        ("0400", 400),
        ("1048576", 1 << 20),
        ("0x0", 0),
        ("0x400", 1024),
        ("0xff", 255),
        ("0xFF", 255),
        ("0X10", 16),
        ("1KiB", 1024),
        ("16KiB", 16384),
        ("0KiB", 0),
        ("1024KiB", 1 << 20),
    ],
)
def test_parse_int(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize("value", [0, 1, 1023, 1024, 1025, 4096, 16384, 49152, 1 << 20, 3 * 1024 + 1])
def test_byte_sizes_print_and_parse_back(value: int) -> None:
    assert parse_int(size(value)) == value


@pytest.mark.parametrize(("literal", "value"), [("0x400", 1024), ("16KiB", 16384), ("4096", 4096)])
def test_integer_forms_in_a_contract(literal: str, value: int) -> None:
    (claim,) = parse_text(stage(f"claim smem tiles bytes {literal} align {literal}")).items[0].items
    assert isinstance(claim, A.SmemClaim)
    assert claim.bytes == value and claim.align == value


# ------------------------------------------------------------------ vocabulary: E-NAME


@pytest.mark.parametrize(
    ("item", "message", "at", "helps"),
    [
        (
            "params P size 8 align 8 {\n        x: u33 @ 0\n    }",
            "unknown type `u33`",
            (4, 12, 15),
            ("did you mean `u32`?",),
        ),
        ("requires feature tma, mbarier", "unknown feature `mbarier`", (3, 27, 34), ("did you mean `mbarrier`?",)),
        (
            "claim counter c slots 1 scope device",
            "unknown scope `device`",
            (3, 35, 41),
            ("known scopes: `cta`, `cluster`, `gpu`, `sys`",),
        ),
        (
            "call f (i32) -> bool as k from role r guarantees convergent",
            "unknown call-site guarantee `convergent`",
            (3, 54, 64),
            ("did you mean `converged`?",),
        ),
        ("export callable f (f32) -> float = f_impl", "unknown result type `float`", (3, 32, 37), None),
        ('domain "cp" views peers', "unknown view `peers`", (3, 23, 28), ("did you mean `peer`?",)),
        ("claim smem s use tmaa", "unknown shared-memory use `tmaa`", (3, 22, 26), ("did you mean `tma`?",)),
        (
            "export tensor a from role r {\n        elem fp32\n    }",
            "unknown element type `fp32`",
            (4, 14, 18),
            ("did you mean `f32`?",),
        ),
        (
            "export tensor a from role r {\n        generation twice\n    }",
            "unknown generation `twice`",
            (4, 20, 25),
            ("known generations: `once`, `persistent`",),
        ),
        ("counter c produce by r space remote", "unknown counter space `remote`", (3, 34, 40), None),
        ("ring kv consume by r {\n        scope grid\n    }", "unknown scope `grid`", (4, 15, 19), None),
        ("buffer b bytes 16 views multi", "unknown view `multi`", (3, 29, 34), None),
    ],
)
def test_unknown_vocabulary(item: str, message: str, at: tuple[int, int, int], helps: tuple[str, ...] | None) -> None:
    diag = only_error('stage "t" version "1" {\n    target sm_90a\n    ' + item + "\n}\n")
    assert (diag.code, diag.message) == ("E-NAME", message)
    assert primary_span(diag) == at
    if helps is not None:
        assert diag.helps == helps


def test_vocabulary_mistakes_are_reported_together() -> None:
    diags = errors(stage("requires feature tmaa", "owns fact k: u33 = 1", 'domain "cp" views peers'))
    assert [(d.code, d.message) for d in diags] == [
        ("E-NAME", "unknown feature `tmaa`"),
        ("E-NAME", "unknown type `u33`"),
        ("E-NAME", "unknown view `peers`"),
    ]


def test_result_type_may_be_void_but_parameters_may_not() -> None:
    parse_text(stage("export callable f (f32, ptr) -> void = f_impl"))
    assert only_error(stage("export callable f (void) -> f32 = f_impl")).message == "unknown type `void`"


# ------------------------------------------------------------------ E-DUPLICATE, E-VALUE, misplaced tensor items


@pytest.mark.parametrize(
    ("item", "message", "second", "first"),
    [
        ("role r warps 1 regs 40 warps 2", "`warps` is given twice on role `r`", (2, 28, 35), (2, 12, 19)),
        ("launch fixed threads 128 threads 256", "`threads` is given twice on `launch`", (2, 30, 41), (2, 18, 29)),
        ("claim smem s bytes 16 bytes 32", "`bytes` is given twice on claim `s`", (2, 27, 35), (2, 18, 26)),
        (
            "claim smem s lifetime kernel lifetime phase p",
            "`lifetime` is given twice on claim `s`",
            (2, 34, 50),
            (2, 18, 33),
        ),
        ("claim tmem t columns 32 handle h handle g", "`handle` is given twice on claim `t`", (2, 38, 46), (2, 29, 37)),
        ("buffer b bytes 16 symmetric symmetric", "`symmetric` is given twice on buffer `b`", (2, 33, 42), (2, 23, 32)),
        (
            "counter c produce by r scope gpu scope sys",
            "`scope` is given twice on counter `c`",
            (2, 38, 47),
            (2, 28, 37),
        ),
        (
            "ring k produce by r {\n        full arrive 1 tx 16 tx 32\n    }",
            "`tx` is given twice on `full arrive`",
            (3, 29, 34),
            (3, 23, 28),
        ),
        (
            "ring k produce by r {\n        depth 2\n        depth 4\n    }",
            "`depth` is given twice in ring `k`",
            (4, 9, 16),
            (3, 9, 16),
        ),
        (
            "ring k produce by r {\n        init by r\n        init by r fenced\n    }",
            "`init by` is given twice in ring `k`",
            (4, 9, 25),
            (3, 9, 18),
        ),
        (
            "ring k produce by r {\n        scope cta\n        scope gpu\n    }",
            "`scope` is given twice in ring `k`",
            (4, 9, 18),
            (3, 9, 18),
        ),
        (
            "export tensor a from role r {\n        elem f32\n        elem f16\n    }",
            "`elem` is given twice on export `a`",
            (4, 9, 17),
            (3, 9, 17),
        ),
    ],
)
def test_duplicates(item: str, message: str, second: tuple[int, int, int], first: tuple[int, int, int]) -> None:
    diag = only_error('stage "t" version "1" {\n    ' + item + "\n}\n")
    assert (diag.code, diag.message) == ("E-DUPLICATE", message)
    assert primary_span(diag) == second
    (secondary,) = [lab for lab in diag.labels if not lab.primary]
    assert (secondary.span.line, secondary.span.col, secondary.span.end_col) == first


def test_repeatable_attributes_are_not_duplicates() -> None:
    (claim,) = parse_text(stage("claim tmem acc read by a lanes 0..63 read by b lanes 64..127")).items[0].items
    assert isinstance(claim, A.TmemClaim)
    assert [(r.role, r.lane_lo, r.lane_hi) for r in claim.reads] == [("a", 0, 63), ("b", 64, 127)]


@pytest.mark.parametrize(
    ("item", "message", "at"),
    [
        ("ring k consume by r {\n        full wait parity 2\n    }", "a parity is 0 or 1, not 2", (3, 26, 27)),
        ("owns fact f: u32 in 128..64", "the range 128..64 is empty", (2, 22, 32)),
    ],
)
def test_values(item: str, message: str, at: tuple[int, int, int]) -> None:
    diag = only_error('stage "t" version "1" {\n    ' + item + "\n}\n")
    assert (diag.code, diag.message) == ("E-VALUE", message)
    assert primary_span(diag) == at


def test_one_value_ranges_are_not_empty() -> None:
    (fact,) = parse_text(stage("owns fact f: u32 in 64..64")).items[0].items
    assert isinstance(fact, A.OwnsFact)
    assert fact.value.candidates() == (64,)


@pytest.mark.parametrize(
    ("block", "item"),
    [
        ("export tensor a from role r", "chunk n 32"),
        ("export tensor a from role r", "lends regs 8"),
        ("import tensor a from b into role r", "ready event a.ready"),
        ("import tensor a from b into role r", "placement library x()"),
    ],
)
def test_tensor_items_of_the_other_side(block: str, item: str) -> None:
    diag = only_error(stage(block + " {", "    " + item, "}"))
    assert diag.code == "E-SYNTAX"
    assert diag.message.startswith(f"`{item.split()[0]}` does not belong in ")


# ------------------------------------------------------------------ spans

SPANNED = """stage "s" version "1" {
    role load entry load_main warps 1
    claim smem tiles bytes 16KiB align 1024 lifetime between acc.ready acc.done
    ring kv produce by load {
        full init 1 + per_warp(mma) expect_tx 16KiB
    }
    requires fact tile_k % 16 == 0
    cluster 1x1x1, 2x1x1
}

pipeline "p" {
    use "s" version ^1.0
}
"""


def span(line: int, col: int, end_line: int, end_col: int) -> Span:
    return Span("s.kc", line, col, end_line, end_col)


def test_spans_of_blocks_items_and_pieces() -> None:
    source = parse_text(SPANNED, "s.kc")
    st, pipe = source.items
    assert isinstance(st, A.Stage) and isinstance(pipe, A.Pipeline)
    assert st.span == span(1, 1, 9, 2)
    assert pipe.span == span(11, 1, 13, 2)
    role, claim, ring, fact, cluster = st.items
    assert role.span == span(2, 5, 2, 38)
    assert isinstance(claim, A.SmemClaim)
    assert claim.span == span(3, 5, 3, 80)
    assert claim.lifetime.span == span(3, 45, 3, 80)
    assert claim.lifetime.start is not None and claim.lifetime.start.span == span(3, 62, 3, 71)
    assert claim.lifetime.end is not None and claim.lifetime.end.span == span(3, 72, 3, 80)
    assert isinstance(ring, A.Ring)
    assert ring.span == span(4, 5, 6, 6)
    init = ring.items[0]
    assert isinstance(init, A.RingBarrierInit)
    assert init.span == span(5, 9, 5, 52)
    assert [t.span for t in init.count.terms] == [span(5, 19, 5, 20), span(5, 23, 5, 36)]
    assert isinstance(fact, A.RequiresFact) and isinstance(fact.expr, BinOp)
    assert fact.expr.span == span(7, 19, 7, 35)
    assert fact.expr.left.span == span(7, 19, 7, 30)
    assert fact.expr.right.span == span(7, 34, 7, 35)
    assert isinstance(cluster, A.Cluster)
    assert [s.span for s in cluster.shapes] == [span(8, 13, 8, 18), span(8, 20, 8, 25)]
    (use,) = pipe.items
    assert use.span == span(12, 5, 12, 25)


def test_spans_take_no_part_in_equality() -> None:
    moved = "\n\n# moved down\n" + SPANNED.replace("    ", "\t")
    assert parse_text(moved, "other.kc") == parse_text(SPANNED, "s.kc")
