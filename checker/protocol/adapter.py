"""From a resolved composition to the abstract protocol, and its cached verdict.

Every ring with a producer side and at least one consumer side, every counter with both
endpoints and every rendezvous becomes part of one :class:`Protocol`. Each role's
per-iteration program is the concatenation of its sides' steps in stage and source order,
with the language's implied steps made explicit: the producer writes a slot just before
its `full arrive` (or, with `tx` bytes and no `copy` line, one async copy of those bytes
follows the arrive), and a consumer reads right after its `full wait` (or just before its
first `empty arrive` when it has no wait). A counter endpoint without steps adds 1 or waits
for 1 per iteration. Rings are checked at the least and the greatest depth the linker may
choose (an unbounded range at :data:`MAX_CHECKED_DEPTH`).

Pieces that cannot form a protocol (an unpaired endpoint, a missing count, an unknown role)
are left out: the structural clauses report them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from checker.composition import Composition, Owned, RoleInfo
from checker.memo import Memo
from checker.protocol.check import DEFAULT_RLIMIT, check_protocol, with_init
from checker.protocol.model import (
    MBAR_MAX_COUNT,
    Barrier,
    BarrierKind,
    Counter,
    InitBy,
    NamedBarrier,
    Op,
    Protocol,
    Provenance,
    Ring,
    Role,
    Scope,
    Step,
    remap_provenance,
)
from checker.protocol.report import verdict_diagnostics
from checker.protocol.verdict import ProtocolVerdict
from checker.storage import agreed_depth, overflowing_rings, per_slot_claims
from contract_lang import ast as A
from contract_lang.printer import count_text, ring_item_line
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from solver import UNKNOWN_CODE, validate_rlimit

MAX_CHECKED_DEPTH = 8
"""The deepest ring depth the model checks when a range is unbounded above."""

# Clause codes the protocol model decides (its L-INIT duplicates the structural clause),
# in tiers: a wrong declaration (count, bytes, parity) makes the protocol race or hang, so
# only the first tier that has findings is reported — one mistake, one clause.
TIERS = ((Code.L_ARRIVE, Code.L_TXBYTES, Code.L_PARITY), (Code.L_RACE,), (Code.L_DEADLOCK,))
MODEL_CODES = tuple(code for tier in TIERS for code in tier)


class _Skip(Exception):
    """A channel that cannot be modelled; ``reason`` says why (another clause reports the cause)."""

    def __init__(self, reason: str = "its declarations are incomplete") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Unmodelled:
    """A channel left out of the protocol model, with where and why.

    The model decides the rest; the channel itself is undecided. The engine reports it
    (``E-SOLVER-UNKNOWN``) unless another error of the same run is about the channel.
    """

    channel: str
    spans: tuple[Span, ...]
    reason: str


def _prov(node: A.Node, text: str) -> Provenance:
    return Provenance(node.span, text)


def count_problem(comp: Composition, count: A.Count) -> tuple[str, int] | None:
    """A `per_warpgroup` term over a role whose warps make no whole, positive number of
    warpgroups, as (role, its warps); None when the count has a value (unknown roles: L-ROLE's)."""
    for term in count.terms:
        info = comp.roles.get(term.role or "")
        if term.unit != "per_warpgroup" or info is None or not info.warps:
            continue
        if info.warps < 4 or info.warps % 4:
            return term.role or "", info.warps
    return None


def _count(comp: Composition, count: A.Count) -> int:
    if count_problem(comp, count) is not None:
        raise _Skip("a count has no whole, positive value")
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        info = comp.roles.get(term.role or "")
        if info is None or not info.warps:
            raise _Skip(f"a count names `{term.role}`, which is no role with warps")
        per = {"per_thread": info.threads, "per_warp": info.warps, "per_warpgroup": info.warps // 4}[term.unit]
        total += term.coef * per
    return total


@dataclass
class _Parts:
    roles: dict[str, Role]
    rings: list[Ring]
    counters: list[Counter]
    bars: list[NamedBarrier]
    programs: dict[str, list[Step]]


def _role(parts: _Parts, info: RoleInfo) -> None:
    if info.name not in parts.roles:
        parts.roles[info.name] = Role(info.name, info.warps, _prov(info.role, f"role {info.name} warps {info.warps}"))


def _ring(comp: Composition, parts: _Parts, name: str, sides: tuple[Owned[A.Ring], ...], depth: int) -> None:
    producers = [s for s in sides if s.item.side == "produce"]
    consumers = [s for s in sides if s.item.side == "consume"]
    if len(producers) != 1 or not consumers:
        raise _Skip("it needs one producer side and a consumer side")
    inits: dict[str, A.RingBarrierInit] = {}
    init_by: list[InitBy] = []
    for side in sides:
        for item in side.item.items:
            if isinstance(item, A.RingBarrierInit):
                inits.setdefault(item.barrier, item)
            elif isinstance(item, A.RingInitBy):
                init_by.append(InitBy(item.role, _prov(item, ring_item_line(item))))
    missing = [k for k in ("full", "empty") if k not in inits]
    if missing:
        raise _Skip(f"`{name}.{missing[0]}` has no `init` count")
    if len({i.role for i in init_by}) != 1:
        raise _Skip("it needs exactly one `init by` role")
    for side in sides:  # an arrive on the other side's barrier is L-PROTO's
        wrong = "empty" if side.item.side == "produce" else "full"
        if any(isinstance(it, A.RingArrive) and it.barrier == wrong for it in side.item.items):
            raise _Skip(f"a {side.item.side} side arrives on `{name}.{wrong}`")
    roles = [comp.roles.get(s.item.role) for s in sides]
    initializer = comp.roles.get(init_by[0].role)
    if any(r is None or not r.warps for r in roles) or initializer is None or not initializer.warps:
        raise _Skip("a side or its initializer names no role with warps")
    full_init, empty_init = (_count(comp, inits[k].count) for k in ("full", "empty"))
    if full_init < 1 or empty_init < 1:
        raise _Skip("a barrier is initialized with no arrivals")
    full = Barrier(
        BarrierKind.FULL,
        full_init,
        _prov(inits["full"], ring_item_line(inits["full"])),
        inits["full"].expect_tx,
        tuple(init_by),
    )
    empty = Barrier(
        BarrierKind.EMPTY, empty_init, _prov(inits["empty"], ring_item_line(inits["empty"])), None, tuple(init_by)
    )
    consumer_roles = tuple(dict.fromkeys(c.item.role for c in consumers))
    if producers[0].item.role in consumer_roles:
        raise _Skip("one role both produces and consumes it")
    header = f"ring {name} {producers[0].item.side} by {producers[0].item.role}"
    parts.rings.append(
        Ring(name, depth, producers[0].item.role, consumer_roles, full, empty, _prov(producers[0].item, header))
    )
    for info in [*roles, initializer]:
        assert info is not None
        _role(parts, info)


def _side_steps(comp: Composition, side: Owned[A.Ring]) -> list[Step]:
    ring, role = side.item, side.item.role
    steps: list[Step] = []
    producer = ring.side == "produce"
    copies = [it for it in ring.items if isinstance(it, A.RingCopy)]
    wrote = read = False
    for item in ring.items:
        text = ring_item_line(item)
        if isinstance(item, A.RingWait):
            kind = BarrierKind(item.barrier)
            parity = item.parity if item.parity is not None else (1 if kind is BarrierKind.EMPTY else 0)
            steps.append(Step(role, Op.WAIT, ring.name, _prov(item, text), kind, parity=parity))
            if not producer and kind is BarrierKind.FULL and not read:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`")))
                read = True
        elif isinstance(item, A.RingArrive):
            kind = BarrierKind(item.barrier)
            if _count(comp, item.count) < 1:
                continue  # an arrive of no threads: reported by declaration_problems
            if producer and kind is BarrierKind.FULL and not copies and not item.tx and not wrote:
                steps.append(Step(role, Op.WRITE, ring.name, _prov(item, f"write slot of `{ring.name}`")))
                wrote = True
            if not producer and kind is BarrierKind.EMPTY and not read and not item.prearm:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`")))
                read = True
            steps.append(
                Step(
                    role,
                    Op.ARRIVE,
                    ring.name,
                    _prov(item, text),
                    kind,
                    count=_count(comp, item.count),
                    nbytes=item.tx or 0,
                    lag=item.lag or 0,
                    prearm=item.prearm,
                )
            )
            if producer and kind is BarrierKind.FULL and not copies and item.tx and not wrote:
                steps.append(
                    Step(
                        role,
                        Op.COPY,
                        ring.name,
                        _prov(item, f"copy {item.tx} bytes (implied by `tx`)"),
                        kind,
                        nbytes=item.tx,
                    )
                )
                wrote = True
        elif isinstance(item, A.RingCopy):
            if item.bytes < 1:
                continue  # a copy of no bytes: reported by declaration_problems
            steps.append(
                Step(role, Op.COPY, ring.name, _prov(item, text), BarrierKind(item.barrier), nbytes=item.bytes)
            )
            wrote = True
    # a side that states no fill (no `full arrive`, no copy) still writes its slot, and a
    # consumer with no `full wait` and no release still reads it: the model then decides
    # what the missing step breaks (an unarrived `full` barrier is L-ARRIVE's)
    if producer and not wrote:
        steps.append(Step(role, Op.WRITE, ring.name, _prov(ring, f"write slot of `{ring.name}` (no fill stated)")))
    elif not producer and not read:
        steps.append(Step(role, Op.READ, ring.name, _prov(ring, f"read slot of `{ring.name}` (no wait stated)")))
    return steps


def _counter(comp: Composition, parts: _Parts, name: str, ends: tuple[Owned[A.Counter], ...]) -> None:
    producers = [e for e in ends if e.item.side == "produce"]
    consumers = [e for e in ends if e.item.side == "consume"]
    if len(producers) != 1 or len(consumers) != 1:
        raise _Skip
    prod, cons = producers[0], consumers[0]
    infos = [comp.roles.get(prod.item.role), comp.roles.get(cons.item.role)]
    if any(i is None or not i.warps for i in infos) or prod.item.role == cons.item.role:
        raise _Skip
    scope = Scope(prod.item.scope) if prod.item.scope in {s.value for s in Scope} else Scope.CTA
    parts.counters.append(
        Counter(
            name, prod.item.role, cons.item.role, _prov(prod.item, f"counter {name} produce by {prod.item.role}"), scope
        )
    )
    for info in infos:
        assert info is not None
        _role(parts, info)


def _counter_steps(end: Owned[A.Counter]) -> list[Step]:
    counter = end.item
    if counter.steps:
        return [
            Step(
                counter.role,
                Op.ADD if s.op == "add" else Op.WAIT_GE,
                counter.name,
                _prov(s, f"add {s.amount}" if s.op == "add" else f"wait ge {s.amount}"),
                count=s.amount,
            )
            for s in counter.steps
        ]
    op, text = (Op.ADD, "add 1 (implied)") if counter.side == "produce" else (Op.WAIT_GE, "wait ge 1 (implied)")
    return [Step(counter.role, op, counter.name, _prov(counter, text), count=1)]


@dataclass(frozen=True)
class Built:
    """The protocol of the channels that could be modelled, and those left out."""

    protocol: Protocol | None
    unmodelled: tuple[Unmodelled, ...] = ()


def _spans(sides: Sequence[Owned[Any]]) -> tuple[Span, ...]:
    return tuple(s.span for s in sides)


def build_model(comp: Composition, depths: dict[str, int], exclude: dict[str, str] | None = None) -> Built:
    """The composition's protocol with the given ring depths; a channel that cannot be
    modelled (or is in ``exclude``, with its reason) is left out, never the whole protocol."""
    parts = _Parts({}, [], [], [], {})
    left: list[Unmodelled] = []
    for name, sides in sorted(comp.rings.items()):
        if exclude and name in exclude:
            left.append(Unmodelled(name, _spans(sides), exclude[name]))
            continue
        try:
            _ring(comp, parts, name, sides, depths.get(name, 1))
        except _Skip as skip:
            left.append(Unmodelled(name, _spans(sides), skip.reason))
    for name, ends in sorted(comp.counters.items()):
        try:
            _counter(comp, parts, name, ends)
        except _Skip as skip:
            left.append(Unmodelled(name, _spans(ends), skip.reason))
    for name, rdv in sorted(comp.rendezvous.items()):
        infos = [comp.roles.get(s.item.role) for s in rdv]
        if any(i is None or not i.warps for i in infos):
            left.append(Unmodelled(name, _spans(rdv), "a side names no role with warps"))
            continue
        count = sum(i.threads for i in infos if i is not None)
        if count % 32 or not count or any(s.item.threads not in (None, count) for s in rdv):
            left.append(Unmodelled(name, _spans(rdv), "its sides disagree on the thread count"))
            continue
        parts.bars.append(NamedBarrier(name, count, _prov(rdv[0].item, f"rendezvous {name}")))
        for info in infos:
            assert info is not None
            _role(parts, info)
    # each modelled channel's steps per side; a side that cannot be stepped drops its channel
    side_steps: dict[tuple[str, int], list[Step]] = {}
    dropped: set[str] = set()
    rings = {r.name for r in parts.rings}
    counters = {c.name for c in parts.counters}
    bars = {b.name for b in parts.bars}
    for e, entry in enumerate(comp.stages):
        for i, item in enumerate(entry.stage.items):
            if not isinstance(item, (A.Ring, A.Counter, A.Rendezvous)):
                continue
            key = (item.name, e * 100_000 + i)
            try:
                if isinstance(item, A.Ring) and item.name in rings:
                    side_steps[key] = _side_steps(comp, Owned(entry, item))
                elif isinstance(item, A.Counter) and item.name in counters:
                    side_steps[key] = _counter_steps(Owned(entry, item))
                elif isinstance(item, A.Rendezvous) and item.name in bars:
                    # each side arrives with its own role's threads (bar.sync/bar.arrive count whole warps)
                    op = Op.BAR_SYNC if item.mode == "sync" else Op.BAR_ARRIVE
                    text = f"rendezvous {item.name} {item.mode}"
                    side_steps[key] = [
                        Step(item.role, op, item.name, _prov(item, text), count=comp.roles[item.role].threads)
                    ]
            except _Skip as skip:
                if item.name not in dropped:
                    dropped.add(item.name)
                    left.append(Unmodelled(item.name, (item.span,), skip.reason))
    protocol = _assemble(parts, side_steps, dropped, left)
    return Built(protocol, tuple(sorted(left, key=lambda u: u.channel)))


def _assemble(
    parts: _Parts, side_steps: dict[tuple[str, int], list[Step]], dropped: set[str], left: list[Unmodelled]
) -> Protocol | None:
    """The protocol of the channels not dropped; a channel the model refuses is dropped too."""
    while True:
        programs: dict[str, list[Step]] = {}
        for (channel, _), steps in sorted(side_steps.items(), key=lambda kv: kv[0][1]):
            if channel not in dropped:
                for step in steps:
                    programs.setdefault(step.role, []).append(step)
        rings = tuple(r for r in parts.rings if r.name not in dropped)
        counters = tuple(c for c in parts.counters if c.name not in dropped)
        bars = tuple(b for b in parts.bars if b.name not in dropped)
        if not rings and not counters and not bars:
            return None
        try:
            return Protocol(
                tuple(parts.roles.values()), rings, counters, bars, tuple((r, tuple(s)) for r, s in programs.items())
            )
        except ValueError as err:
            channels: list[Ring | Counter | NamedBarrier] = [*rings, *counters, *bars]
            culprit = next((c for c in channels if f"`{c.name}`" in str(err)), channels[0])
            dropped.add(culprit.name)
            left.append(Unmodelled(culprit.name, (culprit.provenance.span,), str(err)))


def _at_depths(built: Built, depths: dict[str, int]) -> Built:
    """``built`` with its rings at ``depths``: what :func:`build_model` gives at those depths
    (a ring's depth is all it reads of them)."""
    protocol = built.protocol
    if protocol is None:
        return built
    for ring in protocol.rings:
        if ring.depth != depths.get(ring.name, 1):
            protocol = protocol.with_depth(ring.name, depths.get(ring.name, 1))
    return Built(protocol, built.unmodelled)


def build(comp: Composition, depths: dict[str, int]) -> Protocol | None:
    """The composition's protocol with the given ring depths, or None when it has no channels."""
    return build_model(comp, depths).protocol


def depth_choices(comp: Composition) -> list[dict[str, int]]:
    """The ring depths to check: every ring at its least, then at its greatest allowed depth."""
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    for name in comp.rings:
        agreed = agreed_depth(comp, name)
        lo, hi = (1, 1) if agreed is None else (agreed[0], agreed[1] if agreed[1] is not None else MAX_CHECKED_DEPTH)
        lows[name], highs[name] = lo, max(lo, min(hi, MAX_CHECKED_DEPTH))
    return [lows] if lows == highs else [lows, highs]


# -- semantic verdict cache ------------------------------------------------------------


_CANON_FILE = "<canonical>"


def canonical(protocol: Protocol) -> tuple[Protocol, dict[Provenance, Provenance]]:
    """``protocol`` reduced to what the model decides of it, and the way back.

    Every provenance becomes a numbered placeholder (span and text) in order of
    appearance, every role is one warp wide and no barrier says who initializes it: the
    model reads none of these (a role's width is in the counts it was evaluated into; the
    text is quoted only when the verdict is put in words, after the way back; who
    initializes is L-INIT's alone, :func:`~checker.protocol.check.with_init`). Compositions
    that differ only in layout, in the wording of a line (``empty wait`` and ``empty wait
    parity 1``), in a width no count reads or in their `init by` share one verdict.
    """
    back: dict[Provenance, Provenance] = {}
    forth: dict[Provenance, Provenance] = {}

    def swap(p: Provenance) -> Provenance:
        if p not in forth:
            n = len(forth) + 1
            forth[p] = Provenance(Span(_CANON_FILE, n, 1, n, 2), f"#{n}")
            back[forth[p]] = p
        return forth[p]

    roles = tuple(r if r.warps == 1 else dataclasses.replace(r, warps=1) for r in protocol.roles)
    rings = tuple(_uninitialised(r) for r in protocol.rings)
    canon: Protocol = remap_provenance(dataclasses.replace(protocol, roles=roles, rings=rings), swap)
    return canon, back


def _uninitialised(ring: Ring) -> Ring:
    """``ring`` without its `init by` statements: only L-INIT reads them (:func:`with_init`)."""
    if not ring.full.init_by and not ring.empty.init_by:
        return ring
    full, empty = (dataclasses.replace(b, init_by=()) for b in (ring.full, ring.empty))
    return dataclasses.replace(ring, full=full, empty=empty)


def verdict(protocol: Protocol, options: ModelOptions, memo: Memo | None = None) -> ProtocolVerdict:
    """The protocol's verdict, kept in ``memo`` on its meaning (:func:`canonical`), not its spans or text."""
    memo = memo or Memo()

    def decide() -> ProtocolVerdict:
        canon, back = canonical(protocol)
        found = memo.verdicts.get(
            (canon, options.bound, options.rlimit),
            lambda: check_protocol(canon, bound=options.bound, rlimit=options.rlimit, memo=memo, init=False),
        )
        return with_init(remap_provenance(found, lambda p: back.get(p, p)), protocol)

    return memo.worded.get((protocol, options.bound, options.rlimit), decide)


@dataclass(frozen=True)
class CountFinding:
    """An arrival count no mbarrier can take, found from the declarations (L-ARRIVE words it).

    ``no-init``: no side states the barrier's `init` count (``span``: the producer side;
    ``role``: a consumer role, for the example); ``not-whole``: a `per_warpgroup` count over
    ``role``, which has ``warps`` warps; ``out-of-range``: ``count`` arrivals, outside
    1 … :data:`MBAR_MAX_COUNT`. ``initializes``: the count is the barrier's `init` (else an
    arrive's); ``line``: the item as written.
    """

    code: ClassVar[str] = Code.L_ARRIVE
    case: Literal["no-init", "not-whole", "out-of-range"]
    ring: str
    barrier: str
    span: Span
    line: str = ""
    initializes: bool = True
    role: str = ""
    warps: int = 0
    count: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells two findings apart, their locus aside: one report per barrier, side of it and count."""
        return (self.code, self.case, self.ring, self.barrier, self.initializes, self.count)


@dataclass(frozen=True)
class CopyFinding:
    """Copies that move what no slot holds, found from the declarations (L-TXBYTES words it).

    ``copies`` are the copies at fault as (span, the line as written), the first the locus.
    ``unknown-claim``: a copy fills ``claim``, which is none of the ring's per-slot
    ``claims``; ``over-claim``: the copies into ``claim`` move ``moved`` bytes per phase, a
    slot of it holds ``room``; ``over-slot``: the ring's copies move ``moved`` bytes, its
    per-slot claims (``slots``: span and bytes each) hold ``room``; ``no-bytes``: a copy of
    ``moved`` (< 1) bytes.
    """

    code: ClassVar[str] = Code.L_TXBYTES
    case: Literal["unknown-claim", "over-claim", "over-slot", "no-bytes"]
    ring: str
    copies: tuple[tuple[Span, str], ...]
    claim: str = ""
    claims: tuple[str, ...] = ()
    slots: tuple[tuple[Span, int], ...] = ()
    moved: int = 0
    room: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells two findings apart, their locus aside: one report per ring, claim and amounts."""
        return (self.code, self.case, self.ring, self.claim, self.moved, self.room)


Declared = CountFinding | CopyFinding
"""A finding of the declarations, before any model: the first tier's."""


def _missing_inits(comp: Composition) -> list[CountFinding]:
    """Rings with both sides whose `full` or `empty` barrier has no `init` count on any side."""
    out = []
    for name, sides in sorted(comp.rings.items()):
        producers = [s for s in sides if s.item.side == "produce"]
        if not producers or not any(s.item.side == "consume" for s in sides):
            continue  # a ring missing a side is L-UNPAIRED's
        stated = {it.barrier for s in sides for it in s.item.items if isinstance(it, A.RingBarrierInit)}
        for kind in ("full", "empty"):
            if kind not in stated:
                out.append(CountFinding("no-init", name, kind, producers[0].span, role=_consumer_role(sides)))
    return out


def slot_overruns(comp: Composition) -> list[CopyFinding]:
    """Copies that move more bytes per phase than the slot storage they fill (L-TXBYTES).

    A copy with ``into C`` fills the per-slot claim ``C`` of its ring; the copies of a
    phase (stated, or the one a `tx` implies) fill the ring's per-slot claims together.
    """
    out: list[CopyFinding] = []
    for name, sides in sorted(comp.rings.items()):
        claims = {c.item.name: c for c in per_slot_claims(comp, name) if c.item.bytes is not None}
        for side in (s for s in sides if s.item.side == "produce"):
            copies = [it for it in side.item.items if isinstance(it, A.RingCopy) and it.barrier == "full"]
            for copy in copies:
                if copy.into is not None and copy.into not in claims:
                    out.append(
                        CopyFinding(
                            "unknown-claim", name, _lines([copy]), claim=copy.into, claims=tuple(sorted(claims))
                        )
                    )
            over = False
            for cname, claim in sorted(claims.items()):
                into = [c for c in copies if c.into == cname]
                moved = sum(c.bytes for c in into)
                if moved > (claim.item.bytes or 0):
                    over = True
                    slot = ((claim.span, claim.item.bytes or 0),)
                    out.append(
                        CopyFinding("over-claim", name, _lines(into), cname, slots=slot, moved=moved, room=slot[0][1])
                    )
            if over or not claims:
                continue
            implied = [it for it in side.item.items if isinstance(it, A.RingArrive) and it.barrier == "full" and it.tx]
            moving: list[A.RingCopy] | list[A.RingArrive] = copies or implied
            moved = sum(c.bytes for c in copies) if copies else sum(a.tx or 0 for a in implied)
            room = sum(c.item.bytes or 0 for c in claims.values())
            if moving and moved > room:
                slots = tuple((c.span, c.item.bytes or 0) for c in claims.values())
                out.append(CopyFinding("over-slot", name, _lines(moving), slots=slots, moved=moved, room=room))
    return out


def _lines(items: Sequence[A.RingItem]) -> tuple[tuple[Span, str], ...]:
    return tuple((it.span, ring_item_line(it)) for it in items)


def _consumer_role(sides: tuple[Owned[A.Ring], ...]) -> str:
    return next((s.item.role for s in sides if s.item.side == "consume"), "ROLE")


def declaration_problems(comp: Composition) -> list[Declared]:
    """Counts and byte amounts no mbarrier can take, found before any model is built.

    ``mbarrier.init`` takes an arrival count in 1 … 2^20 − 1 and an arrive a count that
    keeps the pending count in range (PTX ISA §9.7.13.15.9, §9.7.13.15.13); a copy of
    no bytes completes nothing.
    """
    out: list[Declared] = [*_missing_inits(comp)]
    for side in comp.items(A.Ring):
        ring = side.item.name
        for item in side.item.items:
            text = ring_item_line(item)
            if isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                initializes = isinstance(item, A.RingBarrierInit)
                problem = count_problem(comp, item.count)
                if problem is not None:
                    role, warps = problem
                    out.append(CountFinding("not-whole", ring, item.barrier, item.span, text, initializes, role, warps))
                    continue
                try:
                    count = _count(comp, item.count)
                except _Skip:
                    continue  # a count over an unknown role: L-ROLE
                if not 1 <= count <= MBAR_MAX_COUNT:
                    out.append(
                        CountFinding("out-of-range", ring, item.barrier, item.span, text, initializes, count=count)
                    )
            elif isinstance(item, A.RingCopy) and item.bytes < 1:
                out.append(CopyFinding("no-bytes", ring, ((item.span, text),), moved=item.bytes))
    return out


# -- the analysis of one check -----------------------------------------------------------


MAX_MODEL_DEPTH = 32
"""The deepest ring the bounded model unrolls (``2 * depth + 1`` iterations per role)."""

BOUND_NOTE = Code.I_PROTOCOL_BOUND


@dataclass(frozen=True)
class ModelOptions:
    """The solver budget per query and the iterations each role runs (None: ``2·depth+1``)."""

    rlimit: int = DEFAULT_RLIMIT
    bound: int | None = None

    def __post_init__(self) -> None:
        validate_rlimit(self.rlimit)
        if self.bound is not None and not 1 <= self.bound <= 4 * MAX_MODEL_DEPTH + 1:
            raise ValueError(f"bound must be in 1..{4 * MAX_MODEL_DEPTH + 1}")


@dataclass(frozen=True)
class TooDeep:
    """A ring deeper than the bounded model unrolls: undecided, never vouched for (L-DEADLOCK's ``E-SOLVER-UNKNOWN``).

    ``lowest`` is the least depth the ring allows, at most :data:`MAX_MODEL_DEPTH` (for the fix).
    """

    code: ClassVar[str] = UNKNOWN_CODE
    clause: ClassVar[str] = Code.L_DEADLOCK
    ring: str
    depth: int
    span: Span
    lowest: int


ModelFinding = Diagnostic | Declared
"""A finding of the protocol clauses: the model's (worded by protocol/report.py) or the declarations' (typed)."""
ModelUndecided = Diagnostic | TooDeep
"""An undecided question: the model's ``E-SOLVER-UNKNOWN``, or a ring too deep to model."""


@dataclass(frozen=True)
class ModelReport:
    """Everything the protocol model says about one composition, before any selection.

    ``findings`` are the clauses' findings (all tiers); ``undecided`` the undecided questions
    (an ``E-SOLVER-UNKNOWN`` diagnostic's ``data["clause"]`` names its clause); ``unmodelled``
    the channels left out; ``checked`` the depth assignments decided.
    """

    findings: tuple[ModelFinding, ...] = ()
    undecided: tuple[ModelUndecided, ...] = ()
    unmodelled: tuple[Unmodelled, ...] = ()
    checked: tuple[tuple[tuple[str, int], ...], ...] = ()
    notes: tuple[Diagnostic, ...] = ()

    def tiered(self, codes: Iterable[str]) -> tuple[ModelFinding | ModelUndecided, ...]:
        """One mistake, one clause, over the selected ``codes`` only.

        Only the first tier with a finding among the selected codes is reported (a wrong
        count makes the protocol race or hang: the race or hang is its dependent); undecided
        queries of later tiers are dependents too. With nothing found, every undecided query
        is reported: an undecided check is never an accept.
        """
        chosen = set(codes)
        tier = next(
            (i for i, t in enumerate(TIERS) if any(d.code in t and d.code in chosen for d in self.findings)), None
        )
        if tier is None:
            return self.undecided
        found = tuple(d for d in self.findings if d.code in TIERS[tier] and d.code in chosen)
        return found + tuple(d for d in self.undecided if _tier_of(_clause_of(d)) <= tier)

    def hang_proofs(self, codes: Iterable[str]) -> tuple[Diagnostic, ...]:
        """The deadlocks a selection would hide: no selected protocol clause reports anything, yet it hangs.

        A selection narrows what is reported, never what is accepted: the finding that proves
        a hang is shown whatever ``--select``/``--ignore`` say (with a selected finding, the
        composition is rejected by its root cause already).
        """
        if any(d.code.startswith("L-") for d in self.tiered(codes)):
            return ()
        return tuple(d for d in self.findings if isinstance(d, Diagnostic) and d.code == Code.L_DEADLOCK)


def _clause_of(undecided: ModelUndecided) -> str:
    if isinstance(undecided, TooDeep):
        return undecided.clause
    return dict(undecided.data)["clause"]  # every E-SOLVER-UNKNOWN names its clause (solver.unknown_diagnostic)


def _tier_of(code: str) -> int:
    return next((i for i, t in enumerate(TIERS) if code in t), len(TIERS))


def _declared_rings(comp: Composition) -> dict[str, str]:
    """Rings with a count or byte amount no mbarrier takes (reported before any model)."""
    out: dict[str, str] = {f.ring: "a barrier has no `init` count" for f in _missing_inits(comp)}
    for side in comp.items(A.Ring):
        for item in side.item.items:
            if isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                if count_problem(comp, item.count) is not None:
                    out.setdefault(side.item.name, "a count has no whole, positive value")
                    continue
                try:
                    count = _count(comp, item.count)
                except _Skip:
                    continue
                if not 1 <= count <= MBAR_MAX_COUNT:
                    out.setdefault(side.item.name, f"a count of {count} is outside 1..{MBAR_MAX_COUNT}")
            elif isinstance(item, A.RingCopy) and item.bytes < 1:
                out.setdefault(side.item.name, "a copy moves no bytes")
    return out


#: Why a ring whose every depth overflows shared memory is left out. Placement rejects it
#: (L-OVERLAP) whatever the selection, so the model's silence on it is never an accept.
NO_DEPTH_FITS = "no depth of it fits shared memory"


def _excluded(comp: Composition) -> dict[str, str]:
    """Rings the model leaves out, and why: their depths or declarations are rejected first."""
    out = _declared_rings(comp)
    for name in sorted(comp.rings):
        if agreed_depth(comp, name) is None:
            out.setdefault(name, "its sides allow no common depth")
    for name in overflowing_rings(comp):
        out.setdefault(name, NO_DEPTH_FITS)
    return out


def analyse(comp: Composition, options: ModelOptions | None = None, memo: Memo | None = None) -> ModelReport:
    """Decide the composition's protocol at the least and the greatest depth the linker may choose."""
    options = options or ModelOptions()
    memo = memo or Memo()
    declared = (*declaration_problems(comp), *slot_overruns(comp))
    excluded = _excluded(comp)
    found: dict[object, ModelFinding] = {}
    for d in declared:
        found.setdefault(d.identity, d)
    undecided: dict[object, ModelUndecided] = {}
    unmodelled: dict[str, Unmodelled] = {}
    checked: list[tuple[tuple[str, int], ...]] = []
    notes: list[Diagnostic] = []
    first: Built | None = None
    for depths in depth_choices(comp):
        built = first = build_model(comp, depths, excluded) if first is None else _at_depths(first, depths)
        for u in built.unmodelled:
            unmodelled.setdefault(u.channel, u)
        if built.protocol is None:
            continue
        modelled = {r.name: depths.get(r.name, 1) for r in built.protocol.rings}
        checked.append(tuple(sorted(modelled.items())))
        deep = _too_deep(comp, built.protocol)
        if deep:
            undecided.update((d, d) for d in deep)
            break
        result = verdict(built.protocol, options, memo)
        notes += _bound_note(built.protocol, options)
        for diag in verdict_diagnostics(result):
            if diag.code in MODEL_CODES:
                found.setdefault((diag.code, diag.message), diag)
            elif not diag.code.startswith("L-"):
                undecided.setdefault((diag.code, diag.message), diag)
        if len(found) > len(declared):
            break  # report the least depth's findings; a deeper ring adds no new mistake
    return ModelReport(
        tuple(found.values()), tuple(undecided.values()), tuple(unmodelled.values()), tuple(checked), tuple(notes[-1:])
    )  # one note: the deepest depths' bound


def _too_deep(comp: Composition, protocol: Protocol) -> list[TooDeep]:
    """Rings deeper than the bounded model unrolls: undecided, never vouched for."""
    return [
        TooDeep(ring.name, ring.depth, ring.provenance.span, _lowest(comp, ring.name))
        for ring in protocol.rings
        if ring.depth > MAX_MODEL_DEPTH
    ]


def _lowest(comp: Composition, ring: str) -> int:
    agreed = agreed_depth(comp, ring)
    return 1 if agreed is None else min(agreed[0], MAX_MODEL_DEPTH)


def _bound_note(protocol: Protocol, options: ModelOptions) -> list[Diagnostic]:
    if options.bound is None or options.bound >= protocol.default_bound():
        return []
    first = protocol.rings[0].provenance.span if protocol.rings else None
    return [
        Diagnostic(
            BOUND_NOTE,
            f"the protocol was checked over {options.bound} iterations per role, fewer than the "
            f"{protocol.default_bound()} that wrap every ring twice",
            severity=Severity.NOTE,
            labels=(Label(first, "checked with a lowered bound", True),) if first is not None else (),
            notes=("a mistake that shows only in later iterations is not looked for",),
            helps=(f"drop `--bound` (or give at least {protocol.default_bound()}) for the full check",),
        )
    ]


def check_placed_depths(
    comp: Composition,
    depths: dict[str, int],
    options: ModelOptions | None = None,
    selected: Iterable[str] | None = None,
    memo: Memo | None = None,
) -> list[Diagnostic] | list[TooDeep]:
    """The model's diagnostics at the depths placement chose, when those were not checked.

    The accepted verdict must cover the configuration that is linked: a depth range is
    checked at its ends, placement may choose any depth inside it. A depth deeper than the
    model unrolls is undecided (the rings too deep, for L-DEADLOCK to word), never vouched for.
    """
    options = options or ModelOptions()
    excluded = _excluded(comp)
    built = build_model(comp, depths, excluded)
    if built.protocol is None:
        return []
    modelled = [r.name for r in built.protocol.rings]
    for choice in depth_choices(comp):
        if all(choice.get(n, 1) == depths.get(n, 1) for n in modelled):
            return []  # decided by the check already
    deep = _too_deep(comp, built.protocol)
    if deep:
        return deep
    found = [
        d
        for d in verdict_diagnostics(verdict(built.protocol, options, memo))
        if d.code in MODEL_CODES or not d.code.startswith("L-")
    ]
    at = ", ".join(f"`{n}` at depth {depths.get(n, 1)}" for n in modelled)
    report = ModelReport(
        tuple(d for d in found if d.code.startswith("L-")), tuple(d for d in found if not d.code.startswith("L-"))
    )
    # one mistake, one clause over the *selected* codes, as at the checked depths: under
    # `--select L-DEADLOCK` a count mistake's hang is still reported, never tiered away
    codes = MODEL_CODES if selected is None else [c for c in MODEL_CODES if c in set(selected)]
    return [
        dataclasses.replace(d, notes=(*d.notes, f"found at the depths placement chose: {at}"))
        for d in (*report.tiered(codes), *report.hang_proofs(codes))
        if isinstance(d, Diagnostic)  # the model's own: no declaration findings, no ring too deep here
    ]


def _related(comp: Composition, channel: str) -> list[Span]:
    """The channel's endpoints and the declarations of the roles they name."""
    ends: list[Owned[Any]] = [
        *comp.rings.get(channel, ()),
        *comp.counters.get(channel, ()),
        *comp.rendezvous.get(channel, ()),
    ]
    roles = {e.item.role for e in ends}
    roles |= {it.role for e in comp.rings.get(channel, ()) for it in e.item.items if isinstance(it, A.RingInitBy)}
    return [e.span for e in ends] + [comp.roles[r].role.span for r in sorted(roles) if r in comp.roles]


def unexplained(
    comp: Composition, unmodelled: Iterable[Unmodelled], reported: Sequence[Diagnostic]
) -> list[Unmodelled]:
    """The channels left out of the model that no error of the run is about (an error on one of
    its endpoints, or on a role one of them names, is its root cause): each is undecided."""
    errs = [lab.span for d in reported if d.severity is Severity.ERROR for lab in d.labels]
    out = []
    for u in unmodelled:
        if u.reason == NO_DEPTH_FITS:
            continue  # a dependent of the placement failure, which is reported whatever the selection
        if any(_inside(span, whole) for span in errs for whole in (*u.spans, *_related(comp, u.channel))):
            continue  # a dependent: the error about the channel is the root cause
        out.append(u)
    return out


def _inside(part: Span, whole: Span) -> bool:
    return part.file == whole.file and whole.line <= part.line and part.end_line <= whole.end_line


__all__ = [
    "MODEL_CODES",
    "TIERS",
    "Built",
    "CopyFinding",
    "CountFinding",
    "ModelOptions",
    "ModelReport",
    "TooDeep",
    "Unmodelled",
    "analyse",
    "build",
    "build_model",
    "canonical",
    "check_placed_depths",
    "count_text",
    "depth_choices",
    "unexplained",
    "verdict",
]
