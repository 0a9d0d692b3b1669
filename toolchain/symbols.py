"""Which device symbols a component defines and which it needs, as its compiler saw them.

NVRTC's LTO IR is an opaque container (no public reader; LLVM's tools and the public
libNVVM do not open it: ``nvvmAddModuleToProgram`` takes it, ``nvvmCompileProgram``
fails with "parse expected top-level entity"), so the symbols are read from PTX.
That PTX is nvJitLink's lowering of the one LTO IR, NVRTC's (:func:`compile_lto_and_ptx`) or
nvcc's (packing/pack.py): ``-lto -ptx -Xnvvm=--device-c``, a separate-compilation build that
keeps every external definition and declaration. At module scope PTX declares

* ``.visible .func`` / ``.visible .entry`` / ``.visible .global`` — a definition
  other objects can link against (``defined``);
* ``.extern .func`` / ``.extern .global`` — a reference the link must resolve
  (``needed``): handle functions, call trampolines, the toolkit's ``vprintf``.

``.weak`` definitions (inline functions, template instances) can be merged at link
time and are left out; so are functions without linkage (``static``, anonymous
namespaces), ``.shared`` variables (the dynamic shared memory array) and ``.local``.
A reference that optimisation removes (dead code) is not needed here and is not
needed by the device link either: LTO runs the same optimiser first.

Each symbol also gets its PTX prototype — ``.func`` or ``.entry``, and the PTX types
of its return and parameter slots — so checks can tell a handle (``() -> b32``) or
a role entry (``(b64, b64)``) declared with the wrong signature.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from cuda.bindings import nvrtc

from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from package.abi import TOOLKIT_EXTERNS as TOOLKIT_EXTERNS
from package.captured import Prototype as Prototype
from package.captured import SymbolKind as SymbolKind
from package.codefacts.ptx import declarations
from toolchain.cuda import (
    CompileResult,
    compile_nvrtc_here,
    isolated,
    nvcc_path,
    nvjitlink_here,
    nvrtc_options,
    parse_compiler_log,
)


@dataclass(frozen=True)
class SymbolTable:
    """The external device symbols of one translation unit."""

    defined: Mapping[str, Prototype]
    needed: Mapping[str, Prototype]

    def without(self, names: Iterable[str]) -> SymbolTable:
        drop = set(names)
        return SymbolTable(
            _frozen({k: v for k, v in self.defined.items() if k not in drop}),
            _frozen({k: v for k, v in self.needed.items() if k not in drop}),
        )

    def prototypes(self) -> dict[str, Prototype]:
        return {**self.needed, **self.defined}


def read_ptx_symbols(ptx: str) -> SymbolTable:
    """The defined and needed device symbols declared at module scope of a PTX module."""
    defined: dict[str, Prototype] = {}
    needed: dict[str, Prototype] = {}
    for declared in declarations(ptx):
        if declared.linkage == ".visible":
            defined[declared.name] = declared.prototype
        elif declared.linkage == ".extern":
            needed[declared.name] = declared.prototype
    for name in defined:
        needed.pop(name, None)
    return SymbolTable(_frozen(defined), _frozen(needed))


def compile_ptx(
    source: str | bytes,
    name: str,
    *,
    arch: str,
    compiler: str = "nvrtc",
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    extra_options: Sequence[str] = (),
    std: str = "c++17",
) -> str:
    """PTX for one translation unit with the options of the LTO build, minus ``-dlto`` (plus ``extra_options``).

    NVRTC compiles for the virtual architecture of ``arch`` (``compute_90a`` for
    ``sm_90a``): the same PTX, without the machine code NVRTC would also build.

    Raises ``DiagnosticError`` (``E-COMPILE``) when the compiler rejects the source.
    """
    text = source.encode() if isinstance(source, str) else source
    if compiler == "nvcc":
        return _ptx_nvcc(text, name, arch, include_dirs, defines, extra_options, std)
    opts = ptx_options(arch, include_dirs=include_dirs, defines=defines, extra_options=extra_options, std=std)
    return isolated("nvrtc", _ptx_nvrtc, text, name, arch, opts)


def ptx_options(
    arch: str,
    *,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    extra_options: Sequence[str] = (),
    std: str = "c++17",
) -> tuple[str, ...]:
    """NVRTC's options for :func:`compile_ptx`: the LTO build's, minus ``-dlto``, for the virtual architecture.

    A virtual architecture gives PTX only; with ``sm_XX`` NVRTC would also run ptxas (twice the time).
    """
    virtual = arch.replace("sm_", "compute_", 1)
    opts = [o for o in nvrtc_options(virtual, std=std, include_dirs=include_dirs, defines=defines) if o != "-dlto"]
    return (*opts, *extra_options)


#: The nvJitLink options that turn one component's LTO IR into its PTX: ``-lto -ptx`` alone is a
#: whole-program link (every device function that is not a kernel is internalised and, unused,
#: dropped, and the references it made go with it); ``-Xnvvm=--device-c`` makes it the
#: separate-compilation build NVRTC's ``-rdc=true`` is, so external definitions and references stay.
#: ``-lineinfo`` keeps the ``.loc`` lines the LTO IR carries (it is compiled with ``-lineinfo``).
PTX_LINK_OPTIONS = ("-lto", "-ptx", "-Xnvvm=--device-c", "-lineinfo")
#: What the LTO IR compile adds for that PTX: line information (L-CONFORM names the CUDA line).
LTO_PTX_EXTRA = ("-lineinfo",)


def compile_lto_and_ptx(
    source: bytes,
    name: str,
    *,
    arch: str,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    std: str = "c++17",
    extra_options: Sequence[str] = (),
    headers: Sequence[tuple[str, bytes]] = (),
) -> tuple[CompileResult, str | tuple[Diagnostic, ...]]:
    """NVRTC's LTO IR of ``source`` and the PTX of that same LTO IR: one compile, then nvJitLink.

    ``headers``: (include name, text) pairs NVRTC finds in memory before ``include_dirs``.

    NVRTC gives one kind of output per compile (a ``-dlto`` program's PTX is empty), so the PTX
    is not asked of NVRTC: nvJitLink lowers the one component's LTO IR with :data:`PTX_LINK_OPTIONS`
    (both run in the native worker, toolchain/cuda.py). The PTX that `kernlink pack` reads
    symbols, the params probe and the conformance facts from is therefore the code of the LTO
    IR that is linked, not of a second compile. The compile's errors are raised; nvJitLink's
    come back as the second value.
    """
    lto_opts = nvrtc_options(arch, std=std, include_dirs=include_dirs, defines=defines, extra=extra_options)
    lto = isolated("nvrtc", compile_nvrtc_here, source, name, arch, lto_opts, tuple(headers))
    try:
        ptx, _, _ = isolated(
            "nvjitlink", nvjitlink_here, [(name, lto.ltoir)], list(ptx_link_options(arch)), arch, "ptx"
        )
    except DiagnosticError as err:
        return lto, tuple(err.diagnostics)
    return lto, _text(ptx)


def ptx_link_options(arch: str) -> tuple[str, ...]:
    return (f"-arch={arch}", *PTX_LINK_OPTIONS)


def ptx_record() -> dict[str, object]:
    """The manifest's ``compile.ptx``: the PTX payload is nvJitLink's lowering of the LTO IR payload."""
    from toolchain.cuda import nvjitlink_version

    major, minor = nvjitlink_version()
    return {
        "from": "lto.ir",
        "nvrtc": list(LTO_PTX_EXTRA),
        "nvjitlink": f"{major}.{minor}",
        "options": list(PTX_LINK_OPTIONS),
    }


def _ptx_nvrtc(text: bytes, name: str, arch: str, opts: Sequence[str]) -> str:
    """NVRTC to PTX (in the toolchain's child process, so a crash is a diagnostic)."""
    err, prog = nvrtc.nvrtcCreateProgram(text, name.encode(), 0, [], [])
    _nvrtc_ok(err, name, "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in opts]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = bytearray(size)
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise _ptx_error(name, arch, "nvrtc", _text(log))
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _nvrtc_ok(err, name, "nvrtcGetPTXSize")
        out = bytearray(size)
        (err,) = nvrtc.nvrtcGetPTX(prog, out)
        _nvrtc_ok(err, name, "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return _text(out)


def _ptx_nvcc(
    text: bytes,
    name: str,
    arch: str,
    include_dirs: Sequence[str | os.PathLike[str]],
    defines: Mapping[str, str] | None,
    extra: Sequence[str] = (),
    std: str = "c++17",
) -> str:
    exe = nvcc_path()
    if exe is None:
        raise DiagnosticError(
            [Diagnostic(Code.E_COMPILE, "nvcc is not installed", helps=("compile with NVRTC instead",))]
        )
    base = Path(name).name or "source.cu"
    opts = [
        f"-arch={arch}",
        "-ptx",
        "-rdc=true",
        f"-std={std}",
        *[f"-I{os.fspath(d)}" for d in include_dirs],
        *[f"-D{k}={v}" for k, v in sorted((defines or {}).items())],
        *extra,
    ]
    with tempfile.TemporaryDirectory(prefix="kernlink-ptx-") as tmp:
        (Path(tmp) / base).write_bytes(text)
        proc = subprocess.run([exe, *opts, base, "-o", "out.ptx"], cwd=tmp, capture_output=True, text=True, check=False)
        out = Path(tmp) / "out.ptx"
        if proc.returncode != 0 or not out.exists():
            log = (proc.stdout + proc.stderr).replace(base + "(", name + "(")
            raise _ptx_error(name, arch, "nvcc", log)
        return out.read_text(encoding="utf-8", errors="replace")


def _frozen(table: dict[str, Prototype]) -> Mapping[str, Prototype]:
    return MappingProxyType(dict(sorted(table.items())))


def _text(raw: bytes | bytearray) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")


def _nvrtc_ok(err: object, name: str, call: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        label = getattr(err, "name", str(err))
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_COMPILE,
                    f"`{call}` failed for `{name}`: {label}",
                    data=(("compiler", "nvrtc"), ("result", label)),
                )
            ]
        )


def _ptx_error(name: str, arch: str, compiler: str, log: str) -> DiagnosticError:
    messages = [m for m in parse_compiler_log(log) if m.severity.value == "error"]
    notes = tuple(f"{m.span.file}:{m.span.line}: {m.text}" for m in messages) or tuple(
        line for line in log.splitlines() if line.strip()
    )
    return DiagnosticError(
        [
            Diagnostic(
                Code.E_COMPILE,
                f"{compiler} could not compile `{name}` to PTX for `{arch}`",
                notes=notes,
                data=(("compiler", compiler), ("arch", arch), ("log", log)),
            )
        ]
    )
