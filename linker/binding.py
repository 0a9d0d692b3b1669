"""At link: the payloads of a stage package are what its own source compiles to.

The package's hashes prove integrity, not authenticity: whoever edits a package can
recompute them. The conformance facts bind the manifest to ``code.ptx`` (read time,
package/manifest.py), and L-CONFORM binds ``code.ptx`` to the contract. This step
closes the loop to the object that is linked: it compiles ``source.cu`` (with the
params probe) again with the recorded front end and options (NVRTC, from the
filesystem root, as ``kernlink pack`` did), lowers that LTO IR to PTX with nvJitLink
as pack did (``compile.ptx``), and requires the ``lto.ir`` payload and the
``code.ptx`` payload to be byte-identical to what that source gives. A mismatch is
``L-INTEGRITY``.

A pass is remembered on disk (:func:`diagnostics.files.user_cache_dir`, ``binding/``), keyed by the package's
bytes, the stage, the NVRTC version, the CUDA header wheels' versions and the code of
the modules that decide it; ``KERNLINK_NO_BINDING_CACHE=1`` turns the cache off. So a
link after a rebuild of one component compiles that component alone, not all of them.

What cannot be rebuilt here is an ``I-BINDING`` note, never a pass: a package made
by nvcc or by another NVRTC version, one without a source or PTX payload, or a
source that includes files the package does not carry.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from checker.clauses import l_integrity
from checker.conformance import PTX_PAYLOAD
from contract_lang import ast as A
from contract_lang.printer import print_node
from diagnostics.files import atomic_write_text, user_cache_dir
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from linker import layout
from linker.symbols import LTO_PTX_EXTRA, PTX_LINK_OPTIONS, compile_lto_and_ptx
from linker.toolchain import nvjitlink_version, nvrtc_version, stable_cwd
from package.kpkg import read_package
from package.manifest import LTO_PAYLOAD, SOURCE_PAYLOAD

NOTE_CODE = Code.I_BINDING
_FILE_PATH = re.compile(r'^(\s*\.file\s+\d+\s+)"(?:[^"]*/)?([^"/]*)"', re.M)


def normalise_ptx(ptx: str) -> str:
    """``.file 1 "/tmp/…/x.cu"`` → ``"x.cu"``: what a package stores has no host path."""
    return _FILE_PATH.sub(r'\1"\2"', ptx)


HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inc")


def carried_headers(payloads: Mapping[str, bytes]) -> dict[str, bytes]:
    """The local headers a package carries beside its source (``kernlink pack`` adds them)."""
    return {name: blob for name, blob in sorted(payloads.items()) if name.endswith(HEADER_SUFFIXES)}


def recorded_options(options: object) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """``-std``, the ``-D`` defines and the other options of a manifest's ``compile.options``."""
    listed = [str(o) for o in options] if isinstance(options, list) else []
    std = next((o.removeprefix("-std=") for o in listed if o.startswith("-std=")), "c++17")
    defines: dict[str, str] = {}
    for o in listed:
        if o.startswith("-D"):
            key, _, value = o[2:].partition("=")
            defines[key] = value
    own = ("-arch=", "-dlto", "-rdc=true", "-std=", "-D", "-ltoir")
    return std, defines, tuple(o for o in listed if not o.startswith(own))


def extra_include_dirs(compile_info: Mapping[str, object]) -> list[Path]:
    """Header folders a package's compile record names by kind (CUTLASS), found on this machine."""
    if compile_info.get("cutlass"):
        from linker.toolchain import cutlass_include_dir

        folder = cutlass_include_dir()
        return [folder] if folder is not None else []
    return []


def rebuild_problems(path: str, stage: A.Stage) -> list[Diagnostic]:
    """L-INTEGRITY errors and I-BINDING notes for one package file (cached by the file's bytes)."""
    data = Path(path).read_bytes()
    return list(_cached(hashlib.sha256(data).hexdigest(), path, stage))


@functools.lru_cache(maxsize=64)
def _cached(digest: str, path: str, stage: A.Stage) -> tuple[Diagnostic, ...]:
    """The verdict for a package's bytes: from this process, then from the disk cache, else rebuilt.

    Only a pass (no finding) is kept on disk; notes and errors are found again each time.
    """
    marker = _verdict_file(digest, stage)
    if marker is not None and marker.is_file():
        return ()
    found = tuple(_rebuild(path, stage))
    if not found and marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(marker, "binding verified: the payloads are what the source compiles to\n")
        except (OSError, DiagnosticError):
            pass  # the cache is an optimisation: a verdict not written is found again next time
    return found


#: The modules whose code decides the verdict: a change to any of them is a new cache key.
_DECIDERS = ("binding.py", "layout.py", "symbols.py", "toolchain.py")
#: The wheels whose headers, compiler and linker (the PTX lowering) the rebuild uses.
_WHEELS = (
    "nvidia-cuda-nvrtc",
    "nvidia-nvjitlink",
    "nvidia-cuda-runtime",
    "nvidia-cuda-crt",
    "nvidia-cuda-cccl",
    "nvidia-cutlass",
)


def _verdict_file(digest: str, stage: A.Stage) -> Path | None:
    """Where a pass for these package bytes is recorded: keyed by the bytes, the stage as checked, the
    NVRTC version, the header wheels' versions and kernlink's own deciding code. None: no cache."""
    if os.environ.get("KERNLINK_NO_BINDING_CACHE"):
        return None
    h = hashlib.sha256()
    for part in (digest, print_node(stage), repr(nvrtc_version()), _environment()):
        h.update(part.encode() + b"\0")
    return user_cache_dir() / "binding" / f"{h.hexdigest()}.ok"


@functools.cache
def _environment() -> str:
    here = Path(__file__).parent
    code = hashlib.sha256(b"".join((here / name).read_bytes() for name in _DECIDERS)).hexdigest()
    found = _wheel_versions()
    versions = [f"{wheel}=={found[wheel]}" if wheel in found else f"{wheel} absent" for wheel in _WHEELS]
    return "\n".join((code, *versions))


def _wheel_versions() -> dict[str, str]:
    """The installed version of each of ``_WHEELS``, from the name of its ``.dist-info`` folder.

    What ``importlib.metadata.version`` answers (the first one on ``sys.path`` wins, and an
    installer names the folder ``<name>-<version>.dist-info``) without importing it and the
    email parser it reads ``METADATA`` with: ~30 ms of every build.
    """
    wanted = {wheel.replace("-", "_").lower(): wheel for wheel in _WHEELS}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            stem, dot, ext = name.rpartition(".")
            project, dash, version = stem.partition("-")
            wheel = wanted.get(project.lower().replace("-", "_").replace(".", "_"))
            if dot and ext == "dist-info" and dash and wheel is not None:
                found.setdefault(wheel, version)
    return found


def _where(path: str) -> tuple[Label, ...]:
    return (Label(Span(path, 1, 1, 1, 1), "in this package"),)


def _note(path: str, why: str) -> Diagnostic:
    return Diagnostic(
        NOTE_CODE,
        f"the payloads of `{path}` were not rebuilt from its source: {why}",
        severity=Severity.NOTE,
        labels=_where(path),
        notes=("its LTO IR is linked as packed; nothing ties it to the code L-CONFORM checked",),
        helps=("repack it with `kernlink pack` (NVRTC, this kernlink's toolkit)",),
    )


def _rebuild(path: str, stage: A.Stage) -> list[Diagnostic]:
    with l_integrity.worded():
        pkg = read_package(path)
    compile_info = pkg.manifest.get("compile")
    source = pkg.payloads.get(SOURCE_PAYLOAD)
    ptx = pkg.payloads.get(PTX_PAYLOAD)
    if not isinstance(compile_info, dict) or source is None or ptx is None:
        return [_note(path, "it has no `compile` record, `source.cu` or `code.ptx`")]
    if compile_info.get("compiler") != "nvrtc":
        return [_note(path, f"it was compiled by `{compile_info.get('compiler')}`")]
    version = nvrtc_version()
    here = f"nvrtc {version[0]}.{version[1]}"
    if pkg.manifest.get("toolkit") != here:
        return [_note(path, f"it was compiled by `{pkg.manifest.get('toolkit')}`, this kernlink has `{here}`")]
    lowered = compile_info.get("ptx")
    if not isinstance(lowered, dict) or lowered.get("options") != list(PTX_LINK_OPTIONS):
        return [_note(path, "it was packed by an older kernlink (its PTX is not its LTO IR's)")]
    linker_here = "{}.{}".format(*nvjitlink_version())
    if lowered.get("nvjitlink") != linker_here:
        return [
            _note(path, f"its PTX was lowered by nvJitLink {lowered.get('nvjitlink')}, this kernlink has {linker_here}")
        ]
    name = str(compile_info.get("source") or "source.cu")
    target = str(pkg.manifest.get("target"))
    std, defines, extra = recorded_options(compile_info.get("options"))
    extra = (*extra, *LTO_PTX_EXTRA)
    with tempfile.TemporaryDirectory(prefix="kernlink-rebuild-") as tmp:
        include = [Path(tmp), *extra_include_dirs(compile_info)]
        for header, blob in carried_headers(pkg.payloads).items():
            (Path(tmp) / header).write_bytes(blob)
        (Path(tmp) / Path(name).name).write_bytes(source)
        try:
            text = source.decode("utf-8") + "\n" + layout.probe_source(layout.params_blocks(stage), stage.name)
            with stable_cwd():
                result, again = compile_lto_and_ptx(
                    text.encode(),
                    name,
                    arch=target,
                    include_dirs=include,
                    defines=defines,
                    std=std,
                    extra_options=extra,
                )
            if not isinstance(again, str):
                raise DiagnosticError(list(again))
            lto = result.ltoir
        except (DiagnosticError, UnicodeDecodeError):
            return [_note(path, "its source does not compile alone (it includes files the package does not carry)")]
    out = []
    for payload, rebuilt in ((LTO_PAYLOAD, lto), (PTX_PAYLOAD, normalise_ptx(again).encode("utf-8"))):
        if pkg.payloads.get(payload) != rebuilt:
            hashes = (
                hashlib.sha256(pkg.payloads.get(payload, b"")).hexdigest()[:16],
                hashlib.sha256(rebuilt).hexdigest()[:16],
            )
            out.append(l_integrity.payload_not_rebuilt(payload, str(path), SOURCE_PAYLOAD, here, hashes, _where(path)))
    return out
