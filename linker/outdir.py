"""Link output directories: never half one link and half another, a good link kept until a new one is complete.

A link writes several files (``kernel.cubin``, ``kernel.ptx``, ``generated.cu``,
``link.map``) and one manifest, ``link.json``, which records the cubin's size and
SHA-256 and is what every loader reads first. The set is kept consistent by order and
a lock rather than by swapping whole directories, because ``-o`` may name a directory
that also holds other files (a build folder) which a swap would drop:

1. **lock**: an exclusive ``flock`` on the directory itself, so two links into one
   directory write one after the other (loaders take it shared, so they never read a
   manifest and a cubin from two different writes);
2. **stage**: every new file, the manifest last, is written beside its name as a
   temporary (``.NAME.*.tmp``, fsynced); the previous link is untouched;
3. **swap** (SIGINT and the other signals that stop a command held back, and the command
   committed: diagnostics/interrupts.py):
   ``link.json`` is removed and the removal made durable, each temporary is renamed
   over its name (names this link does not produce are removed), and the manifest is
   renamed last.

A failed link (no cubin) never replaces a good one: over a directory whose manifest
says ``linked`` it writes its files under ``.failed`` names (``link.failed.json``,
``link.failed.map``, ``generated.failed.cu``) and leaves the link as it was; into any
other directory it writes them under their own names. A complete link removes the
``.failed`` files of an earlier failure.

An interruption before the swap, or any failure Python sees (``E-IO``,
``KeyboardInterrupt``) before it, leaves the previous link as it was and no temporary.
Only a kill during the swap's few renames leaves a directory without a manifest, which
``kernlink run`` reports as holding no linked kernel; a cubin changed behind the
manifest's back is ``L-INTEGRITY`` at load (:func:`verify_cubin`). A name the link
writes that is not a regular file (a FIFO, a device, a directory) is refused with
``E-IO``, never opened. Without ``fcntl`` (Windows) the directory is not locked; the
order and the hash check still hold.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from checker.clauses import l_integrity
from diagnostics import interrupts
from diagnostics.files import open_regular, write_temporary
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

MANIFEST = "link.json"

_PRODUCTS = frozenset({"kernel.cubin", "kernel.ptx", "kernel.h"})
"""What a loader would run: never left behind by a failed swap."""

Hook = Callable[[str], None]
"""Called with each step's name before the step runs (``lock``, each file name as it is staged,
``swap``, ``uncommit`` once the old manifest is gone, ``done``): tests interrupt a write there."""


@contextlib.contextmanager
def locked(directory: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold ``flock`` on the directory (shared or exclusive) for the block; a no-op where it cannot."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield  # a directory we cannot open is reported by the reads and writes that follow
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def failed_name(name: str) -> str:
    """Where a failed link writes ``name`` over a good link: ``link.map`` -> ``link.failed.map``."""
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}.failed.{suffix}" if dot else f"{name}.failed"


def write_set(
    directory: Path,
    files: Sequence[tuple[str, bytes | None]],
    manifest: bytes,
    *,
    managed: Sequence[str],
    complete: bool,
    hook: Hook | None = None,
) -> list[Path]:
    """Replace the link outputs in ``directory`` by ``files`` and then ``manifest`` (module docstring).

    ``files`` are staged in order; a None entry removes that name. ``managed`` lists every
    output name a link may write, for the clean-up of stale temporaries and failure reports.
    ``complete``: a finished link (else a failed one, which never replaces a good link).
    Returns the paths written. Raises ``DiagnosticError`` (``E-IO``) when a write fails.
    """
    step = hook or (lambda _name: None)
    step("lock")
    with locked(directory, exclusive=True):
        names = [*dict.fromkeys([*managed, MANIFEST])]
        reports = [failed_name(name) for name in names]
        _refuse_special(directory, [*names, *reports])
        _remove_temporaries(directory, [*names, *reports])
        keep = not complete and _holds_link(directory)
        target = failed_name if keep else str
        staged: list[tuple[Path, Path | None]] = []
        try:
            for name, data in [*files, (MANIFEST, manifest)]:
                step(name)
                final = directory / target(name)
                staged.append((final, None if data is None else write_temporary(final, data)))
            stale = [directory / name for name in reports if not keep and name not in {p.name for p, _ in staged}]
            step("swap")
            interrupts.commit()  # an interrupt recorded before this point wins; none after it
        except BaseException:
            for _, temp in staged:
                if temp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(temp)
            raise
        with _held_interrupts():
            _swap(directory, staged, stale, keep=keep, step=step)
    step("done")
    return [final for final, temp in staged if temp is not None]


def _swap(
    directory: Path, staged: Sequence[tuple[Path, Path | None]], stale: Sequence[Path], *, keep: bool, step: Hook
) -> None:
    """Uncommit, rename every staged file over its name (the manifest last), commit."""
    (manifest, manifest_temp), files = staged[-1], staged[:-1]
    try:
        _remove(manifest)
        _sync(directory)
        step("uncommit")
        for final, temp in files:
            if temp is None:
                _remove(final)
            else:
                _replace(temp, final)
        for path in stale:
            _remove(path)
        assert manifest_temp is not None
        _replace(manifest_temp, manifest)
        _sync(directory)
    except BaseException:
        for final, temp in staged:
            if temp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            if final == manifest or (not keep and final.name in _PRODUCTS):
                with contextlib.suppress(OSError, DiagnosticError):
                    _remove(final)
        raise


_HELD = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGALRM") if hasattr(signal, name)
)
"""Signals that end a command or turn into an exception in it: Ctrl-C, a stop, a build server's
cancel (SIGUSR1) and time-out (SIGALRM)."""


@contextlib.contextmanager
def _held_interrupts() -> Iterator[None]:
    """:data:`_HELD` held back for the block (the swap's few renames); one that arrived is delivered after it."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:  # pragma: no cover - not on POSIX
        yield
        return
    old = block(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, old)


def _holds_link(directory: Path) -> bool:
    """Whether ``directory``'s manifest records a completed link (the one a failed link must keep)."""
    try:
        with open_regular(directory / MANIFEST) as handle:
            record = json.loads(handle.read(256 << 20))
    except (DiagnosticError, OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("status") == "linked"


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_special(directory: Path, names: Sequence[str]) -> None:
    """``E-IO`` for an output name that holds something other than a file (a link replaces its
    outputs; it never writes into a FIFO or a device, which could block it forever)."""
    for name in names:
        path = directory / name
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            continue
        kind = next((what for test, what in _KINDS if test(mode)), "a special file")
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_IO,
                    f"cannot write `{path}`: it is {kind}, not a regular file",
                    notes=("a link replaces its output files by name; it writes into nothing else",),
                    helps=(f"remove `{path}`, or link into another directory",),
                )
            ]
        )


def verify_cubin(cubin: bytes, manifest: Mapping[str, Any], directory: str | Path) -> None:
    """``L-INTEGRITY`` unless ``cubin`` is the one whose size and SHA-256 the manifest records."""
    record = manifest.get("cubin")
    root = Path(directory)
    where = f"`{root / 'kernel.cubin'}`"
    fix = f"link again: `kernlink link PIPELINE.kp -o {root}`"
    if not isinstance(record, Mapping) or not isinstance(record.get("sha256"), str):
        raise DiagnosticError([l_integrity.unrecorded_hash(str(root / MANIFEST), where, fix)])
    digest = hashlib.sha256(cubin).hexdigest()
    if digest != record["sha256"] or record.get("size") not in (None, len(cubin)):
        recorded = (record.get("size"), str(record["sha256"]))
        raise DiagnosticError(
            [l_integrity.hash_mismatch(str(root / MANIFEST), where, recorded, (len(cubin), digest), fix)]
        )


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except IsADirectoryError as err:
        raise DiagnosticError([Diagnostic(Code.E_IO, f"cannot replace `{path}`: it is a directory")]) from err
    except OSError as err:
        raise DiagnosticError([Diagnostic(Code.E_IO, f"cannot remove `{path}`: {err.strerror or err}")]) from err


def _replace(temp: Path, final: Path) -> None:
    try:
        os.replace(temp, final)
    except OSError as err:
        raise DiagnosticError([Diagnostic(Code.E_IO, f"cannot write `{final}`: {err.strerror or err}")]) from err


def _remove_temporaries(directory: Path, names: Sequence[str]) -> None:
    """Temporaries of ``atomic_write_bytes`` (``.NAME.*.tmp``) that an interrupted write left."""
    prefixes = tuple(f".{name}." for name in names)
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(prefixes) and entry.name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _sync(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
