"""Property: deep, long and wide expressions and integers at the edges of their fields go
through `check` and `fmt` without a traceback; past a bound the diagnostic names it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from contract_lang.parser import MAX_OPERATORS, parse_text
from contract_lang.printer import format_text
from contract_lang.transform import INT_RANGES
from diagnostics.model import DiagnosticError
from kernlink.api import check
from tests.tiers import examples


@dataclass(frozen=True)
class Expression:
    text: str
    operators: int


def _shaped(shape: str, n: int) -> Expression:
    if shape == "not":
        return Expression("not " * n + "x", n)
    if shape == "right":
        return Expression("(x + " * n + "x" + ")" * n + " > 0", n + 1)
    if shape == "flat":
        return Expression(" + ".join(["x"] * (n + 1)) + " > 0", n + 1)
    if shape == "product":  # fmt parenthesises each mixed level: `((x * x) / x) % x`
        ops = ["*", "/", "%"]
        return Expression("x" + "".join(f" {ops[i % 3]} {i % 7 + 1}" for i in range(n)) + " >= 0", n + 1)
    wide = " or ".join(["not x == 1 and x < 9"] * max(1, n // 4))  # 4 operators a term, 1 between
    return Expression(wide, 5 * max(1, n // 4) - 1)


def expressions() -> st.SearchStrategy[Expression]:
    """Shapes that nest, chain or spread, sized around the operator bound."""
    sizes = st.one_of(
        st.integers(0, 40), st.integers(MAX_OPERATORS - 3, MAX_OPERATORS + 3), st.integers(0, 2 * MAX_OPERATORS)
    )
    return st.builds(_shaped, st.sampled_from(("not", "right", "flat", "product", "wide")), sizes)


# (template, kind): one line of a stage whose integer sits at the edge of its field's range.
FIELDS = (
    ("role wide entry wide_main warps {}", "count"),
    ("launch fixed threads {}", "count"),
    ("claim tmem cols columns {}", "count"),
    ("cluster 1x{}x1", "count"),
    ("claim smem tiles bytes {}", "size"),
    ("owns fact big: u64 = {}", "value"),
    ("requires fact x < {}", "value"),
)


@st.composite
def edge_integers(draw: st.DrawFn, kind: str) -> tuple[str, bool]:
    """A literal at the edge of the range of ``kind`` (or far past it) and whether it is in range."""
    top = INT_RANGES[kind][1]
    value = draw(st.sampled_from((0, 1, top - 1, top, top + 1, 10**40, 10**4301 - 1)))
    spelled = draw(st.sampled_from(("decimal", "hex", "kib")))
    if spelled == "hex" and value < 1 << 4096:
        return f"0x{value:x}", value <= top
    if spelled == "kib" and value % 1024 == 0 and value > 0:
        return f"{value // 1024}KiB", value <= top
    return str(value) if value < 10**4000 else "9" * 4301, value <= top


@st.composite
def contracts(draw: st.DrawFn) -> tuple[str, Expression, bool]:
    expr = draw(expressions())
    template, kind = draw(st.sampled_from(FIELDS))
    literal, in_range = draw(edge_integers(kind))
    text = (
        f'stage "demo.edges" version "1.0.0" {{\n    target sm_90a\n    role main entry main_fn warps 4\n'
        f"    owns fact x: u32 in 1..8\n    requires fact {expr.text}\n    {template.format(literal)}\n}}\n"
    )
    return text, expr, in_range


@examples(0.4)
@given(contracts())
def test_check_and_fmt_survive_edges(case: tuple[str, Expression, bool]) -> None:
    text, expr, in_range = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "edges.kc"
        path.write_text(text)
        result = check([path])
    codes = {d.code for d in result.diagnostics}
    assert "E-INTERNAL" not in codes, [d.message for d in result.diagnostics]
    if expr.operators > MAX_OPERATORS:
        assert codes == {"E-TOO-LARGE"}
        return
    assert ("E-VALUE" in codes) == (not in_range), sorted(codes)
    try:
        formatted = format_text(text, "edges.kc", "contract")
    except DiagnosticError as err:
        assert not in_range and {d.code for d in err.diagnostics} == {"E-VALUE"}
        return
    assert parse_text(formatted, "edges.kc", "contract").stages == parse_text(text, "edges.kc", "contract").stages
