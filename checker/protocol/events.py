"""The bounded unrolling of a protocol into per-process event sequences (used by the SMT model).

A process is one role in one CTA (``ctas`` of them, :class:`~checker.protocol.model.Protocol`).
Every process runs its prologue (each ``prearm`` step once per slot of its ring, or once on a
named barrier) and then ``bound`` iterations of its role's program, the steps its CTA runs
(``part``). A role that takes turns runs only its data iterations. A one-shot step (``once``)
runs once, on data iteration 0: before the loop (after the prologue) or after it (and after the
peeled phases). A named-barrier
``bar.sync`` becomes two events: its arrival and its wait. An arrive or a copy on another
CTA's barrier (``remote``, ``multicast``) is one event per barrier it acts on.
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.protocol.model import BarrierKind, Op, Part, Protocol, Step, Target, Threshold

SYNC_ARRIVE = "arrive"
SYNC_WAIT = "wait"


@dataclass(frozen=True)
class ObjKey:
    """A physical synchronization object: one mbarrier slot, a counter word or a named barrier.

    ``cta`` is the CTA that holds it (``None`` when the protocol runs in one CTA); a grid
    counter's word is per tile (``slot``) and cluster rank (``cta``).
    """

    channel: str
    barrier: BarrierKind | None = None
    slot: int | None = None
    cta: int | None = None

    def __str__(self) -> str:
        where = "" if self.cta is None else f"@{self.cta}"
        if self.barrier is None:
            tile = "" if self.slot is None else f"[tile {self.slot}]"
            return f"{self.channel}{tile}{where}"
        return f"{self.channel}.{self.barrier.value}[{self.slot}]{where}"


@dataclass(frozen=True)
class Event:
    """One executed instance of a step.

    ``rank`` is the process's index (it breaks ties in the global order), ``pos`` the
    event's index in its process's sequence, ``step_index`` the step's index in the role's
    program, ``iteration`` the role's loop iteration (``-1`` in the prologue), ``tile`` the
    data iteration that loop iteration runs (its trip: the run stops before ``tile`` ``n``),
    ``data`` the data iteration whose slot or tile the step touches (``None`` for pre-arms
    and named barriers; for a read wait, the newest iteration whose reads it completes),
    ``use`` how often that slot was used before it, ``parity`` a wait instance's parity and
    ``threshold`` a counter wait's target value. ``cta`` is the process's CTA and ``lands``
    the CTA whose slot a write fills.
    """

    id: int
    role: str
    rank: int
    pos: int
    step: Step
    step_index: int
    iteration: int
    data: int | None
    obj: ObjKey | None
    slot: int | None = None
    use: int | None = None
    parity: int | None = None
    threshold: int | None = None
    part: str = ""
    cta: int = 0
    tile: int = -1
    lands: int | None = None

    @property
    def op(self) -> Op:
        return self.step.op

    @property
    def is_wait(self) -> bool:
        """Whether the process can block at this event."""
        if self.op is Op.BAR_SYNC:
            return self.part == SYNC_WAIT
        return self.op in (Op.WAIT, Op.WAIT_GE)

    def label(self) -> str:
        """A short description: step text, iteration and part."""
        where = "prologue" if self.iteration < 0 else f"iteration {self.iteration}"
        part = f" ({self.part})" if self.part else ""
        return f"`{self.step.provenance.text}`{part} in {where}"


def process_name(protocol: Protocol, role: str, cta: int) -> str:
    """How traces name a process: its role, with its CTA when the protocol runs in several."""
    return role if protocol.ctas == 1 else f"{role}@{cta}"


def runs_in(protocol: Protocol, step: Step, cta: int) -> bool:
    """Whether CTA ``cta`` runs ``step`` (its ``part``)."""
    rank, split = cta % protocol.cluster, cta // protocol.cluster
    part = step.part
    if part is Part.LEADER:
        return rank == 0
    if part is Part.PEER:
        return rank != 0
    if part is Part.FIRST:
        return split == 0
    if part is Part.REST:
        return split != 0
    return True


def targets(protocol: Protocol, step: Step, cta: int) -> tuple[int, ...]:
    """The CTAs whose barrier an arrive or copy of CTA ``cta`` acts on, in rank order."""
    base = cta - cta % protocol.cluster
    if step.target is Target.ALL:
        return tuple(base + r for r in range(protocol.cluster))
    if step.target is Target.PEER:
        return (base + (cta % protocol.cluster + 1) % protocol.cluster,)
    return (cta,)


def tile_adds(protocol: Protocol, counter: str, cta: int, tile: int) -> int:
    """What CTA ``cta`` adds to grid counter ``counter`` in ``tile`` (its roles' `add` steps it runs)."""
    return sum(
        step.count
        for role in protocol.roles
        if role.takes(tile)
        for step in protocol.program(role.name)
        if step.op is Op.ADD and step.channel == counter and runs_in(protocol, step, cta)
    )


def relative_threshold(protocol: Protocol, step: Step, cta: int, tile: int) -> int:
    """The value a grid counter wait of CTA ``cta`` waits for in ``tile``: the adds of the splits it names."""
    rank, split = cta % protocol.cluster, cta // protocol.cluster
    splits = range(protocol.group)
    if step.threshold is Threshold.SPLIT:
        chosen = [s for s in splits if s < split]
    elif step.threshold is Threshold.OTHERS:
        chosen = [s for s in splits if s != split]
    else:
        chosen = list(splits)
    return sum(tile_adds(protocol, step.channel, s * protocol.cluster + rank, tile) for s in chosen)


def unroll(protocol: Protocol, bound: int) -> list[list[Event]]:
    """Per process (CTA-major, roles in declaration order), the events of a ``bound``-iteration run.

    A peeled protocol (:attr:`Protocol.peeled`) is unrolled for exactly ``bound`` iterations: its
    peeled steps then run once more per iteration they peel, after the loop (their events carry
    the last loop iteration's trip, so a run of ``bound`` trips has them all)."""
    if bound < 1:
        raise ValueError("the bound is at least one iteration")
    sequences: list[list[Event]] = []
    for cta in range(protocol.ctas):
        for role in protocol.roles:
            first = sum(len(s) for s in sequences)
            sequences.append(_unroll_role(protocol, role.name, len(sequences), cta, bound, first))
    return sequences


def trip_cuts(sequence: list[Event], bound: int) -> list[int]:
    """``cuts[n]``: how many events of ``sequence`` a run of ``n`` iterations has (``n`` in 0 .. bound)."""
    return [sum(1 for e in sequence if e.tile < n) for n in range(bound + 1)]


def _unroll_role(protocol: Protocol, role: str, rank: int, cta: int, bound: int, first_id: int) -> list[Event]:
    program = protocol.program(role)
    info = protocol.role(role)
    counters = {c.name: c for c in protocol.counters}
    multi = protocol.ctas > 1
    here = cta if multi else None
    seq: list[Event] = []

    def emit(
        step: Step, k: int, iteration: int, tile: int, data: int | None, obj: ObjKey | None, **more: object
    ) -> None:
        seq.append(
            Event(
                first_id + len(seq),
                role,
                rank,
                len(seq),
                step,
                k,
                iteration,
                data,
                obj,
                cta=cta,
                tile=tile,
                **more,  # type: ignore[arg-type]
            )
        )

    for k, step in enumerate(program):
        if not step.prearm or not runs_in(protocol, step, cta):
            continue
        if step.op in (Op.BAR_ARRIVE, Op.BAR_SYNC):
            obj = ObjKey(step.channel, cta=here)
            if step.op is Op.BAR_ARRIVE:
                emit(step, k, -1, -1, None, obj)
            else:
                emit(step, k, -1, -1, None, obj, part=SYNC_ARRIVE)
                emit(step, k, -1, -1, None, obj, part=SYNC_WAIT)
            continue
        for slot in range(protocol.ring(step.channel).depth):
            for t in targets(protocol, step, cta):
                emit(step, k, -1, -1, None, ObjKey(step.channel, step.barrier, slot, t if multi else None), slot=slot)

    def ring_step(k: int, step: Step, i: int, tile: int, data: int) -> None:
        ring = protocol.ring(step.channel)
        slot, use = ring.slot(data), ring.use(data)
        if step.op in (Op.ARRIVE, Op.EXPECT_TX, Op.COPY):
            assert step.barrier is not None
            for t in targets(protocol, step, cta):
                # a copy lands in its issuer's slot, a multicast one in every target's
                lands = (t if step.target is Target.ALL else cta) if step.op is Op.COPY else None
                obj = ObjKey(step.channel, step.barrier, slot, t if multi else None)
                emit(step, k, i, tile, data, obj, slot=slot, use=use, lands=lands)
        elif step.op is Op.WAIT:
            assert step.barrier is not None and step.parity is not None
            obj = ObjKey(step.channel, step.barrier, slot, here)
            emit(step, k, i, tile, data, obj, slot=slot, use=use, parity=step.parity ^ (use & 1))
        elif step.op is Op.READ:
            for t in targets(protocol, step, cta):
                emit(step, k, i, tile, data, None, slot=slot, use=use, lands=t)
        else:
            lands = cta if step.op is Op.WRITE else None
            emit(step, k, i, tile, data, None, slot=slot, use=use, lands=lands)

    tiles = [j for j in range(bound) if info.takes(j)]
    peel = max((s.peel for s in program), default=0) if protocol.peeled and tiles else 0
    for k, step in enumerate(program):  # a one-shot side's steps up to its release, before the loop
        if step.once == "before" and tiles and runs_in(protocol, step, cta):
            ring_step(k, step, 0, tiles[0], 0)
    for i in range(len(tiles) + peel):
        tile = tiles[min(i, len(tiles) - 1)]
        for k, step in enumerate(program):
            if step.prearm or step.once or i < step.lag or not runs_in(protocol, step, cta):
                continue
            if i >= len(tiles) and i - len(tiles) >= step.peel:
                continue  # after the loop only the peeled steps run
            data = tiles[min(i - step.lag, len(tiles) - 1)]  # a named-barrier step may peel past its data
            counter = counters.get(step.channel)
            if counter is not None and step.op in (Op.ADD, Op.WAIT_GE, Op.READ, Op.WRITE):
                if not counter.grid:
                    threshold = step.count * (i + 1) if step.op is Op.WAIT_GE else None
                    emit(step, k, i, tile, None, ObjKey(step.channel, cta=here), threshold=threshold)
                    continue
                rank_key = cta % protocol.cluster if multi else None
                obj = ObjKey(step.channel, slot=data, cta=rank_key)
                threshold = None
                if step.op is Op.WAIT_GE:
                    threshold = (
                        step.count
                        if step.threshold is Threshold.COUNT
                        else relative_threshold(protocol, step, cta, data)
                    )
                if step.op in (Op.READ, Op.WRITE):  # the tile's data, in the word's CTA
                    emit(step, k, i, tile, data, None, lands=cta)
                else:
                    emit(step, k, i, tile, data, obj, threshold=threshold)
            elif step.op is Op.BAR_ARRIVE:
                emit(step, k, i, tile, None, ObjKey(step.channel, cta=here))
            elif step.op is Op.BAR_SYNC:
                obj = ObjKey(step.channel, cta=here)
                emit(step, k, i, tile, None, obj, part=SYNC_ARRIVE)
                emit(step, k, i, tile, None, obj, part=SYNC_WAIT)
            else:
                ring_step(k, step, i, tile, data)
    for k, step in enumerate(program):  # a one-shot side's releases, after the loop
        if step.once == "after" and tiles and runs_in(protocol, step, cta):
            ring_step(k, step, len(tiles) + peel - 1, tiles[-1], 0)
    return seq
