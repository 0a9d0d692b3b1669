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
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from checker.composition import Composition, Owned, RoleInfo
from checker.protocol.model import (
    Barrier,
    BarrierKind,
    Counter,
    InitBy,
    NamedBarrier,
    Op,
    Part,
    Protocol,
    Provenance,
    Ring,
    Role,
    Scope,
    Step,
    Target,
    Threshold,
)
from contract_lang import ast as A
from contract_lang.printer import counter_step_line, ring_item_line
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
        turn, turns = info.role.turn, info.role.turns
        if turns is None or turn is None or not 0 <= turn < turns:
            turn, turns = 0, 1  # a turn out of range is E-VALUE's
        parts.roles[info.name] = Role(
            info.name, info.warps, _prov(info.role, f"role {info.name} warps {info.warps}"), turn, turns
        )


_BARRIER_ITEMS = (A.RingBarrierInit, A.RingWait, A.RingArrive, A.RingCopy)
"""What makes a ring synchronized: a side with none of these is ordered by program order alone."""


def synchronized(sides: Sequence[Owned[A.Ring]]) -> bool:
    """Whether a ring has barriers: some side states a barrier's `init`, a wait, an arrive or a copy."""
    return any(isinstance(it, _BARRIER_ITEMS) for side in sides for it in side.item.items)


def _part(on: str | None) -> Part:
    return Part(on) if on in {p.value for p in Part} else Part.ALL


def _target(remote: bool, multicast: bool) -> Target:
    return Target.ALL if multicast else Target.PEER if remote else Target.OWN


def _ring(comp: Composition, parts: _Parts, name: str, sides: tuple[Owned[A.Ring], ...], depth: int) -> None:
    producers = [s for s in sides if s.item.side == "produce"]
    consumers = [s for s in sides if s.item.side == "consume"]
    if len(producers) != 1 or not consumers:
        raise Unbuildable("it needs one producer side and a consumer side")
    restarts = {s.item.restart for s in sides if s.item.restart is not None}
    if len(restarts) > 1 or 0 in restarts:
        raise Unbuildable("its sides state different slot restarts")
    restart = next(iter(restarts), 0)
    if not synchronized(sides):
        _unsynchronized(comp, parts, name, producers[0], consumers, depth, restart)
        return
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
        Ring(
            name, depth, producers[0].item.role, consumer_roles, full, empty, _prov(producers[0].item, header), restart
        )
    )
    for info in [*roles, initializer]:
        assert info is not None
        _role(parts, info)


def _unsynchronized(
    comp: Composition,
    parts: _Parts,
    name: str,
    producer: Owned[A.Ring],
    consumers: list[Owned[A.Ring]],
    depth: int,
    restart: int,
) -> None:
    """A ring without barriers: a buffer whose accesses program order alone orders (a role's staging).

    Its barriers stand for none: no step names them, no role initializes them.
    """
    infos = [comp.roles.get(s.item.role) for s in (producer, *consumers)]
    if any(i is None or not i.warps for i in infos):
        raise Unbuildable("a side names no role with warps")
    none = Provenance(producer.span, f"ring {name} (no barriers)")
    full, empty = Barrier(BarrierKind.FULL, 1, none), Barrier(BarrierKind.EMPTY, 1, none)
    consumer_roles = tuple(dict.fromkeys(c.item.role for c in consumers))
    header = f"ring {name} {producer.item.side} by {producer.item.role}"
    parts.rings.append(
        Ring(name, depth, producer.item.role, consumer_roles, full, empty, _prov(producer.item, header), restart, False)
    )
    for info in infos:
        assert info is not None
        _role(parts, info)


def _side_steps(comp: Composition, side: Owned[A.Ring]) -> list[Step]:
    ring, role = side.item, side.item.role
    steps: list[Step] = []
    producer = ring.side == "produce"
    copies = [it for it in ring.items if isinstance(it, A.RingCopy)]
    wrote = False
    read = any(isinstance(it, A.RingRead) for it in ring.items)  # an explicit `read` places the reads
    for item in ring.items:
        text = ring_item_line(item)
        if isinstance(item, A.RingWait):
            kind = BarrierKind(item.barrier)
            parity = item.parity if item.parity is not None else (1 if kind is BarrierKind.EMPTY else 0)
            part = _part(item.on)
            steps.append(Step(role, Op.WAIT, ring.name, _prov(item, text), kind, parity=parity, part=part))
            if not producer and kind is BarrierKind.FULL and not read:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`"), part=part))
                read = True
        elif isinstance(item, A.RingArrive):
            kind = BarrierKind(item.barrier)
            if count_value(comp, item.count) < 1:
                continue  # an arrive of no threads: reported by declarations.py
            part = _part(item.on)
            if producer and kind is BarrierKind.FULL and not copies and not item.tx and not wrote:
                steps.append(Step(role, Op.WRITE, ring.name, _prov(item, f"write slot of `{ring.name}`"), part=part))
                wrote = True
            if not producer and kind is BarrierKind.EMPTY and not read and not item.prearm:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`"), part=part))
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
                    part=part,
                    target=_target(item.remote, item.multicast),
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
                        part=part,
                        target=_target(item.remote, item.multicast),
                    )
                )
                wrote = True
        elif isinstance(item, A.RingCopy):
            if item.bytes < 1:
                continue  # a copy of no bytes: reported by declarations.py
            steps.append(
                Step(
                    role,
                    Op.COPY,
                    ring.name,
                    _prov(item, text),
                    BarrierKind(item.barrier),
                    nbytes=item.bytes,
                    part=_part(item.on),
                    target=_target(item.remote, item.multicast),
                )
            )
            wrote = True
        elif isinstance(item, A.RingRead):
            steps.append(
                Step(
                    role,
                    Op.READ,
                    ring.name,
                    _prov(item, text),
                    part=_part(item.on),
                    target=Target.ALL if item.multicast else Target.OWN,
                    asynchronous=item.asynchronous,
                )
            )
        elif isinstance(item, A.RingReadWait):
            steps.append(Step(role, Op.READ_WAIT, ring.name, _prov(item, text), lag=item.lag or 0, part=_part(item.on)))
    # a side that states no fill (no `full arrive`, no copy) still writes its slot, and a
    # consumer with no `full wait` and no release still reads it: the model then decides
    # what the missing step breaks (an unarrived `full` barrier is L-ARRIVE's)
    if producer and not wrote:
        steps.append(Step(role, Op.WRITE, ring.name, _prov(ring, f"write slot of `{ring.name}` (no fill stated)")))
    elif not producer and not read:
        steps.append(Step(role, Op.READ, ring.name, _prov(ring, f"read slot of `{ring.name}` (no wait stated)")))
    if ring.lag:  # `lag N`: every loop step N iterations late, and N more times after the loop
        steps = [s if s.prearm else replace(s, lag=s.lag + ring.lag, peel=ring.lag) for s in steps]
    if ring.once:  # once per CTA: up to its first release before the loop, from it on after the loop
        if ring.lag or ring.restart is not None or any(s.prearm or s.lag for s in steps):
            raise Unbuildable("a one-shot side (`once`) neither lags, restarts nor pre-arms")
        first = next((k for k, s in enumerate(steps) if _releases_slot(s)), len(steps))
        steps = [replace(s, once="before" if k < first else "after") for k, s in enumerate(steps)]
    return steps


def _releases_slot(step: Step) -> bool:
    return step.op is Op.ARRIVE and step.barrier is BarrierKind.EMPTY


def grid_counter(ends: Sequence[Owned[A.Counter]]) -> bool:
    """Whether a counter is the grid's: its partner is a role in the other CTAs of a tile's group.

    So it is when one role both raises and awaits it (the same role in other CTAs), or when a
    step names splits (a relative threshold, `on first`, `on rest`).
    """
    roles = {(e.item.side, e.item.role) for e in ends}
    same = {r for side, r in roles if side == "produce"} & {r for side, r in roles if side == "consume"}
    return bool(same) or any(s.threshold is not None or s.on in ("first", "rest") for e in ends for s in e.item.steps)


def _counter(comp: Composition, parts: _Parts, name: str, ends: tuple[Owned[A.Counter], ...]) -> None:
    producers = [e for e in ends if e.item.side == "produce"]
    consumers = [e for e in ends if e.item.side == "consume"]
    if len(producers) != 1 or len(consumers) != 1:
        raise Unbuildable
    prod, cons = producers[0], consumers[0]
    infos = [comp.roles.get(prod.item.role), comp.roles.get(cons.item.role)]
    grid = grid_counter(ends)
    if any(i is None or not i.warps for i in infos) or (prod.item.role == cons.item.role and not grid):
        raise Unbuildable
    scope = Scope(prod.item.scope) if prod.item.scope in {s.value for s in Scope} else Scope.CTA
    parts.counters.append(
        Counter(
            name,
            prod.item.role,
            cons.item.role,
            _prov(prod.item, f"counter {name} produce by {prod.item.role}"),
            scope,
            grid,
        )
    )
    for info in infos:
        assert info is not None
        _role(parts, info)


def _counter_steps(end: Owned[A.Counter], grid: bool) -> list[Step]:
    """A counter side's steps; a grid counter's producer writes the tile's data before its first
    add, its consumer reads it after its first wait."""
    counter = end.item
    role, name = counter.role, counter.name
    if not counter.steps:
        op, text = (Op.ADD, "add 1 (implied)") if counter.side == "produce" else (Op.WAIT_GE, "wait ge 1 (implied)")
        steps = [Step(role, op, name, _prov(counter, text), count=1)]
    else:
        steps = []
        for s in counter.steps:
            text = counter_step_line(s)
            if s.threshold in {t.value for t in Threshold}:
                threshold = Threshold(s.threshold)
                steps.append(Step(role, Op.WAIT_GE, name, _prov(s, text), part=_part(s.on), threshold=threshold))
            elif s.amount:  # `wait ge 0` passes at once, `add 0` changes nothing: no step
                op = Op.ADD if s.op == "add" else Op.WAIT_GE
                steps.append(Step(role, op, name, _prov(s, text), count=s.amount, part=_part(s.on)))
    if not grid:
        return steps
    producer = counter.side == "produce"
    first = next((i for i, s in enumerate(steps) if s.op is (Op.ADD if producer else Op.WAIT_GE)), None)
    at = steps[first] if first is not None else None
    data = Step(
        role,
        Op.WRITE if producer else Op.READ,
        name,
        Provenance(at.provenance.span if at else counter.span, f"{'write' if producer else 'read'} tile of `{name}`"),
        part=at.part if at else Part.ALL,
    )
    # before the first add, after the first wait; a side without one writes at its end, reads at its start
    steps.insert((first if producer else first + 1) if first is not None else len(steps) if producer else 0, data)
    return steps
    first = next(i for i, s in enumerate(steps) if s.op in (Op.ADD, Op.WAIT_GE))
    at = steps[first]
    if at.op is Op.ADD:
        steps.insert(
            first, Step(role, Op.WRITE, name, Provenance(at.provenance.span, f"write tile of `{name}`"), part=at.part)
        )
    else:
        steps.insert(
            first + 1, Step(role, Op.READ, name, Provenance(at.provenance.span, f"read tile of `{name}`"), part=at.part)
        )
    return steps


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
        count = sum({i.name: i.threads for i in infos if i is not None}.values())
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
    grid = {c.name for c in parts.counters if c.grid}
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
                    side_steps[key] = _counter_steps(Owned(entry, item), item.name in grid)
                elif isinstance(item, A.Rendezvous) and item.name in bars:
                    # each side arrives with its own role's threads (bar.sync/bar.arrive count whole warps)
                    op = Op.BAR_SYNC if item.mode == "sync" else Op.BAR_ARRIVE
                    text = f"rendezvous {item.name} {item.mode}" + (" prearm" if item.prearm else "")
                    text += (f" lag {item.lag}" if item.lag else "") + (" peeled" if item.peeled else "")
                    threads = comp.roles[item.role].threads
                    lag = item.lag or 0
                    # `peeled`: it runs in every phase the role's lagged ring sides peel after the loop
                    peel = max(lag, _peeled_phases(comp, item.role) if item.peeled else 0)
                    side_steps[key] = [
                        Step(
                            item.role,
                            op,
                            item.name,
                            _prov(item, text),
                            count=threads,
                            prearm=item.prearm,
                            lag=lag,
                            peel=peel,
                        )
                    ]
            except Unbuildable as skip:
                if item.name not in dropped:
                    dropped.add(item.name)
                    left.append(Unmodelled(item.name, (item.span,), skip.reason))
    protocol = _assemble(parts, side_steps, dropped, left, _ctas(comp, side_steps, grid))
    return Built(protocol, tuple(sorted(left, key=lambda u: u.channel)))


def _peeled_phases(comp: Composition, role: str) -> int:
    """The phases ``role`` runs after its loop: the largest `lag` of its ring sides."""
    return max(
        (
            item.lag or 0
            for entry in comp.stages
            for item in entry.stage.items
            if isinstance(item, A.Ring) and item.role == role
        ),
        default=0,
    )


GROUP_CTAS = 3
"""The CTAs of a tile's group the model runs when a counter's partner is in other CTAs.

Three is the fewest with a CTA of every kind a counter's steps tell apart: the first split,
which `on first` steps single out and whose `split` threshold is empty, a last one, and
one in between, which both waits for the splits before it and is waited for by those after
it (serial split-K's chain). Steps tell splits apart only as first or not (`on first`,
`on rest`) and through thresholds that count the adds of the splits before, the others or
all, so a larger group repeats the middle CTA's program: every pair of CTAs of a larger
group, and every chain of waits between them, has one of the same kinds here.
"""


def launch_cluster_size(comp: Composition) -> int:
    """The CTAs of the cluster the kernel launches with: the pipeline's `cluster` line, else 1 when
    every stage accepts 1x1x1, else the largest shape all stages accept (the model checks the widest)."""
    for item in comp.pipeline.items:
        if isinstance(item, A.PipelineCluster):
            return item.shape.size
    common: set[tuple[int, int, int]] | None = None
    for entry in comp.stages:
        lines = [it for it in entry.stage.items if isinstance(it, A.Cluster)]
        shapes = {(s.x, s.y, s.z) for line in lines for s in line.shapes} if lines else {(1, 1, 1)}
        common = shapes if common is None else common & shapes
    if not common or (1, 1, 1) in common:
        return 1
    return max(x * y * z for x, y, z in common)


def _ctas(comp: Composition, side_steps: dict[tuple[str, int], list[Step]], grid: set[str]) -> tuple[int, int]:
    """The cluster and group sizes the model runs: the launch's cluster when a step reaches another CTA of
    it, and :data:`GROUP_CTAS` when a counter's partner is in other CTAs (or a step names splits)."""
    steps = [s for ss in side_steps.values() for s in ss]
    clustered = any(s.target is not Target.OWN or s.part in (Part.LEADER, Part.PEER) for s in steps)
    splits = bool(grid) or any(s.part in (Part.FIRST, Part.REST) for s in steps)
    return (launch_cluster_size(comp) if clustered else 1), (GROUP_CTAS if splits else 1)


def _assemble(
    parts: _Parts,
    side_steps: dict[tuple[str, int], list[Step]],
    dropped: set[str],
    left: list[Unmodelled],
    ctas: tuple[int, int],
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
                tuple(parts.roles.values()),
                rings,
                counters,
                bars,
                tuple((r, tuple(s)) for r, s in programs.items()),
                *ctas,
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
