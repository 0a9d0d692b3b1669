"""`kernlink check --watch`: a change to any input of the composition runs the check again."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from kernlink.builder.watch import changed, snapshot, watch

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"


def test_inputs_are_the_pipeline_the_contracts_beside_it_and_its_packages(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "ring", tmp_path / "ring", ignore=shutil.ignore_patterns("host"))
    (tmp_path / "ring" / "build").mkdir(exist_ok=True)
    (tmp_path / "ring" / "build" / "loader.kpkg").write_bytes(b"x")
    names = {p.name for p in snapshot([tmp_path / "ring" / "ring.kp"])}
    assert names == {"ring.kp", "loader.kc", "reduce.kc", "loader.kpkg"}


def test_a_change_reruns_and_an_unrelated_file_does_not(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "ring", tmp_path / "ring", ignore=shutil.ignore_patterns("build", "host"))
    pipeline = tmp_path / "ring" / "ring.kp"
    before = snapshot([pipeline])
    (tmp_path / "ring" / "notes.txt").write_text("unrelated")
    assert changed(before, snapshot([pipeline])) == []
    runs: list[float] = []
    said: list[str] = []

    def edit() -> None:
        time.sleep(0.3)
        contract = tmp_path / "ring" / "reduce.kc"
        contract.write_text(contract.read_text() + "\n")

    threading.Thread(target=edit).start()
    status = watch([pipeline], lambda: runs.append(time.monotonic()) or 7, say=said.append, poll=0.05, runs=2)
    assert status == 7 and len(runs) == 2
    assert len(said) == 1 and "reduce.kc" in said[0]


def test_cli_watch_checks_again_after_an_edit(tmp_path: Path) -> None:
    import subprocess
    import sys

    shutil.copytree(EXAMPLES / "ring", tmp_path / "ring", ignore=shutil.ignore_patterns("build", "host"))
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernlink", "check", "--watch", "--color", "never", str(tmp_path / "ring" / "ring.kp")],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    timer = threading.Timer(300, proc.kill)  # a watch that never re-checks fails the test, never hangs it
    timer.start()
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "composition accepted" in line and not any("changed" in seen for seen in lines):
                contract = tmp_path / "ring" / "reduce.kc"
                contract.write_text(contract.read_text().replace("empty arrive per_warp(reduce)", "empty arrive 1"))
            if "composition rejected" in line:
                break
    finally:
        timer.cancel()
        proc.terminate()
        proc.wait(10)
    text = "".join(lines)
    assert "reduce.kc changed: checking again" in text and "error[L-ARRIVE]" in text


def test_an_input_a_run_adds_is_no_change_and_a_listed_absent_file_appearing_is_one(tmp_path: Path) -> None:
    """A build learns what its compile opened: those inputs are compared from the end of that run on.
    A path listed while absent (a header that would shadow an include) counts once it appears."""
    first, opened, shadow = tmp_path / "k.cu", tmp_path / "k.inc", tmp_path / "shadow.h"
    first.write_text("k")
    opened.write_text("i")
    listed = [first, shadow]
    runs: list[float] = []
    said: list[str] = []

    def run() -> int:
        runs.append(time.monotonic())
        if opened not in listed:
            listed.append(opened)
        return 0

    created: list[float] = []

    def create() -> None:
        time.sleep(0.5)
        created.append(time.monotonic())
        shadow.write_text("new")

    threading.Thread(target=create).start()
    watch([first], run, say=said.append, poll=0.05, runs=2, files=lambda _: list(listed))
    assert len(runs) == 2 and runs[1] > created[0], "no run before the file appeared"
    assert len(said) == 1 and "shadow.h" in said[0] and "k.inc" not in said[0], said
