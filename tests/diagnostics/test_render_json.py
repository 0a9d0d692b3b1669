"""The JSON renderer: schema-valid, stable and byte-deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from diagnostics import Diagnostic, Label, Severity, Span
from diagnostics.render_json import render_json

SCHEMA_PATH = Path(__file__).parents[2] / "diagnostics" / "schemas" / "diagnostics-v1.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def diagnostics() -> list[Diagnostic]:
    return [
        Diagnostic(
            code="L-PAIR",
            message="counter `ready` pairs a `sys`-scope producer with a `gpu`-scope consumer",
            labels=(
                Label(Span("comm.kc", 12, 5, 12, 56), "producer releases at `sys` scope"),
                Label(Span("load.kc", 9, 5, 9, 44), "consumer acquires at `gpu` scope", False),
            ),
            notes=("scopes differ",),
            helps=("use `scope sys` on both sides",),
            data=(("producer_scope", "sys"), ("consumer_scope", "gpu")),
        ),
        Diagnostic(code="E-IO", message="cannot read `x.kc`: No such file or directory"),
        Diagnostic(
            code="L-DEPTH",
            message="ring `kv` depth 1 serialises — «ünïcode» kept",
            severity=Severity.WARNING,
            labels=(Label(Span("load.kc", 3, 1, 4, 2)),),
        ),
    ]


def test_output_validates_against_the_schema(validator: jsonschema.Draft202012Validator) -> None:
    text = render_json(diagnostics(), tool_version="0.1.0", extra={"pipeline": "p.kp"})
    document = json.loads(text)
    validator.validate(document)
    assert document["schema"] == "kernlink.diagnostics"
    assert document["version"] == 1
    assert document["tool"] == {"name": "kernlink", "version": "0.1.0"}
    assert document["summary"] == {"errors": 2, "warnings": 1, "notes": 0}
    assert document["extra"] == {"pipeline": "p.kp"}


def test_empty_run_validates(validator: jsonschema.Draft202012Validator) -> None:
    document = json.loads(render_json([], tool_version="0.1.0"))
    validator.validate(document)
    assert document["diagnostics"] == []
    assert "extra" not in document


def test_diagnostic_fields() -> None:
    document = json.loads(render_json(diagnostics(), tool_version="0.1.0"))
    by_code: dict[str, Any] = {d["code"]: d for d in document["diagnostics"]}
    pair = by_code["L-PAIR"]
    assert pair["severity"] == "error"
    assert pair["labels"][1] == {
        "file": "load.kc",
        "line": 9,
        "col": 5,
        "end_line": 9,
        "end_col": 44,
        "text": "consumer acquires at `gpu` scope",
        "primary": False,
    }
    assert pair["notes"] == ["scopes differ"]
    assert pair["helps"] == ["use `scope sys` on both sides"]
    assert pair["data"] == {"producer_scope": "sys", "consumer_scope": "gpu"}
    assert by_code["E-IO"]["labels"] == []


def test_byte_deterministic_and_sorted() -> None:
    first = render_json(diagnostics(), tool_version="0.1.0")
    again = render_json(diagnostics()[::-1], tool_version="0.1.0")
    assert first == again
    assert first.endswith("}\n") and not first.endswith("\n\n")
    assert "«ünïcode»" in first
    canonical = json.dumps(json.loads(first), indent=2, sort_keys=True, ensure_ascii=False)
    assert first == canonical + "\n"
    codes = [d["code"] for d in json.loads(first)["diagnostics"]]
    assert codes == ["E-IO", "L-PAIR", "L-DEPTH"]


def test_schema_rejects_a_malformed_document(validator: jsonschema.Draft202012Validator) -> None:
    document = json.loads(render_json(diagnostics(), tool_version="0.1.0"))
    document["diagnostics"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(document)
