"""From a resolved composition to the abstract protocol (the AST to the model).

Every ring with a producer side and at least one consumer side, every counter with both
endpoints and every rendezvous becomes part of one :class:`Protocol`. Each role's
per-iteration program is the concatenation of its sides' steps in stage and source order,
with the language's implied steps made explicit: the producer writes a slot just before
its `full arrive` (or, with `tx` bytes and no `copy` line, one async copy of those bytes
follows the arrive), and a consumer reads right after its `full wait` (or just before its
first `empty arrive` when it has no wait). A counter endpoint without steps adds 1 or waits
for 1 per iteration. Which depths a ring is built at is ``depths.py``'s.

Pieces that cannot form a protocol (an unpaired endpoint, a missing count, an unknown role)
are left out, each an :class:`Unmodelled` with its reason: the structural clauses report
the cause, and what no clause explains is undecided (``checker/policy.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from checker.composition import Composition, Owned, RoleInfo
from checker.protocol.model import (
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
)
from contract_lang import ast as A
from contract_lang.printer import ring_item_line
from diagnostics.span import Span
from diagnostics.symbols import Code


class Unbuildable(Exception):
    """A channel that cannot be modelled; ``reason`` says why (another clause reports the cause)."""

    def __init__(self, reason: str = "its declarations are incomplete") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Unmodelled:
    """A channel left out of the protocol model, with where and why.

    The model decides the rest; the channel itself is undecided: L-DEADLOCK words it
    (``E-SOLVER-UNKNOWN``) unless another error of the same run is about the channel.
    """

    code: ClassVar[str] = Code.L_DEADLOCK
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


def count_value(comp: Composition, count: A.Count) -> int:
    """The arrivals ``count`` stands for, from the roles' widths (:class:`Unbuildable` when it has no value)."""
    if count_problem(comp, count) is not None:
        raise Unbuildable("a count has no whole, positive value")
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        info = comp.roles.get(term.role or "")
        if info is None or not info.warps:
            raise Unbuildable(f"a count names `{term.role}`, which is no role with warps")
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
        raise Unbuildable("it needs one producer side and a consumer side")
    inits: dict[str, A.RingBarrierInit] = {}
    init_by: list[InitBy] = []
    for side in sides:
        for item in side.item.items:
            if isinstance(item, A.RingBarrierInit):
                inits.setdefault(item.barrier, item)
            elif isinstance(item, A.RingInitBy):
                init_by.append(InitBy(item.role, _prov(item, ring_item_line(item)), item.fenced))
    missing = [k for k in ("full", "empty") if k not in inits]
    if missing:
        raise Unbuildable(f"`{name}.{missing[0]}` has no `init` count")
    if len({i.role for i in init_by}) != 1:
        raise Unbuildable("it needs exactly one `init by` role")
    for side in sides:  # an arrive on the other side's barrier is L-PROTO's
        wrong = "empty" if side.item.side == "produce" else "full"
        if any(isinstance(it, A.RingArrive) and it.barrier == wrong for it in side.item.items):
            raise Unbuildable(f"a {side.item.side} side arrives on `{name}.{wrong}`")
    roles = [comp.roles.get(s.item.role) for s in sides]
    initializer = comp.roles.get(init_by[0].role)
    if any(r is None or not r.warps for r in roles) or initializer is None or not initializer.warps:
        raise Unbuildable("a side or its initializer names no role with warps")
    full_init, empty_init = (count_value(comp, inits[k].count) for k in ("full", "empty"))
    if full_init < 1 or empty_init < 1:
        raise Unbuildable("a barrier is initialized with no arrivals")
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
        raise Unbuildable("one role both produces and consumes it")
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
            if count_value(comp, item.count) < 1:
                continue  # an arrive of no threads: reported by declarations.py
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
                    count=count_value(comp, item.count),
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
                continue  # a copy of no bytes: reported by declarations.py
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
        raise Unbuildable
    prod, cons = producers[0], consumers[0]
    infos = [comp.roles.get(prod.item.role), comp.roles.get(cons.item.role)]
    if any(i is None or not i.warps for i in infos) or prod.item.role == cons.item.role:
        raise Unbuildable
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
        except Unbuildable as skip:
            left.append(Unmodelled(name, _spans(sides), skip.reason))
    for name, ends in sorted(comp.counters.items()):
        try:
            _counter(comp, parts, name, ends)
        except Unbuildable as skip:
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
            except Unbuildable as skip:
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


def at_depths(built: Built, depths: dict[str, int]) -> Built:
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
