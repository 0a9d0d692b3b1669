"""The files a compile opened, as the compiler itself reports them (`kernlink build` keys on them).

NVRTC 13.0 has no dependency output: ``-M``, ``-MD``, ``-MF`` and ``--dependency-output`` are
refused as unknown options. Its time trace (``--fdevice-time-trace=FILE``) records one
``Processing Header File`` event for every header the front end opens, with the path it opened
(the include name for a header given in memory), its own built-in header first. It writes no
trace for a compile that fails, and after one, its later traces in that process leave headers
out: :meth:`Trace.failed` replaces the native worker (toolchain/cuda.py), and a trace without
the built-in header is not taken. nvcc writes a make rule (``--dependency-output=FILE``).
Either file goes into a folder :func:`tracing` makes private to this user (``mkdtemp``: mode
0700) and removes afterwards; neither option changes the compiler's output (tests), and neither
is recorded in a package (:func:`is_dependency_option`).

The compiler's own built-in header (``__nv_nvrtc_builtin_header.h``) is no file and is left out:
the toolkit version covers it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_NVRTC_TRACE = "--fdevice-time-trace="
_NVCC_DEPS = ("--generate-dependencies-with-compile", "--dependency-output=")
_BUILTIN = "__nv_nvrtc_builtin_header.h"
_HEADER_EVENT = "Processing Header File"


@dataclass(frozen=True)
class Opened:
    """What one successful compile read: ``files`` (absolute, normalised, sorted, the source among
    them) and ``search``, the include folders it was given, in the compiler's order."""

    files: tuple[str, ...]
    search: tuple[str, ...]


def is_dependency_option(option: str) -> bool:
    """An option :class:`Trace` adds: never part of what a package records."""
    return option.startswith((_NVRTC_TRACE, *_NVCC_DEPS))


@dataclass(frozen=True)
class Trace:
    """A private folder the compiler writes what it opened into, one file per compile ``name``."""

    folder: Path
    compiler: str

    def options(self, name: str) -> tuple[str, ...]:
        path = self.folder / name
        if self.compiler == "nvcc":
            return (_NVCC_DEPS[0], f"{_NVCC_DEPS[1]}{path}.d")
        return (f"{_NVRTC_TRACE}{path}",)  # NVRTC adds `.json`

    def failed(self) -> None:
        """A compile given :meth:`options` failed: NVRTC writes no trace for it, and its later traces
        in the same process leave headers out, so the process that ran it is replaced."""
        if self.compiler == "nvrtc":
            from toolchain.cuda import restart_native_worker

            restart_native_worker()

    def read(self, name: str, *, source: Path, memory: Path) -> tuple[str, ...] | None:
        """The files compile ``name`` opened, with ``source`` (its main file, given in memory);
        a header given in memory (an include name) is taken as the file under ``memory``. None
        when the compiler wrote no readable record."""
        try:
            if self.compiler == "nvcc":
                found = _make_rule((self.folder / f"{name}.d").read_text("utf-8"))
            else:
                found = _trace_headers((self.folder / f"{name}.json").read_text("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if found is None or (self.compiler == "nvrtc" and _BUILTIN not in found):
            return None  # a trace without NVRTC's own header first is not a whole one
        files = {os.path.normpath(source)}
        for entry in found:
            if entry == _BUILTIN or (self.compiler == "nvcc" and entry == source.name):
                continue  # nvcc's rule names the copy of the source it compiled, by its base name
            files.add(os.path.normpath(entry if os.path.isabs(entry) else memory / entry))
        return tuple(sorted(files))


@contextlib.contextmanager
def tracing(compiler: str) -> Iterator[Trace]:
    folder = tempfile.mkdtemp(prefix="kernlink-opened-")
    try:
        yield Trace(Path(folder), compiler)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def search_folders(options: tuple[str, ...]) -> tuple[str, ...]:
    """The include folders of a compile's options, in order (NVRTC's and nvcc's spellings)."""
    found: list[str] = []
    for option in options:
        for prefix in ("--include-path=", "--use-bundled-headers=", "-I"):
            if option.startswith(prefix):
                found.append(os.path.normpath(option.removeprefix(prefix)))
    return tuple(found)


def _trace_headers(text: str) -> list[str] | None:
    value = json.loads(text)
    events = value.get("traceEvents") if isinstance(value, dict) else None
    if not isinstance(events, list):
        return None
    found: list[str] = []
    for event in events:
        if isinstance(event, dict) and event.get("name") == _HEADER_EVENT:
            args = event.get("args")
            detail = args.get("detail") if isinstance(args, dict) else None
            if not isinstance(detail, str):
                return None
            found.append(detail)
    return found


def _make_rule(text: str) -> list[str] | None:
    """The prerequisites of the one rule of a make dependency file (``\\ `` escapes a blank)."""
    target, colon, rest = text.replace("\\\n", " ").partition(" : ")
    if not colon or not target.strip():
        return None
    words: list[str] = []
    current = ""
    i = 0
    while i < len(rest):
        char = rest[i]
        if char == "\\" and i + 1 < len(rest) and rest[i + 1] in " #":
            current += rest[i + 1]
            i += 2
            continue
        if char.isspace():
            if current:
                words.append(current)
            current = ""
        else:
            current += char
        i += 1
    if current:
        words.append(current)
    return words
