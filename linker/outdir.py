"""Link output directories that are never half one link and half another.

A link writes several files (``kernel.cubin``, ``kernel.ptx``, ``generated.cu``,
``link.map``) and one manifest, ``link.json``, which records the cubin's size and
SHA-256 and is what every loader reads first. Each file is replaced atomically
(:func:`~diagnostics.files.atomic_write_bytes`); the set is kept consistent by order
and a lock rather than by swapping whole directories, because ``-o`` may name a
directory that also holds other files (a build folder) which a swap would drop:

1. **lock**: an exclusive ``flock`` on the directory itself, so two links into one
   directory write one after the other (loaders take it shared, so they never read a
   manifest and a cubin from two different writes);
2. **uncommit**: ``link.json`` is removed first, with the temporaries an interrupted
   write left behind, and the removal is made durable;
3. the other files are written, cubin first; names this link does not produce
   (a stale ``kernel.cubin`` of an earlier, successful link) are removed;
4. **commit**: ``link.json`` is written last.

An interruption at any step leaves either the previous link (before step 2), or a
directory without a manifest, which ``kernlink run`` reports as holding no linked
kernel, or the new link (after step 4); a cubin changed behind the manifest's back is
``L-INTEGRITY`` at load (:func:`verify_cubin`). On any failure that Python sees
(``E-IO``, ``KeyboardInterrupt``) the manifest, the products and every output this
write did not finish are removed before the error propagates. Without ``fcntl``
(Windows) the directory is not locked; the order and the hash check still hold.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from checker.clauses import l_integrity
from diagnostics.files import atomic_write_bytes
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

MANIFEST = "link.json"

_PRODUCTS = frozenset({"kernel.cubin", "kernel.ptx", "kernel.h"})
"""What a loader would run: never left behind by a failed write, finished or not."""

Hook = Callable[[str], None]
"""Called with each step's name before the step runs (``lock``, ``uncommit``, each file name,
``done``): tests interrupt a write there."""


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


def write_set(
    directory: Path,
    files: Sequence[tuple[str, bytes | None]],
    manifest: bytes,
    *,
    managed: Sequence[str],
    hook: Hook | None = None,
) -> list[Path]:
    """Replace the link outputs in ``directory`` by ``files`` and then ``manifest`` (module docstring).

    ``files`` are written in order; a None entry removes that name. ``managed`` lists every
    output name a link may write, for the clean-up of stale temporaries and of failures.
    Returns the paths written. Raises ``DiagnosticError`` (``E-IO``) when a write fails.
    """
    step = hook or (lambda _name: None)
    written: list[Path] = []
    step("lock")
    with locked(directory, exclusive=True):
        try:
            step("uncommit")
            _remove(directory / MANIFEST)
            _remove_temporaries(directory, [*managed, MANIFEST])
            _sync(directory)
            for name, data in files:
                step(name)
                if data is None:
                    _remove(directory / name)
                else:
                    atomic_write_bytes(directory / name, data)
                    written.append(directory / name)
            step(MANIFEST)
            atomic_write_bytes(directory / MANIFEST, manifest)
            written.append(directory / MANIFEST)
            _sync(directory)
        except BaseException:
            done = {p.name for p in written}
            for name in [*managed, MANIFEST]:
                if name not in done or name == MANIFEST or name in _PRODUCTS:
                    with contextlib.suppress(OSError, DiagnosticError):
                        _remove(directory / name)
            with contextlib.suppress(OSError):
                _remove_temporaries(directory, [*managed, MANIFEST])
            raise
    step("done")
    return written


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
