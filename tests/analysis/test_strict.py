"""One definition of "accepted" under ``--strict``: `kernlink check`, `kernlink link`, `kernlink build`
and the API agree, whatever front door asks (the analysis context carries ``strict``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernlink import api
from kernlink.cli import main
from packing.pack import pack

UNDECIDED = Path(__file__).resolve().parents[1] / "conformance" / "cases" / "undecided"
PIPELINE = 'pipeline "fx" {\n    target sm_90a\n    use "fx.bar" version ^1.0 from "build/bar.kpkg"\n}\n'

pytestmark = pytest.mark.toolchain


@pytest.fixture(scope="module")
def undecided(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A composition whose one package has a site the conformance analysis cannot decide (I-CONFORM)."""
    folder = tmp_path_factory.mktemp("strict") / "undecided"
    shutil.copytree(UNDECIDED, folder)
    pack(folder / "fail.cu", folder / "stage.kc", folder / "build" / "bar.kpkg")
    (folder / "fx.kp").write_text(PIPELINE)
    return folder / "fx.kp"


@pytest.mark.parametrize("strict", [False, True])
def test_check_verb_and_api_agree(undecided: Path, strict: bool, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--strict"] if strict else []
    rc = main(["check", str(undecided), "--color", "never", *flags])
    capsys.readouterr()
    result = api.check([undecided], strict=strict)
    assert (rc == 0) is result.accepted
    assert result.accepted is not strict
    codes = [d.code for d in result.diagnostics]
    assert codes == (["L-CONFORM"] if strict else ["I-CONFORM"])


@pytest.mark.parametrize("verb", ["link", "build"])
def test_link_and_build_strict_refuse_what_check_strict_refuses(
    undecided: Path, verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--no-server"] if verb == "build" else []
    assert main([verb, str(undecided), "-o", str(tmp_path / "lax"), "--color", "never", *extra]) == 0
    capsys.readouterr()
    assert main([verb, str(undecided), "-o", str(tmp_path / "strict"), "--color", "never", "--strict", *extra]) == 1
    assert "error[L-CONFORM]: cannot decide the barrier ID" in capsys.readouterr().out
    linked = api.link([undecided], tmp_path / "api", strict=True)
    assert not linked.ok and [d.code for d in linked.diagnostics if d.is_error] == ["L-CONFORM"]
