"""At link: the payloads of a stage package are what its own source compiles to.

The package's hashes prove integrity, not authenticity: whoever edits a package can
recompute them. The conformance facts bind the manifest to ``code.ptx`` (read time,
package/manifest.py), and L-CONFORM binds ``code.ptx`` to the contract. This step
closes the loop to the object that is linked: it compiles ``source.cu`` (with the
params probe) again with the recorded front end and options and only the headers the
package carries (:class:`Alone`: NVRTC, headers in memory, from the filesystem root),
lowers that LTO IR to PTX with nvJitLink as pack did (``compile.ptx``), and requires
the ``lto.ir`` payload and the ``code.ptx`` payload to be byte-identical to what that
source gives. A mismatch is ``L-INTEGRITY``.

A pass is remembered on disk (:func:`diagnostics.files.user_cache_dir`, ``binding/``), keyed by the package's
bytes, the stage, the NVRTC version, the CUDA header wheels' versions and the code of
the modules that decide it; ``KERNLINK_NO_BINDING_CACHE=1`` turns the cache off. So a
link after a rebuild of one component compiles that component alone, not all of them.
``kernlink pack`` records the pass itself when its compile was this very rebuild
(:func:`remember_pass`): then the link compiles nothing again.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from linker.toolchain import CompileResult, nvjitlink_version, nvrtc_version, stable_cwd
from package.kpkg import Package, read_package
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
    if not found:
        _record_pass(marker)
    return found


def _record_pass(marker: Path | None) -> None:
    if marker is None:
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(marker, "binding verified: the payloads are what the source compiles to\n")
    except (OSError, DiagnosticError):
        pass  # the cache is an optimisation: a verdict not written is found again next time


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


@dataclass(frozen=True)
class Alone:
    """The compile a rebuild repeats: a package's source with the params probe and only the headers
    it carries, given to NVRTC in memory by their include names (the source, too, under its own
    name), with the recorded options, from the filesystem root; then nvJitLink's lowering to PTX.

    ``kernlink pack`` runs this very compile when it can show the source sees nothing else
    (linker/pack.py ``alone_inputs``): a package whose rebuild inputs, read back from its file,
    equal the ones it was packed with passes this check by construction (:func:`remember_pass`).
    """

    source: bytes
    headers: tuple[tuple[str, bytes], ...]
    name: str
    target: str
    std: str
    defines: tuple[tuple[str, str], ...]
    extra: tuple[str, ...]  # recorded, without LTO_PTX_EXTRA
    cutlass: bool
    probe: str

    def run(self, absent: Sequence[str] = (), options: Sequence[str] = ()) -> tuple[CompileResult, str]:
        """The compile and its normalised PTX. Each of ``absent`` is an include name that must not be
        found: it is given as a header that is an ``#error``. ``options`` are added for this run only
        (``kernlink pack`` asks what the compile opened: linker/opened.py). Raises
        :class:`DiagnosticError` (the compile or the lowering) and ``UnicodeDecodeError``."""
        text = self.source.decode("utf-8") + "\n" + self.probe
        given = dict(self.headers)
        given.setdefault(Path(self.name).name, self.source)
        poison = {
            n: f'#error "`{n}` is beside the source, and the package does not carry it"\n'.encode() for n in absent
        }
        with stable_cwd():
            result, ptx = compile_lto_and_ptx(
                text.encode(),
                self.name,
                arch=self.target,
                include_dirs=extra_include_dirs({"cutlass": self.cutlass}),
                headers=tuple(sorted({**poison, **given}.items())),
                defines=dict(self.defines),
                std=self.std,
                extra_options=(*self.extra, *LTO_PTX_EXTRA, *options),
            )
        if not isinstance(ptx, str):
            raise DiagnosticError(list(ptx))
        return result, normalise_ptx(ptx)


def rebuild_inputs(pkg: Package, stage: A.Stage) -> Alone | str:
    """What a rebuild of ``pkg`` compiles, or why it cannot be rebuilt here (an I-BINDING note's words)."""
    compile_info = pkg.manifest.get("compile")
    source = pkg.payloads.get(SOURCE_PAYLOAD)
    ptx = pkg.payloads.get(PTX_PAYLOAD)
    if not isinstance(compile_info, dict) or source is None or ptx is None:
        return "it has no `compile` record, `source.cu` or `code.ptx`"
    if compile_info.get("compiler") != "nvrtc":
        return f"it was compiled by `{compile_info.get('compiler')}`"
    version = nvrtc_version()
    here = f"nvrtc {version[0]}.{version[1]}"
    if pkg.manifest.get("toolkit") != here:
        return f"it was compiled by `{pkg.manifest.get('toolkit')}`, this kernlink has `{here}`"
    lowered = compile_info.get("ptx")
    if not isinstance(lowered, dict) or lowered.get("options") != list(PTX_LINK_OPTIONS):
        return "it was packed by an older kernlink (its PTX is not its LTO IR's)"
    linker_here = "{}.{}".format(*nvjitlink_version())
    if lowered.get("nvjitlink") != linker_here:
        return f"its PTX was lowered by nvJitLink {lowered.get('nvjitlink')}, this kernlink has {linker_here}"
    std, defines, extra = recorded_options(compile_info.get("options"))
    return Alone(
        source,
        tuple(carried_headers(pkg.payloads).items()),
        str(compile_info.get("source") or "source.cu"),
        str(pkg.manifest.get("target")),
        std,
        tuple(sorted(defines.items())),
        extra,
        bool(compile_info.get("cutlass")),
        layout.probe_source(layout.params_blocks(stage), stage.name),
    )


def remember_pass(path: Path, stage: A.Stage, alone: Alone, result: CompileResult, ptx: str) -> None:
    """Record the pass of a package ``kernlink pack`` just wrote from ``alone``'s compile.

    By construction, not by trust: the inputs a rebuild would take from the written file must
    equal ``alone`` and its payloads must be what ``alone`` compiled to, so a rebuild repeats
    this very compile (NVRTC and nvJitLink are deterministic: the check itself relies on it).
    Anything else records nothing, and the link rebuilds the package as usual.
    """
    try:
        data = path.read_bytes()
        with l_integrity.worded():
            pkg = read_package(path)
    except (OSError, DiagnosticError):
        return
    if rebuild_inputs(pkg, stage) != alone:
        return
    if pkg.payloads.get(LTO_PAYLOAD) != result.ltoir or pkg.payloads.get(PTX_PAYLOAD) != ptx.encode("utf-8"):
        return
    _record_pass(_verdict_file(hashlib.sha256(data).hexdigest(), stage))


def _rebuild(path: str, stage: A.Stage) -> list[Diagnostic]:
    with l_integrity.worded():
        pkg = read_package(path)
    inputs = rebuild_inputs(pkg, stage)
    if isinstance(inputs, str):
        return [_note(path, inputs)]
    try:
        result, again = inputs.run()
    except (DiagnosticError, UnicodeDecodeError):
        return [_note(path, "its source does not compile alone (it includes files the package does not carry)")]
    here = "nvrtc {}.{}".format(*nvrtc_version())
    out = []
    for payload, rebuilt in ((LTO_PAYLOAD, result.ltoir), (PTX_PAYLOAD, again.encode("utf-8"))):
        if pkg.payloads.get(payload) != rebuilt:
            hashes = (
                hashlib.sha256(pkg.payloads.get(payload, b"")).hexdigest()[:16],
                hashlib.sha256(rebuilt).hexdigest()[:16],
            )
            out.append(l_integrity.payload_not_rebuilt(payload, str(path), SOURCE_PAYLOAD, here, hashes, _where(path)))
    return out
