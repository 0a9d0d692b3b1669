"""An explicit-state oracle for the protocol semantics (plain Python, small bounds).

It shares no code with the SMT model beyond the abstract :class:`Protocol`: it unrolls
the programs itself (processes, CTAs, turns, slots, targets and thresholds included),
keeps each mbarrier's ``(phase, pending, tx)``, each counter word's value and each named
barrier's ``(arrived, generation)`` as state, and walks every interleaving
breadth-first. Tests compare its answers with :func:`checker.protocol.check.check_protocol`.

Semantics (the same as the SMT model's, :mod:`checker.protocol.model`): ``arrive``
subtracts its count from the pending count and adds its bytes to the tx-count, a copy
subtracts its bytes; whenever pending and tx-count are both zero the phase completes and
pending resets to the init count (pending below zero never completes again). A parity
wait passes iff ``phase % 2 != parity``. ``bar.sync`` arrives, then passes once the
barrier's generation moved past the one it arrived in. A write of data iteration ``i``
into a CTA's slot races if a consumer that read the slot's previous use has not finished
its last access to it (its read, or the read wait that completes an asynchronous read,
and its first release of that data iteration); a read of ``i`` races if a process that
writes it into that slot has not finished its last write of ``i``; a grid counter's tile
read by one CTA while another CTA is about to write it (both next) is a conflict. Every
CTA runs the same number ``n`` of iterations, any ``n`` from 1 to the bound: a state in
which every process has either finished its first ``n`` iterations or waits in vain, and
one has not finished, is a deadlock. A peeled step (``peel``) runs again after the loop
for the last data iterations its lag left, and a one-shot step (``once``) runs on data 0
before the loop or after it: a run of ``n`` iterations is then no prefix of a longer one,
and each ``n`` is searched by itself. The search starts with every barrier initialized
once, before any step: a protocol whose `init by` statements break L-INIT's rule
(:func:`~checker.protocol.model.init_fault`) has no such start, and :func:`explore`
refuses it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from checker.protocol.model import (
    MBAR_MAX_COUNT,
    BarrierKind,
    Op,
    Part,
    Protocol,
    Ring,
    Step,
    Target,
    Threshold,
    init_fault,
)
from diagnostics.symbols import Code


@dataclass(frozen=True)
class _Act:
    step: Step
    obj: int  # index of the physical object (-1: none)
    data: int | None  # data iteration of ring and grid-counter steps
    trip: int  # the loop's data iteration the act runs in (-1: prologue)
    parity: int = 0
    threshold: int = 0
    sync_wait: bool = False
    slot_cta: int = -1  # the CTA whose slot a read or write touches


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


def _runs(protocol: Protocol, step: Step, cta: int) -> bool:
    c, g = protocol.cluster, protocol.group
    rank, split = cta % c, cta // c
    assert split < g
    return {
        Part.ALL: True,
        Part.LEADER: rank == 0,
        Part.PEER: rank > 0,
        Part.FIRST: split == 0,
        Part.REST: split > 0,
    }[step.part]


def _aims(protocol: Protocol, step: Step, cta: int) -> list[int]:
    """The CTAs whose barrier (or slot, for a read) the step of ``cta`` touches."""
    c = protocol.cluster
    first = (cta // c) * c
    if step.target is Target.ALL:
        return [first + r for r in range(c)]
    if step.target is Target.PEER:
        return [first + ((cta - first) + 1) % c]
    return [cta]


def _slot(ring: Ring, j: int) -> tuple[int, int]:
    """(slot, how many earlier data iterations used it) of data iteration ``j``."""
    index = j if not ring.restart else j % ring.restart
    slot = index % ring.depth
    earlier = sum(1 for k in range(j) if (k if not ring.restart else k % ring.restart) % ring.depth == slot)
    return slot, earlier


def explore(protocol: Protocol, bound: int | None = None, *, max_states: int = 2_000_000) -> ExploreResult:
    """Search every interleaving of a ``bound``-iteration run of ``protocol``."""
    roles = [r.name for r in protocol.roles]
    for ring in protocol.rings:
        if not ring.synchronized:
            continue
        for kind in BarrierKind:
            stated = [(i.role, i.fenced) for i in ring.barrier(kind).init_by]
            fault = init_fault(stated, ring.sides, roles)
            if fault is not None:
                raise Uninitialised(f"`{ring.name}.{kind.value}`: {fault}")
    bound = bound or protocol.default_bound()
    if not protocol.peeled:
        return _search(protocol, bound, range(1, bound + 1), max_states)
    # a run of n iterations ends with its peeled steps: no prefix of a longer run, so each trip
    # count is searched by itself
    runs = [_search(protocol, n, range(n, n + 1), max_states) for n in range(1, bound + 1)]
    return ExploreResult(
        any(r.deadlock for r in runs),
        frozenset().union(*(r.races for r in runs)),
        static_expectations(protocol),
        sum(r.states for r in runs),
    )


def _search(protocol: Protocol, bound: int, trips: range, max_states: int) -> ExploreResult:
    """Search every interleaving of a ``bound``-iteration run; a deadlock ends one of ``trips``."""
    roles = [r.name for r in protocol.roles]
    ctas = protocol.cluster * protocol.group
    objects: dict[tuple[object, ...], int] = {}
    kinds: list[str] = []
    inits: list[int] = []

    def obj(key: tuple[object, ...], kind: str, init: int) -> int:
        if key not in objects:
            objects[key] = len(kinds)
            kinds.append(kind)
            inits.append(init)
        return objects[key]

    grid = {c.name for c in protocol.counters if c.grid}
    procs: list[tuple[int, str]] = [(cta, role) for cta in range(ctas) for role in roles]
    programs: list[list[_Act]] = [_program(protocol, cta, role, bound, grid, obj) for cta, role in procs]
    cuts = [[sum(1 for a in acts if a.trip < n) for n in range(bound + 1)] for acts in programs]

    # Race bookkeeping, per ring: the last write of each writer process per (slot's CTA, data
    # iteration); per consumer process and (slot's CTA, data iteration) it reads, its last access.
    last_write: dict[tuple[str, int, int], dict[int, int]] = {}
    last_access: dict[tuple[str, int, int], dict[int, int | None]] = {}
    for p, acts in enumerate(programs):
        async_rings = {a.step.channel for a in acts if a.step.op is Op.READ and a.step.asynchronous}
        for pos, act in enumerate(acts):
            step = act.step
            if step.channel in grid or act.data is None:
                continue
            if step.op in (Op.COPY, Op.WRITE):
                last_write.setdefault((step.channel, act.slot_cta, act.data), {})[p] = pos
            elif step.op is Op.READ:
                key = (step.channel, act.slot_cta, act.data)
                done = _completion(acts, pos, act) if step.channel in async_rings else pos
                table = last_access.setdefault(key, {})
                table[p] = None if done is None else max(done, table.get(p) or 0)
        released: set[tuple[str, int]] = set()
        for pos, act in enumerate(acts):
            step = act.step
            if step.op is Op.ARRIVE and step.barrier is BarrierKind.EMPTY and act.data is not None:
                if (step.channel, act.data) in released:
                    continue  # done with the slots at the first release of the data iteration
                released.add((step.channel, act.data))
                for key, table in last_access.items():
                    if key[0] == step.channel and key[2] == act.data and p in table:
                        prior = table[p]
                        table[p] = None if prior is None else max(prior, pos)

    n = len(procs)
    start_objs = tuple((0, inits[k], 0) if kinds[k] in ("full", "empty") else (0, 0, 0) for k in range(len(kinds)))
    start = ((0,) * n, start_objs, (0,) * n)
    seen = {start}
    queue = deque([start])
    races: set[tuple[str, str]] = set()
    deadlock = False
    while queue:
        pcs, objs, synced = queue.popleft()
        enabled = [
            r for r in range(n) if pcs[r] < len(programs[r]) and _enabled(programs[r][pcs[r]], objs, synced[r], kinds)
        ]
        _note_conflicts(programs, pcs, procs, grid, races)
        if not deadlock:
            deadlock = _stuck(pcs, programs, cuts, enabled, trips)
        for r in enabled:
            act = programs[r][pcs[r]]
            _note_race(protocol, act, pcs, last_write, last_access, races)
            new_objs, new_synced = _apply(act, objs, synced, r, kinds, inits)
            nxt = ((*pcs[:r], pcs[r] + 1, *pcs[r + 1 :]), new_objs, new_synced)
            if nxt not in seen:
                if len(seen) >= max_states:
                    raise StateLimit(f"more than {max_states} states")
                seen.add(nxt)
                queue.append(nxt)
    return ExploreResult(deadlock, frozenset(races), static_expectations(protocol), len(seen))


_Make = Callable[[tuple[object, ...], str, int], int]
"""Indexes a physical object by its key, kind and initial count."""


def _program(protocol: Protocol, cta: int, role: str, bound: int, grid: set[str], make: _Make) -> list[_Act]:
    """The acts of ``role`` in CTA ``cta`` over a ``bound``-iteration run."""
    info = protocol.role(role)
    steps = protocol.program(role)
    multi = protocol.cluster * protocol.group > 1
    acts: list[_Act] = []
    for step in steps:
        if not step.prearm or not _runs(protocol, step, cta):
            continue
        if step.op in (Op.BAR_ARRIVE, Op.BAR_SYNC):
            o = make(("bar", step.channel, cta), "bar", protocol.named_barrier(step.channel).threads)
            acts.append(_Act(step, o, None, -1))
            if step.op is Op.BAR_SYNC:
                acts.append(_Act(step, o, None, -1, sync_wait=True))
            continue
        ring = protocol.ring(step.channel)
        kind = step.barrier
        assert kind is not None
        for slot in range(ring.depth):
            for aim in _aims(protocol, step, cta):
                o = make(("mbar", step.channel, kind.value, slot, aim), kind.value, ring.barrier(kind).init_count)
                acts.append(_Act(step, o, None, -1))

    def ring_act(step: Step, j: int, trip: int) -> None:
        ring = protocol.ring(step.channel)
        slot, use = _slot(ring, j)
        parity = (step.parity ^ (use % 2)) if step.parity is not None else 0
        if step.op in (Op.ARRIVE, Op.EXPECT_TX, Op.COPY):
            kind = step.barrier
            assert kind is not None
            init = ring.barrier(kind).init_count
            for aim in _aims(protocol, step, cta):
                o = make(("mbar", step.channel, kind.value, slot, aim), kind.value, init)
                # a copy fills the issuer's slot (every target's when multicast); an
                # arrive is about the slot of the CTA whose barrier it reaches
                lands = aim if step.target is Target.ALL or step.op is not Op.COPY else cta
                acts.append(_Act(step, o, j, trip, slot_cta=lands))
        elif step.op is Op.WAIT:
            kind = step.barrier
            assert kind is not None
            init = ring.barrier(kind).init_count
            o = make(("mbar", step.channel, kind.value, slot, cta), kind.value, init)
            acts.append(_Act(step, o, j, trip, parity=parity))
        elif step.op is Op.READ:
            for aim in _aims(protocol, step, cta):
                acts.append(_Act(step, -1, j, trip, slot_cta=aim))
        else:
            acts.append(_Act(step, -1, j, trip, slot_cta=cta))

    mine = [j for j in range(bound) if j % info.turns == info.turn]
    for step in steps:  # a one-shot side's steps up to its release, before the loop
        if step.once == "before" and mine and _runs(protocol, step, cta):
            ring_act(step, 0, mine[0])
    # after the loop's last iteration, the peeled steps run once per iteration they peel
    after = max((s.peel for s in steps), default=0) if mine else 0
    for i in range(len(mine) + after):
        trip = mine[min(i, len(mine) - 1)]
        for step in steps:
            if step.prearm or step.once or i - step.lag < 0 or not _runs(protocol, step, cta):
                continue
            if i >= len(mine) and i - len(mine) >= step.peel:
                continue
            j = mine[min(i - step.lag, len(mine) - 1)]  # a named-barrier step may peel past its data
            if step.op in (Op.ADD, Op.WAIT_GE) or (step.channel in grid and step.op in (Op.READ, Op.WRITE)):
                if step.channel in grid:
                    rank = cta % protocol.cluster
                    o = make(("ctr", step.channel, j, rank), "counter", 0)
                    need = 0
                    if step.op is Op.WAIT_GE:
                        need = step.count if step.threshold is Threshold.COUNT else _relative(protocol, step, cta, j)
                    acts.append(_Act(step, o, j, trip, threshold=need, slot_cta=cta))
                else:
                    o = make(("ctr", step.channel, cta if multi else 0), "counter", 0)
                    acts.append(_Act(step, o, None, trip, threshold=step.count * (i + 1)))
            elif step.op in (Op.BAR_ARRIVE, Op.BAR_SYNC):
                o = make(("bar", step.channel, cta), "bar", protocol.named_barrier(step.channel).threads)
                acts.append(_Act(step, o, None, trip))
                if step.op is Op.BAR_SYNC:
                    acts.append(_Act(step, o, None, trip, sync_wait=True))
            else:
                ring_act(step, j, trip)
    for step in steps:  # a one-shot side's releases, after the loop
        if step.once == "after" and mine and _runs(protocol, step, cta):
            ring_act(step, 0, mine[-1])
    return acts


def _relative(protocol: Protocol, step: Step, cta: int, tile: int) -> int:
    """The adds a relative grid-counter wait of ``cta`` waits for in ``tile``."""
    c = protocol.cluster
    mine = cta // c
    splits = {
        Threshold.SPLIT: [s for s in range(protocol.group) if s < mine],
        Threshold.OTHERS: [s for s in range(protocol.group) if s != mine],
    }.get(step.threshold, list(range(protocol.group)))
    total = 0
    for s in splits:
        other = s * c + cta % c
        for role in protocol.roles:
            if tile % role.turns != role.turn:
                continue
            for st in protocol.program(role.name):
                if st.op is Op.ADD and st.channel == step.channel and _runs(protocol, st, other):
                    total += st.count
    return total


def _completion(acts: list[_Act], pos: int, read: _Act) -> int | None:
    """Where an asynchronous read is done: the first later read wait of its ring that covers its
    data iteration (None: none does within the run)."""
    for later in range(pos + 1, len(acts)):
        act = acts[later]
        if act.step.op is Op.READ_WAIT and act.step.channel == read.step.channel:
            assert act.data is not None and read.data is not None
            if act.data >= read.data:
                return later
    return None


def _enabled(act: _Act, objs: tuple[tuple[int, int, int], ...], synced: int, kinds: list[str]) -> bool:
    op = act.step.op
    if op is Op.WAIT:
        return objs[act.obj][0] % 2 != act.parity
    if op is Op.WAIT_GE:
        return objs[act.obj][0] >= act.threshold
    if act.sync_wait:
        return objs[act.obj][1] > synced
    return True


def _stuck(
    pcs: tuple[int, ...], programs: list[list[_Act]], cuts: list[list[int]], enabled: list[int], trips: range
) -> bool:
    """Whether, for some trip count ``n``, every process finished its ``n`` iterations or waits in vain."""
    moving = set(enabled)
    for n in trips:
        if any(pcs[p] > cuts[p][n] for p in range(len(pcs))):
            continue
        live = [p for p in range(len(pcs)) if pcs[p] < cuts[p][n]]
        if live and not any(p in moving for p in live):
            return True
    return False


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
    if op in (Op.READ, Op.WRITE):
        return objs, synced  # a grid counter's data access changes no word
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
    last_write: dict[tuple[str, int, int], dict[int, int]],
    last_access: dict[tuple[str, int, int], dict[int, int | None]],
    races: set[tuple[str, str]],
) -> None:
    step = act.step
    if act.data is None or act.slot_cta < 0 or step.op not in (Op.COPY, Op.WRITE, Op.READ):
        return
    if step.channel not in {r.name for r in protocol.rings}:
        return
    ring = protocol.ring(step.channel)
    if step.op in (Op.COPY, Op.WRITE):
        slot, _ = _slot(ring, act.data)
        before = [k for k in range(act.data) if _slot(ring, k)[0] == slot]
        if not before:
            return
        for proc, last in last_access.get((ring.name, act.slot_cta, before[-1]), {}).items():
            if last is None or pcs[proc] <= last:
                races.add((ring.name, "overwrite"))
        return
    for proc, last in last_write.get((ring.name, act.slot_cta, act.data), {}).items():
        if pcs[proc] <= last:
            races.add((ring.name, "early-read"))


def _note_conflicts(
    programs: list[list[_Act]],
    pcs: tuple[int, ...],
    procs: list[tuple[int, str]],
    grid: set[str],
    races: set[tuple[str, str]],
) -> None:
    """A grid counter tile read by one CTA while another CTA is about to write it."""
    nxt = [programs[p][pcs[p]] if pcs[p] < len(programs[p]) else None for p in range(len(pcs))]
    for a, ra in enumerate(nxt):
        if ra is None or ra.step.op is not Op.READ or ra.step.channel not in grid:
            continue
        for b, wb in enumerate(nxt):
            if wb is None or wb.step.op is not Op.WRITE or wb.step.channel != ra.step.channel:
                continue
            if procs[a][0] != procs[b][0] and wb.obj == ra.obj:
                races.add((ra.step.channel, "conflict"))


def static_expectations(protocol: Protocol) -> frozenset[tuple[str, str, str]]:
    """The declaration clauses the protocol violates, by plain arithmetic over every CTA's barriers."""
    out: set[tuple[str, str, str]] = set()
    ctas = protocol.cluster * protocol.group
    period = math.lcm(*(r.turns for r in protocol.roles)) if protocol.roles else 1
    for ring in protocol.rings:
        if not ring.synchronized:
            continue
        for kind in BarrierKind:
            bar = ring.barrier(kind)
            steps = [
                (role, s)
                for role, prog in protocol.programs
                for s in prog
                if s.channel == ring.name and s.barrier is kind
            ]
            # per barrier (CTA x) and data residue j: arrivals, bytes expected and completed
            loops: dict[tuple[int, int], list[int]] = {}
            armed: dict[int, int] = {}
            for cta in range(ctas):
                for role, s in steps:
                    if not _runs(protocol, s, cta):
                        continue
                    info = protocol.role(role)
                    for x in _aims(protocol, s, cta) if s.op is not Op.WAIT else [cta]:
                        if s.prearm:  # a pre-armed barrier is one the loop must arrive on too
                            armed[x] = armed.get(x, 0) + s.count
                            for j in range(period):
                                loops.setdefault((x, j), [0, 0, 0, 0])
                            continue
                        for j in range(period):
                            if j % info.turns != info.turn:
                                continue
                            acc = loops.setdefault((x, j), [0, 0, 0, 0])
                            acc[3] += 1
                            if s.op is Op.ARRIVE:
                                acc[0] += s.count
                            if s.op in (Op.ARRIVE, Op.EXPECT_TX):
                                acc[1] += s.nbytes
                            if s.op is Op.COPY:
                                acc[2] += s.nbytes
            if not loops:  # no step touches the barrier: none arrives on any CTA's
                loops = {(x, 0): [0, 0, 0, 0] for x in range(ctas)}
            arrive_bad = bar.init_count > MBAR_MAX_COUNT or any(v != bar.init_count for v in armed.values())
            tx_bad = False
            for loop, expected, completed, _ in loops.values():
                arrive_bad = arrive_bad or loop != bar.init_count
                tx_bad = (
                    tx_bad
                    or expected != completed
                    or max(expected, completed) > MBAR_MAX_COUNT
                    or (bar.expect_tx is not None and bar.expect_tx != expected)
                )
            if arrive_bad:
                out.add((Code.L_ARRIVE, ring.name, kind.value))
            if tx_bad:
                out.add((Code.L_TXBYTES, ring.name, kind.value))
            prearmed = any(s.prearm for _, s in steps)
            right = (1 if prearmed else 0) if kind is BarrierKind.FULL else (0 if prearmed else 1)
            if any(s.op is Op.WAIT and s.parity != right for _, s in steps):
                out.add((Code.L_PARITY, ring.name, kind.value))
    return frozenset(out)
