"""`box D0, D1 elem E` on a params `ptr` field (the tensor map's address) or `tensormap` field (the map itself,
held in the block by value): the tensor map's box, parsed, printed back and checked."""

from __future__ import annotations

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_file
from diagnostics.model import DiagnosticError

STAGE = """stage "fx.box" version "1.0.0" {{
    target sm_90a
    params P size 16 align 8 {{
        {field}
    }}
}}
"""


def test_a_box_parses_prints_back_and_counts_its_bytes() -> None:
    source = parse_text(STAGE.format(field="tmap: ptr @ 0 box 64, 128 elem bf16"), "box.kc")
    (stage,) = source.items
    assert isinstance(stage, A.Stage)
    (params,) = stage.of(A.Params)
    assert isinstance(params, A.Params)
    (field,) = params.fields
    assert field.box is not None and field.box.dims == (64, 128) and field.box.elem == "bf16"
    assert field.box.bytes == 16384
    text = print_file(source)
    assert "tmap: ptr @ 0 box 64, 128 elem bf16" in text
    assert parse_text(text, "again.kc") == source


def test_a_tensor_map_held_by_value_is_a_field_type_with_a_box() -> None:
    text = STAGE.replace("size 16 align 8", "size 256 align 64").format(
        field="tmap_k: tensormap @ 128 box 64, 128, 1 elem bf16\n        seq: i32 @ 0"
    )
    source = parse_text(text, "box.kc")
    (stage,) = source.items
    assert isinstance(stage, A.Stage)
    (params,) = stage.of(A.Params)
    assert isinstance(params, A.Params)
    field = params.fields[0]
    assert field.type == "tensormap" and field.offset == 128
    assert field.box is not None and field.box.bytes == 16384
    printed = print_file(source)
    assert "tmap_k: tensormap @ 128 box 64, 128, 1 elem bf16" in printed
    assert parse_text(printed, "again.kc") == source


def test_tensormap_is_no_scalar_type() -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_text(
            'stage "fx.c" version "1.0.0" {\n    target sm_90a\n'
            "    export callable f (tensormap) -> void = f_impl\n}\n",
            "c.kc",
        )
    assert [d.code for d in err.value.diagnostics] == ["E-NAME"]  # an unknown type name


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("n: u32 @ 0 box 8 elem f32", "a tensor-map box belongs on a `ptr` or `tensormap` field"),
        ("t: ptr @ 0 box 0, 128 elem bf16", "1 to 5 dimensions of 1 to 256 elements"),
        ("t: ptr @ 0 box 512 elem bf16", "1 to 5 dimensions of 1 to 256 elements"),
        ("t: ptr @ 0 box 1, 1, 1, 1, 1, 1 elem bf16", "1 to 5 dimensions of 1 to 256 elements"),
    ],
)
def test_a_box_outside_a_tensor_map_is_a_value_error(field: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_text(STAGE.format(field=field), "box.kc")
    (diag,) = err.value.diagnostics
    assert diag.code == "E-VALUE" and message in diag.message


def test_a_box_dimension_may_name_a_u32_field_of_the_block() -> None:
    text = STAGE.format(field="tmap: ptr @ 0 box 64, rows elem bf16\n        rows: u32 @ 8")
    source = parse_text(text, "box.kc")
    (stage,) = source.items
    assert isinstance(stage, A.Stage)
    (params,) = stage.of(A.Params)
    assert isinstance(params, A.Params)
    box = params.fields[0].box
    assert box is not None and box.dims == (64, "rows") and box.fields == ("rows",) and box.bytes is None
    printed = print_file(source)
    assert "tmap: ptr @ 0 box 64, rows elem bf16" in printed
    assert parse_text(printed, "again.kc") == source


@pytest.mark.parametrize("other", ["rows: ptr @ 8", "count: u32 @ 8"])
def test_a_box_dimension_naming_no_u32_field_is_a_value_error(other: str) -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_text(STAGE.format(field=f"tmap: ptr @ 0 box 64, rows elem bf16\n        {other}"), "box.kc")
    (diag,) = err.value.diagnostics
    assert diag.code == "E-VALUE" and "is sized by `rows`, which is no `u32` field of params `P`" in diag.message
