"""The host providers of a linked kernel, built with the system C compiler and called through ctypes.

`kernlink link` writes each stage's called host provider (``host provider "x.c" fn F``)
into the link directory and lists them in ``link.json`` (``providers``, in stage order).
:class:`Providers` compiles those C files into one shared object and calls them on a
params block, as ``kl_<pipeline>_provide`` in ``kernel.h`` does from C.

They are compiled, not ported to Python: a provider is the stage author's C code, and
the C launch helper runs that code; a Python port would be a second implementation per
provider, free to drift from the first. The shared object is cached by the sources'
hash, the compiler and the ``cuda.h`` it was built against (``$KERNLINK_CACHE`` or the
user cache directory, ``providers/``), so a session pays the compile once per change.
It is linked against nothing: the CUDA driver (``libcuda.so.1``) is loaded first with
global symbols, which the providers' driver calls resolve to.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnostics.files import atomic_write_bytes
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.symbols import Code

_CUDA_SUCCESS = 0


@dataclass(frozen=True)
class Provider:
    """One provider as ``link.json`` lists it."""

    stage: str
    function: str
    file: str
    fills: tuple[str, ...]
    offset: int | None

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Provider:
        offset = item.get("offset")
        return cls(
            str(item["stage"]),
            str(item["function"]),
            str(item["file"]),
            tuple(str(f) for f in item.get("fills") or ()),
            None if offset is None else int(offset),
        )


def cuda_include() -> Path | None:
    """A folder with the driver API's ``cuda.h``: the PyPI CUDA headers, ``$CUDA_HOME``, nvcc's toolkit, or
    ``/usr/local/cuda``."""
    from linker.toolchain import cuda_include_dirs

    candidates = list(cuda_include_dirs())
    for root in (os.environ.get("CUDA_HOME", ""), _nvcc_root(), "/usr/local/cuda"):
        if root:
            candidates.append(Path(root) / "include")
    return next((c for c in candidates if (c / "cuda.h").is_file()), None)


def _nvcc_root() -> str:
    nvcc = shutil.which("nvcc")
    return str(Path(nvcc).resolve().parent.parent) if nvcc else ""


def _error(message: str, *notes: str, help_text: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_RUN, message, notes=notes, helps=(help_text,))])


class Providers:
    """The providers of one link directory, compiled and loaded (none: nothing is compiled)."""

    def __init__(self, link_dir: str | Path, link_map: Mapping[str, Any]) -> None:
        self.providers = tuple(Provider.from_json(p) for p in link_map.get("providers") or ())
        self._calls: list[tuple[Provider, Any]] = []
        if not self.providers:
            return
        path = build_library(Path(link_dir), self.providers)
        _load_driver()
        library = ctypes.CDLL(str(path))
        for provider in self.providers:
            try:
                fn = getattr(library, provider.function)
            except AttributeError:
                raise _error(
                    f"the host provider `{provider.file}` defines no function `{provider.function}`",
                    help_text="define `CUresult FN(void* params, CUstream stream)` with external "
                    "linkage, as the contract's `fn` names it",
                ) from None
            fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]
            self._calls.append((provider, fn))

    @property
    def filled(self) -> set[str]:
        """The fields the providers fill, as ``stage.field``."""
        return {f"{p.stage}.{f}" for p in self.providers for f in p.fills}

    def call(self, block: int, stream: int) -> None:
        """Run every provider in stage order on the params block at address ``block``."""
        for provider, fn in self._calls:
            at = None if provider.offset is None else block + provider.offset
            result = int(fn(at, stream))
            if result != _CUDA_SUCCESS:
                raise DiagnosticError(
                    [
                        Diagnostic(
                            Code.E_CUDA,
                            f"host provider `{provider.function}` of `{provider.stage}` returned CUresult {result}",
                            notes=(f"its source: `{provider.file}` in the link directory",),
                            helps=(
                                "see the provider's documentation for the inputs it needs (the params fields it reads)",
                            ),
                        )
                    ]
                )


def build_library(link_dir: Path, providers: Sequence[Provider]) -> Path:
    """The shared object of ``providers`` (their sources in ``link_dir``), from the cache or compiled now."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    include = cuda_include()
    if cc is None or include is None:
        missing = "a C compiler (`cc`, or `$CC`)" if cc is None else "the CUDA driver header `cuda.h`"
        raise _error(
            f"the link's host providers need {missing} to be built",
            *(f"`{p.file}` ({p.stage})" for p in providers),
            help_text="install a C compiler and the CUDA headers (`pip install nvidia-cuda-runtime`), "
            "or set `CUDA_HOME`",
        )
    sources = []
    for p in providers:
        path = link_dir / p.file
        if not path.is_file():
            raise _error(
                f"the host provider `{p.file}` is not in `{link_dir}`",
                help_text="link again: `kernlink link` writes every provider beside kernel.h",
            )
        sources.append(path)
    h = hashlib.sha256()
    for part in (cc, str(include), *(s.name for s in sources)):
        h.update(part.encode() + b"\0")
    for s in sources:
        h.update(hashlib.sha256(s.read_bytes()).digest())
    from diagnostics.files import user_cache_dir

    target = user_cache_dir() / "providers" / f"{h.hexdigest()[:32]}.so"
    if target.is_file():
        return target
    return _compile(cc, include, sources, target)


def _compile(cc: str, include: Path, sources: Sequence[Path], target: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="kernlink-providers-") as tmp:
        out = Path(tmp) / "providers.so"
        proc = subprocess.run(
            [cc, "-std=c99", "-O2", "-fPIC", "-shared", f"-I{include}", *map(str, sources), "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise _error(
                "the link's host providers do not compile",
                *proc.stderr.strip().splitlines()[-20:],
                help_text="fix the provider's source and pack its stage again",
            )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, out.read_bytes())
        except (OSError, DiagnosticError):
            keep = Path(tempfile.mkdtemp(prefix="kernlink-providers-")) / "providers.so"
            shutil.copy(out, keep)
            return keep
    return target


def _load_driver() -> None:
    """Load the CUDA driver with global symbols, so a provider's driver calls resolve against it."""
    try:
        ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError as err:
        raise _error(
            f"the CUDA driver (`libcuda.so.1`) cannot be loaded: {err}",
            help_text="run on a machine with an NVIDIA driver",
        ) from err
