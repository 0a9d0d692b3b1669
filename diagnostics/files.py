"""Reading sources and writing outputs, with failures reported as diagnostics.

Every stage reads its inputs through :func:`read_source` and writes its outputs
through :func:`atomic_write_bytes` / :func:`atomic_write_text`, so that a bad
path, a binary file or a full disk ends in a ``DiagnosticError`` rather than a
traceback, and an interrupted write never leaves a half-written file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code

_BOM = "\ufeff"

SOURCE_LIMIT = 1 << 20
"""The most bytes of a contract or pipeline kernlink reads (a file, or an editor's buffer)."""


def read_source(path: str | Path, *, limit: int = SOURCE_LIMIT, display: str | None = None) -> str:
    """Read a UTF-8 text file of at most ``limit`` bytes, with CRLF normalised to LF.

    ``display`` is the file name used in diagnostics and spans (default: the path
    as given). Raises ``DiagnosticError`` with one of ``E-IO``, ``E-TOO-LARGE``,
    ``E-BINARY`` or ``E-ENCODING``.
    """
    name = str(path) if display is None else display
    with open_regular(path, display=name) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise DiagnosticError([_too_large(name, size, limit)])
        data = read_capped(handle, limit + 1, name)
    if len(data) > limit:
        raise DiagnosticError([_too_large(name, len(data), limit)])
    nul = data.find(b"\0")
    if nul >= 0:
        raise DiagnosticError([_binary(name, data, nul)])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DiagnosticError([_bad_encoding(name, data, err.start)]) from err
    return text.removeprefix(_BOM).replace("\r\n", "\n")


def open_regular(path: str | os.PathLike[str], *, display: str | None = None) -> BinaryIO:
    """Open a regular file for reading; anything else (a FIFO, a device, a directory,
    a symlink loop, a missing file) is ``E-IO`` naming the path.

    The file is opened without blocking (a FIFO with no writer would otherwise hang the
    open) and checked with ``fstat`` before a byte is read.
    """
    name = str(path) if display is None else display
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as err:
        raise DiagnosticError([_io_error("read", name, err)]) from err
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DiagnosticError([_not_regular(name, mode)])
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException as err:
        os.close(fd)
        if isinstance(err, OSError):
            raise DiagnosticError([_io_error("read", name, err)]) from err
        raise


def read_capped(handle: BinaryIO, limit: int, name: str) -> bytes:
    """At most ``limit`` bytes from ``handle`` (a file that grows while read stops there)."""
    try:
        return handle.read(limit)
    except OSError as err:
        raise DiagnosticError([_io_error("read", name, err)]) from err


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: the old content or the new, never a mix.

    Writes a temporary file in the same directory (:func:`write_temporary`) and renames it
    over ``path``. On failure the temporary file is removed and ``DiagnosticError``
    ``E-IO`` is raised. A FIFO or a character device (``-o /dev/null``, ``-o /dev/stdout``)
    is written into instead, never replaced; a FIFO that no process reads is ``E-IO``.
    """
    target = Path(path)
    if _is_stream(target):
        _write_stream(target, data)
        return
    temp = write_temporary(target, data)
    try:
        os.replace(temp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):
            raise DiagnosticError([_io_error("write", str(path), err)]) from err
        raise
    _sync_directory(target.parent)


def write_temporary(path: str | Path, data: bytes) -> Path:
    """``data`` in a new file beside ``path`` (``.NAME.<random>.tmp``, fsynced, with an existing
    ``path``'s permissions), for the caller to rename over ``path``; its path.

    On failure nothing is left and ``DiagnosticError`` ``E-IO`` is raised.
    """
    import secrets  # hmac, base64 and random: only a command that writes a file pays for them

    target = Path(path)
    temp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temp, flags, 0o666)
    except OSError as err:
        raise DiagnosticError([_io_error("write", str(path), err)]) from err
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):
            raise DiagnosticError([_io_error("write", str(path), err)]) from err
        raise
    return temp


def _is_stream(target: Path) -> bool:
    """A FIFO or character device (`/dev/null`, `/dev/stdout`): written into, never replaced."""
    try:
        mode = os.stat(target).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _write_stream(target: Path, data: bytes) -> None:
    """Write into a FIFO or device; the open never blocks (a FIFO no process reads is ``E-IO``)."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise DiagnosticError([_no_reader(str(target))]) from err
        raise DiagnosticError([_io_error("write", str(target), err)]) from err
    try:
        with open(fd, "wb", buffering=0) as out:
            os.set_blocking(fd, True)
            out.write(data)
    except OSError as err:
        raise DiagnosticError([_io_error("write", str(target), err)]) from err


def _no_reader(name: str) -> Diagnostic:
    return Diagnostic(
        code=Code.E_IO,
        message=f"cannot write `{name}`: it is a FIFO that no process is reading",
        helps=("start the reader first, or write to a regular file",),
    )


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 with :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _sync_directory(directory: Path) -> None:
    """Make the rename durable where the platform allows opening a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte ``offset``; the bytes before it decode."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    prefix = data[line_start:offset].decode("utf-8", errors="replace")
    if line_start == 0:
        prefix = prefix.removeprefix(_BOM)
    return data.count(b"\n", 0, offset) + 1, len(prefix) + 1


def _io_error(verb: str, name: str, err: OSError | ValueError) -> Diagnostic:
    reason = (err.strerror if isinstance(err, OSError) else None) or str(err)
    return Diagnostic(code=Code.E_IO, message=f"cannot {verb} `{name}`: {reason}")


def io_error(verb: str, name: str, err: OSError | ValueError) -> Diagnostic:
    """``E-IO``: ``cannot <verb> `<name>`: <reason>``."""
    return _io_error(verb, name, err)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(name: str, mode: int) -> Diagnostic:
    kind = next((what for test, what in _KINDS if test(mode)), "a special file")
    reason = "Is a directory" if stat.S_ISDIR(mode) else f"it is {kind}, not a regular file"
    return Diagnostic(
        code=Code.E_IO,
        message=f"cannot read `{name}`: {reason}",
        notes=("kernlink reads contracts, pipelines and packages only from regular files",),
    )


def too_large(name: str, size: int, limit: int = SOURCE_LIMIT) -> Diagnostic:
    """``E-TOO-LARGE``: ``name`` holds ``size`` bytes, over ``limit``."""
    return _too_large(name, size, limit)


def _too_large(name: str, size: int, limit: int) -> Diagnostic:
    amount = f"{size} bytes" if size > limit else f"more than {limit} bytes"
    return Diagnostic(
        code=Code.E_TOO_LARGE,
        message=f"`{name}` is too large: {amount}, over the limit of {limit} bytes",
        notes=("kernlink reads contracts and pipelines whole, so it refuses oversized inputs",),
    )


def _binary(name: str, data: bytes, offset: int) -> Diagnostic:
    line, col = _position(data, offset)
    return Diagnostic(
        code=Code.E_BINARY,
        message=f"`{name}` is a binary file, not text",
        labels=(Label(Span.point(name, line, col), "NUL byte here"),),
        notes=("contracts and pipelines are UTF-8 text files",),
    )


def _bad_encoding(name: str, data: bytes, offset: int) -> Diagnostic:
    line, col = _position(data, offset)
    byte = f"0x{data[offset]:02X}"
    return Diagnostic(
        code=Code.E_ENCODING,
        message=f"`{name}` is not valid UTF-8: byte {byte} at {line}:{col}",
        labels=(Label(Span.point(name, line, col), f"byte {byte} does not decode"),),
        helps=("save the file as UTF-8",),
    )


def user_cache_dir() -> Path:
    """Where what is worth keeping across runs goes (the parsed grammar, binding verdicts, host providers):
    ``$KERNLINK_CACHE``, else ``kernlink`` in the user cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``),
    else, when that cannot be made, ``kernlink-cache-<uid>`` in the temp folder.

    Made private (0700) when absent; ``E-IO`` naming it when it is not a private folder of this user
    (diagnostics/private.py): another user's, a symbolic link, one others may enter.
    """
    from diagnostics.private import NotPrivate, cache_folder, private_folder, refused

    env = os.environ.get("KERNLINK_CACHE")
    if env:
        return cache_folder(Path(env))
    try:
        default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernlink"
        return private_folder(default, tighten=True)
    except NotPrivate as err:
        raise DiagnosticError([refused(err)]) from None
    except (OSError, RuntimeError):  # no home, or one this user cannot write
        return temp_cache_dir()


def temp_cache_dir() -> Path:
    """``$KERNLINK_CACHE``, else ``kernlink-cache-<uid>`` in the temp folder; private as :func:`user_cache_dir`."""
    import tempfile

    from diagnostics.private import cache_folder

    env = os.environ.get("KERNLINK_CACHE")
    return cache_folder(Path(env) if env else Path(tempfile.gettempdir()) / f"kernlink-cache-{os.getuid()}")
