"""Read kernel facts from a cubin (CUDA ELF) with pyelftools.

What is read, and where (checked against nvJitLink 13.0.88 output for sm_90a,
sm_100a and sm_120a, and against ptxas' ``-verbose`` report):

- kernels: global ``STT_FUNC`` symbols with the CUDA entry bit (``st_other & 0x10``)
  whose section is ``.text.<name>``;
- registers: ``EIATTR_REGCOUNT`` (0x2f) in the global ``.nv.info`` section, one
  entry per function: (symbol index, count);
- static shared memory: ``sh_size(.nv.shared.<kernel>)`` minus the target's user
  shared base (1024): the section starts with the system-reserved kilobyte, so a
  kernel with 4096 B of ``__shared__`` data has a 5120 B section. Kernels without
  static data have either no section or a 1024 B one;
- parameters: ``EIATTR_CBANK_PARAM_SIZE`` (0x19) and ``EIATTR_KPARAM_INFO`` (0x17)
  in ``.nv.info.<kernel>``;
- launch bounds: ``EIATTR_MAX_THREADS`` (0x05), ``EIATTR_REQNTID`` (0x10),
  ``EIATTR_MAXREG_COUNT`` (0x1b); barriers: ``EIATTR_NUM_BARRIERS`` (0x4c).

``.nv.info`` entries are ``u8 format, u8 attribute`` followed by, per format:
nothing (1), one byte (2), an inline u16 (3), or ``u16 size`` and a payload (4);
entries start on 4-byte boundaries.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section, SymbolTableSection

from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from hardware.targets import target_for_sm

EM_CUDA = 190
STO_CUDA_ENTRY = 0x10

EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C

_NO_MAXREG = 0xFF


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter as the compiler laid it out in constant bank 0."""

    ordinal: int
    offset: int
    size: int


@dataclass(frozen=True)
class KernelInfo:
    name: str
    registers: int
    static_smem: int
    param_bytes: int
    params: tuple[ParamInfo, ...]
    barriers: int
    frame_bytes: int
    max_threads: tuple[int, int, int] | None
    required_threads: tuple[int, int, int] | None
    max_registers: int | None
    code_bytes: int


@dataclass(frozen=True)
class CubinInfo:
    sm: int
    kernels: tuple[KernelInfo, ...]

    def kernel(self, name: str) -> KernelInfo | None:
        return next((k for k in self.kernels if k.name == name), None)

    @property
    def kernel_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.kernels)


@dataclass(frozen=True)
class _Attr:
    attr: int
    value: bytes


def read_cubin(data: bytes, *, name: str = "<cubin>") -> CubinInfo:
    """Kernels of a cubin with their resource use, sorted by name.

    Raises DiagnosticError (``E-CUBIN``) when ``data`` is not a readable CUDA ELF. The answer
    is frozen and a function of the bytes alone, so it is kept per process: a link reads its
    cubin three times (the kernel's resources, the audit, the host header).
    """
    try:
        return _read_bytes(bytes(data))
    except DiagnosticError:
        return _read_named(data, name)  # raises, naming the cubin


@functools.lru_cache(maxsize=8)
def _read_bytes(data: bytes) -> CubinInfo:
    return _read_named(data, "<cubin>")


def _read_named(data: bytes, name: str) -> CubinInfo:
    try:
        elf = ELFFile(io.BytesIO(data))
        return _read(elf, name)
    except (ELFError, struct.error, ValueError, KeyError) as exc:
        raise _error(f"`{name}` is not a readable cubin", str(exc)) from exc


def kernel_names(data: bytes) -> tuple[str, ...]:
    return read_cubin(data).kernel_names


def _read(elf: ELFFile, name: str) -> CubinInfo:
    if elf.header.e_machine not in ("EM_CUDA", EM_CUDA):
        raise _error(f"`{name}` is an ELF file for `{elf.header.e_machine}`, not a cubin")
    sm = (elf.header.e_flags >> 8) & 0xFF
    spec = target_for_sm(sm)
    if spec is None:
        raise _error(f"`{name}` is built for `sm_{sm}`, which kernlink has no hardware table for")
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        raise _error(f"`{name}` has no symbol table")
    entries = _entry_symbols(elf, symtab)
    per_symbol: dict[tuple[int, int], int] = {}
    global_info = elf.get_section_by_name(".nv.info")
    if global_info is not None:
        for a in _attrs(global_info):
            if a.attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(a.value) >= 8:
                index, value = struct.unpack_from("<II", a.value)
                per_symbol[(a.attr, index)] = value
    kernels = []
    for index, kname, code_bytes in entries:
        shared = elf.get_section_by_name(f".nv.shared.{kname}")
        static = max(0, shared["sh_size"] - spec.smem_user_base) if shared is not None else 0
        info = elf.get_section_by_name(f".nv.info.{kname}")
        attrs = list(_attrs(info)) if info is not None else []
        kernels.append(
            _kernel(
                kname,
                attrs,
                registers=per_symbol.get((EIATTR_REGCOUNT, index), 0),
                frame=per_symbol.get((EIATTR_FRAME_SIZE, index), 0),
                static=static,
                code=code_bytes,
            )
        )
    kernels.sort(key=lambda k: k.name)
    return CubinInfo(sm=sm, kernels=tuple(kernels))


def _entry_symbols(elf: ELFFile, symtab: SymbolTableSection) -> list[tuple[int, str, int]]:
    """(symbol index, name, code size) of every kernel entry."""
    raw = symtab.data()
    size = symtab["sh_entsize"] or 24
    found = []
    for index, sym in enumerate(symtab.iter_symbols()):
        if sym["st_info"]["type"] != "STT_FUNC" or sym["st_info"]["bind"] == "STB_LOCAL":
            continue
        other = raw[index * size + 5]
        shndx = sym["st_shndx"]
        if not (other & STO_CUDA_ENTRY) or not isinstance(shndx, int):
            continue
        if elf.get_section(shndx).name != f".text.{sym.name}":
            continue
        found.append((index, sym.name, int(sym["st_size"])))
    return found


def _attrs(section: Section) -> Iterator[_Attr]:
    data = section.data()
    pos = 0
    while pos + 2 <= len(data):
        fmt, attr = data[pos], data[pos + 1]
        if fmt == 1:
            yield _Attr(attr, b"")
            pos += 2
        elif fmt == 2:
            yield _Attr(attr, data[pos + 2 : pos + 3])
            pos += 3
        elif fmt == 3:
            yield _Attr(attr, data[pos + 2 : pos + 4])
            pos += 4
        elif fmt == 4:
            (length,) = struct.unpack_from("<H", data, pos + 2)
            if pos + 4 + length > len(data):
                raise ValueError(f"attribute 0x{attr:x} overruns `{section.name}`")
            yield _Attr(attr, data[pos + 4 : pos + 4 + length])
            pos += 4 + length
        else:
            raise ValueError(f"unknown attribute format {fmt} in `{section.name}`")
        pos += -pos % 4


def _kernel(name: str, attrs: list[_Attr], *, registers: int, frame: int, static: int, code: int) -> KernelInfo:
    param_bytes = barriers = 0
    params: list[ParamInfo] = []
    max_threads = required = None
    max_regs: int | None = None
    for a in attrs:
        if a.attr == EIATTR_CBANK_PARAM_SIZE:
            param_bytes = _u(a.value)
        elif a.attr == EIATTR_KPARAM_INFO and len(a.value) >= 12:
            _, ordinal, offset, flags = struct.unpack_from("<IHHI", a.value)
            params.append(ParamInfo(ordinal, offset, (flags >> 18) & 0x3FFF))
        elif a.attr == EIATTR_NUM_BARRIERS:
            barriers = _u(a.value)
        elif a.attr == EIATTR_MAX_THREADS and len(a.value) >= 12:
            max_threads = struct.unpack_from("<III", a.value)
        elif a.attr == EIATTR_REQNTID and len(a.value) >= 12:
            required = struct.unpack_from("<III", a.value)
        elif a.attr == EIATTR_MAXREG_COUNT and _u(a.value) != _NO_MAXREG:
            max_regs = _u(a.value)
    params.sort(key=lambda p: p.ordinal)
    return KernelInfo(
        name, registers, static, param_bytes, tuple(params), barriers, frame, max_threads, required, max_regs, code
    )


def _u(value: bytes) -> int:
    return int.from_bytes(value, "little")


def _error(message: str, note: str = "") -> DiagnosticError:
    return DiagnosticError([Diagnostic(Code.E_CUBIN, message, notes=(note,) if note else ())])
