"""`kernlink build`: pack what changed, then link; ``--watch`` stays resident and builds again on save."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernlink.builder.incremental import build, inputs_of
from tests.link.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
EDIT = ("sum += data[k];", "sum += 2.0f * data[k];")

pytestmark = pytest.mark.toolchain


def _ring(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "ring", root / "ring", ignore=shutil.ignore_patterns("build", "host"))
    return root / "ring" / "ring.kp"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _cold(root: Path, edited: bool) -> bytes:
    pipeline = _ring(root)
    if edited:
        _edit(pipeline.parent / "reduce.cu", *EDIT)
    result, _ = build(pipeline, root / "out")
    assert result.ok, [d.message for d in result.diagnostics]
    return (root / "out" / "kernel.cubin").read_bytes()


def test_inputs_are_sources_contracts_flags_and_headers_not_the_packages_a_build_writes(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path)
    (pipeline.parent / "build").mkdir()
    (pipeline.parent / "build" / "loader.kpkg").write_bytes(b"x")
    (pipeline.parent / "notes.inc").write_text("")
    names = {p.name for p in inputs_of(pipeline)}
    assert names == {
        "ring.kp",
        "loader.kc",
        "reduce.kc",
        "loader.cu",
        "reduce.cu",
        "loader.flags",  # watched before it exists: writing one is a change
        "reduce.flags",
        "kl_ring_loader.h",
        "kl_ring_reduce.h",
        "notes.inc",  # before a first build, every header-like file beside the source
    }
    result, _ = build(pipeline, tmp_path / "out")
    assert result.ok
    after = {p.name for p in inputs_of(pipeline)}
    assert "notes.inc" not in after, "after a build, what the compile opened"
    assert {"kl_ring_loader.h", "kl_ring_reduce.h", "loader.flags", "reduce.flags"} <= after


def test_a_rebuild_after_a_change_is_a_cold_build_of_the_changed_sources(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path / "warm")
    first, _ = build(pipeline, tmp_path / "warm" / "out")
    assert [s.action for s in first.steps] == ["packed", "packed"]
    _edit(pipeline.parent / "reduce.cu", *EDIT)
    again, _ = build(pipeline, tmp_path / "warm" / "out")
    assert [s.action for s in again.steps] == ["reused", "packed"] and again.ok
    assert (tmp_path / "warm" / "out" / "kernel.cubin").read_bytes() == _cold(tmp_path / "cold", edited=True)


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


def _until_built(lines: queue.Queue[str], seen: list[str]) -> str:
    """The lines up to the next `--- build finished` (at most 5 minutes: a dead watch fails, never hangs)."""
    start = len(seen)
    while True:
        line = lines.get(timeout=300)
        seen.append(line)
        if line.startswith("--- build finished"):
            return "".join(seen[start:])


def test_watch_rebuilds_on_save_keeps_going_after_a_broken_edit_and_matches_a_cold_build(tmp_path: Path) -> None:
    pipeline = _ring(tmp_path / "watched")
    source = pipeline.parent / "reduce.cu"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "KERNLINK_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernlink", "build", "--watch", "ring.kp", "-o", "out", "--color", "never"],
        cwd=pipeline.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen: list[str] = []
    try:
        lines = _lines(proc)
        assert "build finished (exit 0)" in _until_built(lines, seen), "".join(seen)
        cold = (pipeline.parent / "out" / "kernel.cubin").read_bytes()
        assert cold == _cold(tmp_path / "cold", edited=False)

        _edit(source, *EDIT)
        text = _until_built(lines, seen)
        assert "reduce.cu changed: building again" in text and "build finished (exit 0)" in text, text
        assert "reused build/loader.kpkg" in text and "packed build/reduce.kpkg" in text, text
        rebuilt = (pipeline.parent / "out" / "kernel.cubin").read_bytes()
        assert rebuilt != cold and rebuilt == _cold(tmp_path / "cold-edited", edited=True)

        _edit(source, EDIT[1], "sum += 2.0f * undeclared_name;")
        text = _until_built(lines, seen)
        assert "error[E-COMPILE]" in text and "build finished (exit 1)" in text, text
        assert "Traceback" not in text and proc.poll() is None

        _edit(source, "sum += 2.0f * undeclared_name;", EDIT[1])
        text = _until_built(lines, seen)
        assert "build finished (exit 0)" in text, text
        assert (pipeline.parent / "out" / "kernel.cubin").read_bytes() == rebuilt
    finally:
        proc.terminate()
        proc.wait(30)
