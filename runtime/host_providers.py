"""The host providers of a linked kernel, built with the system C compiler and called through ctypes.

`kernlink link` writes each stage's called host provider (``host provider "x.c" fn F``)
into the link directory and lists them in ``link.json`` (``providers``, in stage order).
:class:`Providers` compiles those C files into one shared object and calls them on a
params block, as ``kl_<pipeline>_provide`` in ``kernel.h`` does from C.

They are compiled, not ported to Python: a provider is the stage author's C code, and
the C launch helper runs that code; a Python port would be a second implementation per
provider, free to drift from the first. A provider's source is compiled only when its
SHA-256 is the one ``link.json`` records (the hash `kernlink link` printed): one replaced
after the link is ``L-INTEGRITY``, never compiled. The shared object is cached, sealed
(diagnostics/private.py), by the sources' hash, the compiler and the ``cuda.h`` it was
built against, so a session pays the compile once per change; an entry whose seal does
not verify (planted, cut short) is compiled again, never loaded, and the bytes that
were verified are the bytes loaded (:func:`load_library`). It is linked against
nothing: the CUDA driver (``libcuda.so.1``) is loaded first with global symbols, which
the providers' driver calls resolve to.
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

from checker.clauses import l_integrity
from diagnostics.files import open_regular, read_capped, user_cache_dir
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.private import read_sealed, write_sealed
from diagnostics.symbols import Code

_CUDA_SUCCESS = 0
_SOURCE_LIMIT = 1 << 20  # a provider's C source (pack carries at most this)
_LIBRARY_LIMIT = 64 << 20


@dataclass(frozen=True)
class Provider:
    """One provider as ``link.json`` lists it."""

    stage: str
    function: str
    file: str
    fills: tuple[str, ...]
    offset: int | None
    sha256: str | None  # of its source, as the link recorded it (None: a link.json that records none)

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Provider:
        offset, digest = item.get("offset"), item.get("sha256")
        return cls(
            str(item["stage"]),
            str(item["function"]),
            str(item["file"]),
            tuple(str(f) for f in item.get("fills") or ()),
            None if offset is None else int(offset),
            digest if isinstance(digest, str) else None,
        )


def cuda_include() -> Path | None:
    """A folder with the driver API's ``cuda.h``: the PyPI CUDA headers, ``$CUDA_HOME``, nvcc's toolkit, or
    ``/usr/local/cuda``."""
    from toolchain.cuda import cuda_include_dirs

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
        library_bytes = shared_object(Path(link_dir), self.providers)
        _load_driver()
        library = load_library(library_bytes)
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


def shared_object(link_dir: Path, providers: Sequence[Provider]) -> bytes:
    """The shared object of ``providers``, compiled from their sources in ``link_dir`` once each is the
    one ``link.json`` records (``L-INTEGRITY`` otherwise): from the cache when its seal verifies, else
    compiled now and cached."""
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
    sources = {p.file: verified_source(link_dir, p) for p in providers}
    h = hashlib.sha256()
    for part in (cc, str(include), *sources):
        h.update(part.encode() + b"\0")
    for text in sources.values():
        h.update(hashlib.sha256(text).digest())
    cache = user_cache_dir()
    name = f"provider-{h.hexdigest()[:32]}.so"
    cached = read_sealed(cache, name, limit=_LIBRARY_LIMIT)
    if cached is not None:
        return cached
    library = _compile(cc, include, sources)
    write_sealed(cache, name, library)
    return library


def verified_source(link_dir: Path, provider: Provider) -> bytes:
    """The provider's C source in ``link_dir``, when it is the file whose SHA-256 ``link.json`` records."""
    path = link_dir / provider.file
    fix = "link again (`kernlink link` writes each provider beside kernel.h and records its SHA-256)"
    if provider.file != Path(provider.file).name or provider.file in ("", ".", ".."):
        raise _error(f"`{provider.file}` is not a file name of the link directory", help_text=fix)
    try:
        with open_regular(path) as handle:
            text = read_capped(handle, _SOURCE_LIMIT + 1, str(path))
    except DiagnosticError:
        raise _error(f"the host provider `{provider.file}` is not in `{link_dir}`", help_text=fix) from None
    manifest = str(link_dir / "link.json")
    where = f"the host provider `{path}` ({provider.stage}, fn {provider.function})"
    if provider.sha256 is None:
        raise DiagnosticError([l_integrity.unrecorded_hash(manifest, where, fix)])
    digest = hashlib.sha256(text).hexdigest()
    if digest != provider.sha256:
        raise DiagnosticError([l_integrity.host_code_mismatch(manifest, where, provider.sha256, digest, fix)])
    return text


def _compile(cc: str, include: Path, sources: Mapping[str, bytes]) -> bytes:
    """Compile the verified sources, copied into a private folder (nothing else beside them is read)."""
    with tempfile.TemporaryDirectory(prefix="kernlink-providers-") as tmp:
        folder = Path(tmp)
        for name, text in sources.items():
            (folder / name).write_bytes(text)
        out = folder / "providers.so"
        proc = subprocess.run(
            [cc, "-std=c99", "-O2", "-fPIC", "-shared", f"-I{include}", *sources, "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
            cwd=folder,
        )
        if proc.returncode != 0:
            raise _error(
                "the link's host providers do not compile",
                *proc.stderr.strip().splitlines()[-20:],
                help_text="fix the provider's source and pack its stage again",
            )
        return out.read_bytes()


#: The shared objects this process loaded, by their SHA-256: each is loaded once.
_LOADED: dict[str, ctypes.CDLL] = {}


def load_library(library: bytes) -> ctypes.CDLL:
    """Load the shared object ``library`` from memory: the bytes that were verified are the bytes mapped.

    They go to an anonymous file (``memfd``) that stays open for the process, so its
    ``/proc/self/fd`` name is never reused for other bytes (the dynamic loader matches a
    loaded object by that name); no file of the cache or the link directory is mapped, so
    none can change or shrink under the process.
    """
    digest = hashlib.sha256(library).hexdigest()
    if digest not in _LOADED:
        fd = os.memfd_create(f"kernlink-providers-{digest[:16]}", os.MFD_CLOEXEC)
        os.write(fd, library)
        _LOADED[digest] = ctypes.CDLL(f"/proc/self/fd/{fd}")
    return _LOADED[digest]


def _load_driver() -> None:
    """Load the CUDA driver with global symbols, so a provider's driver calls resolve against it."""
    try:
        ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError as err:
        raise _error(
            f"the CUDA driver (`libcuda.so.1`) cannot be loaded: {err}",
            help_text="run on a machine with an NVIDIA driver",
        ) from err
