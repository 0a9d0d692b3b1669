"""Helps that point the right way: each one names a fix that exists and, applied, works."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from diagnostics.model import Diagnostic, DiagnosticError
from kernlink.api import check, check_text

CLAUSES = Path(__file__).parent
EXAMPLES = Path(__file__).resolve().parents[3] / "specs" / "examples"


def _errors(text: str) -> list[Diagnostic]:
    return [d for d in check_text(text, "x.kc").diagnostics if d.is_error]


def test_txbytes_offers_both_fixes_in_kib() -> None:
    text = (CLAUSES / "L-TXBYTES" / "fail_forgot_second_copy.kc").read_text()
    [diag] = _errors(text)
    [help_text] = diag.helps
    assert "either" in help_text and "; or" in help_text
    assert "32KiB" in help_text and "16KiB" in help_text and "32768" not in help_text
    # each option, applied, is accepted
    expect_more = text.replace("full arrive 1 tx 16KiB", "full arrive 1 tx 32KiB")
    assert _errors(expect_more) == []


@pytest.mark.parametrize("fixture", ["fail_40_240_240.kc", "fail_default_producer.kc"])
def test_regs_suggests_budgets_that_fit(fixture: str) -> None:
    text = (CLAUSES / "L-REGS" / fixture).read_text()
    [diag] = _errors(text)
    suggested = re.findall(r"`(\w+)` regs (\d+)", diag.helps[0])
    assert suggested, diag.helps
    for role, regs in suggested:
        text = re.sub(rf"(role {role} entry \w+ warps \d+) regs \d+", rf"\1 regs {regs}", text)
    assert _errors(text) == [], diag.helps


def test_map_with_wrong_warpgroups_shows_the_role_and_the_value(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    shutil.copytree(EXAMPLES / "gemm_swiglu", folder, ignore=shutil.ignore_patterns("build"))  # not a local build
    kc = folder / "mainloop.kc"
    kc.write_text(kc.read_text().replace("warpgroups: 2", "warpgroups: 1"))
    [diag] = [d for d in check([folder / "gemm_swiglu.kp"]).diagnostics if d.is_error]
    assert diag.code == "L-MAP"
    assert any(
        "role mma" in (folder / "mainloop.kc").read_text().splitlines()[lab.span.line - 1]
        for lab in diag.labels
        if not lab.primary
    )
    assert diag.helps[0].startswith("write `warpgroups: 2`")
    kc.write_text(kc.read_text().replace("warpgroups: 1", "warpgroups: 2"))
    assert [d for d in check([folder / "gemm_swiglu.kp"]).diagnostics if d.is_error] == []


@pytest.mark.toolchain
def test_compile_help_names_a_flag_that_exists() -> None:
    from kernlink.cli import build_parser
    from toolchain.cuda import BUNDLED_HEADERS_SINCE, compile_nvrtc, nvrtc_version

    if nvrtc_version() >= BUNDLED_HEADERS_SINCE:
        pytest.skip("this NVRTC bundles the CUDA headers: no help is given")
    with pytest.raises(DiagnosticError) as err:
        compile_nvrtc('#include "nowhere.h"\n', "h.cu")
    helps = " ".join(err.value.diagnostics[0].helps)
    flags = re.findall(r"`kernlink (\w+) (--[\w-]+) (\w+)`", helps)
    assert flags, helps
    parser = build_parser()
    for verb, flag, value in flags:
        parser.parse_args([verb, "x.cu", "--contract", "x.kc", flag, value])


def test_deadlock_labels_the_lagging_release() -> None:
    text = (CLAUSES / "L-DEADLOCK" / "fail_late_release_depth1.kc").read_text()
    [diag] = _errors(text)
    lag_line = next(i for i, line in enumerate(text.splitlines(), 1) if "lag 1" in line)
    [label] = [lab for lab in diag.labels if lab.span.line == lag_line]
    assert "`lag 1`" in label.text
