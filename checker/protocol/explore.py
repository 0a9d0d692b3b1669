"""An explicit-state oracle for the protocol semantics (plain Python, small bounds).

It shares no code with the SMT model beyond the abstract :class:`Protocol`: it unrolls
the programs itself, keeps each mbarrier's ``(phase, pending, tx)``, each counter's value
and each named barrier's ``(arrived, generation)`` as state, and walks every interleaving
breadth-first. Tests compare its answers with :func:`checker.protocol.check.check_protocol`.

Semantics (the same as the SMT model's): ``arrive`` subtracts its count from the pending
count and adds its bytes to the tx-count, a copy subtracts its bytes; whenever pending and
tx-count are both zero the phase completes and pending resets to the init count (pending
below zero never completes again). A parity wait passes iff ``phase % 2 != parity``.
``bar.sync`` arrives, then passes once the barrier's generation moved past the one it
arrived in. A write of data iteration ``i`` races if the consumer has not finished its last
access (read or release) of iteration ``i - depth``; a read of ``i`` races if the producer
has not finished its last write of ``i``. The search starts with every barrier initialized
once, before any step: a protocol whose `init by` statements break L-INIT's rule
(:func:`~checker.protocol.model.init_fault`) has no such start, and :func:`explore` refuses it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from checker.protocol.model import MBAR_MAX_COUNT, BarrierKind, Op, Protocol, Step, init_fault
from diagnostics.symbols import Code


@dataclass(frozen=True)
class _Act:
    step: Step
    obj: int  # index of the physical object (-1: none)
    data: int | None  # data iteration of ring steps
    parity: int = 0
    threshold: int = 0
    sync_wait: bool = False


@dataclass(frozen=True)
class ExploreResult:
    """What the exhaustive search found within the bound."""

    deadlock: bool
    races: frozenset[tuple[str, str]]
    static: frozenset[tuple[str, str, str]]
    states: int


class StateLimit(RuntimeError):
    """The search reached its state budget before finishing."""


class Uninitialised(ValueError):
    """A ring's barriers are not initialized as L-INIT's rule asks: the run has no defined start."""


def explore(protocol: Protocol, bound: int | None = None, *, max_states: int = 2_000_000) -> ExploreResult:
    """Search every interleaving of a ``bound``-iteration run of ``protocol``."""
    roles = [r.name for r in protocol.roles]
    for ring in protocol.rings:
        for kind in BarrierKind:
            stated = [(i.role, i.fenced) for i in ring.barrier(kind).init_by]
            fault = init_fault(stated, ring.sides, roles)
            if fault is not None:
                raise Uninitialised(f"`{ring.name}.{kind.value}`: {fault}")
    bound = bound or protocol.default_bound()
    objects: dict[tuple[str, str, int], int] = {}
    kinds: list[str] = []
    inits: list[int] = []

    def obj(channel: str, kind: str, slot: int, init: int) -> int:
        key = (channel, kind, slot)
        if key not in objects:
            objects[key] = len(kinds)
            kinds.append(kind)
            inits.append(init)
        return objects[key]

    programs: list[list[_Act]] = []
    for role in roles:
        acts: list[_Act] = []
        steps = protocol.program(role)
        for step in steps:
            if step.prearm:
                ring = protocol.ring(step.channel)
                init = ring.barrier(_kind(step)).init_count
                for slot in range(ring.depth):
                    acts.append(_Act(step, obj(step.channel, _kind(step).value, slot, init), None))
        for i in range(bound):
            for step in steps:
                j = i - step.lag
                if step.prearm or j < 0:
                    continue
                if step.op in (Op.ADD, Op.WAIT_GE):
                    o = obj(step.channel, "counter", 0, 0)
                    acts.append(_Act(step, o, None, threshold=step.count * (j + 1)))
                elif step.op in (Op.BAR_ARRIVE, Op.BAR_SYNC):
                    o = obj(step.channel, "bar", 0, protocol.named_barrier(step.channel).threads)
                    acts.append(_Act(step, o, None))
                    if step.op is Op.BAR_SYNC:
                        acts.append(_Act(step, o, None, sync_wait=True))
                else:
                    ring = protocol.ring(step.channel)
                    slot, use = j % ring.depth, j // ring.depth
                    o = -1
                    if step.barrier is not None:
                        o = obj(step.channel, step.barrier.value, slot, ring.barrier(step.barrier).init_count)
                    parity = (step.parity ^ (use % 2)) if step.parity is not None else 0
                    acts.append(_Act(step, o, j, parity=parity))
        programs.append(acts)

    # Race bookkeeping: positions of the last write / last consumer access per data iteration.
    last_write: dict[tuple[str, int], int] = {}
    last_access: dict[tuple[str, int, int], int] = {}
    producer_of: dict[str, int] = {}
    consumers_of: dict[str, list[int]] = {}
    for ring in protocol.rings:
        producer_of[ring.name] = roles.index(ring.producer)
        consumers_of[ring.name] = [roles.index(c) for c in ring.consumers]
        for pos, act in enumerate(programs[producer_of[ring.name]]):
            if act.step.channel == ring.name and act.step.op in (Op.COPY, Op.WRITE):
                assert act.data is not None
                last_write[(ring.name, act.data)] = pos
        for c in consumers_of[ring.name]:
            for pos, act in enumerate(programs[c]):
                step = act.step
                if step.channel != ring.name or act.data is None:
                    continue
                if step.op is Op.READ or (step.op is Op.ARRIVE and step.barrier is BarrierKind.EMPTY):
                    last_access[(ring.name, c, act.data)] = pos

    n = len(roles)
    # state: pcs, per object (a, b, c), per role the generation seen at a bar.sync arrival
    start_objs = tuple((0, inits[k], 0) if kinds[k] in ("full", "empty") else (0, 0, 0) for k in range(len(kinds)))
    start = ((0,) * n, start_objs, (0,) * n)
    seen = {start}
    queue = deque([start])
    races: set[tuple[str, str]] = set()
    deadlock = False
    while queue:
        pcs, objs, synced = queue.popleft()
        live = [r for r in range(n) if pcs[r] < len(programs[r])]
        moved = False
        for r in live:
            act = programs[r][pcs[r]]
            if not _enabled(act, objs, synced[r]):
                continue
            moved = True
            _note_race(protocol, act, pcs, producer_of, consumers_of, last_write, last_access, races)
            new_objs, new_synced = _apply(act, objs, synced, r, kinds, inits)
            nxt = ((*pcs[:r], pcs[r] + 1, *pcs[r + 1 :]), new_objs, new_synced)
            if nxt not in seen:
                if len(seen) >= max_states:
                    raise StateLimit(f"more than {max_states} states")
                seen.add(nxt)
                queue.append(nxt)
        if live and not moved:
            deadlock = True
    return ExploreResult(deadlock, frozenset(races), static_expectations(protocol), len(seen))


def _kind(step: Step) -> BarrierKind:
    assert step.barrier is not None
    return step.barrier


def _enabled(act: _Act, objs: tuple[tuple[int, int, int], ...], synced: int) -> bool:
    op = act.step.op
    if op is Op.WAIT:
        return objs[act.obj][0] % 2 != act.parity
    if op is Op.WAIT_GE:
        return objs[act.obj][0] >= act.threshold
    if act.sync_wait:
        return objs[act.obj][1] > synced
    return True


def _apply(
    act: _Act,
    objs: tuple[tuple[int, int, int], ...],
    synced: tuple[int, ...],
    r: int,
    kinds: list[str],
    inits: list[int],
) -> tuple[tuple[tuple[int, int, int], ...], tuple[int, ...]]:
    op = act.step.op
    if act.obj < 0 or op in (Op.WAIT, Op.WAIT_GE) or act.sync_wait:
        return objs, synced
    state = list(objs)
    a, b, c = objs[act.obj]
    if kinds[act.obj] == "counter":
        state[act.obj] = (a + act.step.count, b, c)
    elif kinds[act.obj] == "bar":
        if op is Op.BAR_SYNC:
            synced = (*synced[:r], b, *synced[r + 1 :])
        arrived, gen = a + act.step.count, b
        if arrived == inits[act.obj]:
            arrived, gen = 0, gen + 1
        state[act.obj] = (arrived, gen, c)
    else:
        phase, pending, tx = a, b, c
        if op is Op.ARRIVE:
            pending -= act.step.count
            tx += act.step.nbytes
        elif op is Op.EXPECT_TX:
            tx += act.step.nbytes
        elif op is Op.COPY:
            tx -= act.step.nbytes
        if pending == 0 and tx == 0:
            phase, pending = phase + 1, inits[act.obj]
        state[act.obj] = (phase, pending, tx)
    return tuple(state), synced


def _note_race(
    protocol: Protocol,
    act: _Act,
    pcs: tuple[int, ...],
    producer_of: dict[str, int],
    consumers_of: dict[str, list[int]],
    last_write: dict[tuple[str, int], int],
    last_access: dict[tuple[str, int, int], int],
    races: set[tuple[str, str]],
) -> None:
    step = act.step
    if act.data is None or step.channel not in producer_of:
        return
    ring = protocol.ring(step.channel)
    if step.op in (Op.COPY, Op.WRITE) and act.data >= ring.depth:
        for c in consumers_of[ring.name]:
            prev = last_access.get((ring.name, c, act.data - ring.depth))
            if prev is None or pcs[c] <= prev:
                races.add((ring.name, "overwrite"))
    if step.op is Op.READ:
        last = last_write.get((ring.name, act.data))
        if last is not None and pcs[producer_of[ring.name]] <= last:
            races.add((ring.name, "early-read"))


def static_expectations(protocol: Protocol) -> frozenset[tuple[str, str, str]]:
    """The declaration clauses the protocol violates, by plain arithmetic."""
    out: set[tuple[str, str, str]] = set()
    for ring in protocol.rings:
        for kind in BarrierKind:
            bar = ring.barrier(kind)
            steps = [s for _, prog in protocol.programs for s in prog if s.channel == ring.name and s.barrier is kind]
            loop = sum(s.count for s in steps if s.op is Op.ARRIVE and not s.prearm)
            prearm = [s.count for s in steps if s.prearm]
            if loop != bar.init_count or (prearm and sum(prearm) != bar.init_count) or bar.init_count > MBAR_MAX_COUNT:
                out.add((Code.L_ARRIVE, ring.name, kind.value))
            expected = sum(s.nbytes for s in steps if s.op in (Op.ARRIVE, Op.EXPECT_TX))
            completed = sum(s.nbytes for s in steps if s.op is Op.COPY)
            declared = bar.expect_tx
            if (
                expected != completed
                or max(expected, completed) > MBAR_MAX_COUNT
                or (declared is not None and declared != expected)
            ):
                out.add((Code.L_TXBYTES, ring.name, kind.value))
            armed = bool(prearm)
            right = (1 if armed else 0) if kind is BarrierKind.FULL else (0 if armed else 1)
            if any(s.op is Op.WAIT and s.parity != right for s in steps):
                out.add((Code.L_PARITY, ring.name, kind.value))
    return frozenset(out)
