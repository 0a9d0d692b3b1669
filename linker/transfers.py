"""Tensor transfers: each routed tensor connection bound to its handles and its link-time constants.

The route ladder (``transfer_model``) chose a rung for every ``import tensor`` on the
placed roles. Linking one needs three more decisions, made here:

- **symbols** — the lowered route's export function is defined as the producing
  stage's handle ``kl_<stage>_<export>_export(const T* held)`` and its import function
  as the consuming stage's ``kl_<stage>_<import>_import(const T* held, T* dst, int
  chunk)`` (``package.abi.tensor_symbol``; specs/handles.md), so the components'
  calls bind to the route with no trampoline and LTO inlines it;
- **named barriers** — a staging route synchronises on ``program.barriers`` named
  barriers of ``program.barrier_threads`` threads (producer and consumer). Routes are
  chosen after placement because they depend on the roles' warps, so
  :func:`analysis.plan.place_route_barriers` adds one ``BarrierClaim`` per route barrier (owner the
  importing stage, name ``transfer.<import>.<i>``, lifetime the whole kernel: a route
  barrier shares its ID with no other barrier) and solves once more. Barrier claims
  do not constrain warps, and the second placement must keep every role's warps —
  else the routes would be stale, and the link stops with ``E-INTERNAL``;
- **scratch** — a staging route's scratch is the first lent shared-memory claim that
  holds the whole of it; the lowering takes an absolute shared address, which is the
  claim's placed address (the dynamic base is shared address ``smem_user_base`` and
  the kernel has no static shared memory). Placement lets that claim share storage with
  claims that die at the export's ready event (``until acc.ready``); a thread reaches the
  event when its own work is done, so such a route's first store waits until every
  producer thread has reached it (``build_program(..., scratch_aliased=True)``, recorded
  in the link map with the claims it shares storage with).

- **placement buffer** — an export placed in shared memory (``placement smem(...)``)
  lives in the producing stage's shared-memory claim of the export's own name
  (``claim smem accumulator …`` for ``export tensor accumulator``); the map's addresses
  are byte offsets from that claim's placed address, and every one must fall inside it.

- **fan-out** — an export several imports name runs all their routes: each route's
  export half is lowered to its own function (:func:`route_symbol`) and the export
  handle calls them in import order (pipeline order, then source order), which the link
  map records with each route's barriers. Producer threads thus finish one route's
  hand-off before starting the next; a role importing twice must import in that order.

- **tensor memory** — an export placed in tensor memory (``placement tmem(...)``) lives
  in the producing stage's tensor-memory claim of the export's own name; the route's
  ``tcgen05.ld`` addresses are that claim's placed column plus the map's, and one named
  barrier orders them after the producer's writes (``transfer_model.program``).

Register routes (copy, shuffle) need no constants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

from analysis.link_inputs import LinkInputs
from analysis.plan import barrier_name
from checker.clauses import l_link
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.abi import sanitize, tensor_symbol
from placement.adapter import Placed
from placement.problem import Domain
from placement.result import Placement
from transfer_model import exprs as ex
from transfer_model.adapter import RoutedSeam
from transfer_model.lower import LinkConstants, lower
from transfer_model.primitives import REGISTER_COPY, SMEM_STAGING, TMEM_LOAD, WARP_SHUFFLE, StagingPlan
from transfer_model.program import Program, build_program
from transfer_model.tensors import ELEM_BYTES

#: The route rungs the linker lowers on every target it links.
LINKED_RUNGS = (REGISTER_COPY, WARP_SHUFFLE, SMEM_STAGING, TMEM_LOAD)


@dataclass(frozen=True)
class Transfer:
    """One linked tensor connection: its route, its handles, its constants and the lowered code.

    ``scratch_addr`` is the absolute shared address the route stages through (None for
    register routes); ``scratch_offset`` the same from the dynamic shared memory base.
    """

    export_stage: str
    export: str
    import_stage: str
    import_name: str
    rung: str
    title: str
    elem: str
    export_symbol: str
    import_symbol: str
    producer_threads: tuple[int, int]
    consumer_threads: tuple[int, int]
    chunks: int
    regs_per_call: int
    scratch_claim: str | None
    scratch_addr: int | None
    scratch_offset: int | None
    scratch_bytes: int
    barrier_ids: tuple[int, ...]
    barrier_threads: int
    why: str
    source: str = dataclasses.field(repr=False)
    shared: str = ""  # "scratch" (staging), "buffer" (the export's own claim) or "" (registers)
    #: fan-out: the export feeds ``routes`` imports; this route runs ``order``-th (1-based) when the
    #: export handle is called, as the function ``route_symbol`` (the export handle itself when alone)
    order: int = 1
    routes: int = 1
    route_symbol: str = ""
    #: ring-fed (linker/ring_fed.py): the ring whose slots hold one generation each, its depth, the slot stride
    ring: str = ""
    depth: int = 0
    slot_stride: int = 0

    @classmethod
    def of(
        cls,
        routed: RoutedSeam,
        program: Program,
        *,
        scratch: tuple[str | None, int | None, int | None, int],
        barriers: tuple[tuple[int, ...], int],
        why: str,
        source: str,
        shared: str,
        order: int = 1,
        routes: int = 1,
        ring: tuple[str, int, int] = ("", 0, 0),
    ) -> Transfer:
        """The connection's record: who meets whom, by which rung and handles, from the route and its program.

        ``scratch`` is (claim, absolute address, offset from the dynamic base, bytes); ``barriers`` (ids,
        threads); ``ring`` (name, depth, slot stride) for a ring-fed hand-off.
        """
        seam, route = routed.seam, routed.route
        export_symbol, import_symbol, own = connection_symbols(routed, routes)
        return cls(
            seam.export_stage,
            seam.export.name,
            seam.import_stage,
            seam.imp.name,
            route.rung,
            route.result.title,
            seam.export.elem,
            export_symbol,
            import_symbol,
            (program.producer.first, program.producer.count),
            (program.consumer.first, program.consumer.count),
            program.chunks,
            program.regs_per_call,
            *scratch,
            *barriers,
            why,
            source,
            shared,
            order,
            routes,
            own,
            ring=ring[0],
            depth=ring[1],
            slot_stride=ring[2],
        )

    @property
    def fanned_out(self) -> bool:
        return self.routes > 1

    @property
    def connection(self) -> str:
        return f"{self.export_stage}.{self.export} -> {self.import_stage}.{self.import_name}"

    def as_json(self) -> dict[str, object]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "source"}
        out["connection"] = self.connection
        return out


@dataclass(frozen=True)
class UnusedExport:
    """A tensor export no import names: its export handle is defined to do nothing."""

    stage: str
    export: str
    symbol: str
    ctype: str


#: Lowers a ring-fed connection (:func:`linker.ring_fed.ring_fed_transfer`, passed in by the generator).
RingFed = Callable[[LinkInputs, Placed, RoutedSeam, Span], Transfer]


def plan_transfers(
    link: LinkInputs, placed: Placed, routes: Sequence[RoutedSeam], ring_fed: RingFed
) -> tuple[tuple[Transfer, ...], tuple[UnusedExport, ...]]:
    """Every tensor connection's transfer on ``placed`` (which holds the route barriers), in import order;
    ``ring_fed`` lowers the ring-fed ones.

    Raises ``DiagnosticError``: ``E-UNSUPPORTED`` for a route the linker cannot lower yet,
    ``E-INTERNAL`` for a connection without a route or a constant the placement lacks.
    """
    by_import = {(r.seam.import_stage, r.seam.imp.name): r for r in routes}
    out: list[Transfer] = []
    problems: list[Diagnostic] = []
    # fan-out: an export's routes run in import order (pipeline order, then source order)
    feeds: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for imp in link.tensor_imports:
        route = by_import.get((imp.stage, imp.name))
        if route is not None:
            key = (route.seam.export_stage, route.seam.export.name)
            feeds.setdefault(key, []).append((imp.stage, imp.name))
    for imp in link.tensor_imports:
        route = by_import.get((imp.stage, imp.name))
        if route is None:
            problems.append(
                Diagnostic(
                    Code.E_INTERNAL,
                    f"tensor connection `{imp.export}` -> `{imp.name}` of `{imp.stage}` has no route",
                    labels=(Label(imp.span, "imported here"),),
                    helps=("report it with the inputs: an accepted composition has a route for every import",),
                )
            )
            continue
        fed = feeds[(route.seam.export_stage, route.seam.export.name)]
        order = fed.index((imp.stage, imp.name)) + 1
        try:
            if imp.ring is not None:  # one generation per tile, through a ring's slots
                out.append(ring_fed(link, placed, route, imp.span))
            else:
                out.append(_transfer(link, placed, route, imp.span, order, len(fed)))
        except DiagnosticError as err:
            problems.extend(err.diagnostics)
    if problems:
        raise DiagnosticError(problems)
    imported = {(t.export_stage, t.export) for t in out}
    unused = [
        UnusedExport(e.stage, e.name, tensor_symbol(e.stage, e.name, "export"), elem_ctype(e.elem or "f32"))
        for e in link.tensor_exports
        if (e.stage, e.name) not in imported
    ]
    return tuple(out), tuple(unused)


def elem_ctype(elem: str) -> str:
    """The bit type a tensor handle passes elements of ``elem`` as."""
    return "unsigned short" if ELEM_BYTES.get(elem) == 2 else "unsigned int"


def _refuse(span: Span, stage: str, what: str, why: str) -> DiagnosticError:
    return DiagnosticError(
        [
            Diagnostic(
                Code.E_UNSUPPORTED,
                f"`kernlink link` cannot link {what} of `{stage}` yet",
                labels=(Label(span, "imported here"),),
                notes=(why,),
                helps=("check the composition with `kernlink check`; link it once the linker supports this",),
                data=(("stage", stage), ("what", what)),
            )
        ]
    )


def connection_symbols(routed: RoutedSeam, routes: int = 1) -> tuple[str, str, str]:
    """The connection's export handle, its import function, and the function its route is lowered to (the
    export handle itself unless the export fans out to ``routes`` imports)."""
    seam = routed.seam
    export_symbol = tensor_symbol(seam.export_stage, seam.export.name, "export")
    import_symbol = tensor_symbol(seam.import_stage, seam.imp.name, "import")
    own = export_symbol if routes == 1 else route_symbol(export_symbol, seam.import_stage, seam.imp.name)
    return export_symbol, import_symbol, own


def route_symbol(export_symbol: str, import_stage: str, import_name: str) -> str:
    """The function one route of a fanned-out export is lowered to; the export handle calls each."""
    return f"{export_symbol}__to_{sanitize(import_stage)}_{sanitize(import_name)}"


def _transfer(
    link: LinkInputs, placed: Placed, routed: RoutedSeam, span: Span, order: int = 1, routes: int = 1
) -> Transfer:
    seam, route = routed.seam, routed.route
    program = route.program
    what = f"tensor connection `{seam.export.name}` -> `{seam.imp.name}` ({route.result.title})"
    barrier_ids = _barrier_ids(placed.placement, routed, span)
    claim, addr, tmem = None, None, None
    aliases: tuple[str, ...] = ()
    if program.shared == "scratch":
        claim, addr = _scratch(link, placed, routed, span, what)
        aliases = _aliases(placed.placement, seam.import_stage, claim, addr, program.smem_bytes)
        if aliases:
            program = build_program(route.seam, route.result, scratch_aliased=True)
    elif program.shared == "buffer":
        claim, addr = _buffer(link, placed, routed, span, what)
    elif route.rung == TMEM_LOAD:
        claim, tmem = _tmem(link, placed, routed)
    base = placed.problem.capacities.smem_user_base
    _, import_symbol, own = connection_symbols(routed, routes)
    try:
        source = lower(
            program,
            LinkConstants(smem_addr=addr, barrier_ids=barrier_ids, tmem_addr=tmem),
            export_name=own,
            import_name=import_symbol,
        )
    except ValueError as err:
        raise DiagnosticError(
            [
                Diagnostic(
                    Code.E_INTERNAL,
                    f"cannot lower {what}: {err}",
                    labels=(Label(span, "imported here"),),
                    helps=("report it with the inputs: this is a kernlink bug",),
                )
            ]
        ) from None
    why = f"{route.result.title}: the cheapest rung of the ladder whose checks all pass"
    if claim is not None and program.shared == "buffer":
        why += f"; reads the tile where the producer placed it, claim `{claim}` of `{seam.export_stage}`"
    elif claim is not None and tmem is not None:
        why += (
            f"; tcgen05.ld from the producer's tensor-memory claim `{claim}` of `{seam.export_stage}` "
            f"(column {tmem}), after the producer's `tcgen05.fence::before_thread_sync` and barrier arrive "
            "and the consumer's barrier sync and `tcgen05.fence::after_thread_sync`"
        )
    elif claim is not None:
        why += f"; stages through `{claim}`, lent by role `{seam.imp.role}`"
        plan = route.result.plan
        if isinstance(plan, StagingPlan) and plan.pad:
            why += f" ({plan.mode} rows padded by {plan.pad} element(s): consecutive rows start in consecutive banks)"
    if aliases:
        why += (
            f"; the scratch shares storage with {', '.join(aliases)}, so the first store waits until every "
            "producer thread has reached the ready event"
        )
    if barrier_ids:
        why += f"; named barrier(s) {', '.join(map(str, barrier_ids))} of {program.barrier_threads} threads"
    if routes > 1:
        why += (
            f"; route {order} of {routes} of export `{seam.export.name}`: its export handle runs the routes "
            "in import order (pipeline order, then source order)"
        )
    return Transfer.of(
        routed,
        program,
        scratch=(claim, addr, None if addr is None else addr - base, _shared_bytes(routed) if claim is not None else 0),
        barriers=(barrier_ids, program.barrier_threads),
        why=why,
        source=source,
        shared=program.shared,
        order=order,
        routes=routes,
    )


def _barrier_ids(placement: Placement, routed: RoutedSeam, span: Span) -> tuple[int, ...]:
    ids = []
    for i in range(routed.route.program.barriers):
        name = barrier_name(routed, i)
        slot = next(
            (s for s in placement.in_domain(Domain.BARRIER) if (s.owner, s.name) == (routed.seam.import_stage, name)),
            None,
        )
        if slot is None:
            raise DiagnosticError(
                [
                    Diagnostic(
                        Code.E_INTERNAL,
                        f"route barrier `{name}` has no placed ID",
                        labels=(Label(span, "imported here"),),
                        helps=("report it with the inputs: the link places route barriers before generating code",),
                    )
                ]
            )
        ids.append(slot.offset)
    return tuple(ids)


def _scratch(link: LinkInputs, placed: Placed, routed: RoutedSeam, span: Span, what: str) -> tuple[str, int]:
    """The lent claim the route stages through, and its absolute shared address."""
    seam, program = routed.seam, routed.route.program
    sizes = {c.name: c.size for c in link.smem if c.stage == seam.import_stage}
    for name in seam.lent_claims:
        if sizes.get(name, 0) < program.smem_bytes:
            continue
        slot = placed.placement.slot(seam.import_stage, name, Domain.SMEM)
        if slot.offset % program.elem_bytes:
            raise _refuse(
                span,
                seam.import_stage,
                what,
                f"the lent claim `{name}` is placed at shared address {slot.offset}, not aligned to the "
                f"route's {program.elem_bytes}-byte words",
            )
        return name, slot.offset
    lent = ", ".join(f"`{n}` ({sizes.get(n, 0)} B)" for n in seam.lent_claims)
    raise _refuse(
        span,
        seam.import_stage,
        what,
        f"staging needs {program.smem_bytes} contiguous bytes, and no single lent claim holds them "
        f"({lent} are placed apart)",
    )


def _aliases(placement: Placement, stage: str, claim: str, addr: int, size: int) -> tuple[str, ...]:
    """The other shared-memory storage overlapping the route's scratch bytes ``[addr, addr + size)``."""
    out = []
    for slot in placement.in_domain(Domain.SMEM):
        if (slot.owner, slot.name) == (stage, claim):
            continue
        if slot.offset < addr + size and addr < slot.offset + slot.size:
            out.append(f"`{slot.display}` ({slot.lifetime.text()})")
    return tuple(sorted(out))


def _tmem(link: LinkInputs, placed: Placed, routed: RoutedSeam) -> tuple[str, int]:
    """The producer's tensor-memory claim an export placed in tensor memory lives in, and its first column."""
    seam = routed.seam
    name = seam.export.name
    claim = next((c for c in link.tmem if c.stage == seam.export_stage and c.name == name), None)
    if claim is None:
        raise DiagnosticError(
            [
                l_link.export_without_claim(
                    name, seam.export_stage, "tensor", seam.export.span, f"claim tmem {name} columns N"
                )
            ]
        )
    columns = max(col for _, col in seam.export.placement.inverse.values()) + 1
    if (claim.size) < columns:
        reach, holds = f"column {columns} of its tensor-memory claim", f"{claim.size} columns"
        raise DiagnosticError(
            [
                l_link.export_past_claim(
                    name, seam.export_stage, reach, holds, f"{columns} columns", seam.export.span, claim.span
                )
            ]
        )
    return name, placed.placement.slot(seam.export_stage, name, Domain.TMEM).offset


def _shared_bytes(routed: RoutedSeam) -> int:
    """Bytes a route's shared memory spans: the scratch it stages through, or the placement's extent."""
    program = routed.route.program
    if program.shared != "buffer":
        return program.smem_bytes
    placement = routed.seam.export.placement
    at = ex.compile_function([n for n, _ in placement.params], list(placement.exprs))
    highest = max(at(*slot)[0] for slot in product(*(range(e) for _, e in placement.params)))
    return highest + program.elem_bytes


def _buffer(link: LinkInputs, placed: Placed, routed: RoutedSeam, span: Span, what: str) -> tuple[str, int]:
    """The producer's claim an export placed in shared memory lives in, and its absolute shared address."""
    seam = routed.seam
    name = seam.export.name
    claim = next((c for c in link.smem if c.stage == seam.export_stage and c.name == name), None)
    if claim is None:
        declare = f"claim smem {name} bytes N align A lifetime until <done event>"
        raise DiagnosticError(
            [l_link.export_without_claim(name, seam.export_stage, "shared", seam.export.span, declare)]
        )
    needed = _shared_bytes(routed)
    if (claim.size) < needed:
        reach, holds = f"byte {needed} of its claim", f"{claim.size} B"
        raise DiagnosticError(
            [
                l_link.export_past_claim(
                    name, seam.export_stage, reach, holds, f"{needed} bytes", seam.export.span, claim.span
                )
            ]
        )
    slot = placed.placement.slot(seam.export_stage, name, Domain.SMEM)
    if slot.offset % routed.route.program.elem_bytes:
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"the claim `{name}` is placed at shared address {slot.offset}, not aligned to the "
            f"route's {routed.route.program.elem_bytes}-byte words",
        )
    return name, slot.offset
