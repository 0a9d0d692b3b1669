"""`kernlink check --stage X.kc`: one stage checked alone; what the other stages must provide is
assumed (I-ASSUMED), only the stage's own defects are errors (issue 31 item 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernlink.api import check, check_text
from kernlink.stage_check import split

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "specs" / "examples"


def _kernlink(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernlink", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def _alone(path: Path) -> list[tuple[str, str]]:
    result = check([path])
    stages = [c.stage for c in result.inputs.candidates] if result.inputs is not None else []
    return [(d.code, d.severity.value) for d in split(result.diagnostics, stages)]


def test_a_stage_alone_is_accepted_with_what_the_others_provide_assumed() -> None:
    done = _kernlink("check", "--stage", str(DATA / "pass_loader_alone.kc"), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)["diagnostics"]
    said = sorted(dict(d["data"])["assumes"] for d in found)
    assert said == [
        "another stage consumes ring `kv`",
        "another stage declares role `reduce`",
        "other stages' roles cover the other 8 of the 12 warps launched",
    ]
    assert {d["code"] for d in found} == {"I-ASSUMED"} and {d["severity"] for d in found} == {"note"}


def test_closed_world_the_same_stage_is_rejected() -> None:
    done = _kernlink("check", str(DATA / "pass_loader_alone.kc"), "--color", "never")
    assert done.returncode == 1 and "L-UNPAIRED" in done.stdout


def test_a_stage_alone_still_reports_its_own_defect() -> None:
    done = _kernlink("check", "--stage", str(DATA / "fail_loader_launches_too_few.kc"), "--color", "never")
    assert done.returncode == 1
    assert "error[L-WARPS]: the roles cover 4 warps (128 threads), but `ring.loader` launches 64 threads" in done.stdout
    assert "error: stage rejected with 1 error, 2 notes" in done.stdout


def test_a_misspelt_role_of_the_stages_own_ring_is_its_own_defect(tmp_path: Path) -> None:
    contract = tmp_path / "loader.kc"
    contract.write_text(
        (DATA / "pass_loader_alone.kc").read_text().replace("ring kv produce by load", "ring kv produce by lod")
    )
    assert ("L-ROLE", "error") in _alone(contract)


def test_stage_takes_contracts_only() -> None:
    done = _kernlink("check", "--stage", str(EXAMPLES / "ring" / "ring.kp"))
    assert done.returncode == 2 and "`--stage` checks stages alone" in done.stderr + done.stdout


@pytest.mark.parametrize(
    "contract",
    ["ring/reduce.kc", "hello/caller.kc", "hello/provider.kc", "gemm_swiglu/epilogue.kc", "moe4/act.kc", "cp/load.kc"],
)
def test_every_example_stage_alone_has_no_error(contract: str) -> None:
    found = _alone(EXAMPLES / contract)
    assert [c for c, severity in found if severity == "error"] == [], found
    assert ("I-ASSUMED", "note") in found


@pytest.mark.parametrize(
    ("code", "data"),
    [
        ("L-TENSOR", {"import": "x", "export": "acc", "absent": "exporter"}),
        ("L-PHASE", {"phase": "decode", "absent": "interpreter"}),
        ("L-LIFETIME", {"claim": "c", "events": "x.done", "absent": "connection"}),
        ("L-VIEW", {"buffer": "scratch", "absent": "caller"}),
    ],
)
def test_what_another_stage_provides_is_read_from_the_findings_data_not_its_wording(
    code: str, data: dict[str, str]
) -> None:
    from diagnostics.model import Diagnostic
    from diagnostics.symbols import Code

    worded = Diagnostic(Code(code), "reworded by its clause", data=tuple(data.items()))
    assert [d.code for d in split([worded], [])] == [Code.I_ASSUMED]
    bare = {k: v for k, v in data.items() if k != "absent"}
    unmarked = Diagnostic(Code(code), "which no stage exports / no interpreter declares", data=tuple(bare.items()))
    assert [d.code for d in split([unmarked], [])] == [Code(code)]


@pytest.mark.parametrize(
    ("fixture", "said", "line"),
    [
        ("fail_fragment_alone_inexact.kc", "demand of fragment `acc` never demands element `(m=0, n=1)`", 9),
        ("fail_fragment_alone_pointers.kc", "takes 1 fragment in registers (`acc`) but its signature has 0 `ptr`", 5),
        ("fail_fragment_alone_warps.kc", "its demand spans 16 threads, not a group of whole warps", 9),
        ("fail_fragment_caller_alone_role.kc", "groups of 128 threads but role `mma`, which calls it, has 192", 7),
    ],
)
def test_a_fragment_is_decided_on_its_own_side_before_any_composition(fixture: str, said: str, line: int) -> None:
    """A callable's stage (or a caller's) checked alone: its fragment's own lines are its own defects,
    with its twin (pass_fragment_alone.kc, pass_fragment_caller_alone.kc) accepted."""
    result = check([DATA / fixture])
    stages = [c.stage for c in result.inputs.candidates] if result.inputs is not None else []
    errors = [d for d in split(result.diagnostics, stages) if d.is_error]
    assert errors and all(d.code == errors[0].code for d in errors), [(d.code, d.message) for d in errors]
    assert said in errors[0].message, errors[0].message
    assert errors[0].labels[0].span.line == line
    twin = "pass_fragment_caller_alone.kc" if "caller" in fixture else "pass_fragment_alone.kc"
    assert [severity for _, severity in _alone(DATA / twin)] == ["note"]


def test_a_fragment_a_pair_reaches_is_not_checked_twice() -> None:
    """Composed, the pair's proof decides the fragment (after placement): the broken demand is reported
    by it once per defect, not again by the lone check."""
    pair = ("fail_fragment_alone_inexact.kc", "pass_fragment_caller_alone.kc")
    text = "\n".join((DATA / f).read_text() for f in pair)
    result = check_text(text, "<pair>")
    found = sorted((d.code, d.message) for d in result.diagnostics if d.is_error)
    assert [code for code, _ in found] == ["L-MAP", "L-MAP"], found
    assert all(message.startswith("demand of `acc`") for _, message in found), found


_CALLABLE = 'extern "C" __device__ void swiglu_regs_impl(const float* acc, float* out) { out[threadIdx.x] = acc[0]; }\n'


@pytest.mark.toolchain
def test_pack_reports_a_callables_own_fragment_defect(tmp_path: Path) -> None:
    """`kernlink pack` of the callable: its fragment's own defect is a warning (the package is written,
    as pack's other contract findings), an error under `--strict` (none is); its twin packs strictly."""
    source = tmp_path / "c.cu"
    source.write_text(_CALLABLE)
    bad = ["pack", str(source), "--contract", str(DATA / "fail_fragment_alone_inexact.kc"), "--color", "never"]
    done = _kernlink(*bad, "-o", str(tmp_path / "warned.kpkg"))
    assert done.returncode == 0 and (tmp_path / "warned.kpkg").is_file(), done.stderr
    assert "warning[L-MAP]: demand of fragment `acc` never demands element" in done.stdout + done.stderr
    done = _kernlink(*bad, "-o", str(tmp_path / "strict.kpkg"), "--strict")
    assert done.returncode == 1 and not (tmp_path / "strict.kpkg").exists()
    assert "error[L-MAP]: demand of fragment `acc` never demands element" in done.stdout + done.stderr
    good = ["pack", str(source), "--contract", str(DATA / "pass_fragment_alone.kc"), "--strict"]
    done = _kernlink(*good, "-o", str(tmp_path / "good.kpkg"))
    assert done.returncode == 0 and "warning" not in done.stdout + done.stderr, done.stdout + done.stderr
