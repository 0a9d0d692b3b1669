"""`kernlink serve`: a build server, so that a one-shot `kernlink build` pays no start-up.

A `kernlink build` process spends most of its CPU importing the checker, placement and
linker and loading NVRTC and nvJitLink, before it builds anything. The server pays that
once: it stays resident, and each `kernlink build` finding it (same interpreter, same
``sys.path``, the same kernlink code and installed packages: :func:`server_key`) sends
its arguments, working directory and environment over a Unix socket, and prints what the
server's build printed with its exit code. The server builds as ``kernlink build --watch``
does, one request at a time: the check's verdicts (:class:`checker.memo.Memo`), the parsed
grammar, the binding verdicts and the native worker carry over from build to build; every
cache is keyed by content, so the outputs are the bytes a fresh process writes (tests).

The socket is ``s-<key>`` in a folder only this user can enter (``$KERNLINK_RUNTIME_DIR``,
else ``$XDG_RUNTIME_DIR/kernlink``, else ``kernlink-<uid>`` in the temp folder), and a
connection from another user is refused (``SO_PEERCRED``). No server, a server of other
code, or one that ends mid-request: the build runs in the client's own process, as before.
A server exits after ``--idle`` seconds without a request, or on ``kernlink serve --stop``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Our import packages (pyproject's ``[tool.setuptools] packages`` roots): their files key a server.
PACKAGES = (
    "analysis",
    "checker",
    "contract_lang",
    "diagnostics",
    "fuzzing",
    "hardware",
    "kernlink",
    "linker",
    "package",
    "placement",
    "solver",
    "transfer_model",
)
IDLE_SECONDS = 900.0
_HEADER = struct.Struct(">I")
_LIMIT = 256 << 20  # a reply holds a build's printed output: far below this


class ServerError(Exception):
    """No server could be started or reached (a message for the user)."""


def runtime_dir(*, create: bool = True) -> Path:
    """The folder of this user's sockets (module docstring), created private if absent (``create``)."""
    given = os.environ.get("KERNLINK_RUNTIME_DIR")
    if given:
        folder = Path(given)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        folder = Path(os.environ["XDG_RUNTIME_DIR"]) / "kernlink"
    else:
        import tempfile

        folder = Path(tempfile.gettempdir()) / f"kernlink-{os.getuid()}"
    try:
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError as err:
        raise ServerError(f"cannot use `{folder}` for the build server's socket: {err.strerror or err}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ServerError(f"`{folder}` is not a private folder of this user: no build server there")
    return folder


def server_key() -> str:
    """What a server must share with a client to build for it: the interpreter, ``sys.path``, and
    the size and modification time of every file of kernlink's packages and of each ``sys.path``
    folder (an install or upgrade of a dependency changes its folder's listing)."""
    h = hashlib.sha256()
    h.update(f"{sys.executable}\0{sys.version}\0{os.getuid()}\0".encode())
    for entry in _import_path():
        h.update(entry.encode() + b"\0")
        if os.path.basename(entry) in ("site-packages", "dist-packages"):
            with contextlib.suppress(OSError):
                h.update(str(os.stat(entry).st_mtime_ns).encode() + b"\0")
    for root in _package_roots():
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:24]


def _import_path() -> list[str]:
    """``sys.path`` without the working directory ``python -m`` puts first (a client runs anywhere)."""
    here = os.getcwd()
    return [e for i, e in enumerate(sys.path) if not (i == 0 and e in ("", here))]


def _package_roots() -> list[str]:
    """Where this interpreter imports each of :data:`PACKAGES` from (found, not imported)."""
    import importlib.util

    roots = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(sorted(spec.submodule_search_locations))
    return roots


def socket_path(key: str | None = None, *, create: bool = True) -> Path:
    return runtime_dir(create=create) / f"s-{key or server_key()}"


# ---- the wire: one length-prefixed JSON message each way


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    conn.sendall(_HEADER.pack(len(body)) + body)


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    head = _exactly(conn, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _LIMIT:
        return None
    body = _exactly(conn, size)
    if body is None:
        return None
    value = json.loads(body)
    return value if isinstance(value, dict) else None


def _exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _ask(message: dict[str, Any], key: str | None = None, timeout: float | None = None) -> dict[str, Any] | None:
    """The server's answer to ``message``; None when no server of this code is listening or it
    ended without an answer."""
    try:
        path = socket_path(key, create=False)
    except (OSError, ServerError):
        return None
    if len(os.fsencode(path)) > 107:  # the limit of a Unix socket's address
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(os.fspath(path))
            _send(conn, message)
            return _receive(conn)
        except (OSError, ValueError):
            return None


# ---- the client


def build(argv: list[str]) -> int | None:
    """Run ``kernlink build`` ``argv`` in a running server and print what it printed: its exit code,
    or None when no server built it (the caller builds in its own process)."""
    umask = os.umask(0o022)
    os.umask(umask)
    request = {"op": "build", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
    answer = _ask(request)
    if answer is None or not isinstance(answer.get("rc"), int):
        return None
    sys.stdout.write(str(answer.get("stdout", "")))
    sys.stdout.flush()
    sys.stderr.write(str(answer.get("stderr", "")))
    return int(answer["rc"])


def status() -> dict[str, Any] | None:
    return _ask({"op": "status"}, timeout=10)


def stop(wait: float = 30.0) -> bool:
    """Stop the server of this code, if one runs, and wait (up to ``wait`` seconds) until it has
    stopped serving (its socket is gone)."""
    try:
        path = socket_path(create=False)
    except (OSError, ServerError):
        return False
    if _ask({"op": "stop"}, timeout=30) is None:
        return False
    deadline = time.monotonic() + wait
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


def start(idle: float = IDLE_SECONDS, wait: float = 60.0) -> dict[str, Any]:
    """Start a server in the background (a new session, detached from this terminal) unless one of
    this code is listening; its status once it listens."""
    import subprocess

    found = status()
    if found is not None:
        return found
    path = socket_path()
    log = path.with_suffix(".log")
    try:
        out = open(log, "ab")  # noqa: SIM115 (the server child writes to it)
    except OSError as err:
        raise ServerError(f"cannot write the build server's log `{log}`: {err.strerror or err}") from None
    with out:
        subprocess.Popen(
            [sys.executable, "-m", "kernlink", "serve", "--foreground", "--idle", str(idle)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = status()
        if found is not None:
            return found
        time.sleep(0.05)
    raise ServerError(f"the build server did not start listening within {wait:.0f} s (its log: `{log}`)")


# ---- the server


def serve(idle: float = IDLE_SECONDS, *, ready: Callable[[Path], None] | None = None) -> int:
    """Listen until ``idle`` seconds pass without a request or a ``stop`` arrives (then 0); a
    :class:`ServerError` when a server of this code already listens or the socket cannot be made."""
    key = server_key()
    path = socket_path(key)
    if len(os.fsencode(path)) > 107:
        raise ServerError(f"the socket path `{path}` is too long for a Unix socket; set KERNLINK_RUNTIME_DIR")
    import fcntl

    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:  # held while this server lives: of two servers started at once, one serves
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        raise ServerError(f"a build server of this kernlink is already listening on `{path}`") from None
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a socket left by a server that did not end cleanly
    _sweep(path.parent, keep=path)
    _warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            listener.bind(os.fspath(path))
            listener.listen(16)
        except OSError as err:
            raise ServerError(f"cannot listen on `{path}`: {err.strerror or err}") from None
        listener.settimeout(idle)
        if ready is not None:
            ready(path)
        state = _State(key, time.time())
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return 0
            with conn:
                if not _from_this_user(conn):
                    continue
                conn.settimeout(None)
                if not _answer(conn, state):
                    return 0
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if path.exists() and path.is_socket():
                path.unlink()
        os.close(lock)


def _sweep(folder: Path, keep: Path) -> None:
    """Remove what servers of other code left here (a server of each kernlink version a user ran):
    each ``s-*.lock`` no live server holds, with its socket and log."""
    import fcntl

    for lock_path in sorted(folder.glob("s-*.lock")):
        if lock_path.with_suffix("") == keep:
            continue
        try:
            fd = os.open(lock_path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            for leftover in (lock_path.with_suffix(""), lock_path.with_suffix(".log"), lock_path):
                with contextlib.suppress(OSError):
                    leftover.unlink()  # while holding the lock: no server of that code starts meanwhile
        except OSError:
            pass  # a live server holds it
        finally:
            os.close(fd)


class _State:
    def __init__(self, key: str, started: float) -> None:
        from checker.memo import Memo

        self.key = key
        self.started = started
        self.builds = 0
        self.memo = Memo()


def _answer(conn: socket.socket, state: _State) -> bool:
    """Answer one request; False when it asks the server to stop."""
    try:
        request = _receive(conn)
    except (OSError, ValueError):
        return True
    if request is None:
        return True
    op = request.get("op")
    with contextlib.suppress(OSError):
        if op == "stop":
            _send(conn, {"stopped": True, "pid": os.getpid()})
            return False
        if op == "status":
            _send(conn, {"pid": os.getpid(), "key": state.key, "builds": state.builds, "since": state.started})
        elif op == "build":
            state.builds += 1
            _send(conn, _build(request, state))
    return True


def _build(request: dict[str, Any], state: _State) -> dict[str, Any]:
    """One `kernlink build` as the client would run it: its cwd and environment, output captured."""
    from kernlink import cli

    argv = [str(a) for a in request.get("argv", [])]
    env = request.get("env")
    out, err = io.StringIO(), io.StringIO()
    umask = request.get("umask")
    where = _inside(
        str(request.get("cwd", "/")), env if isinstance(env, dict) else {}, umask if isinstance(umask, int) else 0o022
    )
    with where, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(["build", *argv], resident=state.memo)
        except SystemExit as exc:  # argparse's usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


@contextlib.contextmanager
def _inside(cwd: str, env: dict[str, str], umask: int) -> Iterator[None]:
    """The request's working directory, environment and file mode mask, for the request only."""
    before_cwd, before_env, before_umask = os.getcwd(), dict(os.environ), os.umask(umask)
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        yield
    finally:
        os.environ.clear()
        os.environ.update(before_env)
        os.chdir(before_cwd)
        os.umask(before_umask)


def _from_this_user(conn: socket.socket) -> bool:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return False
    uid: int = struct.unpack("3i", creds)[1]
    return uid == os.getuid()


def _warm() -> None:
    """Import what a build imports, so that the first request pays no more than the later ones."""
    import kernlink.api
    import kernlink.build  # noqa: F401
    import linker.link
    import linker.pack  # noqa: F401
