"""Planning the generated unit: the link plan in (:class:`analysis.plan.Plan`: its placement, its
routes and what the link reads of the composition, :mod:`analysis.link_inputs`; never the contract
AST), its artifacts (:mod:`linker.artifacts`) out, written as CUDA C++ by :mod:`linker.render`
(pure and deterministic).

The generated translation unit (``generated.cu`` in the link output, compiled with
NVRTC to LTO IR and linked with every package) holds, in this order:

1. **handle stubs** — one ``extern "C" __device__ unsigned NAME()`` per handle a
   component's object reads (``captured.needed``), returning its solved constant
   (:mod:`linker.handles`); LTO folds each call into an immediate;
2. **call trampolines** — for each call site's symbol, a function with the
   contract's signature that calls the symbol of the export serving the call
   (``checker.resolve.serving_exports``, read once into the plan); exports no call site reaches get no
   trampoline and are dropped by LTO (an ``I-EXPORT-DROPPED`` note). A ``bf16``/``f16``
   value is passed as each side's own C type (bits or a 2-byte aggregate, read from
   the captured PTX shape: :func:`component_ctype`), its bits copied between them;
2b. **tensor transfers** — each tensor connection's route, lowered by
   ``transfer_model.lower`` with its barrier IDs and scratch address
   (:mod:`linker.transfers`), its export and import functions named by the two
   stages' tensor handles; an export several imports read gets an export handle that
   runs their routes in import order; an export no import names gets an export
   handle that does nothing; a ring-fed export's handles take the generation and stage
   it in its slot of the ring, ordered by the ring's barriers (:mod:`linker.ring_fed`);
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
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from checker.clauses import l_link
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity
from diagnostics.symbols import Code
from hardware.residency import tmem_alloc_columns
from hardware.targets import field_size
from linker.artifacts import (
    C_TYPES,
    FIELD_FORMATS,
    HALF_TYPES,
    TMEM_SLOT_BYTES,
    Dispatch,
    DroppedExport,
    Generated,
    GroupRegs,
    ParamField,
    ParamsLayout,
    ParamsRegion,
    RingInit,
    RoleEntry,
    Trampoline,
    component_ctype,
)
from linker.counters import (
    FUNCTION_KINDS,
    counter_functions,
    plan_counters,
    render_counters,
    unsupported_counters,
)
from linker.handles import HandleValue, Solved, UnfixedFact, UnplacedHandle, handle_value
from linker.render import render
from linker.watchdog import RING_WAITS, Watchdog, plan_waits
from package.abi import init_hook_symbol, sanitize
from package.captured import Captured
from placement.problem import Domain, round_up
from placement.result import Placement

if TYPE_CHECKING:
    from analysis.link_inputs import CallSite, LinkInputs, LinkStage, ParamsBlock, ParamsField
    from analysis.plan import Plan
    from diagnostics.span import Span
    from linker.transfers import Transfer, UnusedExport
    from placement.adapter import Placed
    from transfer_model.adapter import RoutedSeam

KERNEL = "kl_dispatch"
SOURCE_NAME = "generated.cu"
#: Handle kinds that are functions of a route (rendered with the transfers), not constants.
TENSOR_HANDLES = frozenset({"tensor_export", "tensor_import", "ring_tensor_export", "ring_tensor_import"})
#: Counter handles that are functions, rendered with the counter array (:mod:`linker.counters`).
COUNTER_FUNCTIONS = FUNCTION_KINDS


# ----------------------------------------------------------------- what cannot be generated


def unsupported(link: LinkInputs) -> list[Diagnostic]:
    """Every link-time refusal of a checked composition, decided in one step and worded by l_link:
    ``E-UNSUPPORTED`` for each part the role-entry ABI cannot express yet, and the counters
    whose owner is ambiguous (linker/counters.py)."""
    counters, ambiguous = unsupported_counters(link)  # the rest link through the counter array
    found: list[l_link.Unsupported] = []
    if link.cluster is None:
        found.append(l_link.Unsupported("cluster-shape", link.pipeline, link.pipeline, link.span))
    for buffer in link.shared:
        found.append(l_link.Unsupported("shared-buffer", buffer.stage, buffer.name, buffer.span))
    passable = tuple(sorted((set(C_TYPES) | HALF_TYPES) - {"void"}))
    for call in link.calls:
        for type_name in (*call.params, call.result):
            if type_name not in C_TYPES and type_name not in HALF_TYPES:
                found.append(l_link.Unsupported("call-type", call.stage, call.name, call.span, type_name, passable))
                break
    found += link.ring_fed.refusals  # the ring-fed exports the hand-off does not generate (and why)
    return [*(l_link.unsupported(f) for f in counters), *ambiguous, *(l_link.unsupported(f) for f in found)]


# ----------------------------------------------------------------- planning


def generate(
    planned: Plan, *, entry_regs: int | None = None, inputs: Sequence[str] = (), watchdog: int | None = None
) -> Generated:
    """The generated code for the plan of a checked composition whose stages come from packages.

    ``entry_regs`` is the register count the kernel starts with (default: the
    placement's prediction); it decides each ``setmaxnreg``'s direction. ``inputs``
    names the packages, for the file's header. The plan's placement holds the named
    barriers of its tensor routes (:func:`analysis.plan.place_route_barriers`). ``watchdog`` bounds the waits the
    linker generates to that many cycles (:mod:`linker.watchdog`; None: unbounded). Raises :class:`DiagnosticError`
    (``E-UNSUPPORTED``, ``L-LINK``, ``E-INTERNAL``) when no correct code can be made.
    """
    link, placed = planned.inputs, planned.placed
    problems = unsupported(link)
    if problems:
        raise DiagnosticError(problems)
    placement = placed.placement
    caps = placed.problem.capacities
    params = params_layout(link)
    counters = plan_counters(link, placement)
    solved = Solved(
        link,
        placed.problem,
        placement,
        {r.stage: r.offset for r in params.regions if params.region_of(r.stage) is r},
        counters,
    )
    handles = _handles(link, solved)
    trampolines, dropped, notes = _calls(link)
    waits = plan_waits(link, solved, counters, watchdog)
    transfers, unused = _plan_transfers(planned, waits.watchdog)
    dispatch = _dispatch(
        link, placement, params, caps.smem_user_base, placement.entry_regs if entry_regs is None else entry_regs
    )
    counter_lines = [
        *waits.prelude,
        *render_counters(counters, counter_functions(link), waits.counter_wait),
        *waits.lines,
    ]
    target = link.target.name if link.target is not None else link.target_name
    unit = Generated(
        link.pipeline,
        target,
        "",
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
        tuple((e.name, e.version) for e in link.stages),
        tuple((f.fact, f.values[0], f.pinned) for f in sorted(link.facts.values(), key=lambda f: f.fact) if f.pinned),
    )
    return replace(unit, source=render(unit, inputs))


def params_layout(link: LinkInputs) -> ParamsLayout:
    """Each stage's params blocks at the next multiple of their alignment, in pipeline order."""
    regions: list[ParamsRegion] = []
    fields: list[ParamField] = []
    cursor, widest = 0, 1
    seen: set[str] = set()
    for block in link.params:
        offset = round_up(cursor, max(block.align, 1))
        first = block.stage not in seen
        seen.add(block.stage)
        member = sanitize(block.stage) if first else f"{sanitize(block.stage)}_{sanitize(block.name)}"
        regions.append(ParamsRegion(block.stage, block.name, member, offset, block.size, block.align))
        for f in block.fields:
            fields.append(_field(link, block, f, offset))
        cursor, widest = offset + block.size, max(widest, block.align)
    return ParamsLayout(round_up(cursor, widest), widest, tuple(regions), tuple(fields))


def _field(link: LinkInputs, block: ParamsBlock, f: ParamsField, base: int) -> ParamField:
    size = field_size(f.type) or struct.calcsize("<" + FIELD_FORMATS.get(f.type, "B"))
    fact = f.fact
    owner = link.facts.get(fact or "")
    if fact is None or owner is None:
        return ParamField(
            block.stage, block.name, f.name, f.type, base + f.offset, size, "caller", fact, allowed=f.values
        )
    if owner.kind == "exact" and f.type in FIELD_FORMATS:
        return ParamField(
            block.stage, block.name, f.name, f.type, base + f.offset, size, "fact", fact, owner.values[0], owner.stage
        )
    allowed = tuple(v for v in owner.allowed if v in f.values) if f.values and owner.allowed else owner.allowed
    return ParamField(
        block.stage,
        block.name,
        f.name,
        f.type,
        base + f.offset,
        size,
        "caller",
        fact,
        None,
        owner.stage,
        allowed or f.values,
    )


def _handles(link: LinkInputs, solved: Solved) -> tuple[HandleValue, ...]:
    values: dict[str, HandleValue] = {}
    problems: list[Diagnostic] = []
    for entry in link.stages:
        for spec in entry.handles:
            symbol = spec.symbol
            if spec.kind in TENSOR_HANDLES or spec.kind in COUNTER_FUNCTIONS or spec.kind in RING_WAITS:
                continue  # defined by the tensor transfers' code / with the counter array
            try:
                value = handle_value(spec, solved)
            except UnfixedFact as err:
                span = spec.node.span if spec.node is not None else entry.span
                problems.append(l_link.unfixed_fact(symbol, entry.name, spec.item, span, str(err)))
                continue
            except UnplacedHandle as err:
                problems.append(
                    Diagnostic(
                        Code.E_INTERNAL,
                        f"no value for handle `{symbol}` of `{entry.name}`: {err}",
                        labels=(Label(spec.node.span if spec.node is not None else entry.span, "bound here"),),
                        helps=(
                            "report it with the inputs: a checked, placed composition has a value for every handle",
                        ),
                    )
                )
                continue
            if spec.kind in ("ring_full_count", "ring_empty_count") and value.value <= 0:
                problems.append(_zero_count(link, entry, spec.item, value))
                continue
            first = values.setdefault(symbol, value)
            if first.value != value.value:
                span = spec.node.span if spec.node is not None else entry.span
                problems.append(
                    l_link.handle_read_twice(symbol, first.stage, first.value, entry.name, value.value, span)
                )
    if problems:
        raise DiagnosticError(problems)
    order = {e.name: i for i, e in enumerate(link.stages)}
    return tuple(sorted(values.values(), key=lambda h: (order.get(h.stage, len(order)), h.symbol)))


def _zero_count(link: LinkInputs, entry: LinkStage, ring: str, value: HandleValue) -> Diagnostic:
    """An mbarrier initialised with no arrivals completes no phase: refuse it, never generate it."""
    which = "full" if value.kind == "ring_full_count" else "empty"
    init = link.ring_count(entry.name, ring, which)
    span = init.span if init is not None else entry.span
    return l_link.zero_count(ring, which, value.value, span, value.why.split(": ", 1)[-1])


def _calls(link: LinkInputs) -> tuple[tuple[Trampoline, ...], tuple[DroppedExport, ...], list[Diagnostic]]:
    by_symbol: dict[str, Trampoline] = {}
    served: set[tuple[str, str]] = set()
    problems: list[Diagnostic] = []
    for call in link.calls:
        exports = call.exports
        if len(exports) != 1:
            problems.append(
                Diagnostic(
                    Code.E_INTERNAL,
                    f"call `{call.name}` of `{call.stage}` is served by {len(exports)} exports",
                    labels=(Label(call.span, "this call"),),
                    helps=("report it with the inputs: L-UNRESOLVED and L-AMBIGUOUS accept one export per call",),
                )
            )
            continue
        export = exports[0]
        served.add((export.stage, export.name))
        caller = f"{call.stage} {call.caller_kind} `{call.caller}`"
        try:
            caller_ctypes = _ctypes(call, call.captured, call.symbol)
            export_ctypes = _ctypes(call, export.captured, export.symbol)
        except ValueError as err:
            problems.append(l_link.call_types(call.name, call.stage, export.symbol, str(err), call.span, export.span))
            continue
        made = Trampoline(
            call.symbol,
            call.name,
            f"({', '.join(call.params)}) -> {call.result}",
            (caller,),
            export.stage,
            export.symbol,
            call.params,
            call.result,
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
                    made.symbol, first.callers[0], first.export_symbol, caller, made.export_symbol, call.span
                )
            )
    if problems:
        raise DiagnosticError(problems)
    dropped = []
    notes = []
    for exp in link.callables:
        if (exp.stage, exp.name) in served:
            continue
        dropped.append(DroppedExport(exp.stage, exp.name, exp.symbol))
        notes.append(
            Diagnostic(
                Code.I_EXPORT_DROPPED,
                f"export `{exp.name}` of `{exp.stage}` is called by no call site; the link drops `{exp.symbol}`",
                Severity.NOTE,
                (Label(exp.span, "exported here"),),
                notes=("LTO removes device functions nothing references",),
            )
        )
    return tuple(sorted(by_symbol.values(), key=lambda t: t.symbol)), tuple(dropped), notes


def _ctypes(call: CallSite, captured: Captured | None, symbol: str) -> tuple[str, ...]:
    """The C types of ``call``'s parameters then result, as ``symbol`` is compiled in ``captured``."""
    proto = captured.prototype_map.get(symbol) if captured is not None else None
    slots: list[str | None] = [None] * (len(call.params) + 1)
    if proto is not None and len(proto.params) == len(call.params):
        slots[:-1] = list(proto.params)
    if proto is not None and len(proto.returns) == 1:
        slots[-1] = proto.returns[0]
    return tuple(component_ctype(t, slot) for t, slot in zip((*call.params, call.result), slots, strict=True))


def _dispatch(
    link: LinkInputs, placement: Placement, params: ParamsLayout, smem_base: int, entry_regs: int
) -> Dispatch:
    threads = placement.block_warps * 32
    if threads <= 0 or not placement.roles:
        raise DiagnosticError([l_link.no_role(link.pipeline, link.span)])
    setmaxnreg = any(role.regs is not None for role in link.roles.values())
    if setmaxnreg and link.target is not None and not link.target.has("setmaxnreg"):
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_UNSUPPORTED,
                    f"roles declare `regs`, but `{link.target.name}` has no `setmaxnreg`",
                    labels=(Label(link.target_span, "target"),),
                )
            ]
        )
    bps = link.launch.blocks_per_sm
    min_blocks = bps if bps is not None else (1 if setmaxnreg else None)
    use = placement.use(Domain.SMEM)
    dynamic = max(0, use.end - smem_base)
    tmem_columns, tmem_slot = 0, 0
    if link.tmem:
        tmem_columns, tmem_slot = _tmem_allocation(link, placement, dynamic)
        dynamic = tmem_slot + TMEM_SLOT_BYTES
    members = {r.stage: r.member for r in params.regions if params.region_of(r.stage) is r}
    roles = []
    for r in sorted(placement.roles, key=lambda r: r.first_warp):
        info = link.roles.get(r.name)
        if info is None or info.stage != r.owner or not info.entry:
            continue
        roles.append(RoleEntry(r.owner, r.name, info.entry, r.first_warp, r.warps, members.get(r.owner)))
    inits = []
    for init in link.ring_inits:
        role = placement.role(init.stage, init.role)
        inits.append(
            RingInit(init.ring, init.stage, init_hook_symbol(init.stage, init.ring), init.role, 32 * role.first_warp)
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
        link.launch.kind or "fixed",
        bps,
        setmaxnreg,
        entry_regs,
        tuple(groups),
        tuple(inits),
        tuple(roles),
        placement.idle_warps,
        link.cluster or (1, 1, 1),
        tmem_columns,
        tmem_slot,
    )


def _plan_transfers(planned: Plan, watchdog: Watchdog | None) -> tuple[tuple[Transfer, ...], tuple[UnusedExport, ...]]:
    """:func:`linker.transfers.plan_transfers`, imported (with the route lowering it needs) only for a
    composition with a tensor export or import: for any other it plans nothing. ``watchdog`` bounds the
    ring-fed hand-offs' waits."""
    if not planned.inputs.has_tensors:
        return (), ()
    from linker.ring_fed import ring_fed_transfer
    from linker.transfers import plan_transfers

    def ring_fed(link: LinkInputs, placed: Placed, routed: RoutedSeam, span: Span) -> Transfer:
        return ring_fed_transfer(link, placed, routed, span, watchdog)

    return plan_transfers(planned.inputs, planned.placed, planned.routes, ring_fed)


def _tmem_allocation(link: LinkInputs, placement: Placement, dynamic: int) -> tuple[int, int]:
    """Columns to allocate (the one allocation holding every placed column) and the offset of the address word."""
    if link.target is None:
        raise ValueError("a placed composition has a known target")
    columns = tmem_alloc_columns(link.target, placement.use(Domain.TMEM).end)
    slot = round_up(dynamic, TMEM_SLOT_BYTES)
    limit = link.target.smem_per_block_optin
    if slot + TMEM_SLOT_BYTES > limit:
        raise DiagnosticError([l_link.no_tmem_slot(dynamic, limit, TMEM_SLOT_BYTES, link.span)])
    return columns, slot
