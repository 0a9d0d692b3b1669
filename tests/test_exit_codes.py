"""Exit codes: one module, documented in the CLI help and the README; a crash is never `rejected`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernlink import cli
from kernlink.exit_codes import EXIT_INTERNAL, EXIT_REJECTED, TABLE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "specs" / "examples" / "ring" / "ring.kp"


def test_an_escaping_exception_is_e_internal_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise StopIteration

    monkeypatch.setattr("kernlink.api.check", boom)
    code = cli.main(["check", str(EXAMPLE), "--color", "never"])
    out = capsys.readouterr()
    assert code == EXIT_INTERNAL != EXIT_REJECTED
    assert "error[E-INTERNAL]" in out.out
    assert str(EXAMPLE) in out.out  # the inputs to report
    assert "Traceback" not in out.out + out.err


def test_an_internal_diagnostic_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnostics.model import Diagnostic
    from diagnostics.sources import SourceMap
    from kernlink.api import CheckResult

    monkeypatch.setattr(
        "kernlink.api.check",
        lambda *a, **k: CheckResult([Diagnostic("E-INTERNAL", "clause `L-PAIR` failed with KeyError")], SourceMap()),
    )
    assert cli.main(["check", str(EXAMPLE), "--color", "never"]) == EXIT_INTERNAL


def test_exit_codes_are_documented() -> None:
    help_text = cli.build_parser().format_help()
    readme = (ROOT / "README.md").read_text()
    for code, _ in TABLE:
        assert f"  {code} " in help_text
        assert f"| {code} |" in readme
