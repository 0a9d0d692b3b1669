"""`params` mutants are contracts the language allows: a field carrying a tensor map's box keeps a type
that may carry one, so the campaign never reports its own printed mutant as a round-trip bug."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernlink.cli import main

PAGED = Path(__file__).resolve().parents[2] / "specs" / "examples" / "attention" / "attn_paged.kp"


def test_every_params_mutant_of_the_paged_attention_parses(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", str(PAGED), "--kinds", "params", "--examples", "80", "--seed", "1", "--jobs", "1"]
    capsys.readouterr()
    main([*argv, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["mutants"] == 80
    assert report["bugs"] == [], [b["problems"] for b in report["bugs"]]
    # the retyped tensor maps are still drawn: by value becomes a pointer to one
    assert any("tensormap @" in a["mutation"] and "→ `tmap_" in a["mutation"] for a in report["accepted"])
