"""Folders only this user can enter, and the entries kernlink keeps sealed in them.

A cache holds what kernlink later runs or trusts (the parsed grammar, compiled host
providers, binding verdicts, NVRTC's headers), and the build server keeps its sockets in
a runtime folder: whoever can write there can make kernlink run their code. One check
admits both (:func:`private_folder`): a directory, not a symbolic link, owned by this
user, that no one else may enter. It is created 0700 when absent, whatever the umask;
anything else is :class:`NotPrivate`. ``tighten`` makes 0700 a folder of this user that
others may read but not write (the default cache folder, as an older kernlink created it
under the umask): nothing in it can be someone else's.

A sealed entry is its bytes behind an HMAC-SHA256 of its name and bytes, keyed by the
folder's secret (``key``: 32 random bytes, 0600, made on first use). :func:`read_sealed`
returns the bytes only when the tag verifies: an entry someone else planted, one cut
short or damaged, or one copied from another name reads as absent, and the caller builds
it again and :func:`write_sealed` replaces it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the build server's client imports this module alone (tests/test_cli_imports.py)
    from diagnostics.model import Diagnostic

KEY = "key"
_KEY_BYTES = 32
_MAGIC = b"kernlink-sealed/1\n"
_TAG_BYTES = hashlib.sha256().digest_size
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class NotPrivate(Exception):
    """A folder that is not this user's alone; the message names it and why."""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__(f"`{folder}` is not a private folder of this user ({reason})")
        self.folder, self.reason = folder, reason


def private_folder(folder: Path, *, create: bool = True, tighten: bool = False) -> Path:
    """``folder``, made 0700 when absent (``create``); :class:`NotPrivate` unless it is a directory of
    this user that no one else may enter; ``OSError`` when it cannot be made or examined."""
    if create:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)  # FileExistsError when something else is there
    info = folder.lstat()
    reason = _not_private(info)
    if reason is None:
        return folder
    if tighten and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022:
        os.chmod(folder, 0o700)
        return folder
    raise NotPrivate(folder, reason)


def _not_private(info: os.stat_result) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != os.getuid():
        return f"it belongs to uid {info.st_uid}, not to uid {os.getuid()}"
    if info.st_mode & 0o077:
        return f"others may enter it: mode {stat.S_IMODE(info.st_mode):04o}"
    return None


def cache_folder(folder: Path, *, tighten: bool = False) -> Path:
    """:func:`private_folder` for a cache: ``E-IO`` naming the folder when it is refused or cannot be made."""
    from diagnostics.model import Diagnostic, DiagnosticError
    from diagnostics.symbols import Code

    try:
        return private_folder(folder, tighten=tighten)
    except NotPrivate as err:
        raise DiagnosticError([refused(err)]) from None
    except OSError as err:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_IO,
                    f"cannot make the cache folder `{folder}`: {err.strerror or err}",
                    helps=("set KERNLINK_CACHE to a folder you can write",),
                )
            ]
        ) from None


def refused(err: NotPrivate) -> Diagnostic:
    """``E-IO``: a cache folder that is not this user's alone."""
    from diagnostics.model import Diagnostic
    from diagnostics.symbols import Code

    return Diagnostic(
        Code.E_IO,
        f"refusing the cache folder `{err.folder}`: it is not a private folder of this user ({err.reason})",
        notes=(
            "kernlink keeps there what it later runs or trusts (the parsed grammar, compiled host providers, "
            "binding verdicts): whoever else can write there could make it run their code",
        ),
        helps=(
            "point KERNLINK_CACHE at a folder only you can enter (kernlink creates an absent one 0700), "
            "or, if this one is yours and no one else wrote to it, `chmod 700` it",
        ),
    )


# ----------------------------------------------------------------- sealed entries


def read_sealed(folder: Path, name: str, *, limit: int = 256 << 20) -> bytes | None:
    """The bytes of entry ``name`` of the private ``folder`` when its tag verifies, else None."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit + len(_MAGIC) + _TAG_BYTES:
                return None
            blob = handle.read(limit + len(_MAGIC) + _TAG_BYTES + 1)
        key = _key(folder)
    except OSError:
        return None
    head = len(_MAGIC) + _TAG_BYTES
    if len(blob) < head or not blob.startswith(_MAGIC):
        return None
    data = blob[head:]
    return data if hmac.compare_digest(blob[len(_MAGIC) : head], _tag(key, name, data)) else None


def write_sealed(folder: Path, name: str, data: bytes) -> bool:
    """Replace entry ``name`` of the private ``folder`` with ``data`` and its tag, atomically, 0600;
    False when it cannot be written (a cache entry not kept is built again next time)."""
    try:
        key = _key(folder)
        _write_new(folder / name, _MAGIC + _tag(key, name, data) + data, replace=True)
    except OSError:
        return False
    return True


def _tag(key: bytes, name: str, data: bytes) -> bytes:
    return hmac.new(key, name.encode("utf-8") + b"\0" + data, hashlib.sha256).digest()


def _key(folder: Path) -> bytes:
    """The folder's secret: made on first use; one that is not this user's 0600 file of 32 bytes is replaced
    (every entry sealed under it then reads as absent)."""
    path = folder / KEY
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW)
    except FileNotFoundError:
        return _new_key(path)
    except OSError:  # a symbolic link (ELOOP) or worse: not ours to trust
        os.unlink(path)
        return _new_key(path)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        key = handle.read(_KEY_BYTES + 1)
    ours = stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    if ours and len(key) == _KEY_BYTES:
        return key
    os.unlink(path)
    return _new_key(path)


def _new_key(path: Path) -> bytes:
    key = os.urandom(_KEY_BYTES)
    try:
        _write_new(path, key, replace=False)
    except FileExistsError:  # another process made it first: use theirs
        return _key(path.parent)
    return key


def _write_new(path: Path, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to a fresh 0600 file beside ``path`` and move it there (``replace``: over what is
    there; else only if nothing is, ``FileExistsError`` otherwise)."""
    temp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(temp, path)
        else:
            os.link(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
