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

What is refused (``E-UNSUPPORTED``): what the contract decides, before routing, by
:mod:`analysis.ring_fed` (the link plan's ``ring_fed``); here, after routing and placement,
a route other than whole-tile staging from registers, a scratch that is not the importing
stage's ``per_slot R`` claim, and one whose slots share storage with another claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.link_inputs import LinkInputs
from analysis.plan import barrier_name
from analysis.ring_fed import RingSide
from checker.handles import HandleKind, HandleSpec
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from linker.handles import Solved, handle_value
from linker.transfers import Transfer, connection_symbols, elem_ctype
from linker.watchdog import TRY_WAIT_PARITY, Watchdog, ring_wait_lines
from package.abi import tensor_symbol
from placement.adapter import Placed
from placement.problem import Domain
from transfer_model.adapter import RoutedSeam
from transfer_model.lower import lower_moves
from transfer_model.primitives import SMEM_STAGING, StagingPlan
from transfer_model.program import Arrive, Op, Sync, build_program


def ring_fed_transfer(
    link: LinkInputs, placed: Placed, routed: RoutedSeam, span: Span, watchdog: Watchdog | None = None
) -> Transfer:
    """The linked hand-off of a ring-fed connection whose contract :mod:`analysis.ring_fed` accepts; with
    ``watchdog`` (``--watchdog``) its two waits are bounded like the linker's other waits."""
    seam, route = routed.seam, routed.route
    what = f"ring-fed tensor connection `{seam.export.name}` -> `{seam.imp.name}` ({route.result.title})"
    hand_off = link.ring_fed.hand_off(seam.export_stage, seam.export.name)
    assert hand_off is not None, "unsupported() refused the ring-fed exports it does not generate"
    ring = hand_off.ring
    plan = route.result.plan
    if route.rung != SMEM_STAGING or not isinstance(plan, StagingPlan) or plan.mode != "tile" or plan.same_threads:
        mode = plan.mode if isinstance(plan, StagingPlan) else route.rung
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"the hand-off stages the whole tile in one slot of `{ring}` between two roles; the route is `{mode}`",
        )
    claim = _slot_claim(link, routed, ring, plan.smem_bytes)
    if claim is None:
        raise _refuse(
            span,
            seam.import_stage,
            what,
            f"no claim the import lends is declared `per_slot {ring}` and holds the {plan.smem_bytes} bytes of "
            "a staged tile: each generation needs its own slot",
        )
    solved = Solved(link, placed.problem, placed.placement, {})

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
    producer, consumer = hand_off.producer, hand_off.consumer
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
    export_symbol, import_symbol, _ = connection_symbols(routed)
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
        *_wait(producer, ring, empty, depth, watchdog, export_symbol),
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
        head = _wait(consumer, ring, full, depth, watchdog, import_symbol) if c == 0 else []
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
    return Transfer.of(
        routed,
        program,
        scratch=(claim, scratch, scratch - base, plan.smem_bytes),
        barriers=(ids, 128 if ids else 0),
        why=why,
        source="\n".join(lines),
        shared="scratch",
        ring=(ring, depth, stride),
    )


_MBARRIER = (
    "#ifndef KL_HELPER_KL_RING_FED",
    "#define KL_HELPER_KL_RING_FED",
    "static __device__ __forceinline__ void kl_ring_fed_wait(unsigned bar, unsigned parity) {",
    "    unsigned ok;",
    "    do {",
    f"        {TRY_WAIT_PARITY}",
    "    } while (!ok);",
    "}",
    "static __device__ __forceinline__ void kl_ring_fed_arrive(unsigned bar) {",
    '    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");',
    "}",
    "#endif",
)


def _wait(side: RingSide, ring: str, bar: int, depth: int, wd: Watchdog | None, symbol: str) -> list[str]:
    comment = (
        f"    // `{side.wait} wait` of ring `{ring}` (first parity {side.parity}, flipped each pass through the ring)"
    )
    parity = f"{side.parity}u ^ ((generation / {depth}u) & 1u)"
    if wd is None:
        return [comment, f"    kl_ring_fed_wait({bar}u + 8u * slot, {parity});"]
    site = wd.site(symbol)
    return [
        f"{comment}, bounded by --watchdog (site {site.id})",
        "    {",
        f"        const unsigned parity = {parity};",
        *("    " + line for line in ring_wait_lines(wd, symbol, bar)),
        "    }",
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


def _slot_claim(link: LinkInputs, routed: RoutedSeam, ring: str, needed: int) -> str | None:
    """The first lent claim of the importing stage that is ``per_slot ring`` and holds a staged tile."""
    seam = routed.seam
    claims = {c.name: c for c in link.smem if c.stage == seam.import_stage}
    for name in seam.lent_claims:
        claim = claims.get(name)
        if claim is not None and claim.per_slot == ring and claim.size >= needed:
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
