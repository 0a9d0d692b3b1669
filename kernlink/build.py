"""`kernlink build PIPELINE.kp -o DIR`: pack what changed, then link, in one process.

Separate compilation pays only if an unchanged component is not compiled again. For
every ``use … from "build/<stem>.kpkg"`` of the pipeline, the component's source is
``<stem>.cu`` and its contract ``<stem>.kc`` in the folder above ``build/`` (where
``kernlink pack`` puts a package by default). Its *build key* is a sha256 over what
the package depends on: the source, the contract, every ``.h``/``.cuh``/``.hpp`` file
beside the source (the includes a component can see without flags), the C sources of
the host providers the contract names (which the package carries), the compiler, the
toolkit versions and kernlink's version. The key is kept beside the package
(``<stem>.kpkg.key``); a package whose key matches and that still reads back whole is
reused, any other is packed again. A package with no source beside it (a binary-only
package from another owner) is used as it is. Then the pipeline is linked.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.files import atomic_write_text
from diagnostics.model import Diagnostic, DiagnosticError
from kernlink import __version__

if TYPE_CHECKING:
    from checker.memo import Memo
    from kernlink.api import LinkResult

_HEADERS = ("*.h", "*.cuh", "*.hpp")
#: A host provider's C source, named by the contract (it is packed with the stage).
_PROVIDER = re.compile(r'host\s+provider\s+"([^"]+)"')


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


def component_of(package: Path) -> tuple[Path, Path]:
    """The source and contract a package at ``<dir>/build/<stem>.kpkg`` is built from."""
    root = package.parent.parent
    return root / f"{package.stem}.cu", root / f"{package.stem}.kc"


def build_key(source: Path, contract: Path, compiler: str) -> str:
    from linker.toolchain import toolkit_versions

    h = hashlib.sha256()
    versions = toolkit_versions()
    for part in (f"kernlink {__version__}", f"compiler {compiler}", f"toolkit {versions}"):
        h.update(part.encode() + b"\0")
    files = [source, contract, *sorted(p for pattern in _HEADERS for p in source.parent.glob(pattern))]
    files += [
        p for p in (contract.parent / name for name in _PROVIDER.findall(contract.read_text("utf-8"))) if p.is_file()
    ]
    for path in files:
        h.update(path.name.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _key_file(package: Path) -> Path:
    return package.with_name(package.name + ".key")


def _reusable(package: Path, key: str) -> bool:
    from package.integrity import PackageDefect
    from package.kpkg import read_package

    try:
        if _key_file(package).read_text(encoding="utf-8").strip() != key:
            return False
        read_package(package)
    except (OSError, DiagnosticError, PackageDefect, ValueError):
        return False
    return True


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
    contracts beside it, and for each package its source, contract, the headers beside the source
    and the host providers' C sources — or, for a package with no source beside it, the package.
    The packages a build writes are not inputs (a rebuild would trigger the next one)."""
    found = {pipeline, *pipeline.parent.glob("*.kc")}
    try:
        packages = packages_of(pipeline)
    except DiagnosticError:
        return sorted(found)
    for package in packages:
        source, contract = component_of(package)
        if not source.is_file() or not contract.is_file():
            found.add(package)
            continue
        found.update((source, contract, *(p for pattern in _HEADERS for p in source.parent.glob(pattern))))
        try:
            named = _PROVIDER.findall(contract.read_text("utf-8"))
        except (OSError, UnicodeDecodeError):
            named = []
        found.update(contract.parent / name for name in named)
    return sorted(found)


def build(
    pipeline: str | Path,
    out_dir: str | Path,
    *,
    compiler: str = "nvrtc",
    target: str | None = None,
    memo: Memo | None = None,
) -> tuple[BuildResult, LinkResult | None]:
    """Pack every stale package of ``pipeline``, then link it into ``out_dir``; (steps, the link result).

    ``memo`` keeps the check's verdicts for the next build of the same process (``--watch``).
    """
    from kernlink.api import link
    from linker.pack import pack

    result = BuildResult()
    path = Path(pipeline)
    try:
        packages = packages_of(path)
    except DiagnosticError as err:
        result.diagnostics.extend(err.diagnostics)
        return result, None
    for package in packages:
        start = time.perf_counter()
        source, contract = component_of(package)
        if not source.is_file() or not contract.is_file():
            result.steps.append(Step(package, "given", 0.0, f"no `{source.name}` and `{contract.name}` beside it"))
            continue
        key = build_key(source, contract, compiler)
        why = "source, contract, headers or toolkit changed" if package.exists() else "no package yet"
        if _reusable(package, key):
            result.steps.append(Step(package, "reused", time.perf_counter() - start, "build key unchanged"))
            continue
        try:
            pack(source, contract, package, compiler="nvcc" if compiler == "nvcc" else "nvrtc")
        except DiagnosticError as err:
            result.diagnostics.extend(err.diagnostics)
            return result, None
        atomic_write_text(_key_file(package), key + "\n")
        result.steps.append(Step(package, "packed", time.perf_counter() - start, why))
    linked = link([path], out_dir, target=target, memo=memo)
    result.diagnostics.extend(linked.diagnostics)
    result.ok = linked.ok
    return result, linked


def summary(steps: Sequence[Step]) -> str:
    return "\n".join(f"{s.action:>7} {s.package} ({s.seconds * 1000:.0f} ms): {s.why}" for s in steps)
