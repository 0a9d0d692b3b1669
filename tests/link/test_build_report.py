"""What `kernlink build` prints when it rejects: the user's files, their lines and carets, and a tally."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.link.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.toolchain


def _ring(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "ring", root / "ring", ignore=shutil.ignore_patterns("build", "host"))
    return root / "ring"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _build(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernlink", "build", "ring.kp", "-o", "out", "--no-server", "--color", "never"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        timeout=300,
    )


def test_a_rejected_build_names_the_users_contracts_at_their_own_lines(tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    _edit(folder / "reduce.kc", "empty arrive per_warp(reduce)", "empty arrive 1")
    line = next(i for i, t in enumerate((folder / "reduce.kc").read_text().splitlines(), 1) if "empty arrive 1" in t)
    done = _build(folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kpkg!contract.kc" not in done.stdout, done.stdout
    assert f"reduce.kc:{line}:" in done.stdout and "loader.kc:" in done.stdout
    assert f"{line} |         empty arrive 1" in done.stdout
    assert "error: build rejected with 2 errors" in done.stdout


def test_a_syntax_error_under_build_keeps_its_line_and_caret(tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    _edit(folder / "reduce.kc", "empty arrive per_warp(reduce)", "empty arive per_warp(reduce)")
    done = _build(folder)
    assert done.returncode == 1
    assert "error[E-SYNTAX]" in done.stdout
    assert "|         empty arive per_warp(reduce)" in done.stdout and "^^^^^ expected one of" in done.stdout
    assert "error: build rejected with 1 error" in done.stdout


def test_a_compile_error_under_build_keeps_its_line_and_caret(tmp_path: Path) -> None:
    folder = _ring(tmp_path)
    _edit(folder / "reduce.cu", "sum += data[k];", "sum += data[k] +;")
    done = _build(folder)
    assert done.returncode == 1
    assert "error[E-COMPILE]" in done.stdout and "reduce.cu:" in done.stdout
    assert "sum += data[k] +;" in done.stdout and "^" in done.stdout
    assert "error: build rejected with 1 error" in done.stdout
