"""`kernlink serve`: a build server, so that a one-shot `kernlink build` pays no start-up.

A `kernlink build` process spends most of its CPU importing the checker, placement and
linker and loading NVRTC and nvJitLink, before it builds anything. The server pays that
once: it stays resident, and each `kernlink build` finding it (a server of the same
install: :func:`server_key`) sends its arguments, working directory and environment over a
Unix socket, and prints what the server's build printed with its exit code. The server
builds as ``kernlink build --watch`` does: the check's verdicts (:class:`checker.memo.Memo`),
the parsed grammar, the binding verdicts and the native worker carry over from build to
build; every cache is keyed by content, so the outputs are the bytes a fresh process writes.

The key is what decides a build, not how kernlink was launched: the interpreter (its real
path, prefix and version), the user, the import path without the entry the launcher puts
first (a console script's ``bin`` folder, the working directory of ``python -m``), the
distributions installed along it, and the size and modification time of every file of
kernlink's packages. The installed ``kernlink`` command and ``python -m kernlink`` of one
install share a server.

Each connection is answered in its own thread. A request must arrive whole within
:data:`FRAME_SECONDS`, be at most :data:`REQUEST_LIMIT` bytes and nest at most
:data:`DEPTH_LIMIT` deep; otherwise the connection is dropped. A status or stop request is
answered at once. Builds run one at a time in the server's main thread (a build changes the
working directory, the environment and the standard streams, which are the process's), in
the order they arrive. A build is cancelled when its client goes away or asks (Ctrl-C: the
client sends ``cancel`` and waits until the server says the build has stopped), when it runs
longer than ``--timeout``, or on ``kernlink serve --stop``. Cancelling interrupts it as Ctrl-C
interrupts a build in its own process: a signal raises ``KeyboardInterrupt`` in the main
thread, so even a write blocked on a FIFO stops, and what the build leaves is what an
interrupted build leaves.

The socket is ``s-<key>`` in a folder only this user can enter (``$KERNLINK_RUNTIME_DIR``,
else ``$XDG_RUNTIME_DIR/kernlink``, else ``kernlink-<uid>`` in the temp folder). The server
refuses a connection from another user and the client a server of another user
(``SO_PEERCRED``, before it sends its environment). No server, a server of other code, or one
that ends mid-request: the build runs in the client's own process, as before. A server exits
after ``--idle`` seconds without a request, or on ``kernlink serve --stop``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import queue
import re
import select
import signal
import socket
import struct
import sys
import threading
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
    "packing",
    "placement",
    "runtime",
    "solver",
    "toolchain",
    "transfer_model",
)
IDLE_SECONDS = 900.0
#: The longest a served build may run before the server stops it (`kernlink serve --timeout`).
BUILD_SECONDS = 600.0
#: A request must arrive whole within this; a reply must be taken within REPLY_SECONDS.
FRAME_SECONDS = 10.0
REPLY_SECONDS = 30.0
#: A request (arguments, working directory, environment) is far below this, and nests 2 deep.
REQUEST_LIMIT = 16 << 20
DEPTH_LIMIT = 8
#: Connections served at once; more are closed unanswered (their clients build in their own process).
CONNECTIONS = 64
_HEADER = struct.Struct(">I")
_LIMIT = 256 << 20  # a reply holds a build's printed output: far below this
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


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
    from diagnostics.private import NotPrivate, private_folder

    try:
        return private_folder(folder, create=create)
    except NotPrivate as err:
        raise ServerError(f"{err}: no build server there") from None
    except OSError as err:
        raise ServerError(f"cannot use `{folder}` for the build server's socket: {err.strerror or err}") from None


def server_key() -> str:
    """What a server must share with a client to build for it (module docstring): the interpreter,
    the user, the import path below the launcher's entry with the distributions installed along
    it (an install or upgrade changes a ``.dist-info`` name), and every file of kernlink's packages."""
    h = hashlib.sha256()
    interpreter = (os.path.realpath(sys.executable), sys.prefix, sys.exec_prefix, sys.version, str(os.getuid()))
    h.update("\0".join(interpreter).encode() + b"\0")
    for entry in import_path():
        h.update(entry.encode() + b"\0")
        for installed in _installed(entry):
            h.update(installed.encode() + b"\0")
    for root in _package_roots():
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:24]


def import_path() -> list[str]:
    """``sys.path`` without the entry the interpreter put first for the launcher (a script's folder,
    ``python -m``'s working directory, ``-c``'s ``''``): it says how kernlink was started, not what it
    imports (none is put there under ``-P``, ``-I`` or ``PYTHONSAFEPATH``)."""
    return list(sys.path) if sys.flags.safe_path else sys.path[1:]


def _installed(entry: str) -> list[str]:
    """What is installed in a folder of the import path: each distribution's metadata folder (its
    name and version) and each ``.pth`` file with its size and modification time."""
    try:
        names = sorted(os.listdir(entry or "."))
    except OSError:
        return []
    found = [n for n in names if n.endswith((".dist-info", ".egg-info"))]
    for name in (n for n in names if n.endswith(".pth")):
        with contextlib.suppress(OSError):
            st = os.stat(os.path.join(entry or ".", name))
            found.append(f"{name}\0{st.st_size}\0{st.st_mtime_ns}")
    return found


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


# ---- the wire: length-prefixed JSON messages


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    conn.sendall(_HEADER.pack(len(body)) + body)


def _receive(conn: socket.socket, limit: int = _LIMIT) -> dict[str, Any] | None:
    """One message; None when the peer ends, the frame is over ``limit`` bytes or nests deeper than
    :data:`DEPTH_LIMIT`, or it is not a JSON object. A timeout or socket error is raised."""
    head = _exactly(conn, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > limit:
        return None
    body = _exactly(conn, size)
    if body is None or nesting(body) > DEPTH_LIMIT:
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def nesting(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped), counted up to one past
    :data:`DEPTH_LIMIT`: the decoder recurses once per level."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b'""', body)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if deepest > DEPTH_LIMIT:
            break
    return deepest


def _exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    uid: int = struct.unpack("3i", creds)[1]
    return uid


# ---- the client


def _connect(key: str | None, timeout: float | None) -> socket.socket | None:
    """A connection to the server of this code, once it is shown to run as this user; else None."""
    try:
        path = socket_path(key, create=False)
    except (OSError, ServerError):
        return None
    if len(os.fsencode(path)) > 107:  # the limit of a Unix socket's address
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(os.fspath(path))
    except OSError:
        conn.close()
        return None
    if _peer_uid(conn) != os.getuid():  # a socket of another user: it gets nothing from us
        conn.close()
        return None
    return conn


def _ask(message: dict[str, Any], key: str | None = None, timeout: float | None = None) -> dict[str, Any] | None:
    """The server's answer to ``message``; None when no server of this code is listening or it
    ended without an answer."""
    conn = _connect(key, timeout)
    if conn is None:
        return None
    with conn:
        try:
            _send(conn, message)
            return _receive(conn)
        except (OSError, ValueError):
            return None


def build(argv: list[str]) -> int | None:
    """Run ``kernlink build`` ``argv`` in a running server and print what it printed: its exit code,
    or None when no server built it (the caller builds in its own process). Ctrl-C cancels the
    served build before it is raised here."""
    conn = _connect(None, None)
    if conn is None:
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    request = {"op": "build", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
    with conn:
        try:
            _send(conn, request)
            answer = _receive(conn)
        except (OSError, ValueError):
            return None
        except KeyboardInterrupt:
            _cancel(conn)
            raise
    if answer is None or not isinstance(answer.get("rc"), int):
        return None
    sys.stdout.write(str(answer.get("stdout", "")))
    sys.stdout.flush()
    sys.stderr.write(str(answer.get("stderr", "")))
    return int(answer["rc"])


def _cancel(conn: socket.socket, wait: float = 30.0) -> None:
    """Ask the server to stop this connection's build and wait until it has (its answer), so that the
    build writes nothing once this client has given up; a second Ctrl-C stops waiting."""
    with contextlib.suppress(OSError, ValueError, KeyboardInterrupt):
        conn.settimeout(wait)
        _send(conn, {"op": "cancel"})
        _receive(conn)


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


def start(idle: float = IDLE_SECONDS, wait: float = 60.0, timeout: float = BUILD_SECONDS) -> dict[str, Any]:
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
            [
                *(sys.executable, "-P", "-m", "kernlink", "serve", "--foreground"),  # -P: nothing from its cwd
                *("--idle", str(idle), "--timeout", str(timeout)),
            ],
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


class _Job:
    """One build request, from the connection thread that read it to the main thread that runs it."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.reply: dict[str, Any] | None = None
        self.cancelled = False
        self.done = threading.Event()


class _State:
    def __init__(self, key: str, timeout: float) -> None:
        from checker.memo import Memo

        self.key = key
        self.started = time.time()
        self.timeout = timeout
        self.builds = 0
        self.memo = Memo()
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.lock = threading.Lock()
        self.current: _Job | None = None  # the job the main thread runs
        self.building = False  # inside the build itself: a cancel or the timeout interrupts it then
        self.interrupted: str | None = None  # why the running build was interrupted
        self.stopping = False
        self.connections = 0
        self.last = time.monotonic()
        self.main = threading.get_ident()

    def touch(self) -> None:
        self.last = time.monotonic()

    def idle_for(self) -> float:
        with self.lock:
            busy = self.current is not None or self.connections > 0 or not self.jobs.empty()
        return 0.0 if busy else time.monotonic() - self.last

    def cancel(self, job: _Job) -> None:
        """Cancel ``job``: dropped if it waits, interrupted if it runs; returns once it is done."""
        while True:
            with self.lock:
                job.cancelled = True
                if self.current is job:
                    signal.pthread_kill(self.main, signal.SIGUSR1)
            if job.done.wait(2.0):  # a build that swallowed the interrupt is interrupted again
                return

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            running = self.current
        if running is not None:
            threading.Thread(target=self.cancel, args=(running,), daemon=True).start()
        self.jobs.put(None)  # wake the main thread


def serve(
    idle: float = IDLE_SECONDS, *, timeout: float = BUILD_SECONDS, ready: Callable[[Path], None] | None = None
) -> int:
    """Listen until ``idle`` seconds pass without a request or a ``stop`` arrives (then 0); a
    :class:`ServerError` when a server of this code already listens or the socket cannot be made.
    Runs in the main thread: builds are interrupted by signals delivered to it."""
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
    state = _State(key, timeout)
    handlers = {}
    try:
        try:
            listener.bind(os.fspath(path))
            listener.listen(16)
        except OSError as err:
            raise ServerError(f"cannot listen on `{path}`: {err.strerror or err}") from None
        listener.settimeout(0.25)
        for number in _SIGNALS:
            handlers[number] = signal.signal(number, _interrupter(state))
        _forget_in_children()
        threading.Thread(target=_accept, args=(listener, state), daemon=True, name="kernlink-accept").start()
        if ready is not None:
            ready(path)
        return _run(state, idle)
    finally:
        state.stopping = True
        for number, handler in handlers.items():
            signal.signal(number, handler)
        listener.close()
        with contextlib.suppress(OSError):
            if path.exists() and path.is_socket():
                path.unlink()
        os.close(lock)


_SIGNALS = (signal.SIGUSR1, signal.SIGALRM, signal.SIGINT, signal.SIGTERM)
_FORGETTING: list[int] = []  # the pid that registered _forget_in_children


def _forget_in_children() -> None:
    """A child a build forks (the native worker) gets the default handlers back: the server's would
    swallow the SIGTERM that ends it, and it may never run Python code to see one."""
    if _FORGETTING:
        return
    _FORGETTING.append(os.getpid())

    def reset() -> None:
        if os.getppid() == _FORGETTING[0]:
            for number in _SIGNALS:
                signal.signal(number, signal.SIG_DFL)

    os.register_at_fork(after_in_child=reset)


def _interrupter(state: _State) -> Callable[[int, Any], None]:
    """The server's signal handler: SIGUSR1 cancels the running build, SIGALRM times it out, SIGINT
    and SIGTERM stop the server (after interrupting the build). A build is interrupted as Ctrl-C
    interrupts a build in its own process; outside a build nothing is raised. It takes no lock:
    it runs in the main thread, which may hold one."""

    def handler(number: int, frame: Any) -> None:
        if number in (signal.SIGINT, signal.SIGTERM):
            state.stopping = True  # no lock here: the main thread may hold it; it polls this flag
        if not state.building:
            return
        state.interrupted = "timeout" if number == signal.SIGALRM else "cancel"
        raise KeyboardInterrupt

    return handler


def _run(state: _State, idle: float) -> int:
    """The main thread: run the queued builds one at a time until stopped or idle."""
    while True:
        try:
            job = state.jobs.get(timeout=0.25)
        except queue.Empty:
            if state.stopping or state.idle_for() >= idle:
                return 0
            continue
        if state.stopping:
            _finish(state, job)
            return 0
        if job is not None:
            try:
                _run_job(state, job)
            except KeyboardInterrupt:  # an interrupt that landed just before or after the build itself
                _finish(state, job)


def _finish(state: _State, job: _Job | None) -> None:
    with state.lock:
        state.current = None
        state.building = False
    state.touch()
    if job is not None:
        job.done.set()


def _run_job(state: _State, job: _Job) -> None:
    with state.lock:
        if job.cancelled:
            job.done.set()
            return
        state.current = job
        state.builds += 1
    state.interrupted = None
    try:
        job.reply = _build(job.request, state)
    finally:
        _finish(state, job)


def _accept(listener: socket.socket, state: _State) -> None:
    while not state.stopping:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        with state.lock:
            full = state.connections >= CONNECTIONS
            if not full:
                state.connections += 1
        if full or _peer_uid(conn) != os.getuid():
            if not full:
                _closed(state)
            conn.close()
            continue
        state.touch()
        threading.Thread(target=_connection, args=(conn, state), daemon=True, name="kernlink-connection").start()


def _closed(state: _State) -> None:
    with state.lock:
        state.connections -= 1
    state.touch()


def _connection(conn: socket.socket, state: _State) -> None:
    """Answer one connection: a status or stop at once, a build once the main thread has run it."""
    try:
        with conn:
            conn.settimeout(FRAME_SECONDS)
            try:
                request = _receive(conn, REQUEST_LIMIT)
            except (OSError, ValueError):
                return
            if request is None:
                return
            op = request.get("op")
            with contextlib.suppress(OSError):
                if op == "status":
                    _send(conn, _status(state))
                elif op == "stop":
                    _send(conn, {"stopped": True, "pid": os.getpid()})  # first: the process ends once stopped
                    state.stop()
                elif op == "build":
                    _serve_build(conn, state, request)
    finally:
        _closed(state)


def _status(state: _State) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "key": state.key,
        "builds": state.builds,
        "since": state.started,
        "waiting": state.jobs.qsize(),
        "building": state.current is not None,
    }


def _serve_build(conn: socket.socket, state: _State, request: dict[str, Any]) -> None:
    """Queue the build, and watch the connection while it waits and runs: a ``cancel`` or the client
    going away cancels it (a ``cancel`` is answered once the build has stopped)."""
    problem = _malformed(request)
    if problem is not None:
        _send(conn, {"error": problem})
        return
    job = _Job(request)
    with state.lock:
        if state.stopping:
            return  # unanswered: the client builds in its own process
        state.jobs.put(job)
    while not job.done.wait(0.05):
        if not select.select([conn], [], [], 0)[0]:
            continue
        try:
            message = _receive(conn, REQUEST_LIMIT)  # within FRAME_SECONDS
        except (OSError, ValueError):
            message = None
        state.cancel(job)
        if message is not None and message.get("op") == "cancel":
            _send(conn, {"cancelled": True})
        return
    if job.reply is not None and not job.cancelled:
        conn.settimeout(REPLY_SECONDS)
        _send(conn, job.reply)


def _malformed(request: dict[str, Any]) -> str | None:
    """What is wrong with a build request's fields (a client of the same code sends none of it)."""
    argv, cwd, env, umask = (request.get(k) for k in ("argv", "cwd", "env", "umask"))
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "`argv` is not a list of strings"
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return "`cwd` is not an absolute path"
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "`env` is not a table of strings"
    if not isinstance(umask, int) or isinstance(umask, bool) or not 0 <= umask <= 0o777:
        return "`umask` is not a file mode mask"
    return None


def _build(request: dict[str, Any], state: _State) -> dict[str, Any]:
    """One `kernlink build` as the client would run it: its cwd, environment and file mode mask,
    output captured; interrupted (exit 130) when cancelled, stopped with exit 2 past the timeout."""
    from kernlink import cli
    from kernlink.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE

    out, err = io.StringIO(), io.StringIO()
    try:
        where = _inside(request["cwd"], request["env"], request["umask"])
        with where, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            signal.setitimer(signal.ITIMER_REAL, state.timeout)
            state.building = True
            try:
                rc = cli.main(["build", *request["argv"]], resident=state.memo)
            except SystemExit as exc:  # argparse's usage errors
                rc = exc.code if isinstance(exc.code, int) else EXIT_USAGE
            finally:
                state.building = False
                signal.setitimer(signal.ITIMER_REAL, 0)
    except OSError as exc:  # the client's working directory is gone
        return {"rc": EXIT_USAGE, "stdout": "", "stderr": f"error: the build server cannot build there: {exc}\n"}
    if rc == EXIT_INTERRUPTED and state.interrupted == "timeout":
        said = f"error: the build server stopped this build after {state.timeout:g} s (`kernlink serve --timeout`)\n"
        return {"rc": EXIT_USAGE, "stdout": out.getvalue(), "stderr": err.getvalue() + said}
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


@contextlib.contextmanager
def _inside(cwd: str, env: dict[str, str], umask: int) -> Iterator[None]:
    """The request's working directory, environment and file mode mask, for the request only."""
    before_cwd, before_env = os.getcwd(), dict(os.environ)
    os.chdir(cwd)
    before_umask = os.umask(umask)
    try:
        os.environ.clear()
        os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(before_env)
        os.chdir(before_cwd)
        os.umask(before_umask)


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


def _warm() -> None:
    """Import what a build imports, so that the first request pays no more than the later ones."""
    import kernlink.api
    import kernlink.builder.incremental  # noqa: F401
    import packing.pack  # noqa: F401
