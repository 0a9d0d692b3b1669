"""The params structs of a component as its compiler lays them out, read from the debug information.

`kernlink draft` has no contract to name the params struct, so it asks the compiler: NVRTC
compiles the source once more with ``-G`` to a cubin (no LTO IR: debug information lives in
the ELF's DWARF sections), and pyelftools reads, for each role entry, the struct its first
parameter points to — name, ``sizeof``, alignment, and each member's name, offset, size and
type. CUDA's DWARF sections carry relocations pyelftools does not apply; they are read
unrelocated, which leaves the type information (offsets within ``.debug_info``) intact.
"""

from __future__ import annotations

import io
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from elftools.common.exceptions import DWARFError, ELFError
from elftools.elf.elffile import ELFFile

from analysis.draft.model import FieldLayout, Layouts, StructLayout
from diagnostics import Diagnostic, DiagnosticError
from diagnostics.symbols import Code
from toolchain.cuda import isolated, nvcc_path, nvrtc_cubin_here, nvrtc_options

#: DWARF base type names (as NVRTC writes them) -> contract scalar types.
_BASE_TYPES = {
    ("unsigned int", 4): "u32",
    ("int", 4): "i32",
    ("unsigned short", 2): "u16",
    ("short", 2): "i16",
    ("unsigned char", 1): "u8",
    ("signed char", 1): "i8",
    ("char", 1): "i8",
    ("bool", 1): "bool",
    ("float", 4): "f32",
    ("double", 8): "f64",
    ("unsigned long long", 8): "u64",
    ("long long", 8): "i64",
    ("unsigned long", 8): "u64",
    ("long", 8): "i64",
}


def debug_cubin(
    source: bytes,
    name: str,
    *,
    arch: str,
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    std: str = "c++17",
    extra: Sequence[str] = (),
) -> bytes:
    """``source`` compiled by NVRTC with ``-G`` to a cubin for ``arch`` (raises ``DiagnosticError``)."""
    opts = tuple(o for o in nvrtc_options(arch, std=std, include_dirs=include_dirs, defines=defines) if o != "-dlto")
    return isolated("nvrtc", nvrtc_cubin_here, source, name, arch, (*opts, *extra, "-G"))


def debug_cubin_nvcc(
    source: bytes,
    name: str,
    *,
    arch: str,
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    std: str = "c++17",
) -> bytes:
    """``source`` compiled by the nvcc on PATH with ``-G`` to a relocatable cubin (raises ``DiagnosticError``)."""
    exe = nvcc_path()
    if exe is None:
        raise DiagnosticError([Diagnostic(Code.E_COMPILE, "nvcc is not installed", helps=("draft with NVRTC",))])
    base = Path(name).name or "source.cu"
    opts = [f"-arch={arch}", "-cubin", "-rdc=true", "-G", f"-std={std}", *(f"-I{d}" for d in include_dirs)]
    opts += [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    with tempfile.TemporaryDirectory(prefix="kernlink-draft-") as tmp:
        (Path(tmp) / base).write_bytes(source)
        done = subprocess.run(
            [exe, *opts, base, "-o", "out.cubin"], cwd=tmp, capture_output=True, text=True, check=False
        )
        out = Path(tmp) / "out.cubin"
        if done.returncode != 0 or not out.exists():
            notes = tuple(line for line in (done.stdout + done.stderr).splitlines() if line.strip())
            raise DiagnosticError(
                [Diagnostic(Code.E_COMPILE, f"nvcc could not compile `{name}` with `-G` for `{arch}`", notes=notes)]
            )
        return out.read_bytes()


def layouts(cubin: bytes, entries: Sequence[str]) -> Layouts:
    """The params struct each of ``entries`` points its first parameter at (entries without one are left out).

    A cubin without DWARF, or DWARF pyelftools cannot read, gives no layouts (the draft then
    says the params are undecided).
    """
    try:
        dwarf = ELFFile(io.BytesIO(cubin)).get_dwarf_info(relocate_dwarf_sections=False)
        dies = [die for cu in dwarf.iter_CUs() for die in cu.iter_DIEs()]
    except (ELFError, DWARFError, ValueError, KeyError, AssertionError):
        return Layouts()
    wanted = set(entries)
    structs: dict[str, StructLayout] = {}
    pairs: list[tuple[str, str]] = []
    for die in dies:
        if die.tag != "DW_TAG_subprogram" or _name(die) not in wanted:
            continue
        first = next((c for c in die.iter_children() if c.tag == "DW_TAG_formal_parameter"), None)
        target = _struct_of(first)
        if target is None:
            continue
        layout = _layout(target)
        if layout is not None:
            structs.setdefault(layout.name, layout)
            pairs.append((_name(die), layout.name))
    return Layouts(tuple(structs.values()), tuple(sorted(set(pairs))))


def _name(die: Any) -> str:
    attr = die.attributes.get("DW_AT_name")
    value = attr.value if attr is not None else b""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _type(die: Any) -> Any | None:
    return die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None


def _strip(die: Any | None) -> Any | None:
    """Past ``const``, ``volatile``, typedefs."""
    while die is not None and die.tag in ("DW_TAG_const_type", "DW_TAG_volatile_type", "DW_TAG_typedef"):
        die = _type(die)
    return die


def _struct_of(param: Any | None) -> Any | None:
    """The struct a parameter points to (a role entry's params), or is (a kernel's `__grid_constant__` params)."""
    pointer = _strip(_type(param)) if param is not None else None
    if pointer is None:
        return None
    target = _strip(_type(pointer)) if pointer.tag == "DW_TAG_pointer_type" else pointer
    return target if target is not None and target.tag in ("DW_TAG_structure_type", "DW_TAG_class_type") else None


def _members(struct: Any) -> Iterator[Any]:
    return (c for c in struct.iter_children() if c.tag == "DW_TAG_member")


def _offset(member: Any) -> int | None:
    attr = member.attributes.get("DW_AT_data_member_location")
    if attr is None:
        return None
    value = attr.value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, list) and len(value) >= 2 and value[0] == 0x23:  # DW_OP_plus_uconst, then ULEB128 bytes
        offset = 0
        for shift, byte in enumerate(value[1:]):
            offset |= (int(byte) & 0x7F) << (7 * shift)
            if not int(byte) & 0x80:
                return offset
    return None


def _size(die: Any | None) -> int | None:
    die = _strip(die)
    if die is None:
        return None
    if "DW_AT_byte_size" in die.attributes:
        return int(die.attributes["DW_AT_byte_size"].value)
    if die.tag == "DW_TAG_pointer_type":
        return 8
    return None


def _align(die: Any | None) -> int:
    die = _strip(die)
    if die is None:
        return 1
    if "DW_AT_alignment" in die.attributes:
        return int(die.attributes["DW_AT_alignment"].value)
    if die.tag in ("DW_TAG_structure_type", "DW_TAG_class_type"):
        return max((_align(_type(m)) for m in _members(die)), default=1)
    if die.tag == "DW_TAG_array_type":
        return _align(_type(die))
    return _size(die) or 1


def _scalar(die: Any | None, size: int) -> str | None:
    die = _strip(die)
    if die is None:
        return None
    if die.tag == "DW_TAG_pointer_type":
        return "ptr"
    if die.tag == "DW_TAG_base_type":
        return _BASE_TYPES.get((_name(die), size))
    if die.tag == "DW_TAG_enumeration_type":
        return {4: "u32", 2: "u16", 1: "u8", 8: "u64"}.get(size)
    return None


def _layout(struct: Any) -> StructLayout | None:
    size = _size(struct)
    if size is None:
        return None
    fields = []
    for member in _members(struct):
        offset, msize = _offset(member), _size(_type(member))
        if offset is None or msize is None:
            continue
        fields.append(FieldLayout(_name(member), offset, msize, _scalar(_type(member), msize)))
    return StructLayout(_name(struct), size, _align(struct), tuple(fields))
