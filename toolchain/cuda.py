"""Compile CUDA C++ to LTO IR (NVRTC, or nvcc on request) and device-link LTO IR with nvJitLink.

Pure toolchain: no contracts. Every failure is a :class:`DiagnosticError`:
``E-COMPILE`` for the compiler (one diagnostic per ``file(line): error`` in its
log, with a span), ``L-LINK`` for nvJitLink (its error log in the notes, the
result name such as ``ERROR_PTX_COMPILE`` in ``data``) and for a link whose
cubin lacks an expected kernel, which nvJitLink itself reports as success.

NVRTC and nvJitLink run in a child process (:func:`isolated`): a crash inside the
native library (a SIGSEGV in nvJitLink has been seen on a zero mbarrier count) kills
the child, not kernlink, and becomes ``E-COMPILE`` / ``L-LINK`` naming the signal,
so the caller still writes its outputs. The child is one long-lived worker per
process (started by the first call, replaced after a crash), so a build pays for one
process and one load of the native libraries, and a resident ``kernlink build
--watch`` for one in all. ``KERNLINK_NATIVE_FAULT=nvrtc|nvjitlink`` (read at each
call) makes the worker kill itself with SIGSEGV first: the tests' way to prove it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from cuda.bindings import nvjitlink, nvrtc

from diagnostics import Diagnostic, DiagnosticError, Label, Severity, Span
from diagnostics.files import temp_cache_dir
from diagnostics.symbols import Code
from toolchain.cubin import read_cubin

T = TypeVar("T")

#: The environment variable that makes the native child crash (fault injection for tests).
FAULT_ENV = "KERNLINK_NATIVE_FAULT"

#: NVRTC gained ``--use-bundled-headers`` (CUDA headers shipped inside NVRTC) in 13.3.
BUNDLED_HEADERS_SINCE = (13, 3)

_MESSAGE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<severity>catastrophic error|error|warning)"
    r"(?: #(?P<number>[\w-]+))?: (?P<text>.*)$"
)
_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)'")
_USED = re.compile(r"Used (?P<regs>\d+) registers(?:, used (?P<bars>\d+) barriers)?")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")
_NVCC_VERSION = re.compile(r"release (\d+)\.(\d+)")
#: A warning line of ptxas or nvJitLink (``ptxas warning : …``), and ptxas' advisories.
_TOOL_WARNING = re.compile(r"^\s*(?:ptxas|nvlink|nvJitLink|error)?\s*warning\s*:\s*(?P<text>.+?)\s*$", re.I | re.M)
_ADVISORY = re.compile(r"(?P<text>(?:\(C\d+\)\s*)?Potential Performance Loss:.+?)\s*$", re.M)


@dataclass(frozen=True)
class CompilerMessage:
    """One ``file(line): severity: text`` entry of a compiler log."""

    severity: Severity
    text: str
    span: Span


@dataclass(frozen=True)
class CompileResult:
    name: str
    arch: str
    ltoir: bytes
    log: str
    options: tuple[str, ...]
    compiler: str
    messages: tuple[CompilerMessage, ...]


@dataclass(frozen=True)
class PtxasUsage:
    """Resource use of one entry function as ptxas reports it under ``-verbose``."""

    kernel: str
    registers: int
    barriers: int
    static_smem: int


@dataclass(frozen=True)
class LinkResult:
    arch: str
    cubin: bytes
    info_log: str
    error_log: str
    kernels: tuple[str, ...]
    ptx: str | None = None

    def ptxas_usage(self) -> dict[str, PtxasUsage]:
        """Per-kernel registers, barriers and static smem from a ``verbose=True`` link."""
        return parse_ptxas_usage(self.info_log)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning and performance advisory ptxas or nvJitLink printed (see :func:`tool_warnings`)."""
        return tool_warnings(self.info_log + "\n" + self.error_log)


@dataclass(frozen=True)
class ToolkitVersions:
    nvrtc: tuple[int, int]
    nvjitlink: tuple[int, int]

    def as_dict(self) -> dict[str, str]:
        return {"nvrtc": _dotted(self.nvrtc), "nvjitlink": _dotted(self.nvjitlink)}


def _dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def nvrtc_version() -> tuple[int, int]:
    _, major, minor = nvrtc.nvrtcVersion()
    return (int(major), int(minor))


def nvjitlink_version() -> tuple[int, int]:
    major, minor = nvjitlink.version()
    return (int(major), int(minor))


def toolkit_versions() -> ToolkitVersions:
    return ToolkitVersions(nvrtc=nvrtc_version(), nvjitlink=nvjitlink_version())


def nvcc_path() -> str | None:
    """The nvcc on ``PATH`` (optional; kernlink never needs it)."""
    return shutil.which("nvcc")


def nvcc_version(nvcc: str | None = None) -> tuple[int, int] | None:
    exe = nvcc or nvcc_path()
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    found = _NVCC_VERSION.search(out)
    return (int(found.group(1)), int(found.group(2))) if found else None


@contextlib.contextmanager
def stable_cwd() -> Iterator[None]:
    """Run the compiler from the filesystem root: NVRTC writes the working directory into LTO IR."""
    before = os.getcwd()
    os.chdir(os.path.abspath(os.sep))
    try:
        yield
    finally:
        os.chdir(before)


def nvrtc_options(
    arch: str,
    *,
    std: str = "c++17",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    extra: Sequence[str] = (),
    cache_dir: Path | None = None,
    version: tuple[int, int] | None = None,
) -> tuple[str, ...]:
    """NVRTC options for LTO IR. Bundled headers go under ``cache_dir``, never ``~/.cache``."""
    opts = [f"-arch={arch}", "-dlto", "-rdc=true", f"-std={std}"]
    opts += [f"--include-path={os.fspath(d)}" for d in include_dirs]
    opts += [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    if (version or nvrtc_version()) >= BUNDLED_HEADERS_SINCE:
        headers = (cache_dir or temp_cache_dir()) / "nvrtc-headers"
        opts.append(f"--use-bundled-headers={headers}")
    else:  # the CUDA headers from PyPI, after the user's: <cuda_bf16.h>, <cuda_fp16.h>, <cuda/barrier>, …
        opts += [f"--include-path={os.fspath(d)}" for d in cuda_include_dirs()]
    opts += extra
    return tuple(opts)


@functools.cache
def cuda_include_dirs() -> tuple[Path, ...]:
    """The CUDA headers PyPI ships for NVRTC: ``nvidia-cuda-runtime`` (``cuda_bf16.h``, ``cuda_fp16.h``,
    ``vector_types.h`` …), ``nvidia-cuda-crt`` (``crt/``) and ``nvidia-cuda-cccl`` (``cuda/barrier``,
    ``cuda/std/…``), all under the ``nvidia/cu13`` namespace package; only the folders present."""
    try:
        import nvidia.cu13 as cu13
    except ImportError:
        return ()
    found: list[Path] = []
    for root in map(Path, cu13.__path__):
        for folder in (root / "include", root / "include" / "cccl"):
            if folder.is_dir() and folder not in found:
                found.append(folder)
    return tuple(found)


@functools.cache
def cutlass_include_dir() -> Path | None:
    """The CUTLASS/CuTe headers of the ``nvidia-cutlass`` wheel, when it is installed."""
    try:
        import cutlass_library
    except ImportError:
        return None
    for root in map(Path, cutlass_library.__path__):
        folder = root / "source" / "include"
        if (folder / "cute" / "tensor.hpp").is_file():
            return folder
    return None


def compile_nvrtc(
    source: str | bytes,
    name: str,
    *,
    arch: str = "sm_90a",
    std: str = "c++17",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    extra_options: Sequence[str] = (),
    cache_dir: Path | None = None,
) -> CompileResult:
    """Compile one translation unit to LTO IR with NVRTC."""
    text = source.encode() if isinstance(source, str) else source
    opts = nvrtc_options(
        arch, std=std, include_dirs=include_dirs, defines=defines, extra=extra_options, cache_dir=cache_dir
    )
    return isolated("nvrtc", compile_nvrtc_here, text, name, arch, opts)


def compile_nvrtc_here(
    text: bytes, name: str, arch: str, opts: tuple[str, ...], headers: tuple[tuple[str, bytes], ...] = ()
) -> CompileResult:
    """NVRTC itself, in this process (:func:`compile_nvrtc` runs it in a child process).

    ``headers``: (include name, text) pairs NVRTC finds in memory before any include path.
    """
    names = [n.encode() for n, _ in headers]
    err, prog = nvrtc.nvrtcCreateProgram(text, name.encode(), len(headers), [t for _, t in headers], names)
    _check_nvrtc(err, name, "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in opts]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _nvrtc_log(prog)
        messages = parse_compiler_log(log)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_error(name, arch, "nvrtc", result.name, log, messages)
        err, size = nvrtc.nvrtcGetLTOIRSize(prog)
        _check_nvrtc(err, name, "nvrtcGetLTOIRSize")
        out = bytearray(size)
        (err,) = nvrtc.nvrtcGetLTOIR(prog, out)
        _check_nvrtc(err, name, "nvrtcGetLTOIR")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompileResult(name, arch, bytes(out), log, opts, "nvrtc", messages)


def nvrtc_cubin_here(text: bytes, name: str, arch: str, opts: tuple[str, ...]) -> bytes:
    """NVRTC's cubin of ``text`` (no ``-dlto`` in ``opts``), in this process; run it through :func:`isolated`."""
    err, prog = nvrtc.nvrtcCreateProgram(text, name.encode(), 0, [], [])
    _check_nvrtc(err, name, "nvrtcCreateProgram")
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = _nvrtc_log(prog)
            raise _compile_error(name, arch, "nvrtc", result.name, log, parse_compiler_log(log))
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        _check_nvrtc(err, name, "nvrtcGetCUBINSize")
        out = bytearray(size)
        (err,) = nvrtc.nvrtcGetCUBIN(prog, out)
        _check_nvrtc(err, name, "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return bytes(out)


def compile_nvcc(
    source: str | bytes,
    name: str,
    *,
    arch: str = "sm_90a",
    std: str = "c++17",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    extra_options: Sequence[str] = (),
    nvcc: str | None = None,
) -> CompileResult:
    """Compile one translation unit to LTO IR with nvcc (``-dlto -arch=lto_XX -ltoir``)."""
    exe = nvcc or nvcc_path()
    if exe is None:
        raise DiagnosticError(
            [Diagnostic(Code.E_COMPILE, "nvcc is not installed", helps=("compile with NVRTC instead",))]
        )
    text = source.encode() if isinstance(source, str) else source
    opts = (
        f"-arch=lto_{arch.removeprefix('sm_')}",
        "-dlto",
        "-ltoir",
        "-rdc=true",
        f"-std={std}",
        *[f"-I{os.fspath(d)}" for d in include_dirs],
        *[f"-D{k}={v}" for k, v in sorted((defines or {}).items())],
        *extra_options,
    )
    base = Path(name).name or "source.cu"
    with tempfile.TemporaryDirectory(prefix="kernlink-nvcc-") as tmp:
        src, out = Path(tmp) / base, Path(tmp) / "out.ltoir"
        src.write_bytes(text)
        proc = subprocess.run([exe, *opts, base, "-o", out.name], cwd=tmp, capture_output=True, text=True, check=False)
        log = (proc.stdout + proc.stderr).replace(base + "(", name + "(")
        messages = parse_compiler_log(log)
        if proc.returncode != 0 or not out.exists():
            raise _compile_error(name, arch, "nvcc", f"exit status {proc.returncode}", log, messages)
        return CompileResult(name, arch, out.read_bytes(), log, opts, "nvcc", messages)


def link(
    inputs: Sequence[tuple[str, bytes]] | Mapping[str, bytes],
    *,
    arch: str = "sm_90a",
    kernels: Sequence[str] = (),
    verbose: bool = False,
    emit_ptx: bool = False,
    extra_options: Sequence[str] = (),
) -> LinkResult:
    """Device-link named LTO IR inputs into a cubin for ``arch``.

    ``kernels`` must all be in the result (with no names, at least one kernel must be).
    ``verbose`` puts ptxas' per-kernel report in ``info_log``; ``emit_ptx`` also runs a
    ``-ptx`` link (in the same child process) and returns the post-LTO PTX.
    """
    items = list(inputs.items()) if isinstance(inputs, Mapping) else list(inputs)
    opts = [f"-arch={arch}", *link_options(extra_options), *(["-verbose"] if verbose else []), *extra_options]
    ptx_opts = [o for o in opts if o != "-verbose"] + ["-ptx"]
    if emit_ptx:  # nvJitLink gives no PTX after a cubin link (nor a cubin after `-ptx`): two links, one child
        (cubin, info, errors), (ptx_bytes, _, _) = isolated("nvjitlink", _nvjitlink_both, items, opts, ptx_opts, arch)
    else:
        cubin, info, errors = isolated("nvjitlink", nvjitlink_here, items, opts, arch, "cubin")
    names = read_cubin(cubin, name=f"linked cubin for {arch}").kernel_names
    missing = [k for k in kernels if k not in names]
    if missing or not names:
        message = f"no kernel `{missing[0]}` in the linked cubin" if missing else "the linked cubin has no kernel"
        found = ", ".join(f"`{n}`" for n in names) or "none"
        listed = ", ".join(f"`{n}`" for n, _ in items)
        from checker.clauses import l_link  # the whole checker: imported only for a failed link

        raise DiagnosticError([l_link.kernel_missing(message, found, listed, arch, ",".join(missing))])
    return LinkResult(arch, cubin, info, errors, names, ptx_bytes.decode() if emit_ptx else None)


#: Drops the debug information of the inputs before optimisation (LLVM's ``-strip-debug`` in NVVM's
#: optimiser, an option nvJitLink passes through but does not document). Packages carry line
#: information in their LTO IR (``kernlink pack`` compiles with ``-lineinfo``: its PTX, lowered from
#: that LTO IR, names the CUDA lines L-CONFORM reports); without this, it would reach the linked
#: cubin (twice the size). With it, the cubin and PTX are byte-identical to a link of LTO IR compiled
#: without ``-lineinfo`` (tests/pack/test_single_compile.py). Asking for ``-lineinfo`` or ``-g``
#: keeps it.
STRIP_DEBUG = ("-Xnvvm=-Xopt", "-Xnvvm=-strip-debug")


def link_options(extra_options: Sequence[str] = ()) -> tuple[str, ...]:
    """The options of every device link besides ``-arch``, ``-verbose`` and ``extra_options``."""
    keep_debug = any(o in ("-lineinfo", "-g") for o in extra_options)
    return ("-lto", *(() if keep_debug else STRIP_DEBUG))


def isolated(library: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the native worker process, so that a crash in ``library`` (native code) is a diagnostic.

    ``fn`` must be a module-level function (it is sent to the worker by name); it runs in this
    process's working directory and environment of the moment, as in a child forked for it. The worker's
    :class:`DiagnosticError` is raised here; a worker killed by a signal (or exiting without an
    answer) is ``L-LINK`` for nvJitLink and ``E-COMPILE`` for NVRTC, and the next call starts a
    new worker.
    """
    fault = os.environ.get(FAULT_ENV) == library
    with _WORKER_LOCK:
        worker = _worker()
        try:
            worker.conn.send((fn, args, fault, os.getcwd(), dict(os.environ)))
            kind, value = worker.conn.recv()
        except (EOFError, OSError):
            kind, value = "died", None
        except BaseException:  # Ctrl-C mid-answer: the pipe's state is unknown, so this worker is done
            _retire(worker, kill=True)
            raise
        if kind == "died":
            _retire(worker, kill=False)
    if kind == "ok":
        return value  # type: ignore[no-any-return]
    if kind == "diagnostics":
        raise DiagnosticError(value)
    if kind == "error":
        raise RuntimeError(f"{library} child process: {value}")
    raise DiagnosticError([_crashed(library, worker.process.exitcode, args)])


@dataclass
class _Worker:
    """The child process that runs NVRTC and nvJitLink for this process, one request at a time.

    It lives as long as this process (a resident ``kernlink build --watch`` keeps one across
    rebuilds): the native libraries are loaded once, and each compile or link is a message on
    a pipe, not a new process. One that dies is replaced by the next call.
    """

    process: Any  # multiprocessing.Process
    conn: Connection
    owner: int  # the pid that started it: a forked copy of this process starts its own


_WORKER_LOCK = threading.Lock()
_WORKERS: list[_Worker] = []


def _worker() -> _Worker:
    if _WORKERS and _WORKERS[0].owner == os.getpid() and _WORKERS[0].process.is_alive():
        return _WORKERS[0]
    if _WORKERS and _WORKERS[0].owner == os.getpid():
        _retire(_WORKERS[0], kill=True)
    _WORKERS.clear()
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    mine, theirs = ctx.Pipe(duplex=True)
    process = ctx.Process(target=_serve, args=(theirs, mine), daemon=True, name="kernlink-native")  # type: ignore[attr-defined]
    process.start()
    theirs.close()
    _WORKERS.append(_Worker(process, mine, os.getpid()))
    return _WORKERS[0]


def _retire(worker: _Worker, *, kill: bool) -> None:
    """Close the pipe to ``worker`` and reap it (after killing it, with ``kill``)."""
    if kill and worker.process.is_alive():
        worker.process.kill()
    worker.conn.close()
    worker.process.join()
    if _WORKERS and _WORKERS[0] is worker:
        _WORKERS.clear()


def restart_native_worker() -> None:
    """Retire this process's native worker; the next call starts a new one. NVRTC's time trace
    (packing/opened.py) is left broken in a process where a traced compile failed."""
    with _WORKER_LOCK:
        if _WORKERS and _WORKERS[0].owner == os.getpid():
            _retire(_WORKERS[0], kill=True)


def native_worker_pid() -> int | None:
    """The pid of this process's native worker, when one is running (benchmarks read its CPU time)."""
    if _WORKERS and _WORKERS[0].owner == os.getpid() and _WORKERS[0].process.is_alive():
        return int(_WORKERS[0].process.pid)
    return None


def _serve(conn: Connection, parents_end: Connection) -> None:
    """The worker's loop: run each request, answer it; end when the parent closes the pipe or dies.

    A forked worker inherits the parent's end of the pipe too; it closes it first, or the pipe
    would never report the parent's end and a worker whose parent was killed would live on.
    """
    if not parents_end.closed:
        parents_end.close()
    faulthandler.disable()  # the parent reports a crash; no Python stack dump from the child
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it retires the worker
    while True:
        try:
            fn, args, fault, cwd, env = conn.recv()
        except (EOFError, OSError):
            return
        if os.getcwd() != cwd:  # as a child forked for this call would be: NVRTC records the cwd in LTO IR
            os.chdir(cwd)
        if os.environ != env:
            os.environ.clear()
            os.environ.update(env)
        if fault:
            os.kill(os.getpid(), signal.SIGSEGV)
        try:
            answer: tuple[str, Any] = ("ok", fn(*args))
        except DiagnosticError as err:
            answer = ("diagnostics", err.diagnostics)
        except Exception as exc:  # reported to the parent, which raises it as a kernlink bug
            answer = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(answer)


def _crashed(library: str, exitcode: int | None, args: tuple[Any, ...]) -> Diagnostic:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"was killed by signal {-exitcode}"
    else:
        how = f"exited with status {exitcode} without an answer"
    notes = ("the crash happened inside the native library, in a child process; kernlink itself did not crash",)
    helps = (
        "report it to NVIDIA and to kernlink with the generated source and inputs; the output directory "
        "holds `generated.cu`, `link.map` and `link.json`",
    )
    if library == "nvjitlink":
        items: Sequence[tuple[str, bytes]] = args[0]
        names = ", ".join(f"`{n}`" for n, _ in items) or "no inputs"
        from checker.clauses import l_link

        return l_link.linker_crashed(names, args[2], how, str(exitcode), notes, helps)
    return Diagnostic(
        Code.E_COMPILE,
        f"NVRTC crashed compiling `{args[1]}` for `{args[2]}`: the compiler process {how}",
        notes=notes,
        helps=helps,
        data=(("compiler", "nvrtc"), ("result", "crashed"), ("exitcode", str(exitcode))),
    )


def parse_compiler_log(log: str) -> tuple[CompilerMessage, ...]:
    """The ``file(line): error|warning: text`` entries of an NVRTC/nvcc log, with columns.

    The EDG front end echoes the source line indented by two blanks and puts a caret
    under the offending token; the caret's position gives the column.
    """
    lines = log.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = _MESSAGE.match(line)
        if not match:
            continue
        col, width = 1, 1
        if i + 2 < len(lines) and lines[i + 2].strip() == "^" and lines[i + 1].startswith("  "):
            col = max(1, lines[i + 2].index("^") - 1)
            token = re.match(r"[A-Za-z_]\w*|\S", lines[i + 1][col + 1 :])
            width = len(token.group(0)) if token else 1
        row = int(match["line"])
        severity = Severity.WARNING if match["severity"] == "warning" else Severity.ERROR
        span = Span(match["file"], max(row, 1), col, max(row, 1), col + width)
        found.append(CompilerMessage(severity, match["text"].rstrip(". "), span))
    return tuple(found)


def tool_warnings(log: str) -> tuple[str, ...]:
    """The warnings (``ptxas warning : …``) and advisories (``Potential Performance Loss: …``) of a
    link log, in order, each once: a dropped ``.minnctapersm``, an ignored ``setmaxnreg``, spills."""
    found = [(m.start(), m["text"]) for m in _TOOL_WARNING.finditer(log)]
    found += [(m.start(), m["text"]) for m in _ADVISORY.finditer(log)]
    return tuple(dict.fromkeys(text for _, text in sorted(found)))


def parse_ptxas_usage(info_log: str) -> dict[str, PtxasUsage]:
    usage: dict[str, PtxasUsage] = {}
    current: str | None = None
    for line in info_log.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = entry["name"]
            continue
        used = _USED.search(line)
        if used and current is not None:
            smem = _SMEM.search(line)
            usage[current] = PtxasUsage(
                current, int(used["regs"]), int(used["bars"] or 0), int(smem["smem"]) if smem else 0
            )
            current = None
    return usage


def _nvjitlink_both(
    items: list[tuple[str, bytes]], opts: list[str], ptx_opts: list[str], arch: str
) -> tuple[tuple[bytes, str, str], tuple[bytes, str, str]]:
    """The cubin link and the PTX link (in one child process)."""
    return nvjitlink_here(items, opts, arch, "cubin"), nvjitlink_here(items, ptx_opts, arch, "ptx")


def nvjitlink_here(items: list[tuple[str, bytes]], opts: list[str], arch: str, want: str) -> tuple[bytes, str, str]:
    """nvJitLink itself (in the child process)."""
    handle = None
    try:
        handle = nvjitlink.create(len(opts), opts)
        for name, data in items:
            nvjitlink.add_data(handle, nvjitlink.InputType.LTOIR, data, len(data), name)
        nvjitlink.complete(handle)
        if want == "ptx":
            out = bytearray(nvjitlink.get_linked_ptx_size(handle))
            nvjitlink.get_linked_ptx(handle, out)
            out = out.rstrip(b"\0")
        else:
            out = bytearray(nvjitlink.get_linked_cubin_size(handle))
            nvjitlink.get_linked_cubin(handle, out)
        return bytes(out), _log(handle, "info"), _log(handle, "error")
    except nvjitlink.nvJitLinkError as exc:
        result = nvjitlink.Result(exc.status).name
        error_log = _log(handle, "error") if handle is not None else ""
        raise _link_error(items, arch, result, error_log) from None
    finally:
        if handle is not None:
            nvjitlink.destroy(handle)


def _log(handle: int, which: str) -> str:
    size = getattr(nvjitlink, f"get_{which}_log_size")(handle)
    buf = bytearray(size)
    if size:
        getattr(nvjitlink, f"get_{which}_log")(handle, buf)
    return _clean(buf)


def _nvrtc_log(prog: object) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return _clean(buf)


def _clean(raw: bytes | bytearray) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode(errors="replace").strip()


def _check_nvrtc(err: object, name: str, call: str) -> None:
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


def _compile_error(
    name: str, arch: str, compiler: str, result: str, log: str, messages: tuple[CompilerMessage, ...]
) -> DiagnosticError:
    data = (("compiler", compiler), ("arch", arch), ("result", result), ("log", log))
    helps: tuple[str, ...] = ()
    version = nvrtc_version()
    if compiler == "nvrtc" and "open source file" in log and version < BUNDLED_HEADERS_SINCE:
        helps = (
            f"NVRTC {_dotted(version)} bundles no CUDA headers: pack with `kernlink pack --compiler nvcc` "
            "(the nvcc on PATH finds the toolkit's headers); headers of your own go beside the source, "
            "whose directory is on the include path",
        )
    errors = [m for m in messages if m.severity is Severity.ERROR]
    if not errors:
        notes = tuple(line for line in log.splitlines() if line.strip())
        return DiagnosticError(
            [
                Diagnostic(
                    Code.E_COMPILE,
                    f"{compiler} could not compile `{name}` for `{arch}` ({result})",
                    notes=notes,
                    helps=helps,
                    data=data,
                )
            ]
        )
    return DiagnosticError(
        [Diagnostic(Code.E_COMPILE, m.text, labels=(Label(m.span, ""),), helps=helps, data=data) for m in errors]
    )


_LINK_HELP = {
    "ERROR_PTX_COMPILE": "an `Unresolved extern` names a symbol that no input defines: add the input that defines it",
    "ERROR_NVVM_COMPILE": "a symbol defined in two inputs is `multiply defined`: keep one "
    "definition, or give the others internal linkage",
    "ERROR_ARCH_MISMATCH": "an input was compiled for a newer architecture than the link "
    "target: recompile it for the target",
    "ERROR_LTO_NOT_ENABLED": "LTO IR inputs need `-lto`",
    "ERROR_INCORRECT_INPUT_TYPE": "an input is not LTO IR",
}


_UNRESOLVED = re.compile(r"Unresolved extern function '([^']+)'")
_GENERATED_HELP = (
    "`{name}` is a kernlink name: the generated code defines it, and no component may; no input "
    "defining it means kernlink did not generate it (a contract item that reads it is missing, or a kernlink bug)"
)


def _link_error(items: list[tuple[str, bytes]], arch: str, result: str, error_log: str) -> DiagnosticError:
    from checker.clauses import l_link

    names = ", ".join(f"`{n}`" for n, _ in items) or "no inputs"
    unresolved = _UNRESOLVED.search(error_log)
    if unresolved and unresolved.group(1).startswith("kl_"):
        help_text: str | None = _GENERATED_HELP.format(name=unresolved.group(1))
    else:
        help_text = _LINK_HELP.get(result)
    return DiagnosticError([l_link.linker_failed(names, arch, result, error_log, help_text)])
