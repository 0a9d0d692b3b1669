"""Code generation: a placed composition in, the linker's CUDA C++ out (pure and deterministic).

The generated translation unit (``generated.cu`` in the link output, compiled with
NVRTC to LTO IR and linked with every package) holds, in this order:

1. **handle stubs** — one ``extern "C" __device__ unsigned NAME()`` per handle a
   component's object reads (``captured.needed``), returning its solved constant
   (:mod:`linker.handles`); LTO folds each call into an immediate;
2. **call trampolines** — for each call site's symbol, a function with the
   contract's signature that calls the symbol of the export serving the call
   (``checker.resolve.serving_exports``); exports no call site reaches get no
   trampoline and are dropped by LTO (an ``I-EXPORT-DROPPED`` note). A ``bf16``/``f16``
   value is passed as each side's own C type (bits or a 2-byte aggregate, read from
   the captured PTX shape: :func:`component_ctype`), its bits copied between them;
2b. **tensor transfers** — each tensor connection's route, lowered by
   ``transfer_model.lower`` with its barrier IDs and scratch address
   (:mod:`linker.transfers`), its export and import functions named by the two
   stages' tensor handles; an export several imports read gets an export handle that
   runs their routes in import order; an export no import names gets an export
   handle that does nothing;
3. **declarations** of the role entries and ring init hooks the components define;
4. **the params block** ``KlParams`` — each stage's ``params`` region at the next
   multiple of its ``align`` in pipeline order (the layout L-PARAMS checks), with
   ``static_assert``s on its offsets; fields bound to a fact (``= fact F`` or ``uses
   fact F … as param P``) whose owner states one value are written by the launch
   helper from that value (:func:`params_layout`);
5. **the dispatch kernel** ``kl_dispatch`` (specs/handles.md, "The role-entry ABI"):
   ``__launch_bounds__(T, B)`` with T the block's threads and B the contracts'
   ``blocks_per_sm`` (1 when unstated and the kernel runs ``setmaxnreg``, which needs
   a register cap at entry: specs/hardware.md §3.2), no static shared memory, one thread
   of each ``init by`` role calling its ring init hook, ``__syncthreads()`` (when
   there is a ring to initialise; a cluster barrier when the launch is clustered, with
   ``__cluster_dims__`` on the kernel and a second cluster barrier before it exits), then —
   when any role declares ``regs`` — ``setmaxnreg`` in every warpgroup (each group to
   its placed budget: ``.dec`` below the entry count, ``.inc`` above, nothing when
   equal; groups whose roles declare no ``regs`` and idle groups take part, so the
   budgets that run are exactly the ones the placement fitted into the pool), and
   finally each warp range calling its role's entry with ``(params, smem)``; when every
   role lies in one register group, the group's ``setmaxnreg`` and its roles' calls share
   one branch (ptxas compiles a branch to its budget only then).

Shared-memory handle values are offsets from the dynamic shared memory base (shared
address ``smem_user_base``; see :mod:`linker.handles`). Compositions the role-entry
ABI cannot express yet are refused with ``E-UNSUPPORTED`` (:func:`unsupported`)
instead of generating code that would compute the wrong thing.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from checker.clauses import l_link
from checker.composition import Composition, Owned
from checker.handles import init_hook_symbol, resolve_handles, sanitize
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.symbols import Code
from hardware.residency import tmem_alloc_columns
from linker.counters import (
    FUNCTION_KINDS,
    CounterArray,
    counter_functions,
    plan_counters,
    render_counters,
    unsupported_counters,
)
from linker.handles import HandleValue, Solved, UnfixedFact, UnplacedHandle, handle_value, launch_cluster
from linker.watchdog import RING_WAITS, Watchdog, plan_waits
from package.captured import Captured
from package.loader import StageEntry
from placement.adapter import Placed
from placement.problem import Domain, round_up
from placement.result import Placement

if TYPE_CHECKING:
    from linker.transfers import Transfer, UnusedExport
    from transfer_model.adapter import RoutedSeam

KERNEL = "kl_dispatch"
SOURCE_NAME = "generated.cu"
FORMAT = "kernlink-generated/1"
#: Handle kinds that are functions of a route (rendered with the transfers), not constants.
TENSOR_HANDLES = frozenset({"tensor_export", "tensor_import"})
#: Counter handles that are functions, rendered with the counter array (:mod:`linker.counters`).
COUNTER_FUNCTIONS = FUNCTION_KINDS

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


# ----------------------------------------------------------------- the plan


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
    the values an owner permits for a caller-given fact field (empty: any).
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


# ----------------------------------------------------------------- what cannot be generated


def unsupported(comp: Composition) -> list[Diagnostic]:
    """``E-UNSUPPORTED`` for every part of the composition the role-entry ABI cannot express yet."""
    out: list[Diagnostic] = []

    def refuse(node: A.Node, stage: str, what: str, why: str) -> None:
        out.append(
            Diagnostic(
                Code.E_UNSUPPORTED,
                f"`kernlink link` cannot link {what} of `{stage}` yet",
                labels=(Label(node.span, "declared here"),),
                notes=(why,),
                helps=("check the composition with `kernlink check`; link it once the linker supports this",),
                data=(("stage", stage), ("what", what)),
            )
        )

    out += unsupported_counters(comp)  # the rest link through the counter array (linker/counters.py)
    if launch_cluster(comp) is None:
        out.append(
            Diagnostic(
                Code.E_UNSUPPORTED,
                f"`kernlink link` cannot choose the cluster shape of `{comp.pipeline.name}`",
                labels=(Label(comp.pipeline.span, "this pipeline"),),
                notes=("the stages accept several cluster shapes in common, and none is 1x1x1",),
                helps=("state the launch's shape in the pipeline: `cluster 2x1x1`",),
                data=(("stage", comp.pipeline.name), ("what", "cluster shape")),
            )
        )
    shared: list[Owned[A.Buffer] | Owned[A.Domain]] = [*comp.items(A.Buffer), *comp.items(A.Domain)]
    for buffer in shared:
        refuse(
            buffer.item,
            buffer.stage_name,
            f"symmetric buffer or domain `{buffer.item.name}`",
            "multi-GPU buffers need host-side allocation that the launch helper does not do",
        )
    for call in comp.calls:
        for type_name in (*call.item.signature.params, call.item.signature.result):
            if type_name not in C_TYPES and type_name not in HALF_TYPES:
                refuse(
                    call.item,
                    call.stage_name,
                    f"call `{call.item.name}` with a `{type_name}` value",
                    f"trampolines pass {', '.join(sorted((set(C_TYPES) | HALF_TYPES) - {'void'}))}",
                )
                break
    for export in comp.items(A.ExportTensor):
        if export.item.ring is not None:
            refuse(
                export.item,
                export.stage_name,
                f"the ring-fed export `{export.item.name}` (one generation per tile through ring `{export.item.ring}`)",
                "a generated route hands one generation over: its scratch is one address and its named barriers "
                "order one hand-off per kernel. Per tile it needs the export and import handles to take the "
                f"generation's slot of `{export.item.ring}` (the scratch at that slot of the `per_slot` claim) and "
                f"the hand-off ordered by `{export.item.ring}`'s `full` and `empty` barriers (or one route barrier "
                "per slot), which the route ladder and the lowering do not generate",
            )
    return out


# ----------------------------------------------------------------- planning


def generate(
    comp: Composition,
    placed: Placed,
    *,
    entry_regs: int | None = None,
    inputs: Sequence[str] = (),
    routes: Sequence[RoutedSeam] = (),
    watchdog: int | None = None,
) -> Generated:
    """The generated code for a checked, placed composition whose stages come from packages.

    ``entry_regs`` is the register count the kernel starts with (default: the
    placement's prediction); it decides each ``setmaxnreg``'s direction. ``inputs``
    names the packages, for the file's header. ``routes`` are the tensor connections'
    routes, and ``placed`` must hold their named barriers
    (:func:`linker.transfers.place_route_barriers`). ``watchdog`` bounds the waits the
    linker generates to that many cycles (:mod:`linker.watchdog`; None: unbounded). Raises :class:`DiagnosticError`
    (``E-UNSUPPORTED``, ``L-LINK``, ``E-INTERNAL``) when no correct code can be made.
    """
    problems = unsupported(comp)
    if problems:
        raise DiagnosticError(problems)
    placement = placed.placement
    caps = placed.problem.capacities
    params = params_layout(comp)
    counters = plan_counters(comp, placement)
    solved = Solved(
        comp,
        placed.problem,
        placement,
        {r.stage: r.offset for r in params.regions if params.region_of(r.stage) is r},
        counters,
    )
    handles = _handles(comp, solved)
    trampolines, dropped, notes = _calls(comp)
    transfers, unused = _plan_transfers(comp, placed, routes)
    dispatch = _dispatch(
        comp, placement, params, caps.smem_user_base, placement.entry_regs if entry_regs is None else entry_regs
    )
    waits = plan_waits(comp, solved, counters, watchdog)
    counter_lines = [
        *waits.prelude,
        *render_counters(counters, counter_functions(comp), waits.counter_wait),
        *waits.lines,
    ]
    source = render(comp, handles, trampolines, params, dispatch, inputs, transfers, unused, counter_lines)
    target = comp.target.name if comp.target is not None else comp.target_name
    return Generated(
        comp.pipeline.name,
        target,
        source,
        handles,
        trampolines,
        dropped,
        params,
        dispatch,
        tuple(notes),
        transfers,
        unused,
        counters,
        waits.watchdog,
        tuple(counter_lines),
    )


def params_layout(comp: Composition) -> ParamsLayout:
    """Each stage's params blocks at the next multiple of their alignment, in pipeline order."""
    regions: list[ParamsRegion] = []
    fields: list[ParamField] = []
    cursor, widest = 0, 1
    for entry in comp.stages:
        blocks = [it for it in entry.stage.items if isinstance(it, A.Params)]
        uses = {u.param: u.name for u in entry.stage.items if isinstance(u, A.UsesFact)}
        for i, block in enumerate(blocks):
            offset = round_up(cursor, max(block.align, 1))
            member = sanitize(entry.name) if i == 0 else f"{sanitize(entry.name)}_{sanitize(block.name)}"
            regions.append(ParamsRegion(entry.name, block.name, member, offset, block.size, block.align))
            for f in block.fields:
                fields.append(_field(comp, entry, block, f, offset, f.fact or uses.get(f.name)))
            cursor, widest = offset + block.size, max(widest, block.align)
    return ParamsLayout(round_up(cursor, widest), widest, tuple(regions), tuple(fields))


def _field(
    comp: Composition, entry: StageEntry, block: A.Params, f: A.ParamField, base: int, fact: str | None
) -> ParamField:
    size = struct.calcsize("<" + FIELD_FORMATS.get(f.type, "B"))
    owners = comp.owners.get(fact or "", ())
    if fact is None or not owners:
        return ParamField(entry.name, block.name, f.name, f.type, base + f.offset, size, "caller", fact)
    owner = owners[0]
    value = owner.item.value
    if value.kind == "exact" and f.type in FIELD_FORMATS:
        return ParamField(
            entry.name,
            block.name,
            f.name,
            f.type,
            base + f.offset,
            size,
            "fact",
            fact,
            value.values[0],
            owner.stage_name,
        )
    allowed = value.candidates() or ()
    return ParamField(
        entry.name, block.name, f.name, f.type, base + f.offset, size, "caller", fact, None, owner.stage_name, allowed
    )


def _handles(comp: Composition, solved: Solved) -> tuple[HandleValue, ...]:
    values: dict[str, HandleValue] = {}
    problems: list[Diagnostic] = []
    for entry in comp.stages:
        needed = entry.captured.needed_symbols if entry.captured is not None else frozenset()
        for symbol, spec in resolve_handles(entry.stage, needed).items():
            if spec.kind in TENSOR_HANDLES or spec.kind in COUNTER_FUNCTIONS or spec.kind in RING_WAITS:
                continue  # defined by the tensor transfers' code / with the counter array
            try:
                value = handle_value(spec, solved)
            except UnfixedFact as err:
                span = (spec.node or entry.stage).span
                problems.append(l_link.unfixed_fact(symbol, entry.name, spec.item, span, str(err)))
                continue
            except UnplacedHandle as err:
                problems.append(
                    Diagnostic(
                        Code.E_INTERNAL,
                        f"no value for handle `{symbol}` of `{entry.name}`: {err}",
                        labels=(Label((spec.node or entry.stage).span, "bound here"),),
                        helps=(
                            "report it with the inputs: a checked, placed composition has a value for every handle",
                        ),
                    )
                )
                continue
            if spec.kind in ("ring_full_count", "ring_empty_count") and value.value <= 0:
                problems.append(_zero_count(comp, entry, spec.item, value))
                continue
            first = values.setdefault(symbol, value)
            if first.value != value.value:
                span = (spec.node or entry.stage).span
                problems.append(
                    l_link.handle_read_twice(symbol, first.stage, first.value, entry.name, value.value, span)
                )
    if problems:
        raise DiagnosticError(problems)
    order = {e.name: i for i, e in enumerate(comp.stages)}
    return tuple(sorted(values.values(), key=lambda h: (order.get(h.stage, len(order)), h.symbol)))


def _zero_count(comp: Composition, entry: StageEntry, ring: str, value: HandleValue) -> Diagnostic:
    """An mbarrier initialised with no arrivals completes no phase: refuse it, never generate it."""
    which = "full" if value.kind == "ring_full_count" else "empty"
    init = next(
        (
            part
            for owned in comp.rings.get(ring, ())
            if owned.stage_name == entry.name
            for part in owned.item.items
            if isinstance(part, A.RingBarrierInit) and part.barrier == which
        ),
        None,
    )
    span = init.span if init is not None else entry.stage.span
    return l_link.zero_count(ring, which, value.value, span, value.why.split(": ", 1)[-1])


def _calls(comp: Composition) -> tuple[tuple[Trampoline, ...], tuple[DroppedExport, ...], list[Diagnostic]]:
    by_symbol: dict[str, Trampoline] = {}
    served: set[tuple[str, str]] = set()
    problems: list[Diagnostic] = []
    for call in comp.calls:
        exports = serving_exports(comp, call)
        if len(exports) != 1:
            problems.append(
                Diagnostic(
                    Code.E_INTERNAL,
                    f"call `{call.item.name}` of `{call.stage_name}` is served by {len(exports)} exports",
                    labels=(Label(call.item.span, "this call"),),
                    helps=("report it with the inputs: L-UNRESOLVED and L-AMBIGUOUS accept one export per call",),
                )
            )
            continue
        export = exports[0]
        served.add((export.stage_name, export.item.name))
        caller = f"{call.stage_name} {call.item.caller_kind} `{call.item.caller}`"
        sig = call.item.signature
        try:
            caller_ctypes = _ctypes(sig, call.stage.captured, call.item.symbol)
            export_ctypes = _ctypes(sig, export.stage.captured, export.item.symbol)
        except ValueError as err:
            problems.append(
                l_link.call_types(
                    call.item.name, call.stage_name, export.item.symbol, str(err), call.item.span, export.item.span
                )
            )
            continue
        made = Trampoline(
            call.item.symbol,
            call.item.name,
            _signature_text(sig),
            (caller,),
            export.stage_name,
            export.item.symbol,
            sig.params,
            sig.result,
            caller_ctypes,
            export_ctypes,
        )
        first = by_symbol.get(made.symbol)
        if first is None:
            by_symbol[made.symbol] = made
        elif (first.export_symbol, first.params, first.result, first.caller_ctypes) == (
            made.export_symbol,
            made.params,
            made.result,
            made.caller_ctypes,
        ):
            by_symbol[made.symbol] = replace(first, callers=(*first.callers, caller))
        else:
            problems.append(
                l_link.trampoline_twice(
                    made.symbol, first.callers[0], first.export_symbol, caller, made.export_symbol, call.item.span
                )
            )
    if problems:
        raise DiagnosticError(problems)
    dropped = []
    notes = []
    for exp in comp.items(A.ExportCallable):
        if (exp.stage_name, exp.item.name) in served:
            continue
        dropped.append(DroppedExport(exp.stage_name, exp.item.name, exp.item.symbol))
        notes.append(
            Diagnostic(
                Code.I_EXPORT_DROPPED,
                f"export `{exp.item.name}` of `{exp.stage_name}` is called by no call site; "
                f"the link drops `{exp.item.symbol}`",
                Severity.NOTE,
                (Label(exp.item.span, "exported here"),),
                notes=("LTO removes device functions nothing references",),
            )
        )
    return tuple(sorted(by_symbol.values(), key=lambda t: t.symbol)), tuple(dropped), notes


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


def _ctypes(sig: A.Signature, captured: Captured | None, symbol: str) -> tuple[str, ...]:
    proto = captured.prototype_map.get(symbol) if captured is not None else None
    slots: list[str | None] = [None] * (len(sig.params) + 1)
    if proto is not None and len(proto.params) == len(sig.params):
        slots[:-1] = list(proto.params)
    if proto is not None and len(proto.returns) == 1:
        slots[-1] = proto.returns[0]
    return tuple(component_ctype(t, slot) for t, slot in zip((*sig.params, sig.result), slots, strict=True))


def _signature_text(sig: A.Signature) -> str:
    return f"({', '.join(sig.params)}) -> {sig.result}"


def _dispatch(
    comp: Composition, placement: Placement, params: ParamsLayout, smem_base: int, entry_regs: int
) -> Dispatch:
    launch = next(iter(comp.launches), None)
    threads = placement.block_warps * 32
    if threads <= 0 or not placement.roles:
        raise DiagnosticError([l_link.no_role(comp.pipeline.name, comp.pipeline.span)])
    setmaxnreg = any(info.role.regs is not None for info in comp.roles.values())
    if setmaxnreg and comp.target is not None and not comp.target.has("setmaxnreg"):
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_UNSUPPORTED,
                    f"roles declare `regs`, but `{comp.target.name}` has no `setmaxnreg`",
                    labels=(Label(comp.target_span, "target"),),
                )
            ]
        )
    bps = launch.blocks_per_sm if launch is not None else None
    min_blocks = bps if bps is not None else (1 if setmaxnreg else None)
    use = placement.use(Domain.SMEM)
    dynamic = max(0, use.end - smem_base)
    tmem_columns, tmem_slot = 0, 0
    if any(True for _ in comp.items(A.TmemClaim)):
        tmem_columns, tmem_slot = _tmem_allocation(comp, placement, dynamic)
        dynamic = tmem_slot + TMEM_SLOT_BYTES
    members = {r.stage: r.member for r in params.regions if params.region_of(r.stage) is r}
    roles = []
    for r in sorted(placement.roles, key=lambda r: r.first_warp):
        info = comp.roles.get(r.name)
        if info is None or info.stage.name != r.owner or not info.role.entry:
            continue
        roles.append(RoleEntry(r.owner, r.name, info.role.entry, r.first_warp, r.warps, members.get(r.owner)))
    inits = []
    for owned in _initialised_rings(comp):
        init = owned.item.first(A.RingInitBy)
        assert isinstance(init, A.RingInitBy)
        role = placement.role(owned.stage_name, init.role)
        inits.append(
            RingInit(
                owned.item.name,
                owned.stage_name,
                init_hook_symbol(owned.stage_name, owned.item.name),
                init.role,
                32 * role.first_warp,
            )
        )
    groups: list[GroupRegs] = []
    if setmaxnreg:
        for grp in placement.groups:
            op = None if grp.budget == entry_regs else ("inc" if grp.budget > entry_regs else "dec")
            last = groups[-1] if groups else None
            if last is not None and (last.budget, last.op) == (grp.budget, op):
                groups[-1] = GroupRegs(
                    (*last.groups, grp.index),
                    last.first_warp,
                    last.warps + grp.warps,
                    grp.budget,
                    op,
                    tuple(dict.fromkeys((*last.roles, *grp.roles))),
                )
            else:
                groups.append(GroupRegs((grp.index,), grp.first_warp, grp.warps, grp.budget, op, grp.roles))
    return Dispatch(
        KERNEL,
        threads,
        placement.block_warps,
        min_blocks,
        dynamic,
        smem_base,
        launch.kind if launch is not None else "fixed",
        bps,
        setmaxnreg,
        entry_regs,
        tuple(groups),
        tuple(inits),
        tuple(roles),
        placement.idle_warps,
        launch_cluster(comp) or (1, 1, 1),
        tmem_columns,
        tmem_slot,
    )


def _initialised_rings(comp: Composition) -> Iterator[Owned[A.Ring]]:
    """Each ring side whose `init by` names a role of its own stage, in stage then source order."""
    for owned in comp.items(A.Ring):
        init = owned.item.first(A.RingInitBy)
        if isinstance(init, A.RingInitBy) and any(r.name == init.role for r in owned.stage.stage.roles):
            yield owned


# ----------------------------------------------------------------- rendering

_RULE = "// " + "-" * 64


def render(
    comp: Composition,
    handles: Sequence[HandleValue],
    trampolines: Sequence[Trampoline],
    params: ParamsLayout,
    d: Dispatch,
    inputs: Sequence[str] = (),
    transfers: Sequence[Transfer] = (),
    unused: Sequence[UnusedExport] = (),
    counter_lines: Sequence[str] = (),
    *,
    control: bool = False,
) -> str:
    """The generated translation unit, as text ending with a newline.

    ``control`` renders the glue of the one-unit control build (``kernlink parity``): it
    follows every component's source, each wrapped in :func:`unit_namespace`, so the role
    entries and init hooks are not declared again with ``const void*`` (a conflicting
    declaration of the components' own) but named from their namespaces, and the dispatch
    kernel casts each params region to the type the entry is defined with.
    """
    target = comp.target.name if comp.target is not None else comp.target_name
    out = [
        f"// kernlink generated code ({FORMAT}): pipeline `{comp.pipeline.name}`, target {target}, "
        f"kernel `{d.kernel}`.",
        "// `kernlink link` writes this file; link.map records why each constant below has its value.",
        "// Do not edit it: change the contracts or the components and link again.",
        "//",
        "// stages, in pipeline order:",
    ]
    names = list(inputs) + [""] * (len(comp.stages) - len(inputs))
    out += [
        f"//   {e.name} {e.stage.version}" + (f" from {n}" if n else "")
        for e, n in zip(comp.stages, names, strict=True)
    ]
    out += [
        "",
        _RULE,
        "// Handles: each returns its solved constant; LTO folds every call into an immediate.",
        f"// Shared-memory offsets count from the dynamic shared memory base (shared address {d.smem_base}).",
    ]
    if handles:
        out.append('extern "C" {')
        for stage in dict.fromkeys(h.stage for h in handles):
            out.append(f"// {stage}")
            for h in (h for h in handles if h.stage == stage):
                out.append(f"__device__ unsigned {h.symbol}() {{ return {h.value}u; }}  // {_comment(h.why)}")
        out.append('}  // extern "C"')
    else:
        out.append("// (no component reads a handle)")
    if counter_lines:
        out += ["", _RULE, *counter_lines]
    out += ["", _RULE, "// Call trampolines: each call site's symbol calls the export that serves it."]
    if not trampolines:
        out.append("// (no call sites)")
    out += _half_lines(trampolines)
    for t in trampolines:
        out += _trampoline_lines(t)
    if transfers or unused:
        out += ["", _RULE, *_transfer_lines(transfers, unused)]
    out += ["", _RULE, "// Role entries and ring init hooks, defined by the components."]
    declared: dict[str, tuple[str, str]] = {}
    for init in d.inits:
        declared.setdefault(init.symbol, (init.stage, f"{init.stage}: init hook of ring `{init.ring}`"))
    for role in d.roles:
        declared.setdefault(role.entry, (role.stage, f"{role.stage}: entry of role `{role.role}`"))
    if control:
        out += [
            "// (one-unit control build: as each component defines them, in its namespace above)",
            "template <typename F> struct kl_entry_params;",
            "template <typename P, typename S> struct kl_entry_params<void(P, S)> { typedef P type; };",
        ]
        out += [f"using {unit_namespace(stage)}::{sym};  // {why}" for sym, (stage, why) in declared.items()]
    else:
        out.append('extern "C" {')
        out += [
            f"__device__ void {sym}(const void* params, unsigned char* smem);  // {why}"
            for sym, (_, why) in declared.items()
        ]
        out.append('}  // extern "C"')
    out += ["", _RULE, *_params_lines(params), "", _RULE, *_kernel_lines(d, params, control)]
    return "\n".join(out) + "\n"


def _plan_transfers(
    comp: Composition, placed: Placed, routes: Sequence[RoutedSeam]
) -> tuple[tuple[Transfer, ...], tuple[UnusedExport, ...]]:
    """:func:`linker.transfers.plan_transfers`, imported (with the route lowering it needs) only for a
    composition with a tensor export or import: for any other it plans nothing."""
    if not comp.tensor_imports and next(comp.items(A.ExportTensor), None) is None:
        return (), ()
    from linker.transfers import plan_transfers

    return plan_transfers(comp, placed, routes)


def _transfer_lines(transfers: Sequence[Transfer], unused: Sequence[UnusedExport]) -> list[str]:
    from linker.transfers import elem_ctype

    out = [
        "// Tensor transfers: each connection's route, lowered with its link-time constants. The export",
        "// function is the producing stage's export handle, the import function the consuming stage's import",
        "// handle; every move is a bit copy (nothing is converted).",
    ]
    for t in transfers:
        where = "the export's claim" if t.shared == "buffer" else "scratch"
        scratch = (
            f"{where} `{t.scratch_claim}` at shared address {t.scratch_addr} (dynamic base + "
            f"{t.scratch_offset}), {t.scratch_bytes} B"
            if t.scratch_claim is not None
            else "no scratch"
        )
        barriers = (
            f"named barrier(s) {', '.join(map(str, t.barrier_ids))} of {t.barrier_threads} threads"
            if t.barrier_ids
            else "no named barrier"
        )
        out += ["", f"// {t.connection}: {t.title} ({t.rung}); {scratch}; {barriers}", t.source.rstrip("\n")]
    fans: dict[str, list[Transfer]] = {}
    for t in transfers:
        if t.fanned_out:
            fans.setdefault(t.export_symbol, []).append(t)
    for symbol, routes in fans.items():
        ordered = sorted(routes, key=lambda t: t.order)
        first = ordered[0]
        ctype = elem_ctype(first.elem)
        out += [
            "",
            f"// {first.export_stage}: export `{first.export}` feeds {len(ordered)} routes; its export handle "
            "runs them in import order",
            f'extern "C" __device__ void {symbol}(const {ctype}* held) {{',
            *(f"    {t.route_symbol}(held);  // route {t.order}: {t.connection}" for t in ordered),
            "}",
        ]
    for u in unused:
        out += [
            "",
            f"// {u.stage}: export `{u.export}` is imported by no stage; its export handle does nothing",
            f'extern "C" __device__ void {u.symbol}(const {u.ctype}* held) {{ (void)held; }}',
        ]
    return out


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def _params_lines(params: ParamsLayout) -> list[str]:
    if not params.regions:
        return ["// The params block: no stage declares `params`; the kernel takes no parameter."]
    out = [
        "// The params block: each stage's params region at its offset. The launch helper writes the fields",
        "// marked `fact` from their owners' values; the caller gives the others.",
        f"struct __align__({params.align}) KlParams {{",
    ]
    cursor = 0
    for i, region in enumerate(params.regions):
        if region.offset > cursor:
            out.append(f"    unsigned char kl_pad{i}[{region.offset - cursor}];")
        out.append(
            f"    unsigned char {region.member}[{region.size}];  // @ {region.offset}: {region.stage} "
            f"`{region.block}` (align {region.align})"
        )
        for f in (f for f in params.fields if f.stage == region.stage and f.block == region.block):
            out.append(f"    //   @ {f.offset} {f.name}: {f.type}{_field_source(f)}")
        cursor = region.offset + region.size
    if params.size > cursor:
        out.append(f"    unsigned char kl_pad_end[{params.size - cursor}];")
    out.append("};")
    out.append(
        f"static_assert(sizeof(KlParams) == {params.size} && alignof(KlParams) == {params.align}, "
        '"params block layout");'
    )
    return out


def _field_source(f: ParamField) -> str:
    if f.source == "fact":
        return f" = fact `{f.fact}` = {f.value} (owned by {f.owner})"
    if f.fact is not None:
        return f" = fact `{f.fact}`, given by the caller" + (f" (owned by {f.owner})" if f.owner else "")
    return " (caller)"


def _branches(ranges: Sequence[tuple[int, int]], start: int = 0) -> list[str]:
    """``if``/``else if`` conditions selecting each warp range ``[lo, hi)`` (ranges sorted, disjoint)."""
    out = []
    previous = start
    for i, (lo, hi) in enumerate(ranges):
        cond = f"warp < {hi}u" if lo == previous else f"warp >= {lo}u && warp < {hi}u"
        out.append(("if" if i == 0 else "} else if") + f" ({cond}) {{")
        previous = hi
    return out


def unit_namespace(stage: str) -> str:
    """The namespace a stage's source is wrapped in inside the one-unit control build (``kernlink parity``)."""
    return f"kl_unit_{sanitize(stage)}"


def _kernel_lines(d: Dispatch, params: ParamsLayout, control: bool = False) -> list[str]:
    bounds = f"{d.threads}, {d.min_blocks}" if d.min_blocks is not None else f"{d.threads}"
    regs = f"entry {d.entry_regs} registers per thread" if d.setmaxnreg else "no setmaxnreg (no role declares `regs`)"
    signature = "const __grid_constant__ KlParams params" if params.regions else ""
    out = [
        f"// The dispatch kernel: {d.threads} threads = {d.block_warps} warps; {d.dynamic_smem} B of dynamic "
        f"shared memory; {regs}.",
        *(
            [
                f"// clusters of {d.cluster[0]}x{d.cluster[1]}x{d.cluster[2]} CTAs, fixed at compile time: "
                "the grid must be a multiple of the cluster"
            ]
            if d.clustered
            else []
        ),
        f'extern "C" __global__ void __launch_bounds__({bounds}){_cluster_dims(d)} {d.kernel}({signature}) {{',
        "    extern __shared__ __align__(1024) unsigned char kl_smem[];",
        "    const unsigned warp = threadIdx.x / 32u;",
    ]

    def params_of(member: str | None, entry: str) -> str:
        value = f"params.{member}" if member is not None else "kl_smem"
        return f"(kl_entry_params<decltype({entry})>::type){value}" if control else value

    members = {r.stage: r.member for r in params.regions if params.region_of(r.stage) is r}
    if d.tmem_columns:
        out += _tmem_alloc_lines(d)
    if d.inits:
        out.append("    // 1. ring inits: the first thread of each `init by` role, before any role starts")
        for init in d.inits:
            out += [
                f"    if (threadIdx.x == {init.thread}u) {{",
                f"        {init.symbol}({params_of(members.get(init.stage), init.symbol)}, kl_smem);"
                f"  // ring `{init.ring}`, init by role `{init.role}`",
                "    }",
            ]
        if d.clustered:
            out += [
                "    // every barrier of every CTA in the cluster is initialised before any role starts",
                '    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");',
                '    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");',
            ]
        else:
            out.append("    __syncthreads();  // every barrier is initialised before any role starts")
    if d.groups and _nested(d):
        return [*out, *_nested_lines(d, params_of, 1 + bool(d.inits)), *_tmem_free_lines(d), *_cluster_exit(d), "}"]
    if d.groups:
        out.append(
            f"    // {1 + bool(d.inits)}. register groups: setmaxnreg per warpgroup (the kernel starts with "
            f"{d.entry_regs})"
        )
        for line, grp in zip(
            _branches([(g.first_warp, g.first_warp + g.warps) for g in d.groups]), d.groups, strict=True
        ):
            out.append(f"    {line}")
            what = f"groups {grp.groups[0]}..{grp.groups[-1]}" if len(grp.groups) > 1 else f"group {grp.groups[0]}"
            who = ", ".join(grp.roles) or "idle warps"
            if grp.op is None:
                out.append(
                    f"        // {what}, warps {grp.first_warp}..{grp.first_warp + grp.warps - 1} ({who}): "
                    f"keeps {grp.budget}"
                )
            else:
                out.append(
                    f'        asm volatile("setmaxnreg.{grp.op}.sync.aligned.u32 {grp.budget};");'
                    f"  // {what}, warps {grp.first_warp}..{grp.first_warp + grp.warps - 1}: {who}"
                )
        out.append("    }")
    step = 1 + bool(d.inits) + bool(d.groups)
    out.append(f"    // {step}. roles: each warp range calls its role's entry")
    if d.roles:
        for line, role in zip(
            _branches([(r.first_warp, r.first_warp + r.warps) for r in d.roles]), d.roles, strict=True
        ):
            out.append(f"    {line}")
            passed = params_of(role.params_member, role.entry)
            out.append(
                f"        {role.entry}({passed}, kl_smem);  // {role.stage} role "
                f"`{role.role}`, warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
        out.append("    }")
    if d.idle_warps:
        out.append(f"    // idle warps {', '.join(str(w) for w in d.idle_warps)} return at once")
    out += _tmem_free_lines(d)
    out += _cluster_exit(d)
    out.append("}")
    return out


def _group_of(d: Dispatch, role: RoleEntry) -> GroupRegs | None:
    return next(
        (
            g
            for g in d.groups
            if g.first_warp <= role.first_warp and role.first_warp + role.warps <= g.first_warp + g.warps
        ),
        None,
    )


def _nested(d: Dispatch) -> bool:
    """True when every role lies inside one register group: each group's branch then holds its roles."""
    return all(_group_of(d, r) is not None for r in d.roles)


def _setmaxnreg_line(grp: GroupRegs, indent: str) -> str:
    what = f"groups {grp.groups[0]}..{grp.groups[-1]}" if len(grp.groups) > 1 else f"group {grp.groups[0]}"
    who = ", ".join(grp.roles) or "idle warps"
    span = f"warps {grp.first_warp}..{grp.first_warp + grp.warps - 1}"
    if grp.op is None:
        return f"{indent}// {what}, {span} ({who}): keeps {grp.budget}"
    return f'{indent}asm volatile("setmaxnreg.{grp.op}.sync.aligned.u32 {grp.budget};");  // {what}, {span}: {who}'


def _nested_lines(d: Dispatch, params_of: Callable[[str | None, str], str], step: int) -> list[str]:
    """Register groups and roles in one if/else chain: ptxas compiles each branch to its group's budget.

    ptxas allocates registers for the code after a ``setmaxnreg`` to that budget only when
    the instruction and the code are in the same branch (each warpgroup's role one branch of
    a single if/else); with a separate chain the whole kernel is compiled to
    the entry count, and a role needing more (a wgmma accumulator) does not compile.
    """
    out = [
        f"    // {step}. register groups and roles: each warpgroup range runs setmaxnreg (the kernel starts "
        f"with {d.entry_regs}), then calls its roles' entries"
    ]
    for line, grp in zip(_branches([(g.first_warp, g.first_warp + g.warps) for g in d.groups]), d.groups, strict=True):
        out.append(f"    {line}")
        out.append(_setmaxnreg_line(grp, "        "))
        inner = [r for r in d.roles if _group_of(d, r) is grp]
        if len(inner) == 1 and (inner[0].first_warp, inner[0].warps) == (grp.first_warp, grp.warps):
            role = inner[0]
            out.append(
                f"        {role.entry}({params_of(role.params_member, role.entry)}, kl_smem);  "
                f"// {role.stage} role `{role.role}`, "
                f"warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
            continue
        ranges = [(r.first_warp, r.first_warp + r.warps) for r in inner]
        for branch, role in zip(_branches(ranges, grp.first_warp), inner, strict=True):
            out.append(f"        {branch}")
            out.append(
                f"            {role.entry}({params_of(role.params_member, role.entry)}, kl_smem);  "
                f"// {role.stage} "
                f"role `{role.role}`, warps {role.first_warp}..{role.first_warp + role.warps - 1}"
            )
        if inner:
            out.append("        }")
    out.append("    }")
    if d.idle_warps:
        out.append(f"    // idle warps {', '.join(str(w) for w in d.idle_warps)} return at once")
    return out


def _trampoline_ctypes(t: Trampoline) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if t.caller_ctypes and t.export_ctypes:
        return t.caller_ctypes, t.export_ctypes
    plain = tuple(component_ctype(p, None) for p in (*t.params, t.result))
    return plain, plain


def _half_lines(trampolines: Sequence[Trampoline]) -> list[str]:
    """The 16-bit float helpers, when some trampoline passes one."""
    used = {c for t in trampolines for side in _trampoline_ctypes(t) for c in side}
    differs = any(a != b for t in trampolines for a, b in zip(*_trampoline_ctypes(t), strict=True))
    out = []
    if HALF_STRUCT in used:
        out += [
            "// a 16-bit float passed as a 2-byte aggregate (isomorphic to __nv_bfloat16 and __half)",
            f"struct __align__(2) {HALF_STRUCT} {{ unsigned short bits; }};",
        ]
    if differs:
        out += [
            "// the caller and the export pass a 16-bit float differently: the trampoline copies its bits",
            "template <typename To, typename From>",
            "static __device__ __forceinline__ To kl_bit_cast(From v) {",
            '    static_assert(sizeof(To) == sizeof(From), "a bit copy keeps the size");',
            "    union { From from; To to; } u;",
            "    u.from = v;",
            "    return u.to;",
            "}",
        ]
    return out


def _trampoline_lines(t: Trampoline) -> list[str]:
    caller, export = _trampoline_ctypes(t)

    def cast(to: str, frm: str, value: str) -> str:
        return value if to == frm else f"kl_bit_cast<{to}>({value})"

    args = ", ".join(f"{c} a{i}" for i, c in enumerate(caller[:-1]))
    passed = ", ".join(cast(e, c, f"a{i}") for i, (c, e) in enumerate(zip(caller[:-1], export[:-1], strict=True)))
    call = f"{t.export_symbol}({passed})"
    body = f"{call};" if t.result == "void" else f"return {cast(caller[-1], export[-1], call)};"
    return [
        f'extern "C" __device__ {export[-1]} {t.export_symbol}({", ".join(export[:-1])});'
        f"  // {t.export_stage}: export `{t.call}` {t.signature}",
        f'extern "C" __device__ {caller[-1]} {t.symbol}({args}) {{ {body} }}  // called by {"; ".join(t.callers)}',
    ]


def _cluster_dims(d: Dispatch) -> str:
    return f" __cluster_dims__({d.cluster[0]}, {d.cluster[1]}, {d.cluster[2]})" if d.clustered else ""


def _cluster_exit(d: Dispatch) -> list[str]:
    """A clustered kernel's last step: no CTA leaves while a peer may still reach its shared memory."""
    if not d.clustered:
        return []
    return [
        "    // every role of every CTA in the cluster has returned: no peer still reaches this CTA's shared",
        "    // memory when it exits",
        '    asm volatile("barrier.cluster.arrive.release;" ::: "memory");',
        '    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");',
    ]


def _tmem_allocation(comp: Composition, placement: Placement, dynamic: int) -> tuple[int, int]:
    """Columns to allocate (the one allocation holding every placed column) and the offset of the address word."""
    if comp.target is None:
        raise ValueError("a placed composition has a known target")
    columns = tmem_alloc_columns(comp.target, placement.use(Domain.TMEM).end)
    slot = round_up(dynamic, TMEM_SLOT_BYTES)
    limit = comp.target.smem_per_block_optin
    if slot + TMEM_SLOT_BYTES > limit:
        raise DiagnosticError([l_link.no_tmem_slot(dynamic, limit, TMEM_SLOT_BYTES, comp.pipeline.span)])
    return columns, slot


def _tmem_alloc_lines(d: Dispatch) -> list[str]:
    """Warp 0 allocates the tensor memory every role shares and gives up the allocation permit.

    Every ``P_C_tmem`` handle is a column of this allocation counted from column 0, so an
    allocation that does not start at lane 0, column 0 stops the kernel (``trap``) rather
    than let roles use columns they do not own.
    """
    slot = f"kl_smem + {d.tmem_slot}u"
    return [
        f"    // 0. tensor memory: warp 0 allocates {d.tmem_columns} columns before any role starts (tcgen05.alloc",
        "    //    writes the address to shared memory) and relinquishes the allocation permit",
        "    if (warp == 0u) {",
        '        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::'
        f'"r"(static_cast<unsigned>(__cvta_generic_to_shared({slot}))), "r"({d.tmem_columns}u) : "memory");',
        '        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");',
        "    }",
        '    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");',
        "    __syncthreads();",
        '    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");',
        f"    if (*reinterpret_cast<volatile unsigned*>({slot}) != 0u) {{",
        '        asm volatile("trap;");  // handles count columns from 0: another allocation start is unusable',
        "    }",
    ]


def _tmem_free_lines(d: Dispatch) -> list[str]:
    """After every role has returned, warp 0 frees the allocation."""
    if not d.tmem_columns:
        return []
    return [
        "    // every role has returned: warp 0 frees the tensor memory",
        '    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");',
        "    __syncthreads();",
        '    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");',
        "    if (warp == 0u) {",
        f'        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, {d.tmem_columns};" :: "r"(0u) : '
        '"memory");',
        "    }",
    ]
