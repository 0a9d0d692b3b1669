"""A crash inside nvJitLink or NVRTC is a diagnostic with the outputs written, never a dead CLI.

``KERNLINK_NATIVE_FAULT`` makes the toolchain's child process kill itself with SIGSEGV
before it calls the library, as nvJitLink did on a zero mbarrier count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from diagnostics.model import DiagnosticError
from toolchain.cuda import FAULT_ENV, compile_nvrtc

PASS = Path(__file__).resolve().parents[1] / "checker" / "clauses" / "L-LINK" / "pass_linked"

pytestmark = pytest.mark.toolchain


@pytest.mark.parametrize("library", ["nvjitlink", "nvrtc"])
def test_link_survives_a_native_crash(library: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**__import__("os").environ, FAULT_ENV: library}
    proc = subprocess.run(
        [sys.executable, "-m", "kernlink", "link", "pipeline.kp", "-o", str(out), "--color", "never"],
        cwd=PASS,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    code = "L-LINK" if library == "nvjitlink" else "E-COMPILE"
    assert f"error[{code}]" in proc.stdout and "SIGSEGV" in proc.stdout, proc.stdout
    for name in ("generated.cu", "link.map", "link.json"):
        assert (out / name).is_file(), name
    assert not (out / "kernel.cubin").exists()
    record = json.loads((out / "link.json").read_text())
    assert record["status"] == "failed"


def test_compile_crash_is_e_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "nvrtc")
    with pytest.raises(DiagnosticError) as err:
        compile_nvrtc("__device__ int f() { return 1; }\n", "f.cu")
    [diag] = err.value.diagnostics
    assert diag.code == "E-COMPILE" and "SIGSEGV" in diag.message


def test_pack_survives_a_compiler_crash(tmp_path: Path) -> None:
    env = {**__import__("os").environ, FAULT_ENV: "nvrtc"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernlink",
            "pack",
            "loader.cu",
            "--contract",
            "loader.kc",
            "-o",
            str(tmp_path / "x.kpkg"),
            "--color",
            "never",
        ],
        cwd=PASS,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error[E-COMPILE]" in proc.stdout and "SIGSEGV" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "x.kpkg").exists()


def test_one_worker_serves_every_call_and_a_dead_one_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchain.cuda import native_worker_pid

    source = "__device__ int f() { return 1; }\n"
    compile_nvrtc(source, "f.cu")
    first = native_worker_pid()
    assert first is not None
    compile_nvrtc(source, "g.cu")
    assert native_worker_pid() == first  # no new process per compile
    monkeypatch.setenv(FAULT_ENV, "nvrtc")
    with pytest.raises(DiagnosticError):
        compile_nvrtc(source, "f.cu")
    assert native_worker_pid() is None  # the dead worker was reaped
    monkeypatch.delenv(FAULT_ENV)
    assert compile_nvrtc(source, "f.cu").ltoir
    assert native_worker_pid() not in (None, first)


def test_the_worker_compiles_in_the_callers_working_directory(tmp_path: Path) -> None:
    """NVRTC records the working directory in LTO IR: the worker must follow the caller's, call by call."""
    import os

    from toolchain.cuda import stable_cwd

    source = "__device__ int f() { return 1; }\n"
    before = os.getcwd()
    os.chdir(tmp_path)
    try:
        compile_nvrtc(source, "f.cu")  # the worker may start here, in tmp_path
    finally:
        os.chdir(before)
    with stable_cwd():
        first = compile_nvrtc(source, "f.cu").ltoir
    os.chdir(tmp_path)
    try:
        elsewhere = compile_nvrtc(source, "f.cu").ltoir
    finally:
        os.chdir(before)
    with stable_cwd():
        assert compile_nvrtc(source, "f.cu").ltoir == first
    assert elsewhere != first


def test_the_worker_ends_when_its_parent_is_killed() -> None:
    import os
    import signal
    import time

    script = (
        "from toolchain.cuda import compile_nvrtc, native_worker_pid\n"
        "compile_nvrtc('__device__ int f() { return 1; }\\n', 'f.cu')\n"
        "print(native_worker_pid(), flush=True)\n"
        "import time; time.sleep(120)\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(root)}
    )
    assert proc.stdout is not None
    worker = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return  # gone
        if state == "Z":
            return  # exited (a zombie until init reaps it)
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    raise AssertionError("the native worker outlived its killed parent")
