"""`kernlink build PIPELINE.kp -o DIR`: pack what changed, then link, in one process.

Separate compilation pays only if an unchanged component is not compiled again. For
every ``use … from "build/<stem>.kpkg"`` of the pipeline, the component's contract is
``<stem>.kc`` and its compile flags ``<stem>.flags`` (kernlink/builder/flags.py; optional) in the
folder above ``build/`` (where ``kernlink pack`` puts a package by default), and its source the one
the flags file names with ``--source``, else ``<stem>.cu``, else a TileLang or Triton stage
``<stem>.py`` there. Its lowering record (``<stem>.tilelang.json`` / ``<stem>.triton.json``) is keyed
with it; where the front end itself is installed and lowers it, no record keys its version and the
stage is packed by every build.

A package is reused when its *build record* (``<stem>.kpkg.key``, JSON, written after each
pack) still holds: its key is a sha256 over kernlink's version, the compiler, the toolkit
versions, every file the compile opened as the compiler itself reports it (packing/opened.py:
the source and every header, in any folder and with any extension), the contract, the flags
file and the host providers' C sources, and the absence of every file that would be found
before one of the opened ones (a new header beside the source that shadows one from ``-I`` or
the CUDA headers). The component's own files (in its folder and its ``-I`` folders) are keyed
by content; the installed headers it opens (CUDA, CUTLASS) by path, size, modification time
and inode. Any other package is packed again: no record, a record that no longer holds, a
package that does not read back whole, or a compile the compiler said nothing about. A
package with no source beside it (a binary-only package from another owner) is used as it is.
Then the pipeline is linked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.files import atomic_write_text
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap
from kernlink import __version__
from kernlink.builder.flags import SOURCE_SUFFIXES, read_recipe
from kernlink.builder.flags import SUFFIX as FLAGS_SUFFIX

if TYPE_CHECKING:
    from checker.memo import Memo
    from kernlink.api import LinkResult
    from packing.opened import Opened
    from packing.pack import CompileFlags

#: What a component with no build record yet may include beside its source (--watch, before a build).
_HEADERS = ("*.h", "*.cuh", "*.hpp", "*.inc")
#: A host provider's C source, named by the contract (it is packed with the stage).
_PROVIDER = re.compile(r'host\s+provider\s+"([^"]+)"')
_RECORD_VERSION = 1
#: A file the build could not hash before its compile (one the compile found first), changed this
#: close to or after the compile began, may have been read either way: its record is not trusted
#: (the kernel's file clock lags the wall clock by up to one tick).
_SETTLE_NS = 20_000_000


@dataclass(frozen=True)
class Step:
    """What happened to one package: ``packed``, ``reused`` or ``given`` (no source: used as is)."""

    package: Path
    action: str
    seconds: float
    why: str


@dataclass
class BuildResult:
    steps: list[Step] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ok: bool = False
    sources: SourceMap = field(default_factory=SourceMap)  # what the build itself read (flags files)


@dataclass(frozen=True)
class Record:
    """A package's build record: the files whose content the key hashes (the component's own: its
    folder and its ``-I`` folders), the installed headers it keys by their file identity, and the
    paths it requires absent."""

    key: str
    files: tuple[str, ...]
    installed: tuple[str, ...]
    absent: tuple[str, ...]


@dataclass(frozen=True)
class Component:
    """What a package at ``<dir>/build/<stem>.kpkg`` is built from (module docstring)."""

    source: Path
    contract: Path
    flags_file: Path
    flags: CompileFlags | None


def component_of(package: Path, sources: SourceMap | None = None) -> Component:
    """The source, contract and flags a package at ``<dir>/build/<stem>.kpkg`` is built from; a
    :class:`DiagnosticError` when its flags file says what `kernlink pack` would not take."""
    root = package.parent.parent
    flags_file = root / f"{package.stem}{FLAGS_SUFFIX}"
    recipe = read_recipe(flags_file, sources if sources is not None else SourceMap())
    source = recipe.source if recipe is not None else None
    if source is None:
        source = next(
            (c for c in (root / f"{package.stem}{s}" for s in SOURCE_SUFFIXES) if c.is_file()),
            root / f"{package.stem}.cu",
        )
    return Component(source, root / f"{package.stem}.kc", flags_file, recipe.flags if recipe is not None else None)


def _lowering_inputs(source: Path) -> list[Path]:
    """The files a front end reads for ``source`` besides it (packing/frontends): a TileLang or Triton
    stage's lowering record ``<stem>.tilelang.json`` / ``<stem>.triton.json``."""
    from packing.frontends import tilelang, triton

    if source.suffix != ".py":
        return []
    suffix = triton.RECORD_SUFFIX if triton.is_stage(source) else tilelang.RECORD_SUFFIX
    return [source.with_name(source.stem + suffix)]


def _lowered_live(source: Path) -> bool:
    """``source`` is lowered by a front end installed here (TileLang, Triton) rather than read from its
    record, and no build record keys that front end's version: such a package is packed by every build."""
    from packing.frontends import tilelang, triton

    if source.suffix != ".py":
        return False
    if triton.is_stage(source):
        return bool(os.environ.get("KERNLINK_TRITON_PYTHON")) or triton.has_triton()
    return bool(os.environ.get("KERNLINK_TILELANG_PYTHON")) or tilelang.has_tilelang()


def record_file(package: Path) -> Path:
    return package.with_name(package.name + ".key")


def build_key(compiler: str, files: Sequence[str], installed: Sequence[str], absent: Sequence[str]) -> str:
    """The key of a build record: the toolchain, each file's path and content, each installed file's
    path, size, modification time and inode (an install or upgrade writes new files; hashing the
    CUTLASS headers a CuTe component opens would cost 0.1 s a build), each absent path's absence."""
    from toolchain.cuda import toolkit_versions

    h = hashlib.sha256()
    for part in (f"kernlink {__version__}", f"compiler {compiler}", f"toolkit {toolkit_versions()}"):
        h.update(part.encode() + b"\0")
    for path in files:
        h.update(path.encode() + b"\0")
        try:
            with open(path, "rb") as f:
                h.update(hashlib.file_digest(f, "sha256").digest())
        except OSError:
            h.update(b"\0unreadable\0")
    for path in installed:
        try:
            st = os.stat(path)
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode())
        except OSError:
            h.update(f"{path}\0unreadable\0".encode())
    for path in absent:
        h.update(path.encode() + (b"\0present\0" if os.path.lexists(path) else b"\0absent\0"))
    return h.hexdigest()


def read_record(package: Path) -> Record | None:
    try:
        value = json.loads(record_file(package).read_text("utf-8"))
        if value.get("version") != _RECORD_VERSION:
            return None
        record = Record(str(value["key"]), *(tuple(map(str, value[part])) for part in ("files", "installed", "absent")))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return record


def _write_record(package: Path, record: Record) -> None:
    value = {
        "version": _RECORD_VERSION,
        "key": record.key,
        "files": record.files,
        "installed": record.installed,
        "absent": record.absent,
    }
    atomic_write_text(record_file(package), json.dumps(value, indent=1) + "\n")


def _stale(package: Path, compiler: str) -> str | None:
    """Why ``package`` must be packed again; None when its build record holds and it reads back whole."""
    from package.integrity import PackageDefect
    from package.kpkg import read_package

    if not package.exists():
        return "no package yet"
    record = read_record(package)
    if record is None:
        return f"no build record `{record_file(package).name}` beside it"
    if record.key != build_key(compiler, record.files, record.installed, record.absent):
        return "a file its compile opened, its contract, its flags or the toolkit changed"
    try:
        read_package(package)
    except (OSError, DiagnosticError, PackageDefect, ValueError):
        return "it does not read back whole"
    return None


def _providers(contract: Path) -> list[Path]:
    try:
        named = _PROVIDER.findall(contract.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        named = []
    return [contract.parent / name for name in named]


def _under(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` when it is below it."""
    prefix = folder.rstrip(os.sep) + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


def shadows(opened: Opened, user: Iterable[str]) -> list[str]:
    """The paths where a new file would be found instead of, or before, one the compile opened.

    An include name is looked up in the including file's folder (quoted), then in each include
    folder: a file the compile opened at ``D/name`` is shadowed by a new ``E/name`` in a folder
    ``E`` searched first. The candidates are every user folder (the source's, the ``-I`` ones and
    the folders of the opened files within them) joined with every name an opened file has below
    a folder it may have been found from; of those, the ones that do not exist now."""
    users = [os.path.normpath(u) for u in user]
    roots = [*users, *opened.search]
    folders = set(users)
    for path in opened.files:
        if any(_under(path, u) is not None for u in users):
            folders.add(os.path.dirname(path))
    found = set(opened.files)
    out: set[str] = set()
    for path in opened.files:
        for root in roots:
            name = _under(path, root)
            if name is None:
                continue
            for folder in folders:
                candidate = os.path.join(folder, name)
                if candidate not in found and candidate not in out and not os.path.lexists(candidate):
                    out.add(candidate)
    return sorted(out)


def _record(
    package: Path, source: Path, contract: Path, flags: Path, compiler: str, opened: Opened, user: Sequence[str]
) -> Record:
    """The record of a package just packed from a compile that opened ``opened``."""
    own = [f for f in opened.files if any(_under(f, u) is not None for u in user)]
    installed = sorted(set(opened.files) - set(own))
    files = {*own, os.path.abspath(contract), *(os.path.abspath(p) for p in _providers(contract))}
    files |= {os.path.abspath(p) for p in _lowering_inputs(source)}
    absent = set(shadows(opened, user))
    (files if os.path.exists(flags) else absent).add(os.path.abspath(flags))
    key = build_key(compiler, sorted(files), installed, sorted(absent))
    return Record(key, tuple(sorted(files)), tuple(installed), tuple(sorted(absent)))


def _digests(paths: Iterable[str]) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                found[path] = hashlib.file_digest(f, "sha256").digest()
        except OSError:
            found[path] = None
    return found


def _expected(source: Path, contract: Path, flags: Path, package: Path) -> list[str]:
    """The files a compile of ``source`` will likely open or the record will name, hashed before it:
    the component's own files, the headers beside its source and those its last record named."""
    found = {source, contract, flags, *_providers(contract), *_lowering_inputs(source)}
    found |= {p for g in _HEADERS for p in source.parent.glob(g)}
    record = read_record(package)
    paths = {os.path.abspath(p) for p in found} | set(record.files if record is not None else ())
    return sorted({*paths, *(os.path.realpath(p) for p in paths)})


def _settled(record: Record, before: dict[str, bytes | None], since_ns: int) -> bool:
    """No file of ``record`` changed while its compile ran: the ones hashed before it have the same
    content now; the others were last modified before it began (they may have been read either way)."""
    for path in (*record.files, *record.installed):
        if path in before:
            if _digests([path])[path] != before[path]:
                return False
            continue
        try:
            if os.stat(path).st_mtime_ns >= since_ns - _SETTLE_NS:
                return False
        except OSError:
            return False
    return True


def _flags_hint(package: Path, flags_file: Path) -> str | None:
    """When the package this build could not repack was packed with flags and no flags file gives
    any: which ones, and where `kernlink build` takes them from."""
    from package.integrity import PackageDefect
    from package.kpkg import read_package
    from packing.binding import recorded_options

    try:
        info = read_package(package).manifest.get("compile")
    except (OSError, DiagnosticError, PackageDefect, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    std, defines, _ = recorded_options(info.get("options"))
    said = [f"-D {k}={v}" for k, v in sorted(defines.items())]
    said += ["--cutlass"] if info.get("cutlass") else []
    said += [f"--std {std}"] if std != "c++17" else []
    if not said:
        return None
    return (
        f"`{package}` was packed with `{' '.join(said)}` and `{flags_file}` does not exist: `kernlink build` "
        "takes a component's flags from that file; write them there (with any `-I DIR` it was packed with)"
    )


def _with_help(diagnostics: Sequence[Diagnostic], hint: str | None) -> list[Diagnostic]:
    """``diagnostics`` with ``hint`` added to the first error's helps."""
    out = list(diagnostics)
    first = next((i for i, d in enumerate(out) if d.is_error), None)
    if hint is not None and first is not None:
        out[first] = dataclasses.replace(out[first], helps=(*out[first].helps, hint))
    return out


def packages_of(pipeline: Path) -> list[Path]:
    """The package paths a pipeline's ``use … from`` lines name, resolved against the pipeline's folder."""
    from contract_lang import ast as A
    from contract_lang.parser import parse_file

    source, _ = parse_file(pipeline, "pipeline")
    found: list[Path] = []
    for p in source.pipelines:
        for use in p.items:
            if isinstance(use, A.Use) and use.path is not None and use.path.endswith(".kpkg"):
                found.append(pipeline.parent / use.path)
    return found


def inputs_of(pipeline: Path) -> list[Path]:
    """What a build of ``pipeline`` reads (`kernlink build --watch` watches them): the pipeline, the
    contracts beside it, and for each package its source, contract, flags file and host providers'
    C sources, and the files its build record names (present and required absent); before a first
    build, the headers beside the source. For a package with no source beside it, the package.
    The packages a build writes are not inputs (a rebuild would trigger the next one)."""
    found = {pipeline, *pipeline.parent.glob("*.kc")}
    try:
        packages = packages_of(pipeline)
    except DiagnosticError:
        return sorted(found)
    for package in packages:
        try:
            component = component_of(package)
        except DiagnosticError:  # a flags file that does not read: watched, so that its fix is a change
            found.add(package.parent.parent / f"{package.stem}{FLAGS_SUFFIX}")
            continue
        source, contract = component.source, component.contract
        if not source.is_file() or not contract.is_file():
            found.update((package, component.flags_file))
            continue
        found.update((source, contract, component.flags_file, *_providers(contract), *_lowering_inputs(source)))
        record = read_record(package)
        if record is None:
            found.update(p for pattern in _HEADERS for p in source.parent.glob(pattern))
        else:
            found.update(Path(p) for p in (*record.files, *record.installed, *record.absent))
    return sorted({Path(os.path.abspath(p)) for p in found})  # one spelling each, before and after a build


def build(
    pipeline: str | Path,
    out_dir: str | Path,
    *,
    compiler: str = "nvrtc",
    target: str | None = None,
    memo: Memo | None = None,
    host_code: bool = True,
    strict: bool = False,
    require_binding: bool = False,
) -> tuple[BuildResult, LinkResult | None]:
    """Pack every stale package of ``pipeline``, then link it into ``out_dir``; (steps, the link result).

    ``memo`` keeps the check's verdicts for the next build of the same process (``--watch``);
    ``host_code=False`` (``--no-host-code``) refuses every host provider.
    ``strict`` and ``require_binding`` are the link's (kernlink/api.py).
    """
    from kernlink.api import link

    result = BuildResult()
    path = Path(pipeline)
    try:
        packages = packages_of(path)
        for package in packages:
            result.steps.append(_one(package, compiler, result.sources))
    except DiagnosticError as err:
        result.diagnostics.extend(err.diagnostics)
        return result, None
    linked = link(
        [path], out_dir, target=target, memo=memo, host_code=host_code, strict=strict, require_binding=require_binding
    )
    result.diagnostics.extend(linked.diagnostics)
    result.ok = linked.ok
    return result, linked


def _one(package: Path, compiler: str, sources: SourceMap) -> Step:
    """Reuse or pack one package; a :class:`DiagnosticError` when it cannot be packed."""
    from packing.pack import pack

    start = time.perf_counter()
    component = component_of(package, sources)
    source, contract, flags_file, flags = component.source, component.contract, component.flags_file, component.flags
    if not source.is_file() or not contract.is_file():
        return Step(package, "given", 0.0, f"no `{source.name}` and `{contract.name}` beside it")
    why = _stale(package, compiler)
    if why is None:
        return Step(package, "reused", time.perf_counter() - start, "build key unchanged")
    before = _digests(_expected(source, contract, flags_file, package))
    began = time.time_ns()
    try:
        packed = pack(source, contract, package, compiler="nvcc" if compiler == "nvcc" else "nvrtc", flags=flags)
    except DiagnosticError as err:
        hint = _flags_hint(package, flags_file) if flags is None else None
        raise DiagnosticError(_with_help(err.diagnostics, hint)) from None
    if packed.opened is None:
        record_file(package).unlink(missing_ok=True)
        why += "; the compiler did not report the files it opened, so the next build packs it again"
    elif _lowered_live(source):
        record_file(package).unlink(missing_ok=True)
        why += "; its front end lowered it here, whose version no build record keys, so the next build packs it again"
    else:
        user = [str(source.parent.resolve()), *(str(d) for d in (flags.include_dirs if flags else ()))]
        record = _record(package, source, contract, flags_file, compiler, packed.opened, user)
        if not _settled(record, before, began):
            record = dataclasses.replace(record, key="")  # watched, never reused
            why += "; a file changed while it compiled, so the next build packs it again"
        _write_record(package, record)
    return Step(package, "packed", time.perf_counter() - start, why)


def summary(steps: Sequence[Step]) -> str:
    return "\n".join(f"{s.action:>7} {s.package} ({s.seconds * 1000:.0f} ms): {s.why}" for s in steps)
