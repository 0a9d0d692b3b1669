"""Ring-fed tensor hand-offs: one generation of an export per tile, through the slots of a ring.

A ring-fed export (``generation ring R``, specs/language.md §11) hands tile after tile to
another role: generation ``g`` (the caller's tile ordinal ``0, 1, …``) lives in slot
``g mod depth`` of ring ``R``. The route ladder chose shared-memory staging of the whole
tile for the connection; its scratch is the claim the import lends, which its stage
declares ``per_slot R``, so each slot holds one generation. Both tensor handles take the
generation as their last argument (specs/handles.md, "Ring-fed tensor handles"):

- ``P_X_export(const T* held, unsigned generation)``, every thread of the exporting role once
  per tile: slot ``s = g mod depth``; the side's ``empty wait`` on ``empty[s]`` with parity
  ``p ^ ((g / depth) mod 2)`` (``p`` its first parity, 1 unless stated), the stores of the
  route into slot ``s``, ``fence.proxy.async.shared::cta`` when the side states ``fence
  proxy_async``, then its ``full arrive`` on ``full[s]``;
- ``P_Y_import(const T* held, T* dst, int chunk, unsigned generation)``, every thread of the
  importing role per chunk: chunk 0 runs the side's ``full wait`` on ``full[s]`` (first
  parity 0 unless stated), every chunk loads from slot ``s``, and the last chunk, after its
  loads, fences when stated and runs the side's ``empty arrive`` on ``empty[s]``.

An arrive counted ``per_thread(Q)`` is every thread's ``mbarrier.arrive`` after its own
moves; one counted ``per_warp(Q)`` is lane 0's, after ``__syncwarp()``, which orders the
warp's moves before it; one counted ``per_warpgroup(Q)`` is thread 0's of each warpgroup of
``Q``, after a ``barrier.sync`` of the warpgroup's 128 threads on a named barrier of its own
(the route's barriers: ``transfer_model`` counts one per such warpgroup, and the check places
them with the others). ``mbarrier.arrive`` releases and ``mbarrier.try_wait`` acquires at
CTA scope (PTX ISA, "mbarrier"), so a generation's stores happen before its loads, and its
loads before the next stores into the slot. The ring's barriers are the ones its ``init by``
role initialises with the contract's counts (``P_R_full_count``, ``P_R_empty_count``).

What is refused (``E-UNSUPPORTED``, :func:`refusals` before routing, :func:`ring_fed_transfer`
after): a side whose steps are not one wait and one arrive of this shape (copies, ``tx``,
``lag``, ``prearm``, ``remote``, ``multicast``, ``on``, reads placed or asynchronous,
``restart``), an arrive counted otherwise (a constant, a sum, another role's width: no one
thread arrives once for a fixed group of the role's threads), per warpgroup by a role that
is not whole warpgroups, a cluster-scoped ring, asynchronous-proxy slots, an export several
imports or none read, an import that leaves out ``generation ring R`` (its stage's handle is
then the one-generation one), a route other than whole-tile staging from registers, a
scratch that is not the importing stage's ``per_slot R`` claim, and one whose slots share
storage with another claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.plan import barrier_name
from checker.clauses import l_link
from checker.composition import Composition, Owned
from checker.handles import HandleKind, HandleSpec, tensor_symbol
from contract_lang import ast as A
from contract_lang.printer import count_text
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from linker.handles import Solved, handle_value
from linker.transfers import Transfer, elem_ctype
from placement.adapter import Placed
from placement.problem import Domain
from transfer_model.adapter import RoutedSeam
from transfer_model.lower import lower_moves
from transfer_model.primitives import SMEM_STAGING, StagingPlan
from transfer_model.program import Arrive, Op, Sync, build_program

#: The arrival units a generated hand-off arrives with, by what orders the side's moves first.
ARRIVE_UNITS = ("per_thread", "per_warp", "per_warpgroup")


@dataclass(frozen=True)
class RingSide:
    """What one side of the hand-off does on the ring: wait on ``wait`` (first parity ``parity``),
    fence when ``fence``, arrive on the other barrier once per thread or per warp."""

    wait: A.BarrierKind
    parity: int
    fence: bool
    unit: str  # per_thread | per_warp
    arrive_text: str  # the contract's arrive line, for comments


def refusals(comp: Composition) -> list[l_link.Unsupported]:
    """Each ring-fed export the linker cannot generate, with the first reason (module docstring)."""
    out = []
    for export in comp.items(A.ExportTensor):
        if export.item.ring is not None:
            why = _contract_refusal(comp, export)
            if why is not None:
                out.append(
                    l_link.Unsupported(
                        "ring-fed-export",
                        export.stage_name,
                        export.item.name,
                        export.item.span,
                        export.item.ring,
                        why=why,
                    )
                )
    return out


def _contract_refusal(comp: Composition, export: Owned[A.ExportTensor]) -> str | None:
    ring = export.item.ring or ""
    imports = [i for i in comp.tensor_imports if i.item.export == export.item.name]
    if len(imports) != 1:
        return (
            f"a generated hand-off serves one import, and {len(imports)} import it "
            "(each import would stage its own copy of every generation, released on one `empty` barrier)"
        )
    if imports[0].item.ring is None:
        return (
            f"import `{imports[0].item.name}` of `{imports[0].stage_name}` leaves out its generation: a stage's "
            "handles follow its own contract, so its import handle is the one-generation one; write "
            f"`generation ring {ring}` in the import"
        )
    sides = comp.rings.get(ring, ())
    producer = next((s for s in sides if s.item.side == "produce" and s.item.role == export.item.role), None)
    consumer = next((s for s in sides if s.item.side == "consume" and s.item.role == imports[0].item.role), None)
    if producer is None or consumer is None:
        return f"ring `{ring}` has no side of the exporting or the importing role"
    for side in (producer, consumer):
        found = _shape(side.item)
        if isinstance(found, str):
            return found
        info = comp.roles.get(side.item.role)
        if found.unit == "per_warpgroup" and (info is None or info.warps % 4):
            return (
                f"role `{side.item.role}` arrives on ring `{ring}` once per warpgroup, and its "
                f"{info.warps if info is not None else 0} warps are not whole warpgroups"
            )
    return None


def _shape(side: A.Ring) -> RingSide | str:
    """A side as the hand-off runs it: the producer waits `empty` and arrives `full`, a consumer the reverse."""
    return side_shape(side, "empty", "full") if side.side == "produce" else side_shape(side, "full", "empty")


def side_shape(ring: A.Ring, wait: A.BarrierKind, arrive: A.BarrierKind) -> RingSide | str:
    """The side as the hand-off runs it, or why it cannot: one ``WAIT wait`` then one ``ARRIVE arrive``."""
    who = f"the {ring.side} side of ring `{ring.name}`"
    if ring.scope not in (None, "cta"):
        return f"{who} is scoped `{ring.scope}`; the hand-off waits and arrives on this CTA's barriers"
    if ring.restart is not None:
        return f"{who} restarts its slot index; a generation's slot is its ordinal modulo the depth"
    for item in ring.items:
        if isinstance(item, (A.RingCopy, A.RingRead, A.RingReadWait)):
            return f"{who} copies or places its reads; the hand-off moves the tile with shared-memory stores and loads"
        if isinstance(item, A.RingProxy) and item.proxy != "generic":
            return f"{who} {item.access} the slots through the async proxy; the hand-off's stores and loads are generic"
    steps = ring.steps
    shape = [(type(s).__name__, s.barrier) for s in steps]
    if shape != [("RingWait", wait), ("RingArrive", arrive)]:
        return f"{who} must run `{wait} wait` then `{arrive} arrive`, the steps the hand-off generates"
    first, last = steps
    assert isinstance(first, A.RingWait) and isinstance(last, A.RingArrive)
    if first.on is not None:
        return f"{who} waits on part of the grid only (`on {first.on}`)"
    extras = [
        word
        for word, present in (
            (f"tx {last.tx}", last.tx is not None),
            (f"lag {last.lag}", last.lag is not None),
            ("prearm", last.prearm),
            ("remote", last.remote),
            ("multicast", last.multicast),
            (f"on {last.on}", last.on is not None),
        )
        if present
    ]
    if extras:
        return f"{who} arrives with `{' '.join(extras)}`; the hand-off arrives once per generation on this CTA"
    terms = last.count.terms
    if len(terms) != 1 or terms[0].unit not in ARRIVE_UNITS or terms[0].coef != 1 or terms[0].role != ring.role:
        return (
            f"{who} arrives `{count_text(last.count)}`; the hand-off arrives `per_thread({ring.role})` (each thread "
            f"after its own moves), `per_warp({ring.role})` (lane 0 after `__syncwarp`) or "
            f"`per_warpgroup({ring.role})` (thread 0 of each warpgroup after a named barrier of the warpgroup). "
            "Other counts (a constant, a sum, another role's width) have no one thread that arrives once for a "
            "fixed group of the role's threads"
        )
    parity = first.parity if first.parity is not None else (1 if wait == "empty" else 0)
    fence = any(isinstance(item, A.RingFence) for item in ring.items)
    return RingSide(wait, parity, fence, terms[0].unit, f"{arrive} arrive {count_text(last.count)}")


def ring_fed_transfer(comp: Composition, placed: Placed, routed: RoutedSeam, span: Span) -> Transfer:
    """The linked hand-off of a ring-fed connection whose contract :func:`refusals` accepts."""
    seam, route = routed.seam, routed.route
    what = f"ring-fed tensor connection `{seam.export.name}` -> `{seam.imp.name}` ({route.result.title})"
    export = next(e for e in comp.tensor_exports[seam.export.name] if e.stage_name == seam.export_stage)
    ring = export.item.ring or ""
    plan = route.result.plan
    if route.rung != SMEM_STAGING or not isinstance(plan, StagingPlan) or plan.mode != "tile" or plan.same_threads:
        mode = plan.mode if isinstance(plan, StagingPlan) else route.rung
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"the hand-off stages the whole tile in one slot of `{ring}` between two roles; the route is `{mode}`",
        )
    claim = _slot_claim(comp, routed, ring, plan.smem_bytes)
    if claim is None:
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"no claim the import lends is declared `per_slot {ring}` and holds the {plan.smem_bytes} bytes of "
            "a staged tile: each generation needs its own slot",
        )
    solved = Solved(comp, placed.problem, placed.placement, {})

    def value(kind: HandleKind, stage: str, item: str) -> int:
        return handle_value(HandleSpec("", kind, stage, item), solved).value

    base = solved.smem_base
    depth = value("ring_depth", seam.export_stage, ring)
    scratch = base + value("smem", seam.import_stage, claim)
    stride = value("smem_stride", seam.import_stage, claim)
    full = base + value("ring_full_bar", seam.export_stage, ring)
    empty = base + value("ring_empty_bar", seam.export_stage, ring)
    shared = _sharing(placed, seam.import_stage, claim)
    if shared:
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"the slots of `{claim}` share storage with {', '.join(shared)}; a generation stays in its slot "
            "until the consumer releases it, whatever the producer's events",
        )
    producer, consumer = _sides(comp, ring, seam.export.role, seam.imp.role)
    ids = _group_ids(placed, routed, span)
    producer_ids, consumer_ids = ids[: seam.export.group_barriers], ids[seam.export.group_barriers :]
    program = build_program(route.seam, route.result)
    moves = lower_moves(
        program,
        _data(program.export_ops),
        tuple(_data(ops) for ops in program.import_ops),
        base="at",
        name=tensor_symbol(seam.import_stage, seam.imp.name, "import"),
    )
    export_symbol = tensor_symbol(seam.export_stage, seam.export.name, "export")
    import_symbol = tensor_symbol(seam.import_stage, seam.imp.name, "import")
    ctype = elem_ctype(seam.export.elem)
    slot = [
        f"    const unsigned slot = generation % {depth}u;",
        f"    const unsigned at = {scratch}u + {stride}u * slot;  // slot `slot` of `{claim}`",
    ]
    last = len(moves.chunks) - 1
    lines = [
        f"// kernlink ring-fed transfer: `{seam.export.name}` -> `{seam.imp.name}`, route {route.rung} "
        f"(whole tile), one generation per slot of ring `{ring}` (depth {depth})",
        f"// export: CTA threads {program.producer.first}..{program.producer.end - 1} call {export_symbol}(held, "
        "generation) once per tile, generation = 0, 1, ... in order",
        f"// import: CTA threads {program.consumer.first}..{program.consumer.end - 1} call {import_symbol}(held, "
        f"dst, chunk, generation) for chunk 0..{last} of each generation in order; "
        f"{program.regs_per_call} registers per call",
        f"// generation g: slot g % {depth} of `{claim}` at shared address {scratch} + {stride} * slot; "
        f"`{ring}` full[slot] at {full} + 8 * slot, empty[slot] at {empty} + 8 * slot",
        f"// elements move as {8 * program.elem_bytes}-bit words and are never converted",
        *moves.preamble,
        *_MBARRIER,
        "",
        f'extern "C" __device__ void {export_symbol}(const {ctype}* held, unsigned generation) {{',
        f"    const unsigned t = threadIdx.x - {program.producer.first}u;",
        "    (void)t;",
        *slot,
        *_wait(producer, ring, empty, depth),
        *moves.export,
        *_release(producer, ring, full, producer_ids),
        "}",
        "",
        f'extern "C" __device__ void {import_symbol}(const {ctype}* held, {ctype}* dst, int chunk, '
        "unsigned generation) {",
        f"    const unsigned t = threadIdx.x - {program.consumer.first}u;",
        "    (void)t;",
        "    (void)held;",
        *slot,
    ]
    for c, body in enumerate(moves.chunks):
        head = _wait(consumer, ring, full, depth) if c == 0 else []
        tail = _release(consumer, ring, empty, consumer_ids) if c == last else []
        if last == 0:
            lines += ["    (void)chunk;", *head, *body, *tail]
            break
        lines += [f"    if (chunk == {c}) {{", *("    " + x for x in (*head, *body, *tail)), "    }"]
    lines += ["}", ""]
    why = (
        f"{route.result.title}, ring-fed: generation g of `{seam.export.name}` is staged in slot g % {depth} of "
        f"`{claim}` (lent by role `{seam.imp.role}`, `per_slot {ring}`), ordered by ring `{ring}`: the export "
        f"waits `empty wait` (first parity {producer.parity}), stores, {'fences, ' if producer.fence else ''}"
        f"`{producer.arrive_text}`; the import's chunk 0 waits `full wait` (first parity {consumer.parity}) and its "
        f"last chunk, after its loads, {'fences and ' if consumer.fence else ''}`{consumer.arrive_text}`; "
        + (
            f"named barrier(s) {', '.join(map(str, ids))} of one warpgroup each, before its thread 0 arrives"
            if ids
            else "no named barrier"
        )
    )
    return Transfer(
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
        claim,
        scratch,
        scratch - base,
        plan.smem_bytes,
        ids,
        128 if ids else 0,
        why,
        "\n".join(lines),
        "scratch",
        route_symbol=export_symbol,
        ring=ring,
        depth=depth,
        slot_stride=stride,
    )


_MBARRIER = (
    "#ifndef KL_HELPER_KL_RING_FED",
    "#define KL_HELPER_KL_RING_FED",
    "static __device__ __forceinline__ void kl_ring_fed_wait(unsigned bar, unsigned parity) {",
    "    unsigned ok;",
    "    do {",
    '        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; '
    'selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");',
    "    } while (!ok);",
    "}",
    "static __device__ __forceinline__ void kl_ring_fed_arrive(unsigned bar) {",
    '    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");',
    "}",
    "#endif",
)


def _wait(side: RingSide, ring: str, bar: int, depth: int) -> list[str]:
    return [
        f"    // `{side.wait} wait` of ring `{ring}` (first parity {side.parity}, flipped each pass through the ring)",
        f"    kl_ring_fed_wait({bar}u + 8u * slot, {side.parity}u ^ ((generation / {depth}u) & 1u));",
    ]


def _release(side: RingSide, ring: str, bar: int, groups: tuple[int, ...]) -> list[str]:
    out = []
    if side.fence:
        out.append('    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // `fence proxy_async`')
    arrive = f"kl_ring_fed_arrive({bar}u + 8u * slot);"
    if side.unit == "per_thread":
        return [*out, f"    {arrive}  // `{side.arrive_text}` of ring `{ring}`: every thread"]
    if side.unit == "per_warpgroup":
        # each warpgroup w of the role syncs its own named barrier groups[w] (an immediate: the link's
        # audit reads every barrier ID), then its thread 0 arrives for it
        syncs = []
        for w, bar_id in enumerate(groups):
            sync = f'asm volatile("barrier.sync {bar_id}, 128;" ::: "memory");'
            if len(groups) == 1:
                syncs.append(f"    {sync}")
            else:
                test = f"t < {128 * (w + 1)}u" if w < len(groups) - 1 else ""
                keyword = "if" if w == 0 else ("} else if" if test else "} else")
                syncs.append(f"    {keyword} ({test}) {{" if test else f"    {keyword} {{")
                syncs.append(f"        {sync}")
        if len(groups) > 1:
            syncs.append("    }")
        return [
            *out,
            "    // the warpgroup's moves happen before its thread 0's arrive",
            *syncs,
            f"    if ((t % 128u) == 0u) {arrive}  // `{side.arrive_text}` of ring `{ring}`: thread 0 of each warpgroup",
        ]
    return [
        *out,
        "    __syncwarp();  // the warp's moves happen before lane 0's arrive",
        f"    if ((threadIdx.x & 31u) == 0u) {arrive}  // `{side.arrive_text}` of ring `{ring}`: lane 0 of each warp",
    ]


def _sharing(placed: Placed, stage: str, claim: str) -> tuple[str, ...]:
    """The other shared-memory storage that overlaps the slots of ``claim`` (placement may alias claims
    whose lifetimes do not meet)."""
    own = placed.placement.slot(stage, claim, Domain.SMEM)
    return tuple(
        sorted(
            f"`{other.display}` ({other.lifetime.text()})"
            for other in placed.placement.in_domain(Domain.SMEM)
            if (other.owner, other.name) != (stage, claim)
            and other.offset < own.offset + own.size
            and own.offset < other.offset + other.size
        )
    )


def _group_ids(placed: Placed, routed: RoutedSeam, span: Span) -> tuple[int, ...]:
    """The placed IDs of the route's warpgroup barriers: the exporting role's groups, then the importing role's."""
    ids = []
    for i in range(routed.route.barriers):
        name = barrier_name(routed, i)
        slot = next(
            (
                s
                for s in placed.placement.in_domain(Domain.BARRIER)
                if (s.owner, s.name) == (routed.seam.import_stage, name)
            ),
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


def _data(ops: Sequence[Op]) -> tuple[Op, ...]:
    """The route's stores and loads without its named-barrier steps (the ring orders the hand-off)."""
    return tuple(op for op in ops if not isinstance(op, (Arrive, Sync)))


def _sides(comp: Composition, ring: str, producer: str, consumer: str) -> tuple[RingSide, RingSide]:
    found: dict[str, RingSide] = {}
    for owned in comp.rings.get(ring, ()):
        side = owned.item
        if (side.side, side.role) in (("produce", producer), ("consume", consumer)):
            shape = _shape(side)
            assert isinstance(shape, RingSide), shape  # refusals() accepted the contract
            found[side.side] = shape
    return found["produce"], found["consume"]


def _slot_claim(comp: Composition, routed: RoutedSeam, ring: str, needed: int) -> str | None:
    """The first lent claim of the importing stage that is ``per_slot ring`` and holds a staged tile."""
    seam = routed.seam
    claims = {o.item.name: o.item for o in comp.items(A.SmemClaim) if o.stage_name == seam.import_stage}
    for name in seam.lent_claims:
        claim = claims.get(name)
        if claim is not None and claim.per_slot == ring and (claim.bytes or 0) >= needed:
            return name
    return None


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
