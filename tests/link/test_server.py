"""`kernlink serve`: a one-shot `kernlink build` runs in a resident server when one of the same code listens.

What a build through the server writes and prints is what the same build writes and prints in
its own process; no server (or one of other code) means the build runs in the client, as before.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernlink import server
from kernlink.cmd_build import _server_argv
from tests.link.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("kernel.cubin", "kernel.ptx", "kernel.h", "generated.cu", "link.map")

pytestmark = pytest.mark.toolchain


def _env(runtime: Path, cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KERNLINK_RUNTIME_DIR": str(runtime),
        "KERNLINK_CACHE": str(cache),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _kernlink(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernlink", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def running(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A server in the foreground of a child process, and the environment its clients share with it."""
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernlink", "serve", "--foreground", "--idle", "120"],
        cwd="/",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    try:
        yield env
    finally:
        _kernlink(["serve", "--stop"], tmp_path, env)
        assert proc.wait(60) == 0


def _ring(folder: Path) -> Path:
    shutil.copytree(EXAMPLES / "ring", folder, ignore=shutil.ignore_patterns("build", "host", "out"))
    return folder


def _untimed(text: str) -> str:
    return re.sub(r"\(\d+ ms\)", "(… ms)", text)


def _served(env: dict[str, str], cwd: Path) -> int:
    answer = _kernlink(["serve", "--status"], cwd, env)
    found = re.search(r"(\d+) builds served", answer.stdout)
    assert found, answer.stdout
    return int(found.group(1))


def test_a_build_through_the_server_writes_and_prints_what_a_build_in_process_does(
    tmp_path: Path, running: dict[str, str]
) -> None:
    served, alone = _ring(tmp_path / "a"), _ring(tmp_path / "b")
    through = _kernlink(["build", "ring.kp", "-o", "out"], served, running)
    here = _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], alone, running)
    assert _served(running, tmp_path) == 1
    assert (through.returncode, _untimed(through.stdout), through.stderr) == (
        here.returncode,
        _untimed(here.stdout),
        here.stderr,
    )
    assert through.returncode == 0
    for name in OUTPUTS:
        assert (served / "out" / name).read_bytes() == (alone / "out" / name).read_bytes(), name
    # a second build in the same server, after an edit: still the bytes of a fresh process
    for folder in (served, alone):
        source = folder / "reduce.cu"
        source.write_text(source.read_text().replace("sum += data[k];", "sum += 2.0f * data[k];"))
    _kernlink(["build", "ring.kp", "-o", "out"], served, running)
    _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], alone, running)
    assert _served(running, tmp_path) == 2
    assert (served / "out" / "kernel.cubin").read_bytes() == (alone / "out" / "kernel.cubin").read_bytes()


def test_a_rejected_build_through_the_server_reports_as_in_process(tmp_path: Path, running: dict[str, str]) -> None:
    folder, other = _ring(tmp_path / "a"), _ring(tmp_path / "b")
    for f in (folder, other):
        (f / "reduce.kc").write_text((f / "reduce.kc").read_text() + "\nthis is not a contract\n")
    through = _kernlink(["build", "ring.kp", "-o", "out"], folder, running)
    here = _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], other, running)
    assert _served(running, tmp_path) == 1
    assert through.returncode == here.returncode != 0
    assert (_untimed(through.stdout), through.stderr) == (_untimed(here.stdout), here.stderr)
    usage = _kernlink(["build", "ring.kp"], folder, running)  # argparse's error, in the client
    assert usage.returncode == 2 and "-o" in usage.stderr


def test_a_second_server_of_the_same_code_is_refused(tmp_path: Path, running: dict[str, str]) -> None:
    second = _kernlink(["serve", "--foreground", "--idle", "5"], tmp_path, running)
    assert second.returncode == 2 and "already listening" in second.stderr
    assert _kernlink(["serve", "--status"], tmp_path, running).stdout.startswith("build server pid")


def test_without_a_server_the_build_runs_in_the_client(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    env = _env(runtime, tmp_path / "cache")
    folder = _ring(tmp_path / "ring")
    done = _kernlink(["build", "ring.kp", "-o", "out"], folder, env)
    assert done.returncode == 0, done.stderr
    assert (folder / "out" / "kernel.cubin").is_file()
    assert not runtime.exists(), "a client looking for a server creates nothing"
    assert _kernlink(["serve", "--status"], folder, env).stdout.startswith("no build server")


def test_the_key_changes_with_kernlink_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "pkg" / "m.py"
    module.parent.mkdir()
    module.write_text("x = 1\n")
    monkeypatch.setattr(server, "_package_roots", lambda: [str(module.parent)])
    before = server.server_key()
    assert server.server_key() == before
    module.write_text("x = 22\n")
    assert server.server_key() != before


def test_a_runtime_folder_others_can_enter_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "rt"
    folder.mkdir()
    folder.chmod(0o755)
    monkeypatch.setenv("KERNLINK_RUNTIME_DIR", str(folder))
    with pytest.raises(server.ServerError, match="not a private folder"):
        server.runtime_dir()
    assert server.status() is None
    folder.chmod(stat.S_IRWXU)
    assert server.runtime_dir() == folder


def test_stop_and_idle_end_the_server(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    started = _kernlink(["serve", "--idle", "120"], tmp_path, env)
    assert started.returncode == 0 and "is running" in started.stdout, started.stderr
    again = _kernlink(["serve", "--status"], tmp_path, env)
    assert again.stdout.startswith("build server pid")
    idle = subprocess.run(
        [sys.executable, "-m", "kernlink", "serve", "--foreground", "--idle", "1"],
        cwd="/",
        env={**env, "KERNLINK_RUNTIME_DIR": str(tmp_path / "other")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert idle.returncode == 0 and idle.stdout.startswith("listening on ")
    assert _kernlink(["serve", "--stop"], tmp_path, env).stdout.startswith("stopped")
    assert _kernlink(["serve", "--status"], tmp_path, env).stdout.startswith("no build server")
    assert [p.name for p in runtime.iterdir() if p.is_socket()] == []


def test_auto_colour_is_decided_where_the_terminal_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    args = argparse.Namespace(pipeline="ring.kp", output="out", compiler="nvrtc", color="auto", target=None)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert _server_argv(args)[-2:] == ["--color", "always"]
    monkeypatch.setenv("NO_COLOR", "1")
    assert _server_argv(args)[-2:] == ["--color", "never"]


def test_the_server_writes_with_the_clients_file_mode_mask(tmp_path: Path, running: dict[str, str]) -> None:
    folder = _ring(tmp_path / "ring")
    done = subprocess.run(
        ["sh", "-c", f"umask 077 && exec {sys.executable} -m kernlink build ring.kp -o out"],
        cwd=folder,
        env=running,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert _served(running, tmp_path) == 1
    assert stat.S_IMODE((folder / "out" / "kernel.cubin").stat().st_mode) & 0o077 == 0


def test_a_starting_server_sweeps_what_servers_of_other_code_left(tmp_path: Path) -> None:
    import fcntl

    folder = tmp_path / "rt"
    folder.mkdir(mode=0o700)
    for stem in ("s-old", "s-live"):
        for suffix in ("", ".lock", ".log"):
            (folder / f"{stem}{suffix}").write_text("")
    held = os.open(folder / "s-live.lock", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        server._sweep(folder, keep=folder / "s-new")
    finally:
        os.close(held)
    assert sorted(p.name for p in folder.iterdir()) == ["s-live", "s-live.lock", "s-live.log"]


def test_a_runtime_folder_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "rt"
    blocker.write_text("not a folder")
    env = _env(blocker, tmp_path / "cache")
    for args in (["serve", "--foreground", "--idle", "1"], ["serve", "--idle", "1"]):
        done = _kernlink(args, tmp_path, env)
        assert done.returncode == 2 and done.stderr.startswith("error: cannot use"), done.stderr
    assert _kernlink(["serve", "--status"], tmp_path, env).stdout.startswith("no build server")


def test_the_key_covers_every_package_kernlink_installs() -> None:
    """`server.PACKAGES` keys a server on kernlink's code: it must name every top-level package pyproject installs."""
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert set(server.PACKAGES) == {name.split(".")[0] for name in listed}


def test_the_client_forwards_every_option_of_a_one_shot_build() -> None:
    """`_server_argv` rebuilds the arguments the server's build parses: an option it does not forward
    would be dropped silently when a server builds."""
    import argparse

    from kernlink.cli import build_parser

    parser = build_parser("build")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["build"]
    own = {a.dest for a in sub._actions} - {"help", "run", "watch", "no_server"}  # the client's own choices
    values = {"pipeline": "p.kp", "output": "o", "compiler": "nvcc", "target": "sm_100a", "color": "never"}
    assert own == set(values)
    forwarded = sub.parse_args(_server_argv(argparse.Namespace(**values)))
    assert {k: getattr(forwarded, k) for k in values} == values
