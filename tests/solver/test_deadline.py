"""The budget table and the check's time budget (issue 32 item 10, issue 30 item 5).

A check past its deadline is E-SOLVER-BUDGET with a span, never a verdict; a cancelled check
stops at its next solver verdict; on a terminal, a check that runs past two seconds says so on
stderr, and nowhere else.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import z3

from kernlink.api import check
from solver import BUDGETS, Cancelled, Deadline, Solver, TimeBudgetSpent, within
from tests.slow_inputs import rings

ROOT = Path(__file__).resolve().parents[2]
RING = ROOT / "specs" / "examples" / "ring" / "ring.kp"


def test_every_default_budget_is_read_from_the_table() -> None:
    """No module outside solver/budget.py spells a budget: each reads BUDGETS."""
    spelled = re.compile(r"^\s*\w*(RLIMIT|BUDGET)\w*\s*(:\s*\w+\s*)?=\s*\d", re.MULTILINE)
    packages = (
        "analysis",
        "checker",
        "contract_lang",
        "kernlink",
        "linker",
        "package",
        "packing",
        "placement",
        "runtime",
        "solver",
        "toolchain",
    )
    found = [
        str(path.relative_to(ROOT))
        for package in (*packages, "transfer_model")
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "solver" / "budget.py" and spelled.search(path.read_text())
    ]
    assert found == []
    assert BUDGETS.check_seconds > 0 and BUDGETS.placement_query <= BUDGETS.placement


def test_a_check_past_its_deadline_is_e_solver_budget_at_the_pipeline() -> None:
    result = check([RING], deadline=Deadline(1e-9))
    assert [(d.code, d.is_error) for d in result.diagnostics] == [("E-SOLVER-BUDGET", True)]
    (diag,) = result.diagnostics
    assert diag.message == "the check was not decided within its time budget of 1e-09 s"
    assert diag.labels[0].span.file.endswith("ring.kp") and diag.labels[0].span.line == 3
    assert not result.accepted
    assert check([RING], deadline=Deadline(0)).accepted  # 0: no budget


def test_an_expired_deadline_interrupts_a_running_query_and_python_alike() -> None:
    """A query of a context the check made is interrupted, not waited for (Fermat's cubes would run to
    their rlimit: minutes); on the main thread a loop of Python stops too."""
    start = time.monotonic()
    with pytest.raises(TimeBudgetSpent), within(Deadline(0.5)):
        solver = Solver(rlimit=4_000_000_000)
        x, y, w = z3.Ints("x y w", solver.ctx)
        solver.add(x * x * x + y * y * y == w * w * w, x > 1, y > 1, w > 1)
        solver.check()
    assert time.monotonic() - start < 20
    start = time.monotonic()
    with pytest.raises(TimeBudgetSpent), within(Deadline(0.5)):
        while time.monotonic() - start < 60:
            pass
    assert time.monotonic() - start < 20


def test_a_cancelled_check_stops_at_its_next_verdict() -> None:
    deadline = Deadline()
    deadline.cancel()
    with pytest.raises(Cancelled):
        check([RING], deadline=deadline)
    solver = Solver()
    solver.add(z3.Int("x", solver.ctx) > 1)
    assert solver.check().sat  # outside a check nothing stops
    with within(Deadline()) as running:
        assert solver.check().sat and running.steps == 1


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_a_long_check_shows_progress_on_a_terminal_and_stops_at_its_budget(tmp_path: Path, terminal: bool) -> None:
    pipeline = rings(tmp_path)
    argv = [sys.executable, "-m", "kernlink", "check", pipeline.name, "--color", "never", "--time-budget", "4"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    reader, writer = os.openpty() if terminal else os.pipe()
    start = time.monotonic()
    child = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=writer, text=True)
    os.close(writer)
    said = b""
    while chunk := _read(reader):
        said += chunk
    out, _ = child.communicate(timeout=300)
    os.close(reader)
    assert child.returncode == 1, out
    assert "error[E-SOLVER-BUDGET]: the check was not decided within its time budget of 4 s" in out
    assert "error: composition not decided in time (`--time-budget 4`) with 1 error" in out
    assert time.monotonic() - start < 120
    shown = said.decode(errors="replace")
    if terminal:
        assert re.search(r"checking: \d+ s, \d+ solver queries answered; stops at 4 s", shown), shown
    else:
        assert shown == ""


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # a pty whose other end closed
        return b""
