"""The SARIF renderer: valid against the official 2.1.0 schema, deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from jsonschema.protocols import Validator

from diagnostics import Diagnostic, Label, RuleInfo, Severity, Span
from diagnostics.render_sarif import render_sarif
from diagnostics.span import UNKNOWN_SPAN

SCHEMA_PATH = Path(__file__).parents[2] / "diagnostics" / "schemas" / "sarif-schema-2.1.0.json"

RULES = [
    RuleInfo(
        code="L-PAIR",
        name="EndpointPairing",
        summary="paired endpoints agree on memory space, scope and kind",
        help_uri="https://example.org/kernlink/clauses/L-PAIR",
        full_description="A counter's producer and consumer must use the same scope.",
    ),
    RuleInfo(code="L-DEPTH", name="RingDepth", summary="ring depths agree between endpoints"),
]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module", params=["draft7", "declared"])
def validator(request: pytest.FixtureRequest, schema: dict[str, Any]) -> Validator:
    cls = jsonschema.Draft7Validator if request.param == "draft7" else jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


CONSUMER = "consumer acquires at `gpu` scope"


def diagnostics() -> list[Diagnostic]:
    return [
        Diagnostic(
            code="L-PAIR",
            message="counter `ready` pairs a `sys`-scope producer with a `gpu`-scope consumer",
            labels=(
                Label(Span("specs/cp/comm.kc", 12, 5, 12, 56), "producer releases at `sys` scope"),
                Label(Span("specs/cp/load.kc", 9, 5, 9, 44), CONSUMER, primary=False),
                Label(Span("specs/cp/load.kc", 9, 5, 9, 44), CONSUMER, primary=False),
            ),
            notes=("scopes differ",),
            helps=("use `scope sys` on both sides",),
        ),
        Diagnostic(
            code="L-DEPTH",
            message="ring `kv` depth 1 serialises producer and consumer",
            severity=Severity.WARNING,
            labels=(Label(Span("dir with space/a.kc", 3, 1, 4, 1)),),
        ),
        Diagnostic(code="I-PLACED", message="placed 3 claims", severity=Severity.NOTE),
        Diagnostic(code="E-INTERNAL", message="span lost", labels=(Label(UNKNOWN_SPAN),)),
    ]


def render() -> dict[str, Any]:
    log: dict[str, Any] = json.loads(render_sarif(diagnostics(), tool_version="0.1.0", rules=RULES))
    return log


def test_validates_against_the_official_schema(validator: Validator) -> None:
    validator.validate(render())


def test_empty_log_validates(validator: Validator) -> None:
    validator.validate(json.loads(render_sarif([], tool_version="0.1.0", rules=[])))


def test_the_schema_is_live(validator: Validator) -> None:
    log = render()
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(log)


def test_driver_and_rules() -> None:
    log = render()
    assert log["$schema"].endswith("/sarif-schema-2.1.0.json")
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kernlink"
    assert driver["version"] == "0.1.0"
    assert "informationUri" not in driver
    assert [rule["id"] for rule in driver["rules"]] == ["L-DEPTH", "L-PAIR"]
    depth, pair = driver["rules"]
    assert pair == {
        "id": "L-PAIR",
        "name": "EndpointPairing",
        "shortDescription": {"text": "paired endpoints agree on memory space, scope and kind"},
        "fullDescription": {"text": "A counter's producer and consumer must use the same scope."},
        "helpUri": "https://example.org/kernlink/clauses/L-PAIR",
    }
    assert depth["fullDescription"] == {"text": "ring depths agree between endpoints"}
    assert "helpUri" not in depth


def test_results() -> None:
    results = {r["ruleId"]: r for r in render()["runs"][0]["results"]}
    pair = results["L-PAIR"]
    assert pair["ruleIndex"] == 1
    assert pair["level"] == "error"
    assert pair["message"]["text"] == (
        "counter `ready` pairs a `sys`-scope producer with a `gpu`-scope consumer\n"
        "note: scopes differ\n"
        "help: use `scope sys` on both sides"
    )
    assert pair["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "specs/cp/comm.kc"},
                "region": {"startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 56},
            },
            "message": {"text": "producer releases at `sys` scope"},
        }
    ]
    assert [loc["id"] for loc in pair["relatedLocations"]] == [0, 1]
    related = pair["relatedLocations"][0]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "specs/cp/load.kc"
    assert related["message"] == {"text": "consumer acquires at `gpu` scope"}

    depth = results["L-DEPTH"]
    assert depth["level"] == "warning" and depth["ruleIndex"] == 0
    assert depth["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == ("dir%20with%20space/a.kc")
    assert "message" not in depth["locations"][0]
    assert "relatedLocations" not in depth

    assert results["I-PLACED"]["level"] == "note"
    assert "ruleIndex" not in results["I-PLACED"]
    assert results["I-PLACED"]["locations"] == []
    assert results["E-INTERNAL"]["locations"] == []


def test_deterministic() -> None:
    first = render_sarif(diagnostics(), tool_version="0.1.0", rules=RULES)
    again = render_sarif(diagnostics()[::-1], tool_version="0.1.0", rules=RULES[::-1])
    assert first == again
    assert first.endswith("}\n")


def test_duplicate_rule_codes_are_refused() -> None:
    with pytest.raises(ValueError, match="share a code"):
        render_sarif([], tool_version="0.1.0", rules=[RULES[0], RULES[0]])
