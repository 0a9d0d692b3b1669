"""An explicit-state protocol oracle read straight from the contracts, for ``kernlink fuzz``.

It shares nothing with the checker's protocol model (``checker/protocol``): no adapter,
no :class:`~checker.protocol.model.Protocol`, no solver. It reads the resolved
composition's ring sides, counter endpoints and rendezvous sides, applies the language's
rules itself (specs/language.md §8) and walks every interleaving of a short run at the
ring depths placement chose. It never leaves a channel out: what it cannot run is a
problem it reports, so an accepted composition the checker could not model is refuted
here rather than agreed with.

Semantics (language.md §8): a role runs its sides' items in stage, then source order,
``bound`` times; ``X wait`` passes once phase parity differs from its parity (first
parity 1 on ``empty``, 0 on ``full``, flipped on every lap of the ring); ``X arrive N
[tx B] [lag L] [prearm]`` takes ``N`` from the pending count of data iteration ``i-L``'s
slot and adds ``B`` expected bytes (a ``prearm`` arrives once per slot before the loop);
``full copy B`` completes ``B`` bytes; a phase completes when pending and bytes reach
zero. The producer writes the slot at its first copy, else right before its first plain
``full arrive`` (or as the copy its ``tx`` implies); a side that states no fill writes
at its end. A consumer reads after its first ``full wait``, else before its first
release, else at its end. Counters: ``add N`` / ``wait ge N`` (threshold ``N·(i+1)``),
one of each implied. Rendezvous: ``arrive``/``sync`` with the role's threads; the
barrier completes when the threads of all its sides arrived.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from checker.composition import Composition
from contract_lang import ast as A

MBAR_MAX = (1 << 20) - 1


class TooLarge(RuntimeError):
    """The run has more states than the oracle explores."""


def unmodelled(comp: Composition) -> str | None:
    """The first construct of ``comp`` this oracle does not run (None: it runs them all).

    A ring side's ``lag`` (its peeled phases) and ``once``, and a rendezvous side's ``lag``,
    ``peeled`` or ``prearm``, change *when* steps run; the oracle's loop runs every step of a
    side once per iteration, so it would explore another protocol. A composition using them
    is not re-verified here (the campaign counts it as unverified, with this reason), never judged.
    """
    for ring in comp.items(A.Ring):
        for it in ring.item.items:
            if isinstance(it, (A.RingLag, A.RingOnce)):
                word = "once" if isinstance(it, A.RingOnce) else f"lag {it.count}"
                return f"ring `{ring.item.name}`'s {ring.item.side} side runs `{word}`"
    for rdv in comp.items(A.Rendezvous):
        item = rdv.item
        if item.lag is not None or item.peeled or item.prearm:
            word = f"lag {item.lag}" if item.lag is not None else ("peeled" if item.peeled else "prearm")
            return f"rendezvous `{item.name}`'s side of `{item.role}` runs `{word}`"
    return None


@dataclass(frozen=True)
class _Op:
    role: int
    kind: str  # wait, arrive, copy, write, read, add, wait_ge, bar_arrive, bar_sync, bar_wait
    channel: str
    barrier: str = ""
    amount: int = 0  # arrivals, bytes, counter amount or threads
    tx: int = 0
    parity: int = 0
    lag: int = 0
    prearm: bool = False


def _count(comp: Composition, count: A.Count) -> int:
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        info = comp.roles.get(term.role or "")
        warps = info.warps if info is not None else 0
        per = {"per_thread": 32 * warps, "per_warp": warps, "per_warpgroup": warps // 4 if warps % 4 == 0 else 0}[
            term.unit
        ]
        total += term.coef * per
    return total


def _side_ops(comp: Composition, role: int, side: A.Ring, problems: list[str]) -> list[_Op]:
    name, producer = side.name, side.side == "produce"
    ops: list[_Op] = []
    copies = [it for it in side.items if isinstance(it, A.RingCopy)]
    wrote = read = False
    for it in side.items:
        if isinstance(it, A.RingWait):
            parity = it.parity if it.parity is not None else (1 if it.barrier == "empty" else 0)
            ops.append(_Op(role, "wait", name, it.barrier, parity=parity))
            if not producer and it.barrier == "full" and not read:
                ops.append(_Op(role, "read", name))
                read = True
        elif isinstance(it, A.RingArrive):
            n = _count(comp, it.count)
            if n < 1:
                problems.append(f"L-ARRIVE: an arrive on `{name}.{it.barrier}` counts {n} arrivals")
                continue
            if producer and it.barrier == "full" and not copies and not it.tx and not wrote:
                ops.append(_Op(role, "write", name))
                wrote = True
            if not producer and it.barrier == "empty" and not read and not it.prearm:
                ops.append(_Op(role, "read", name))
                read = True
            ops.append(_Op(role, "arrive", name, it.barrier, n, it.tx or 0, lag=it.lag or 0, prearm=it.prearm))
            if producer and it.barrier == "full" and not copies and it.tx and not wrote:
                ops.append(_Op(role, "copy", name, "full", it.tx))
                wrote = True
        elif isinstance(it, A.RingCopy):
            ops.append(_Op(role, "copy", name, it.barrier, it.bytes))
            wrote = True
    if producer and not wrote:
        ops.append(_Op(role, "write", name))
    if not producer and not read:
        ops.append(_Op(role, "read", name))
    return ops


@dataclass(frozen=True)
class _Ring:
    depth: int
    inits: dict[str, int]
    producer: int
    consumers: tuple[int, ...]


def problems_of(comp: Composition, depths: dict[str, int], *, max_states: int = 200_000) -> tuple[str, ...]:
    """What the contracts' protocol does wrong at ``depths``; empty when it is safe.

    Each problem starts with the code of the clause that should have rejected it.
    Raises :class:`TooLarge` when the run has more than ``max_states`` states.
    """
    problems: list[str] = []
    roles = sorted(comp.roles)
    index = {r: i for i, r in enumerate(roles)}
    rings: dict[str, _Ring] = {}
    for name, sides in sorted(comp.rings.items()):
        prods = [s.item for s in sides if s.item.side == "produce"]
        cons = [s.item for s in sides if s.item.side == "consume"]
        if len(prods) != 1 or not cons or any(s.item.role not in index for s in sides):
            problems.append(f"L-UNPAIRED: ring `{name}` has no single producer and a consumer of known roles")
            continue
        inits: dict[str, int] = {}
        for s in sides:
            for it in s.item.items:
                if isinstance(it, A.RingBarrierInit):
                    inits.setdefault(it.barrier, _count(comp, it.count))
        for kind in ("full", "empty"):
            if not 1 <= inits.get(kind, 0) <= MBAR_MAX:
                problems.append(f"L-ARRIVE: `{name}.{kind}` is initialized with {inits.get(kind, 0)} arrivals")
        consumers = tuple(dict.fromkeys(index[c.role] for c in cons))
        if index[prods[0].role] in consumers:
            problems.append(f"L-UNPAIRED: ring `{name}` is produced and consumed by one role")
            continue
        rings[name] = _Ring(max(1, depths.get(name, 1)), inits, index[prods[0].role], consumers)
    counters: dict[str, tuple[int, int]] = {}
    for name, ends in sorted(comp.counters.items()):
        p = [e.item.role for e in ends if e.item.side == "produce"]
        c = [e.item.role for e in ends if e.item.side == "consume"]
        if len(p) != 1 or len(c) != 1 or p[0] not in index or c[0] not in index:
            problems.append(f"L-UNPAIRED: counter `{name}` needs one producer and one consumer")
            continue
        counters[name] = (index[p[0]], index[c[0]])
    bars: dict[str, int] = {}
    for name, rdv in sorted(comp.rendezvous.items()):
        if any(s.item.role not in index for s in rdv):
            problems.append(f"L-UNPAIRED: rendezvous `{name}` names an unknown role")
            continue
        bars[name] = sum(comp.roles[s.item.role].warps * 32 for s in rdv)
    if problems:
        return tuple(problems)
    programs: list[list[_Op]] = [[] for _ in roles]
    for entry in comp.stages:
        for item in entry.stage.items:
            if isinstance(item, A.Ring) and item.name in rings:
                programs[index[item.role]] += _side_ops(comp, index[item.role], item, problems)
            elif isinstance(item, A.Counter) and item.name in counters:
                r = index[item.role]
                steps = item.steps or (A.CounterStep("add" if item.side == "produce" else "wait_ge", 1),)
                programs[r] += [
                    _Op(r, "add" if s.op == "add" else "wait_ge", item.name, amount=s.amount) for s in steps
                ]
            elif isinstance(item, A.Rendezvous) and item.name in bars:
                r = index[item.role]
                threads = comp.roles[item.role].warps * 32
                programs[r].append(_Op(r, "bar_" + item.mode, item.name, amount=threads))
    if problems:
        return tuple(problems)
    problems += _static(rings, programs)
    if problems:
        return tuple(problems)
    return tuple(_explore(rings, counters, bars, programs, max_states))


def _static(rings: dict[str, _Ring], programs: list[list[_Op]]) -> list[str]:
    out = []
    ops = [o for prog in programs for o in prog]
    for name, ring in rings.items():
        for kind in ("full", "empty"):
            mine = [o for o in ops if o.channel == name and o.barrier == kind]
            loop = sum(o.amount for o in mine if o.kind == "arrive" and not o.prearm)
            pre = [o.amount for o in mine if o.prearm]
            if loop != ring.inits[kind] or (pre and sum(pre) != ring.inits[kind]):
                out.append(
                    f"L-ARRIVE: `{name}.{kind}` gets {loop} arrivals per phase, initialized for {ring.inits[kind]}"
                )
            expected = sum(o.tx for o in mine if o.kind == "arrive")
            done = sum(o.amount for o in mine if o.kind == "copy")
            if expected != done:
                out.append(f"L-TXBYTES: `{name}.{kind}` expects {expected} bytes per phase, copies complete {done}")
            right = (1 if pre else 0) if kind == "full" else (0 if pre else 1)
            if any(o.kind == "wait" and o.parity != right for o in mine):
                out.append(f"L-PARITY: a first wait on `{name}.{kind}` uses the wrong parity")
    return out


_State = tuple[tuple[int, ...], tuple[tuple[tuple[str, str, int], tuple[int, int, int]], ...], tuple[int, ...]]


@dataclass(frozen=True)
class _Act:
    op: _Op
    obj: tuple[str, str, int]
    data: int = -1
    parity: int = 0
    threshold: int = 0
    sync_wait: bool = False


def _explore(
    rings: dict[str, _Ring],
    counters: dict[str, tuple[int, int]],
    bars: dict[str, int],
    programs: list[list[_Op]],
    max_states: int,
) -> list[str]:
    bound = 2 * max((r.depth for r in rings.values()), default=1) + 1
    acts: list[list[_Act]] = []
    for prog in programs:
        seq: list[_Act] = []
        for op in prog:
            if op.prearm:
                seq += [_Act(op, (op.channel, op.barrier, s)) for s in range(rings[op.channel].depth)]
        for i in range(bound):
            for op in prog:
                j = i - op.lag
                if op.prearm or j < 0:
                    continue
                if op.kind in ("add", "wait_ge"):
                    seq.append(_Act(op, (op.channel, "ctr", 0), threshold=op.amount * (j + 1)))
                elif op.kind.startswith("bar_"):
                    seq.append(_Act(op, (op.channel, "bar", 0)))
                    if op.kind == "bar_sync":
                        seq.append(_Act(op, (op.channel, "bar", 0), sync_wait=True))
                else:
                    depth = rings[op.channel].depth
                    parity = op.parity ^ ((j // depth) & 1)
                    seq.append(_Act(op, (op.channel, op.barrier, j % depth), j, parity))
        acts.append(seq)
    last_write: dict[tuple[str, int], int] = {}
    last_use: dict[tuple[str, int, int], int] = {}
    for r, seq in enumerate(acts):
        for pos, a in enumerate(seq):
            if a.data < 0:
                continue
            if a.op.kind in ("write", "copy"):
                last_write[(a.op.channel, a.data)] = pos
            elif a.op.kind == "read" or (a.op.kind == "arrive" and a.op.barrier == "empty"):
                last_use[(a.op.channel, r, a.data)] = pos
    n = len(acts)
    start: _State = ((0,) * n, (), (0,) * n)
    seen = {start}
    queue = deque([start])
    found: set[str] = set()
    while queue:
        pcs, objs_t, synced = queue.popleft()
        objs: dict[tuple[str, str, int], tuple[int, int, int]] = dict(objs_t)
        live = [r for r in range(n) if pcs[r] < len(acts[r])]
        moved = False
        for r in live:
            a = acts[r][pcs[r]]
            state = objs.get(a.obj) or _fresh(a, rings)
            if not _enabled(a, state, synced[r]):
                continue
            moved = True
            found.update(_races(a, pcs, rings, last_write, last_use))
            new_state, seen_gen = _apply(a, state, rings, bars)
            new_objs = dict(objs)
            new_objs[a.obj] = new_state
            new_synced = synced if seen_gen is None else (*synced[:r], seen_gen, *synced[r + 1 :])
            nxt: _State = ((*pcs[:r], pcs[r] + 1, *pcs[r + 1 :]), tuple(sorted(new_objs.items())), new_synced)
            if nxt not in seen:
                if len(seen) >= max_states:
                    raise TooLarge(f"more than {max_states} states")
                seen.add(nxt)
                queue.append(nxt)
        if live and not moved:
            found.add("L-DEADLOCK: a reachable state where every unfinished role waits")
    return sorted(found)


def _fresh(a: _Act, rings: dict[str, _Ring]) -> tuple[int, int, int]:
    channel, kind, _ = a.obj
    if kind in ("full", "empty"):
        return (0, rings[channel].inits[kind], 0)
    return (0, 0, 0)


def _enabled(a: _Act, state: tuple[int, int, int], synced: int) -> bool:
    if a.op.kind == "wait":
        return state[0] % 2 != a.parity
    if a.op.kind == "wait_ge":
        return state[0] >= a.threshold
    if a.sync_wait:
        return state[1] > synced
    return True


def _apply(
    a: _Act, state: tuple[int, int, int], rings: dict[str, _Ring], bars: dict[str, int]
) -> tuple[tuple[int, int, int], int | None]:
    x, y, z = state
    kind = a.op.kind
    if kind in ("wait", "wait_ge", "write", "read") or a.sync_wait:
        return state, None
    if kind == "add":
        return (x + a.op.amount, y, z), None
    if kind.startswith("bar_"):
        arrived, gen = x + a.op.amount, y
        if arrived == bars[a.op.channel]:
            arrived, gen = 0, gen + 1
        return (arrived, gen, z), (y if kind == "bar_sync" else None)
    phase, pending, tx = x, y, z
    if kind == "arrive":
        pending, tx = pending - a.op.amount, tx + a.op.tx
    elif kind == "copy":
        tx -= a.op.amount
    if pending == 0 and tx == 0:
        phase, pending = phase + 1, rings[a.op.channel].inits[a.obj[1]]
    return (phase, pending, tx), None


def _races(
    a: _Act,
    pcs: tuple[int, ...],
    rings: dict[str, _Ring],
    last_write: dict[tuple[str, int], int],
    last_use: dict[tuple[str, int, int], int],
) -> list[str]:
    ring = rings.get(a.op.channel)
    if ring is None or a.data < 0:
        return []
    out = []
    if a.op.kind in ("write", "copy") and a.data >= ring.depth:
        for c in ring.consumers:
            prev = last_use.get((a.op.channel, c, a.data - ring.depth))
            if prev is None or pcs[c] <= prev:
                out.append(f"L-RACE: the producer can overwrite a slot of `{a.op.channel}` before it is released")
    if a.op.kind == "read":
        last = last_write.get((a.op.channel, a.data))
        if last is not None and pcs[ring.producer] <= last:
            out.append(f"L-RACE: a consumer can read a slot of `{a.op.channel}` before it is filled")
    return out


__all__ = ["TooLarge", "problems_of"]
