"""The data model of the generated unit: what :mod:`linker.generate` decides and
:mod:`linker.render` writes as CUDA text (the link map, the header, the audit and the
runtime read it too): handle values, call trampolines, the params block, the dispatch
kernel's register groups, ring inits and role entries."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from diagnostics.model import Diagnostic
from linker.counters import (
    CounterArray,
)
from linker.handles import HandleValue
from linker.watchdog import Watchdog

if TYPE_CHECKING:
    from linker.transfers import Transfer, UnusedExport


FORMAT = "kernlink-generated/1"
#: C types of the contract's scalar types in call signatures (pointer types are opaque in LTO IR).
C_TYPES = {
    "void": "void",
    "bool": "bool",
    "i8": "signed char",
    "u8": "unsigned char",
    "i16": "short",
    "u16": "unsigned short",
    "i32": "int",
    "u32": "unsigned",
    "i64": "long long",
    "u64": "unsigned long long",
    "f32": "float",
    "f64": "double",
    "ptr": "void*",
}
#: 16-bit float types a call may pass: the trampoline passes the component's own C type, read
#: from the PTX shape the package captured (:func:`component_ctype`).
HALF_TYPES = frozenset({"bf16", "f16"})
#: The C type of a 16-bit float passed as a 2-byte aggregate (``__nv_bfloat16``, ``__half``, a
#: ``{ unsigned short }`` wrapper): LLVM's IR linker maps it onto the component's isomorphic
#: struct, so the call still inlines.
HALF_STRUCT = "kl_half_bits"
#: Bytes after the placed shared memory that receive tcgen05.alloc's address (one aligned word).
TMEM_SLOT_BYTES = 16
#: ``struct`` formats of param field types, for the fact values the launch helper writes.
FIELD_FORMATS = {
    "bool": "?",
    "i8": "b",
    "u8": "B",
    "i16": "h",
    "u16": "H",
    "i32": "i",
    "u32": "I",
    "i64": "q",
    "u64": "Q",
    "f32": "f",
    "f64": "d",
    "ptr": "Q",
}


def component_ctype(type_name: str, slot: str | None) -> str:
    """The C type a component passes a value of contract type ``type_name`` as, from its PTX slot.

    Scalars have one C type (:data:`C_TYPES`). A 16-bit float is either an integer holding its
    bits (PTX ``.b16``/``.b32`` slot: ``unsigned short``) or a 2-byte aggregate (``.b8[2]``:
    ``__nv_bfloat16``, ``__half``, a wrapper struct), passed as :data:`HALF_STRUCT`; a package
    without prototypes is taken to pass bits. Raises ``ValueError`` for another slot.
    """
    if type_name not in HALF_TYPES:
        return C_TYPES[type_name]
    if slot is None or slot in ("b16", "b32", "u16", "s16", "u32", "s32"):
        return "unsigned short"
    if slot == "b8[2]":
        return HALF_STRUCT
    raise ValueError(f"a `{type_name}` value travels as PTX `{slot}`, neither 16-bit bits nor a 2-byte aggregate")


@dataclass(frozen=True)
class Trampoline:
    """A call site's symbol, defined to call the export that serves it."""

    symbol: str
    call: str
    signature: str
    callers: tuple[str, ...]  # "stage role R" / "stage callable C", one per call site
    export_stage: str
    export_symbol: str
    params: tuple[str, ...]
    result: str
    #: C types of the parameters then the result, as the caller declares the call and as the
    #: export defines it (:func:`component_ctype`); they differ only for 16-bit float values
    caller_ctypes: tuple[str, ...] = ()
    export_ctypes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DroppedExport:
    stage: str
    name: str
    symbol: str


@dataclass(frozen=True)
class ParamField:
    """One field of the kernel's params block; ``offset`` is from the block's start.

    ``source`` is ``caller`` (the launch helper's caller gives it) or ``fact`` (the
    launch helper writes ``value``, the owner's value of ``fact``); ``allowed`` lists
    the values a caller-given field may take (empty: any): those its contract states
    (``in {…}``), and for a fact field those the fact's owner permits.
    """

    stage: str
    block: str
    name: str
    type: str
    offset: int
    size: int
    source: str
    fact: str | None = None
    value: int | None = None
    owner: str | None = None
    allowed: tuple[int, ...] = ()


@dataclass(frozen=True)
class ParamsRegion:
    stage: str
    block: str
    member: str
    offset: int
    size: int
    align: int


@dataclass(frozen=True)
class ParamsLayout:
    size: int
    align: int
    regions: tuple[ParamsRegion, ...]
    fields: tuple[ParamField, ...]

    def region_of(self, stage: str) -> ParamsRegion | None:
        """The stage's first params region: the block its entries receive."""
        return next((r for r in self.regions if r.stage == stage), None)

    def pack_facts(self) -> bytes:
        """The block with every fact field written and everything else zero."""
        data = bytearray(self.size)
        for f in self.fields:
            if f.source == "fact" and f.value is not None:
                struct.pack_into("<" + FIELD_FORMATS[f.type], data, f.offset, f.value)
        return bytes(data)


@dataclass(frozen=True)
class RingInit:
    ring: str
    stage: str
    symbol: str
    role: str
    thread: int


@dataclass(frozen=True)
class RoleEntry:
    stage: str
    role: str
    entry: str
    first_warp: int
    warps: int
    params_member: str | None


@dataclass(frozen=True)
class GroupRegs:
    """``setmaxnreg`` for warps ``[first_warp, first_warp + warps)``: one or more consecutive groups."""

    groups: tuple[int, ...]
    first_warp: int
    warps: int
    budget: int
    op: str | None  # "inc", "dec", or None when the budget is the entry count
    roles: tuple[str, ...]


@dataclass(frozen=True)
class Dispatch:
    kernel: str
    threads: int
    block_warps: int
    min_blocks: int | None
    dynamic_smem: int
    smem_base: int
    launch: str  # "fixed" | "persistent"
    blocks_per_sm: int | None
    setmaxnreg: bool
    entry_regs: int
    groups: tuple[GroupRegs, ...]
    inits: tuple[RingInit, ...]
    roles: tuple[RoleEntry, ...]
    idle_warps: tuple[int, ...]
    cluster: tuple[int, int, int] = (1, 1, 1)
    #: tensor memory: columns the dispatch kernel allocates (0: none) and the byte offset, from the
    #: dynamic shared memory base, of the word tcgen05.alloc writes the allocation's address to
    tmem_columns: int = 0
    tmem_slot: int = 0

    @property
    def clustered(self) -> bool:
        return self.cluster != (1, 1, 1)


@dataclass(frozen=True)
class Generated:
    """The generated source and every decision it encodes (the link map reads these)."""

    pipeline: str
    target: str
    source: str
    handles: tuple[HandleValue, ...]
    trampolines: tuple[Trampoline, ...]
    dropped: tuple[DroppedExport, ...]
    params: ParamsLayout
    dispatch: Dispatch
    notes: tuple[Diagnostic, ...] = field(default=())
    transfers: tuple[Transfer, ...] = field(default=())
    unused_exports: tuple[UnusedExport, ...] = field(default=())
    counters: CounterArray = field(default=CounterArray((), 0))
    watchdog: Watchdog | None = None
    function_handles: tuple[str, ...] = ()  # the rendered counter and wait functions (the control renders them too)
    stages: tuple[tuple[str, str], ...] = ()  # (name, version) of each stage, in pipeline order
    #: (fact, value, why) of each fact its assumers pinned among its owner's values (checker.pins)
    pins: tuple[tuple[str, int, str], ...] = ()
