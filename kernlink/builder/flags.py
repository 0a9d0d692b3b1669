"""``<stem>.flags``: the compile flags `kernlink build` packs a component with.

`kernlink pack` takes ``-I DIR``, ``-D NAME[=VALUE]``, ``--std c++17|c++20`` and ``--cutlass`` on
its command line. A build has no command line per component, so it reads them from a file beside
the component's source and contract: ``<stem>.flags`` beside ``<stem>.cu``. The flags are the
component's own (its owner writes them with its source, and every pipeline that uses the package
builds it the same way), so they live with the component, not in a pipeline. The file is an input
of the build: its bytes are part of the build key, and ``--watch`` watches it. No file: no flags.

Syntax: the options as on `kernlink pack`'s command line (``-I DIR`` or ``-IDIR``, ``--include DIR``,
``-D NAME[=VALUE]`` or ``-DNAME``, ``--define``, ``--std VALUE`` or ``--std=VALUE``, ``--cutlass``),
any number on a line, quoted as in a shell; ``#`` starts a comment. A relative ``-I`` folder is
relative to the file's folder, so the build does not depend on the working directory.

One more option is the build's own, never the compiler's: ``--source PATH``, the component's source
when it is not ``<stem>.cu`` (or ``<stem>.py``) beside the contract: one source packed under two
contracts with two sets of defines, e.g. the gemm_swiglu mainloop that ``tilelang/mainloop_regs.flags``
builds with ``-D GEMM_MMA_EPILOGUE`` under ``mainloop_regs.kc``. It names a ``.cu`` or ``.py`` file by
a path relative to the flags file's folder (an absolute path would tie the recipe to one machine); the
source is read as `kernlink pack` reads it (a symbolic link is refused). It changes nothing the package
records (``compile.options`` holds the same ``-D``/``-I``/``--std`` words `kernlink pack` records), so a
package built from a recipe is byte-identical to the one packed by hand, and what a package replays is
still only what packing/binding.py and L-INTEGRITY allow. A flags file is read, never run: every word is
one of these options or an error at that word.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.files import read_source
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.sources import SourceMap
from diagnostics.span import Span
from diagnostics.symbols import Code

if TYPE_CHECKING:
    from packing.pack import CompileFlags

SUFFIX = ".flags"
STDS = ("c++17", "c++20")
#: The suffixes of a source `kernlink pack` takes: CUDA, or a TileLang/Triton stage (packing/frontends).
SOURCE_SUFFIXES = (".cu", ".py")
_MACRO = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def flags_path(source: Path) -> Path:
    return source.with_suffix(SUFFIX)


@dataclass(frozen=True)
class Recipe:
    """What a flags file says: the compile flags, and the source when ``--source`` names one."""

    flags: CompileFlags
    source: Path | None = None


def read_flags(path: Path, sources: SourceMap) -> CompileFlags | None:
    """The flags ``path`` gives; None when there is no such file; :class:`DiagnosticError` (E-PACK,
    at the offending word) when it says something `kernlink pack` would not take. The text read
    is added to ``sources`` (diagnostics quote it)."""
    recipe = read_recipe(path, sources)
    return recipe.flags if recipe is not None else None


def read_recipe(path: Path, sources: SourceMap) -> Recipe | None:
    """:func:`read_flags`, with the source ``--source`` names (resolved against the file's folder)."""
    from packing.pack import CompileFlags

    if not path.exists():
        return None
    text = read_source(path, display=str(path))
    sources.add(str(path), text)
    include: list[Path] = []
    defines: dict[str, str] = {}
    std, cutlass = "c++17", False
    source: Path | None = None
    problems: list[Diagnostic] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as err:
            problems.append(_bad(path, number, line, line.strip(), f"cannot split this line into words ({err})"))
            continue
        i = 0
        while i < len(words):
            word = words[i]
            option, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
            value: str | None = inline if eq else None
            for short, long in (("-I", "--include"), ("-D", "--define")):
                if word.startswith(short) and len(word) > 2:
                    option, value = long, word[2:]
                elif option == short:
                    option = long
            takes = option in ("--include", "--define", "--std", "--source")
            if takes and value is None:
                if i + 1 == len(words):
                    problems.append(_bad(path, number, line, word, f"`{word}` needs a value"))
                    break
                i += 1
                value = words[i]
            i += 1
            if option == "--include" and value is not None:
                include.append((path.parent / value).resolve())
            elif option == "--define" and value is not None:
                name, _, given = value.partition("=")
                if _MACRO.fullmatch(name) is None:
                    problems.append(_bad(path, number, line, word, f"`{name}` is not a macro name"))
                defines[name] = given or "1"
            elif option == "--std" and value is not None:
                if value not in STDS:
                    problems.append(_bad(path, number, line, value, f"`--std {value}`: the dialect is one of {STDS}"))
                std = value
            elif option == "--source" and value is not None:
                found = _source(path, number, line, value, source)
                if isinstance(found, Diagnostic):
                    problems.append(found)
                else:
                    source = found
            elif option == "--cutlass" and not eq:
                cutlass = True
            else:
                problems.append(
                    _bad(path, number, line, word, f"`{word}` is not a flag `kernlink build` passes to the compiler")
                )
    if problems:
        raise DiagnosticError(problems)
    return Recipe(CompileFlags(tuple(include), tuple(sorted(defines.items())), std, cutlass), source)


def _source(path: Path, number: int, line: str, value: str, before: Path | None) -> Path | Diagnostic:
    """The source ``--source VALUE`` names, or the problem with it (at the word)."""
    named = Path(value)
    if before is not None:
        return _bad(path, number, line, value, "a second `--source`: a component is built from one source")
    if named.is_absolute():
        return _bad(path, number, line, value, f"`--source {value}` is absolute: name it relative to this file")
    if named.suffix not in SOURCE_SUFFIXES:
        return _bad(
            path, number, line, value, f"`--source {value}` is not a source `kernlink pack` takes ({SOURCE_SUFFIXES})"
        )
    source = path.parent / named
    if not source.is_file():
        return _bad(path, number, line, value, f"`--source {value}`: no such file (relative to this file's folder)")
    return source


def _bad(path: Path, number: int, line: str, word: str, message: str) -> Diagnostic:
    col = line.find(word) + 1 if word and word in line else 1
    span = Span(str(path), number, col, number, col + max(len(word), 1))
    return Diagnostic(
        Code.E_PACK,
        message,
        labels=(Label(span, "in this flags file"),),
        helps=(
            "a flags file holds the options `kernlink pack` takes: `-I DIR`, `-D NAME[=VALUE]`, "
            "`--std c++17|c++20`, `--cutlass`, and the build's `--source PATH` (`#` starts a comment)",
        ),
    )
