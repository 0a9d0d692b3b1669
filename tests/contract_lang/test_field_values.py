"""`in {…}` on an integer params field: the only values the host writes there, parsed, printed back and
checked; a box dimension may name such a field when every value is a box size."""

from __future__ import annotations

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError

STAGE = """stage "fx.values" version "1.0.0" {{
    target sm_90a
    params P size 256 align 128 {{
        tmap_k: tensormap @ 0 box 64, 1, {dim}, 1 elem bf16
        {field}
    }}
}}
"""


def _fields(text: str) -> tuple[A.ParamField, ...]:
    (stage,) = parse_text(text, "v.kc").items
    assert isinstance(stage, A.Stage)
    (params,) = stage.of(A.Params)
    assert isinstance(params, A.Params)
    return params.fields


def test_stated_values_parse_print_back_and_size_a_box() -> None:
    text = STAGE.format(dim="page_size", field="page_size: i32 @ 128 in {16, 32, 64, 128}")
    tmap, page = _fields(text)
    assert page.values == (16, 32, 64, 128) and tmap.box is not None and tmap.box.fields == ("page_size",)
    source = parse_text(text, "v.kc")
    printed = print_file(source)
    assert "page_size: i32 @ 128 in {16, 32, 64, 128}" in printed
    assert parse_text(printed, "again.kc") == source


def test_a_field_without_values_states_none() -> None:
    (_, rows) = _fields(STAGE.format(dim="rows", field="rows: u32 @ 128"))
    assert rows.values == ()


@pytest.mark.parametrize(
    ("dim", "field", "message"),
    [
        ("16", "table: ptr @ 128 in {1, 2}", "only an integer field states its values"),
        ("16", "n: u8 @ 128 in {1, 1}", "states a value twice"),
        ("16", "n: u8 @ 128 in {1, 256}", "does not fit its type `u8`"),
        ("16", "n: i32 @ 128 in {" + ", ".join(str(v) for v in range(65)) + "}", "at most 64"),
        # an i32 field sizes a box only through its stated values, each 1 to 256
        ("page_size", "page_size: i32 @ 128", "no `u32` field"),
        ("page_size", "page_size: i32 @ 128 in {16, 512}", "no `u32` field"),
    ],
)
def test_bad_values_are_e_value(dim: str, field: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_text(STAGE.format(dim=dim, field=field), "v.kc")
    [diag] = err.value.diagnostics
    assert diag.code == "E-VALUE" and message in diag.message
