"""`kernlink serve`: a one-shot `kernlink build` runs in a resident server when one of the same code listens.

What a build through the server writes and prints is what the same build writes and prints in
its own process; no server (or one of other code) means the build runs in the client, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernlink.builder import server
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

    args = argparse.Namespace(
        pipeline="ring.kp",
        output="out",
        compiler="nvrtc",
        color="auto",
        target=None,
        strict=False,
        require_binding=False,
        no_host_code=False,
    )
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


def test_pyproject_installs_every_package_folder() -> None:
    """An installed kernlink (pip, not the editable checkout) has every sub-package: a missing one
    is an import error in the installed `kernlink` command only."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for root in server.PACKAGES
        for init in (ROOT / root).rglob("__init__.py")
    }
    assert found - listed == set()


def test_the_client_forwards_every_option_of_a_one_shot_build() -> None:
    """`_server_argv` rebuilds the arguments the server's build parses: an option it does not forward
    would be dropped silently when a server builds."""
    import argparse

    from kernlink.cli import build_parser

    parser = build_parser("build")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["build"]
    own = {a.dest for a in sub._actions} - {"help", "run", "watch", "no_server"}  # the client's own choices
    values = {
        "pipeline": "p.kp",
        "output": "o",
        "compiler": "nvcc",
        "target": "sm_100a",
        "color": "never",
        "no_host_code": True,
        "strict": True,
        "require_binding": True,
    }
    assert own == set(values)
    forwarded = sub.parse_args(_server_argv(argparse.Namespace(**values)))
    assert {k: getattr(forwarded, k) for k in values} == values


# ---- the key: what decides a build, not the launcher


def _launcher(folder: Path) -> Path:
    """A console script as pip writes one for `kernlink = kernlink.cli:main` (in its own `bin` folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "kernlink"
    script.write_text(
        f"#!{sys.executable}\n"
        "import re\nimport sys\nfrom kernlink.cli import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def _key(done: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"\(key ([0-9a-f]+)\)", done.stdout)
    assert found, (done.stdout, done.stderr)
    return found.group(1)


def test_the_console_script_and_python_m_compute_one_key(tmp_path: Path) -> None:
    """The key hashes the import path without the launcher's own entry: a console script's `bin`
    folder, `python -m`'s working directory."""
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    script = _launcher(tmp_path / "venv" / "bin")
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    as_script = subprocess.run(
        [str(script), "serve", "--status"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
    )
    as_module = _kernlink(["serve", "--status"], tmp_path, env)
    as_module_elsewhere = _kernlink(["serve", "--status"], elsewhere, env)
    assert _key(as_script) == _key(as_module) == _key(as_module_elsewhere)


def test_a_server_the_console_script_starts_serves_both_launchers(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    script = _launcher(tmp_path / "venv" / "bin")
    started = subprocess.run(
        [str(script), "serve", "--idle", "120"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode == 0 and "is running" in started.stdout, started.stderr
    try:
        folder = _ring(tmp_path / "ring")
        by_module = _kernlink(["build", "ring.kp", "-o", "out"], folder, env)
        assert by_module.returncode == 0, by_module.stderr
        by_script = subprocess.run(
            [str(script), "build", "ring.kp", "-o", "out2"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert by_script.returncode == 0, by_script.stderr
        assert _served(env, tmp_path) == 2
    finally:
        stopped = subprocess.run(
            [str(script), "serve", "--stop"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    assert stopped.stdout.startswith("stopped"), stopped.stdout


@pytest.mark.slow
def test_the_installed_console_script_of_a_fresh_venv_serves_its_builds(tmp_path: Path) -> None:
    """`pip install` kernlink into a new virtual environment (its dependencies: this interpreter's,
    through a `.pth` file, the CUDA wheels' folder linked in), then `kernlink serve` and `kernlink
    build` from its console script."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (Path(site) / "kernlink_dependencies.pth").write_text("\n".join(ours) + "\n")
    for folder in ours:  # the CUDA libraries are looked for beside the interpreter's own packages
        if (Path(folder) / "nvidia").is_dir() and not (Path(site) / "nvidia").exists():
            (Path(site) / "nvidia").symlink_to(Path(folder) / "nvidia")
    source = tmp_path / "source"  # pip builds in the source tree: a copy, so the checkout gets no build/
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in server.PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--quiet", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if installed.returncode != 0:
        pytest.skip(f"pip could not install kernlink here (no package index?): {installed.stderr[-400:]}")
    script = venv / "bin" / "kernlink"
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in _env(runtime, tmp_path / "cache").items() if k != "PYTHONPATH"}
    located = subprocess.run(
        [str(python), "-c", "import kernlink; print(kernlink.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert located.stdout.startswith(str(venv)), "the fresh venv imports its own installed copy"

    def run(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    started = run("serve", "--idle", "120")
    assert started.returncode == 0 and "is running" in started.stdout, (started.stdout, started.stderr)
    try:
        folder = _ring(tmp_path / "ring")
        built = run("build", "ring.kp", "-o", "out", cwd=folder)
        assert built.returncode == 0, built.stderr
        assert re.search(r"1 builds served", run("serve", "--status").stdout)
    finally:
        stopped = run("serve", "--stop")
    assert stopped.stdout.startswith("stopped")


# ---- one stalled request blocks nothing: timeouts, cancellation, a bounded frame, --stop


@contextlib.contextmanager
def _server(tmp_path: Path, *args: str) -> Iterator[dict[str, str]]:
    """A foreground server with ``args`` in a child process; stopped (and awaited) afterwards."""
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernlink", "serve", "--foreground", "--idle", "120", *args],
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


def _raw(env: dict[str, str]) -> socket.socket:
    """A connection to the server of `env`, as any client of this user could open it."""
    folder = Path(env["KERNLINK_RUNTIME_DIR"])
    (path,) = [p for p in folder.iterdir() if p.is_socket()]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    return conn


def _stalled(folder: Path) -> int:
    """The ring's output folder locked by the test, as by another link into it: a build blocks there
    (linker/outdir.py) until the test lets go by closing the descriptor returned."""
    (folder / "out").mkdir()
    held = os.open(folder / "out", os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    return held


def _background(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kernlink", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _until(condition: Callable[[], bool], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def _busy(env: dict[str, str]) -> bool:
    with _raw(env) as conn:
        server._send(conn, {"op": "status"})
        answer = server._receive(conn)
    return bool(answer and answer.get("building"))


def test_a_partial_frame_blocks_no_build_and_not_stop(tmp_path: Path) -> None:
    with _server(tmp_path) as env:
        stalled = _raw(env)
        stalled.sendall(b"\x00\x00")  # half a length prefix, then nothing
        folder = _ring(tmp_path / "ring")
        start = time.monotonic()
        done = _kernlink(["build", "ring.kp", "-o", "out"], folder, env)
        assert done.returncode == 0 and _served(env, tmp_path) == 1, done.stderr
        assert time.monotonic() - start < 120
        another = _raw(env)
        another.sendall(b"\x00\x00\x00\x10{")  # a frame that promises 16 bytes and sends 1
        begun = time.monotonic()
        assert _kernlink(["serve", "--stop"], tmp_path, env).stdout.startswith("stopped")
        assert time.monotonic() - begun < server.FRAME_SECONDS + 5
        stalled.close()
        another.close()


def test_a_deeply_nested_frame_is_dropped_and_the_server_goes_on(tmp_path: Path) -> None:
    body = b"[" * 200_000 + b"]" * 200_000  # 400 KB: the decoder would recurse 200 000 deep
    assert server.nesting(body) > server.DEPTH_LIMIT
    assert server.nesting(b'{"op": "build", "argv": ["[[[[[[[[[["], "env": {"A": "{{{{"}}') == 2
    with _server(tmp_path) as env:
        with _raw(env) as conn:
            conn.sendall(struct.pack(">I", len(body)) + body)
            conn.settimeout(60)
            assert conn.recv(1) == b"", "dropped unanswered"
        assert _kernlink(["serve", "--status"], tmp_path, env).stdout.startswith("build server pid")
        folder = _ring(tmp_path / "ring")
        assert _kernlink(["build", "ring.kp", "-o", "out"], folder, env).returncode == 0


def test_ctrl_c_on_a_served_build_cancels_it_and_the_next_build_runs(tmp_path: Path) -> None:
    with _server(tmp_path) as env:
        stuck = _ring(tmp_path / "stuck")
        held = _stalled(stuck)
        client = _background(["build", "ring.kp", "-o", "out"], stuck, env)
        _until(lambda: _busy(env))  # the served build is blocked on the output folder's lock
        client.send_signal(signal.SIGINT)
        assert client.wait(60) == 130
        assert not _busy(env), "the client returns once the server has stopped its build"
        os.close(held)
        time.sleep(1)
        assert list((stuck / "out").iterdir()) == [], "nothing is written after the client gave up"
        other = _ring(tmp_path / "other")
        done = _kernlink(["build", "ring.kp", "-o", "out"], other, env)
        assert done.returncode == 0 and _served(env, tmp_path) == 2, done.stderr


def test_a_build_past_the_timeout_is_stopped_and_the_waiting_build_then_runs(tmp_path: Path) -> None:
    with _server(tmp_path, "--timeout", "15") as env:
        other = _ring(tmp_path / "other")
        assert _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], other, env).returncode == 0
        stuck = _ring(tmp_path / "stuck")
        held = _stalled(stuck)
        first = _background(["build", "ring.kp", "-o", "out"], stuck, env)
        _until(lambda: _busy(env))
        second = _kernlink(["build", "ring.kp", "-o", "out"], other, env)  # waits behind the stalled one
        assert second.returncode == 0, second.stderr
        out, err = first.communicate(timeout=60)
        os.close(held)
        assert first.returncode == 2 and "stopped this build after 15 s" in err, (out, err)
        assert _served(env, tmp_path) == 2


def test_stop_while_a_build_is_stalled_stops_the_server_and_the_client_builds_itself(tmp_path: Path) -> None:
    with _server(tmp_path) as env:
        stuck = _ring(tmp_path / "stuck")
        held = _stalled(stuck)
        client = _background(["build", "ring.kp", "-o", "out"], stuck, env)
        _until(lambda: _busy(env))
        begun = time.monotonic()
        assert _kernlink(["serve", "--stop"], tmp_path, env).stdout.startswith("stopped")
        assert time.monotonic() - begun < 30
        assert _kernlink(["serve", "--status"], tmp_path, env).stdout.startswith("no build server")
        # the client, left without an answer, builds in its own process: once the folder is free, to the end
        os.close(held)
        out, err = client.communicate(timeout=300)
        assert client.returncode == 0 and "built `ring.kp`" in out, (out, err)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root: a listener of another user in a folder of this one")
def test_the_client_sends_nothing_to_a_server_of_another_user(tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = _env(runtime, tmp_path / "cache")
    path = runtime / f"s-{_key(_kernlink(['serve', '--status'], tmp_path, env))}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    report, told = os.pipe()
    child = os.fork()
    if child == 0:  # the peer's credentials are the listening process's: another user's
        try:
            os.close(report)
            os.setuid(65534)
            listener.listen(1)
            listener.settimeout(120)
            conn, _ = listener.accept()
            os.write(told, b"accepted:")
            conn.settimeout(5)
            os.write(told, conn.recv(1 << 20))
        finally:
            os._exit(0)
    os.close(told)
    listener.close()
    try:
        folder = _ring(tmp_path / "ring")
        done = _kernlink(["build", "ring.kp", "-o", "out"], folder, env)
        assert done.returncode == 0, done.stderr  # built in the client's own process
    finally:
        os.waitpid(child, 0)
    with os.fdopen(report, "rb") as pipe:
        said = pipe.read()
    assert said == b"accepted:", "the client connected, and sent nothing: its environment least of all"


def test_a_component_with_a_flags_file_builds_through_the_server_as_in_process(
    tmp_path: Path, running: dict[str, str]
) -> None:
    """`-D` and `-I` from `reduce.flags` reach the served build (the key covers them: an edit repacks)."""
    folders = (_ring(tmp_path / "a"), _ring(tmp_path / "b"))
    for folder in folders:
        source = folder / "reduce.cu"
        source.write_text(
            '#include "scale.h"\n' + source.read_text().replace("sum += data[k];", "sum += KL_SCALE * data[k];")
        )
        (folder / "inc").mkdir()
        (folder / "inc" / "scale.h").write_text("#define KL_SCALE (KL_FACTOR * 1.0f)\n")
        (folder / "reduce.flags").write_text("-I inc -D KL_FACTOR=2.0f\n")
    served, alone = folders
    through = _kernlink(["build", "ring.kp", "-o", "out"], served, running)
    here = _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], alone, running)
    assert through.returncode == here.returncode == 0, through.stdout + through.stderr
    assert _served(running, tmp_path) == 1
    assert (served / "out" / "kernel.cubin").read_bytes() == (alone / "out" / "kernel.cubin").read_bytes()
    time.sleep(0.05)
    for folder in folders:
        (folder / "reduce.flags").write_text("-I inc -D KL_FACTOR=3.0f\n")
    again = _kernlink(["build", "ring.kp", "-o", "out"], served, running)
    assert "packed build/reduce.kpkg" in again.stdout and "reused build/loader.kpkg" in again.stdout, again.stdout
    _kernlink(["build", "ring.kp", "-o", "out", "--no-server"], alone, running)
    assert (served / "out" / "kernel.cubin").read_bytes() == (alone / "out" / "kernel.cubin").read_bytes()
