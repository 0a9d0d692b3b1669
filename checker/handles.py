"""Handle functions: the names a component reads its placement through, and their checks.

A component never hard-codes where the linker puts what it claimed. It declares
``extern "C" __device__ unsigned NAME();`` for every placement it reads and leaves
it undefined; the linker defines each such function to return the solved
constant, and LTO folds the call to an immediate. specs/handles.md is the
reference for the names, what each returns, and the role-entry ABI.

Names are derived from the stage and the contract item, with ``.``/``-`` (any
character outside ``[A-Za-z0-9_]``) in the stage name replaced by ``_``; ``P`` below
is ``kl_<stage>``. A claim's ``handle NAME`` replaces its main name, and its other
handles are then ``NAME_stride`` / ``NAME_threads``.

| item | handle | returns |
|---|---|---|
| ``claim smem C`` | ``P_C_smem`` | byte offset of C from the dynamic shared memory base (slot 0 if ``per_slot``) |
| ``claim smem C per_slot R`` | ``P_C_stride`` | bytes from one slot's copy to the next |
| ``claim tmem C`` | ``P_C_tmem`` | first tensor-memory column |
| ``claim barrier C`` | ``P_C_bar_id``, ``P_C_threads`` | named barrier ID; threads that take part |
| ``claim counter C`` / ``counter C …`` | ``P_C_counter`` | index of the first counter slot |
| ``rendezvous C …`` | ``P_C_bar_id``, ``P_C_threads`` | named barrier ID; threads that take part |
| ``ring R`` | ``P_R_depth`` | ring depth chosen at link time |
| ``ring R`` | ``P_R_full_bar``, ``P_R_empty_bar`` | offset of slot 0's mbarrier; slot i at +8·i |
| ``ring R`` with ``init by`` here | ``P_R_full_count``, ``P_R_empty_count`` | arrival counts to init with |
| ``ring R`` | ``P_R_<claim>_smem``, ``P_R_<claim>_stride`` | slot 0 / stride of any stage's ``per_slot R`` claim |
| ``role X`` | ``P_X_warp0`` | first warp of the role in the block |
| ``role X … regs N`` | ``P_X_regs`` | the role's register budget |
| ``params B …`` | ``P_params_offset`` | offset of the stage's params block in the kernel's |

Two handles are functions that *do* something rather than return a constant: the
linker defines each as the lowered code of the tensor connection's route
(``transfer_model/lower.py``), ``T`` the element's bit type (``unsigned`` for 4-byte,
``unsigned short`` for 2-byte elements):

| item | handle | prototype (who calls it) |
|---|---|---|
| ``export tensor X`` | ``P_X_export`` | ``void (const T* held)`` (the exporting role, once, when ready) |
| ``import tensor Y`` | ``P_Y_import`` | ``void (const T* held, T* dst, int chunk)`` (the importing role, per chunk) |

A ring-fed connection (``generation ring R``) hands one generation per tile over, so both
handles take the generation (the caller's tile ordinal ``0, 1, …``): ``void (const T* held,
unsigned generation)`` and ``void (const T* held, T* dst, int chunk, unsigned generation)``
(``linker/ring_fed.py``).

Symbols a stage must *define* besides its role entries and exports: for each ring
it initialises (``init by`` one of its roles), ``<stage>_<R>_init`` (no ``kl_``).

This module is pure (contract + captured symbols in, findings out) and belongs to
the checker: the clause modules L-SYMBOL and L-HANDLE turn the findings into
diagnostics, ``kernlink pack`` prints them as warnings, and the linker
(``linker/handles.py``) gives every handle :func:`resolve_handles` finds its value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from contract_lang import ast as A
from diagnostics.symbols import Code
from package.abi import (
    HANDLE_PREFIX,
    TOOLKIT_EXTERNS,
    init_hook_symbol,
    sanitize,
    stage_prefix,
    tensor_symbol,
)
from package.captured import Captured, Prototype

HandleKind = Literal[
    "smem",
    "smem_stride",
    "tmem",
    "bar_id",
    "bar_threads",
    "counter",
    "ring_depth",
    "ring_full_bar",
    "ring_empty_bar",
    "ring_full_count",
    "ring_empty_count",
    "ring_slot_smem",
    "ring_slot_stride",
    "warp0",
    "regs",
    "params_offset",
    "tensor_export",
    "tensor_import",
    "ring_tensor_export",
    "ring_tensor_import",
    "fact",
    "cluster_size",
    "counter_ptr",
    "counter_add",
    "counter_wait",
    "ring_full_wait",
    "ring_empty_wait",
]

#: Bytes between the mbarriers of consecutive ring slots.
RING_BARRIER_STRIDE = 8
#: PTX prototype of every handle: no parameters, one 32-bit result.
HANDLE_PROTOTYPE = Prototype("func", (), ("b32",))
#: PTX prototype of role entries and ring init hooks: (params pointer, shared memory pointer).
ENTRY_PROTOTYPE = Prototype("func", ("b64", "b64"), ())
#: PTX prototypes of the tensor handles: ``void (const T* held)`` and ``void (const T* held, T* dst, int chunk)``.
TENSOR_PROTOTYPES: Mapping[str, Prototype] = {
    "tensor_export": Prototype("func", ("b64",), ()),
    "tensor_import": Prototype("func", ("b64", "b64", "b32"), ()),
    "ring_tensor_export": Prototype("func", ("b64", "b32"), ()),
    "ring_tensor_import": Prototype("func", ("b64", "b64", "b32", "b32"), ()),
}
#: C declaration of each tensor handle kind, for messages (``T`` the element's bit type).
TENSOR_DECLARATIONS: Mapping[str, str] = {
    "tensor_export": "void {symbol}(const T* held)",
    "tensor_import": "void {symbol}(const T* held, T* dst, int chunk)",
    "ring_tensor_export": "void {symbol}(const T* held, unsigned generation)",
    "ring_tensor_import": "void {symbol}(const T* held, T* dst, int chunk, unsigned generation)",
    "counter_ptr": "unsigned* {symbol}()",
    "counter_add": "void {symbol}(unsigned slot, unsigned n)",
    "counter_wait": "void {symbol}(unsigned slot, unsigned target)",
    "ring_full_wait": "void {symbol}(unsigned slot, unsigned parity)",
    "ring_empty_wait": "void {symbol}(unsigned slot, unsigned parity)",
}
#: PTX prototypes of the counter function handles (specs/handles.md, "Counters"): the address of a
#: counter's first slot, and the scoped release add and acquire wait the linker generates.
COUNTER_PROTOTYPES: Mapping[str, Prototype] = {
    "counter_ptr": Prototype("func", (), ("b64",)),
    "counter_add": Prototype("func", ("b32", "b32"), ()),
    "counter_wait": Prototype("func", ("b32", "b32"), ()),
    "ring_full_wait": Prototype("func", ("b32", "b32"), ()),
    "ring_empty_wait": Prototype("func", ("b32", "b32"), ()),
}

#: What each kind of handle reads, in words, for messages.
KIND_TEXT: Mapping[str, str] = {
    "smem": "a shared-memory offset",
    "smem_stride": "a slot stride",
    "tmem": "a tensor-memory column",
    "bar_id": "a named-barrier ID",
    "bar_threads": "a barrier thread count",
    "counter": "a counter slot",
    "ring_depth": "a ring depth",
    "ring_full_bar": "a full-barrier offset",
    "ring_empty_bar": "an empty-barrier offset",
    "ring_full_count": "a full-barrier arrival count",
    "ring_empty_count": "an empty-barrier arrival count",
    "ring_slot_smem": "a ring slot's offset",
    "ring_slot_stride": "a ring slot stride",
    "warp0": "a role's first warp",
    "regs": "a register budget",
    "params_offset": "a params offset",
    "tensor_export": "a tensor export's route",
    "tensor_import": "a tensor import's route",
    "ring_tensor_export": "a ring-fed tensor export's hand-off of one generation",
    "ring_tensor_import": "a ring-fed tensor import's hand-off of one generation",
    "fact": "a fact's value",
    "cluster_size": "the CTAs of a cluster",
    "counter_ptr": "a counter's address",
    "counter_add": "a counter's release add",
    "counter_wait": "a counter's acquire wait",
    "ring_full_wait": "a wait on a ring's full barrier",
    "ring_empty_wait": "a wait on a ring's empty barrier",
}
# Name suffix -> kind, for recognising a handle read under the wrong item.
_SUFFIXES: tuple[tuple[str, HandleKind], ...] = (
    ("_smem", "smem"),
    ("_stride", "smem_stride"),
    ("_tmem", "tmem"),
    ("_bar_id", "bar_id"),
    ("_threads", "bar_threads"),
    ("_counter", "counter"),
    ("_counter_ptr", "counter_ptr"),
    ("_counter_add", "counter_add"),
    ("_counter_wait", "counter_wait"),
    ("_depth", "ring_depth"),
    ("_full_bar", "ring_full_bar"),
    ("_empty_bar", "ring_empty_bar"),
    ("_full_wait", "ring_full_wait"),
    ("_empty_wait", "ring_empty_wait"),
    ("_full_count", "ring_full_count"),
    ("_empty_count", "ring_empty_count"),
    ("_warp0", "warp0"),
    ("_regs", "regs"),
    ("_params_offset", "params_offset"),
    ("_export", "tensor_export"),
    ("_import", "tensor_import"),
)
_RING_HANDLES: tuple[tuple[str, HandleKind], ...] = (
    ("depth", "ring_depth"),
    ("full_bar", "ring_full_bar"),
    ("empty_bar", "ring_empty_bar"),
    ("full_wait", "ring_full_wait"),
    ("empty_wait", "ring_empty_wait"),
)
_COUNTER_FUNCTIONS: tuple[tuple[str, HandleKind], ...] = (
    ("ptr", "counter_ptr"),
    ("add", "counter_add"),
    ("wait", "counter_wait"),
)
_SLOT_SUFFIXES: tuple[tuple[str, HandleKind], ...] = (("_smem", "ring_slot_smem"), ("_stride", "ring_slot_stride"))
# Handles an item binds only under a condition, and what the item lacks when it does not.
_CONDITIONAL: Mapping[HandleKind, tuple[type[A.Node], str]] = {
    "smem_stride": (A.SmemClaim, "is not `per_slot`"),
    "ring_full_count": (A.Ring, "is initialised by another stage"),
    "ring_empty_count": (A.Ring, "is initialised by another stage"),
    "regs": (A.Role, "declares no `regs` budget"),
}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# PTX slot type of the contract's scalar types, where it is fixed.
# a 16-bit float travels as its bits in an integer slot or as a 2-byte aggregate (__nv_bfloat16, __half)
_HALF_SLOTS = frozenset({"b16", "b32", "b8[2]"})
_PTX_SLOT = {"f32": "b32", "i32": "b32", "u32": "b32", "f64": "b64", "i64": "b64", "u64": "b64", "ptr": "b64"}


@dataclass(frozen=True)
class HandleSpec:
    """One handle: its symbol, what it reads, and the contract item that binds it.

    ``item`` names the claim, ring, role, rendezvous or counter (``params`` for the
    params offset); ``claim`` is the per-slot claim a ``ring_slot_*`` handle names,
    which the linker resolves across the composition.
    """

    symbol: str
    kind: HandleKind
    stage: str
    item: str
    claim: str | None = None
    explicit: bool = False
    node: A.Node | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        return KIND_TEXT[self.kind]


@dataclass(frozen=True)
class Finding:
    """A disagreement between what a component's object declares and its contract.

    ``clause`` is the clause that rejects it and words it (``l_symbol.describe``,
    ``l_handle.describe``); ``problem`` a stable short tag; ``facts`` the values its
    message names; ``node`` the contract item involved (for its span), if any.
    """

    clause: Literal[Code.L_SYMBOL, Code.L_HANDLE]
    problem: str
    symbol: str
    facts: tuple[tuple[str, str], ...] = ()
    item: str | None = None
    node: A.Node | None = field(default=None, compare=False, repr=False)

    def fact(self, key: str) -> str:
        return dict(self.facts)[key]


# ----------------------------------------------------------------- names


def handle_bindings(stage: A.Stage) -> list[HandleSpec]:
    """Every handle the contract binds, in item order (a symbol may appear twice: see L-HANDLE)."""
    p = stage_prefix(stage)
    out: list[HandleSpec] = []

    def add(symbol: str, kind: HandleKind, item: str, node: A.Node, explicit: bool = False) -> None:
        out.append(HandleSpec(symbol, kind, stage.name, item, None, explicit, node))

    rings: set[str] = set()
    rendezvous: set[str] = set()
    facts: set[str] = set()
    claimed_counters = {it.name for it in stage.items if isinstance(it, A.CounterClaim)}
    counters: set[str] = set()
    for it in stage.items:
        if isinstance(it, A.SmemClaim):
            main = it.handle or f"{p}_{it.name}_smem"
            add(main, "smem", it.name, it, it.handle is not None)
            if it.per_slot is not None:
                add(_secondary(p, it, "stride"), "smem_stride", it.name, it, it.handle is not None)
        elif isinstance(it, A.TmemClaim):
            add(it.handle or f"{p}_{it.name}_tmem", "tmem", it.name, it, it.handle is not None)
        elif isinstance(it, A.BarrierClaim):
            add(it.handle or f"{p}_{it.name}_bar_id", "bar_id", it.name, it, it.handle is not None)
            add(_secondary(p, it, "threads"), "bar_threads", it.name, it, it.handle is not None)
        elif isinstance(it, (A.CounterClaim, A.Counter)):
            if isinstance(it, A.Counter) and (it.name in claimed_counters or it.name in counters):
                continue  # the endpoints of a counter read one set of handles (the claim's, if claimed here)
            counters.add(it.name)
            explicit = it.handle if isinstance(it, A.CounterClaim) else None
            base = explicit or f"{p}_{it.name}_counter"
            add(base, "counter", it.name, it, explicit is not None)
            for suffix, kind in _COUNTER_FUNCTIONS:
                add(f"{base}_{suffix}", kind, it.name, it, explicit is not None)
        elif isinstance(it, A.Rendezvous):
            if it.name not in rendezvous:  # a stage holding both sides of a rendezvous reads one barrier
                add(f"{p}_{it.name}_bar_id", "bar_id", it.name, it)
                add(f"{p}_{it.name}_threads", "bar_threads", it.name, it)
            rendezvous.add(it.name)
        elif isinstance(it, A.Ring):
            if it.name not in rings:  # a stage holding both sides of a ring reads one set of barriers
                for suffix, kind in _RING_HANDLES:
                    add(f"{p}_{it.name}_{suffix}", kind, it.name, it)
            rings.add(it.name)
            if it.first(A.RingInitBy) is not None:
                add(f"{p}_{it.name}_full_count", "ring_full_count", it.name, it)
                add(f"{p}_{it.name}_empty_count", "ring_empty_count", it.name, it)
        elif isinstance(it, A.Cluster):
            add(f"{p}_cluster_size", "cluster_size", "cluster", it)
        elif isinstance(it, (A.OwnsFact, A.UsesFact, A.AssumesFact)):
            if it.name not in facts:  # the owner's value, folded at link time (specs/handles.md)
                add(f"{p}_fact_{it.name}", "fact", it.name, it)
            facts.add(it.name)
        elif isinstance(it, A.Role):
            add(f"{p}_{it.name}_warp0", "warp0", it.name, it)
            if it.regs is not None:
                add(f"{p}_{it.name}_regs", "regs", it.name, it)
        elif isinstance(it, A.Params) and not any(h.kind == "params_offset" for h in out):
            add(f"{p}_params_offset", "params_offset", "params", it)
        elif isinstance(it, A.ExportTensor):
            ring_fed = it.ring is not None  # the hand-off takes the generation (linker/ring_fed.py)
            add(
                tensor_symbol(stage, it.name, "export"),
                "ring_tensor_export" if ring_fed else "tensor_export",
                it.name,
                it,
            )
        elif isinstance(it, A.ImportTensor):
            ring_fed = it.ring is not None
            add(
                tensor_symbol(stage, it.name, "import"),
                "ring_tensor_import" if ring_fed else "tensor_import",
                it.name,
                it,
            )
    return out


def handle_prototype(kind: HandleKind) -> Prototype:
    """The PTX shape a handle of ``kind`` is declared with."""
    return TENSOR_PROTOTYPES.get(kind) or COUNTER_PROTOTYPES.get(kind, HANDLE_PROTOTYPE)


def expected_handles(stage: A.Stage) -> dict[str, HandleSpec]:
    """Symbol → handle for every handle the contract binds (the first binding of a duplicate)."""
    found: dict[str, HandleSpec] = {}
    for spec in handle_bindings(stage):
        found.setdefault(spec.symbol, spec)
    return found


def classify_handle(stage: A.Stage, symbol: str, expected: Mapping[str, HandleSpec] | None = None) -> HandleSpec | None:
    """The handle ``symbol`` reads in this stage: a bound one, or a ring-slot handle; else None.

    ``expected``: the stage's :func:`expected_handles`, for a caller that classifies many symbols.
    """
    spec = (expected_handles(stage) if expected is None else expected).get(symbol)
    if spec is not None:
        return spec
    p = stage_prefix(stage)
    for ring in stage.rings:
        base = f"{p}_{sanitize(ring.name)}_"
        if not symbol.startswith(base):
            continue
        rest = symbol[len(base) :]
        for suffix, kind in _SLOT_SUFFIXES:
            claim = rest.removesuffix(suffix)
            if claim != rest and _IDENT.fullmatch(claim):
                return HandleSpec(symbol, kind, stage.name, ring.name, claim, False, ring)
    return None


def resolve_handles(stage: A.Stage, needed: Iterable[str]) -> dict[str, HandleSpec]:
    """Symbol → handle for every needed symbol that is a handle of this stage (for code generation)."""
    calls = call_symbols(stage)
    expected = expected_handles(stage)
    found = {}
    for symbol in sorted(needed):
        spec = None if symbol in calls else classify_handle(stage, symbol, expected)
        if spec is not None:
            found[symbol] = spec
    return found


def call_symbols(stage: A.Stage) -> dict[str, A.Call]:
    """Trampoline symbol → call site: the component needs each, the linker defines it."""
    return {it.symbol: it for it in stage.items if isinstance(it, A.Call)}


def required_definitions(stage: A.Stage) -> dict[str, tuple[str, A.Node]]:
    """Symbol → (what, item) for everything the component must define: entries, exports, init hooks."""
    roles = {r.name for r in stage.roles}
    found: dict[str, tuple[str, A.Node]] = {}
    for it in stage.items:
        if isinstance(it, A.Role) and it.entry:
            found.setdefault(it.entry, ("entry", it))
        elif isinstance(it, A.ExportCallable):
            found.setdefault(it.symbol, ("export", it))
        elif isinstance(it, A.Ring):
            init = it.first(A.RingInitBy)
            if isinstance(init, A.RingInitBy) and init.role in roles:
                found.setdefault(init_hook_symbol(stage, it.name), ("init", it))
    return found


# ----------------------------------------------------------------- checks


def symbol_problems(
    stage: A.Stage, captured: Captured, prototypes: Mapping[str, Prototype] | None = None
) -> list[Finding]:
    """L-SYMBOL findings: required symbols not defined, needs no contract item explains, bad ABIs.

    ``prototypes`` (from the package's ``captured.prototypes``) adds the signature checks.
    """
    found: list[Finding] = []
    protos = prototypes or {}
    calls = call_symbols(stage)
    for symbol, (what, node) in required_definitions(stage).items():
        name = getattr(node, "name", None)
        if symbol not in captured.defined_symbols:
            found.append(_missing(symbol, what, node, name))
        elif symbol in protos:
            found.extend(_definition_abi(symbol, what, node, name, protos[symbol]))
    expected = expected_handles(stage)
    for symbol in sorted(captured.defined_symbols):
        if symbol.startswith(HANDLE_PREFIX) or symbol in expected or symbol in calls:
            found.append(
                Finding(
                    Code.L_SYMBOL,
                    "reserved-definition",
                    symbol,
                    node=expected[symbol].node if symbol in expected else calls.get(symbol),
                )
            )
    for symbol in sorted(captured.needed_symbols):
        call = calls.get(symbol)
        if call is not None:
            proto = protos.get(symbol)
            if proto is not None and not _signature_matches(proto, call.signature):
                found.append(
                    Finding(
                        Code.L_SYMBOL,
                        "call-signature",
                        symbol,
                        (("object", str(proto)), ("contract", str(call.signature))),
                        call.name,
                        call,
                    )
                )
            continue
        if symbol in TOOLKIT_EXTERNS or symbol.startswith(HANDLE_PREFIX) or classify_handle(stage, symbol, expected):
            continue
        found.append(Finding(Code.L_SYMBOL, "unexplained-need", symbol))
    return found


def handle_problems(
    stage: A.Stage, captured: Captured, prototypes: Mapping[str, Prototype] | None = None
) -> list[Finding]:
    """L-HANDLE findings: a handle read that no item binds or binds as another kind, or bound twice."""
    found: list[Finding] = []
    seen: dict[str, HandleSpec] = {}
    for spec in handle_bindings(stage):
        first = seen.setdefault(spec.symbol, spec)
        if first is not spec:
            found.append(
                Finding(Code.L_HANDLE, "bound-twice", spec.symbol, (("first", first.item),), spec.item, spec.node)
            )
    calls = call_symbols(stage)
    protos = prototypes or {}
    for symbol in sorted(captured.needed_symbols):
        if symbol in calls:
            continue
        handle = classify_handle(stage, symbol, seen)  # `seen` holds each symbol's first binding
        if handle is None:
            if symbol.startswith(HANDLE_PREFIX):
                found.append(_unbound(stage, symbol))
            continue
        proto = protos.get(symbol)
        if proto is not None and proto != handle_prototype(handle.kind):
            shape = TENSOR_DECLARATIONS.get(handle.kind, "unsigned {symbol}()").format(symbol=symbol)
            what = "this handle is" if handle.kind in TENSOR_DECLARATIONS else "handles are"
            found.append(
                Finding(
                    Code.L_HANDLE,
                    "signature",
                    symbol,
                    (("object", str(proto)), ("shape", shape), ("what", what)),
                    handle.item,
                    handle.node,
                )
            )
    return found


# ----------------------------------------------------------------- helpers


def _secondary(prefix: str, claim: A.SmemClaim | A.BarrierClaim, what: str) -> str:
    return f"{claim.handle}_{what}" if claim.handle else f"{prefix}_{claim.name}_{what}"


def _items(stage: A.Stage) -> list[tuple[str, str, A.Node, frozenset[HandleKind]]]:
    """(name, description, node, kinds it binds) for every item that binds handles."""
    kinds: dict[str, set[HandleKind]] = {}
    for spec in handle_bindings(stage):
        if spec.kind != "params_offset":
            kinds.setdefault(spec.item, set()).add(spec.kind)
    out: list[tuple[str, str, A.Node, frozenset[HandleKind]]] = []
    for it in stage.items:
        name = getattr(it, "name", None)
        if isinstance(name, str) and name in kinds:
            out.append((name, A.item_kind(it).noun, it, frozenset(kinds[name])))
    return out


def _unbound(stage: A.Stage, symbol: str) -> Finding:
    p = stage_prefix(stage)
    for name, what, node, kinds in _items(stage):
        base = f"{p}_{name}"
        for suffix, kind in _SUFFIXES:
            if symbol != base + suffix:
                continue
            handle = getattr(node, "handle", None)
            if kind in kinds and handle:
                return Finding(Code.L_HANDLE, "unbound", symbol, (("renamed", handle),), name, node)
            family, lacks = _CONDITIONAL.get(kind, (None, ""))
            if family is not None and isinstance(node, family):
                return Finding(Code.L_HANDLE, "unbound", symbol, (("lacks", lacks),), name, node)
            bound = ", ".join(f"`{s.symbol}`" for s in handle_bindings(stage) if s.item == name)
            return Finding(
                Code.L_HANDLE,
                "wrong-kind",
                symbol,
                (("reads", KIND_TEXT[kind]), ("is", what), ("binds", bound)),
                name,
                node,
            )
    return Finding(Code.L_HANDLE, "unbound", symbol)


def _missing(symbol: str, what: str, node: A.Node, name: str | None) -> Finding:
    return Finding(Code.L_SYMBOL, f"{what}-missing", symbol, (), name, node)


def _definition_abi(symbol: str, what: str, node: A.Node, name: str | None, proto: Prototype) -> list[Finding]:
    if isinstance(node, A.ExportCallable):
        if proto.kind == "func" and _signature_matches(proto, node.signature):
            return []
        return [
            Finding(
                Code.L_SYMBOL,
                "export-signature",
                symbol,
                (("object", str(proto)), ("contract", str(node.signature))),
                name,
                node,
            )
        ]
    if proto == ENTRY_PROTOTYPE:
        return []
    role_or_ring = "role entry" if what == "entry" else "ring init hook"
    shape = "a kernel (`__global__`)" if proto.kind == "entry" else f"`{proto}`"
    return [
        Finding(Code.L_SYMBOL, f"{what}-signature", symbol, (("definer", role_or_ring), ("object", shape)), name, node)
    ]


def _signature_matches(proto: Prototype, signature: A.Signature) -> bool:
    if proto.kind != "func" or len(proto.params) != len(signature.params):
        return False
    if signature.result == "void":
        if proto.returns:
            return False
    elif len(proto.returns) != 1:
        return False
    pairs = list(zip(signature.params, proto.params, strict=True))
    if signature.result != "void":
        pairs.append((signature.result, proto.returns[0]))
    return all(slot in _HALF_SLOTS if t in ("bf16", "f16") else _PTX_SLOT.get(t, slot) == slot for t, slot in pairs)
