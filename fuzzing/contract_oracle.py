"""An explicit-state protocol oracle read straight from the contracts, for ``kernlink fuzz``.

It shares nothing with the checker's protocol model (``checker/protocol``): no adapter,
no :class:`~checker.protocol.model.Protocol`, no solver. It reads the resolved
composition's ring sides, counter endpoints and rendezvous sides, applies the language's
rules itself (specs/language.md §8) and walks every interleaving of a short run at the
ring depths placement chose. It never leaves a channel out: what it cannot run is a
problem it reports, so an accepted composition the checker could not model is refuted
here rather than agreed with.

Semantics (language.md §8, §9): every role runs the same trip count, each count from 1 to
``2 × depth + 1`` (and past a restart); a role taking turns (``turn T of N``) serves units ``T,
T + N, …``. A role runs its sides' items in stage, then source order, once per phase. ``X wait``
passes once the slot's phase parity differs from its parity (first parity 1 on ``empty``, 0 on
``full``, flipped on every earlier use of the slot); ``X arrive N [tx B] [lag L] [prearm]`` takes
``N`` from the pending count of data iteration ``i-L``'s slot and adds ``B`` expected bytes (a
``prearm`` arrives once per slot before the loop); ``full copy B`` completes ``B`` bytes; a phase
completes when pending and bytes reach zero. A side's ``lag N`` shifts its steps ``N`` phases
later and runs the last ``N`` after the loop (the role's peeled phases); ``once`` runs its steps
up to its first ``empty arrive`` before the loop on data iteration 0, the rest after the loop
(a producer side, releasing nothing, runs all of them before it); ``restart R`` indexes slot
``(j mod R) mod depth``. The producer writes the slot at its first copy, else right before its
first plain ``full arrive`` (or as the copy its ``tx`` implies); a side that states no fill writes
at its end. A consumer reads where a ``read`` line says, else after its first ``full wait``, else
before its first release, else at its end; a ``read async`` is done only at a later ``read wait
[lag L]`` (the reads of units up to ``L`` phases back), and a slot is overwritten safely only
after every consumer that used it is done with it. A ring without barriers is ordered by program
order alone and may be one role's staging buffer. Counters: ``add N`` / ``wait ge N`` (threshold
``N·(j+1)``), one of each implied. Rendezvous: ``arrive``/``sync`` add the role's threads; the
barrier completes a generation when the stated ``threads`` arrived, and a ``sync`` waits for the
generation it arrived in; ``prearm`` runs once before the loop, ``lag N`` ``N`` phases late (and
after the loop), ``peeled`` in the loop's and the role's peeled phases.
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

    It runs one CTA. Steps that reach or name other CTAs (``multicast``, ``remote``, ``on PART``)
    and counters whose partner is the same role in other CTAs (one role raises and awaits it, or a
    wait names the split: ``ge split|others|all``) need the cluster or the tile's group of CTAs,
    so a composition using them (or a ring whose sides restart its slot index differently, which the
    language leaves undecided) is not re-verified here (the campaign counts it as unverified,
    with this reason), never judged.
    """
    for ring in comp.items(A.Ring):
        for it in ring.item.items:
            word = _cluster_word(it)
            if word:
                return f"ring `{ring.item.name}`'s {ring.item.side} side runs `{word}` (other CTAs of the cluster)"
    for name, sides in sorted(comp.rings.items()):
        restarts = {it.every for s in sides for it in s.item.items if isinstance(it, A.RingRestart)}
        if len(restarts) > 1:
            return f"ring `{name}`'s sides state different slot restarts ({', '.join(map(str, sorted(restarts)))})"
    for ctr in comp.items(A.Counter):
        for step in ctr.item.steps:
            if step.threshold is not None or step.on is not None:
                word = f"wait ge {step.threshold}" if step.threshold is not None else f"on {step.on}"
                return f"counter `{ctr.item.name}` runs `{word}` (the CTAs that share a tile)"
    for name, ends in sorted(comp.counters.items()):
        raised = {e.item.role for e in ends if e.item.side == "produce"}
        awaited = {e.item.role for e in ends if e.item.side == "consume"}
        for role in sorted(raised & awaited):
            return f"counter `{name}` is raised and awaited by `{role}` (its partner is in other CTAs)"
    return None


def _cluster_word(it: A.RingItem) -> str:
    if isinstance(it, (A.RingArrive, A.RingCopy)) and (it.multicast or it.remote):
        return "multicast" if it.multicast else "remote"
    if isinstance(it, A.RingRead) and it.multicast:
        return "read multicast"
    if isinstance(it, (A.RingWait, A.RingArrive, A.RingCopy, A.RingRead, A.RingReadWait)) and it.on is not None:
        return f"on {it.on}"
    return ""


@dataclass(frozen=True)
class _Op:
    role: int
    kind: str  # wait, arrive, copy, write, read, read_async, read_done, add, wait_ge, bar_arrive, bar_sync
    channel: str
    barrier: str = ""
    amount: int = 0  # arrivals, bytes, counter amount or threads
    tx: int = 0
    parity: int = 0
    lag: int = 0  # the step's own lag (an arrive's, a read wait's)
    prearm: bool = False
    shift: int = 0  # the side's lag (a ring side's or a rendezvous side's)
    when: str = "loop"  # loop; peeled (the loop's and the role's peeled phases); pre / post (before / after the loop)


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
    explicit = any(isinstance(it, A.RingRead) for it in side.items)
    wrote, read = False, explicit
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
        elif isinstance(it, A.RingRead):
            ops.append(_Op(role, "read_async" if it.asynchronous else "read", name))
        elif isinstance(it, A.RingReadWait):
            ops.append(_Op(role, "read_done", name, lag=it.lag or 0))
    if producer and not wrote:
        ops.append(_Op(role, "write", name))
    if not producer and not read:
        ops.append(_Op(role, "read", name))
    lag = next((it.count for it in side.items if isinstance(it, A.RingLag)), 0)
    if not any(isinstance(it, A.RingOnce) for it in side.items):
        return [o if o.prearm else _Op(**{**o.__dict__, "shift": lag}) for o in ops]
    if lag or any(isinstance(it, A.RingRestart) for it in side.items):
        problems.append(f"L-DEADLOCK: ring `{name}`'s {side.side} side runs once and also lags or restarts")
    # `once`: the steps before the first release run before the loop, the release and the rest after it
    cut = next((k for k, o in enumerate(ops) if o.kind == "arrive" and o.barrier == "empty" and not o.prearm), len(ops))
    return [o if o.prearm else _Op(**{**o.__dict__, "when": "pre" if k < cut else "post"}) for k, o in enumerate(ops)]


@dataclass(frozen=True)
class _Ring:
    depth: int
    inits: dict[str, int]
    producer: int
    consumers: tuple[int, ...]
    restart: int = 0

    def slot(self, j: int) -> int:
        return (j % self.restart if self.restart else j) % self.depth

    def uses_before(self, j: int) -> int:
        """How many data iterations before ``j`` used ``j``'s slot (its phase count)."""
        if not self.restart:
            return j // self.depth
        return sum(1 for k in range(j) if self.slot(k) == self.slot(j))

    def previous(self, j: int) -> int | None:
        """The last data iteration before ``j`` that used ``j``'s slot."""
        return next((k for k in range(j - 1, -1, -1) if self.slot(k) == self.slot(j)), None)


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
        barriers = False
        for s in sides:
            for it in s.item.items:
                if isinstance(it, A.RingBarrierInit):
                    inits.setdefault(it.barrier, _count(comp, it.count))
                barriers = barriers or isinstance(it, (A.RingBarrierInit, A.RingWait, A.RingArrive, A.RingCopy))
        consumers = tuple(dict.fromkeys(index[c.role] for c in cons))
        if barriers:
            for kind in ("full", "empty"):
                if not 1 <= inits.get(kind, 0) <= MBAR_MAX:
                    problems.append(f"L-ARRIVE: `{name}.{kind}` is initialized with {inits.get(kind, 0)} arrivals")
            if index[prods[0].role] in consumers:
                problems.append(f"L-UNPAIRED: ring `{name}` is produced and consumed by one role")
                continue
        restart = next((it.every for s in sides for it in s.item.items if isinstance(it, A.RingRestart)), 0)
        rings[name] = _Ring(max(1, depths.get(name, 1)), inits, index[prods[0].role], consumers, restart)
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
        stated = {s.item.threads for s in rdv}
        one = next(iter(stated))
        # the hardware counts the threads the instructions name; without them, the sides' roles
        bars[name] = one if len(stated) == 1 and one else sum(comp.roles[r].threads for r in {s.item.role for s in rdv})
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
                when = "pre" if item.prearm else ("peeled" if item.peeled else "loop")
                threads = comp.roles[item.role].threads
                programs[r].append(
                    _Op(r, "bar_" + item.mode, item.name, amount=threads, shift=item.lag or 0, when=when)
                )
    if problems:
        return tuple(problems)
    turns = [_turn(comp.roles[r].role) for r in roles]
    problems += _static(rings, programs, turns)
    if problems:
        return tuple(problems)
    return tuple(_explore(rings, counters, bars, programs, turns, max_states))


def _turn(role: A.Role) -> tuple[int, int]:
    if role.turns and role.turn is not None and 0 <= role.turn < role.turns:
        return role.turn, role.turns
    return 0, 1


def _static(rings: dict[str, _Ring], programs: list[list[_Op]], turns: list[tuple[int, int]]) -> list[str]:
    """Per-phase arrival counts, bytes and first parities, read off the steps."""
    out = []
    for name, ring in rings.items():
        if not ring.inits:
            continue
        for kind in ("full", "empty"):
            # roles taking turns each serve the phases of their units: one of them arrives per phase
            loop_by: dict[int, int] = {}
            pre: list[int] = []
            mine: list[_Op] = []
            for r, prog in enumerate(programs):
                ops = [o for o in prog if o.channel == name and o.barrier == kind]
                mine += ops
                pre += [o.amount for o in ops if o.prearm]
                group = turns[r][1]
                amount = sum(o.amount for o in ops if o.kind == "arrive" and not o.prearm)
                if group == 1:
                    loop_by[-1 - r] = amount
                else:
                    loop_by[group] = max(loop_by.get(group, 0), amount)
            loop = sum(loop_by.values())
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


_Obj = tuple[str, str, int]
_State = tuple[tuple[int, ...], tuple[tuple[_Obj, tuple[int, int, int]], ...], tuple[int, ...]]


@dataclass(frozen=True)
class _Act:
    op: _Op
    obj: _Obj
    data: int = -1
    parity: int = 0
    threshold: int = 0
    sync_wait: bool = False


def _schedule(prog: list[_Op], rings: dict[str, _Ring], units: list[int]) -> list[_Act]:
    """One role's run: its prearms, its sides' steps before the loop, its phases, the steps after it.

    Phase ``p`` of the loop serves unit ``units[p]``; a side with lag ``N`` acts at phase ``p`` on
    phase ``p - N``'s unit (none in the first ``N``; the role then runs the peeled phases after
    the loop), a step's own lag adds to it.
    """
    m = len(units)
    peeled = max((o.shift for o in prog if o.when == "loop" and o.kind not in ("bar_arrive", "bar_sync")), default=0)
    phases = m + max((o.shift for o in prog if o.when == "loop"), default=0)
    seq: list[_Act] = []

    def emit(op: _Op, j: int) -> None:
        if op.kind in ("add", "wait_ge"):
            seq.append(_Act(op, (op.channel, "ctr", 0), threshold=op.amount * (j + 1)))
        elif op.kind.startswith("bar_"):
            seq.append(_Act(op, (op.channel, "bar", 0)))
            if op.kind == "bar_sync":
                seq.append(_Act(op, (op.channel, "bar", 0), sync_wait=True))
        else:
            ring = rings[op.channel]
            parity = op.parity ^ (ring.uses_before(j) & 1)
            seq.append(_Act(op, (op.channel, op.barrier, ring.slot(j)), j, parity))

    for op in prog:
        if op.prearm:
            seq += [_Act(op, (op.channel, op.barrier, s)) for s in range(rings[op.channel].depth)]
    for op in prog:
        if op.when == "pre" and not op.prearm:
            emit(op, 0)
    for p in range(phases):
        for op in prog:
            if op.prearm or op.when in ("pre", "post"):
                continue
            if op.when == "peeled":  # a rendezvous side in the loop's and the peeled phases
                if p < m + peeled:
                    emit(op, p)
                continue
            q = p - op.shift - op.lag  # a read wait: the reads of the units up to here are done
            if p - op.shift < m and q >= 0:
                emit(op, units[q])
    for op in prog:
        if op.when == "post" and not op.prearm:
            emit(op, 0)
    return seq


def _explore(
    rings: dict[str, _Ring],
    counters: dict[str, tuple[int, int]],
    bars: dict[str, int],
    programs: list[list[_Op]],
    turns: list[tuple[int, int]],
    max_states: int,
) -> list[str]:
    """Every trip count up to a bound that wraps every ring twice, the same in every role
    (a deadlock of a short loop, where peeled phases meet the first ones, is not one of a long one)."""
    bound = max((max(2 * r.depth + 1, r.restart + r.depth + 1 if r.restart else 0) for r in rings.values()), default=1)
    found: set[str] = set()
    for trips in range(1, bound + 1):
        acts = [_schedule(prog, rings, list(range(turns[r][0], trips, turns[r][1]))) for r, prog in enumerate(programs)]
        found.update(_run(rings, bars, acts, max_states))
    return sorted(found)


def _run(rings: dict[str, _Ring], bars: dict[str, int], acts: list[list[_Act]], max_states: int) -> set[str]:
    """Every interleaving of the roles' runs ``acts``: the problems some reachable state shows."""
    # where each unit's slot is written, and where each role is done with it
    last_write: dict[tuple[str, int], int] = {}
    done: dict[tuple[str, int, int], int] = {}
    for r, seq in enumerate(acts):
        pending: dict[str, list[int]] = {}
        for pos, a in enumerate(seq):
            ch, kind = a.op.channel, a.op.kind
            if a.data < 0 or a.obj[1] in ("ctr", "bar"):
                continue
            if kind in ("write", "copy"):
                last_write[(ch, a.data)] = pos
            elif kind == "read_async":
                pending.setdefault(ch, []).append(a.data)
                done.pop((ch, r, a.data), None)
            elif kind == "read_done":
                for j in [j for j in pending.get(ch, []) if j <= a.data]:
                    done[(ch, r, j)] = pos
                    pending[ch].remove(j)
            elif kind in ("read", "arrive") and a.op.barrier != "full" and a.data not in pending.get(ch, []):
                done[(ch, r, a.data)] = pos
        for ch, left in pending.items():
            for j in left:
                done[(ch, r, j)] = len(seq)  # never completed: the slot is in use to the end
    used = {(a.op.channel, r, a.data) for r, seq in enumerate(acts) for a in seq if a.obj[1] not in ("ctr", "bar")}
    n = len(acts)
    start: _State = ((0,) * n, (), (0,) * n)
    seen = {start}
    queue = deque([start])
    found: set[str] = set()
    while queue:
        pcs, objs_t, synced = queue.popleft()
        objs: dict[_Obj, tuple[int, int, int]] = dict(objs_t)
        live = [r for r in range(n) if pcs[r] < len(acts[r])]
        moved = False
        for r in live:
            a = acts[r][pcs[r]]
            state = objs.get(a.obj) or _fresh(a, rings)
            if not _enabled(a, state, synced[r]):
                continue
            moved = True
            found.update(_races(a, r, pcs, rings, last_write, done, used))
            new_state, seen_gen = _apply(a, state, rings, bars)
            if new_state[1] < 0 and a.obj[1] in ("full", "empty"):
                found.add(f"L-ARRIVE: `{a.obj[0]}.{a.obj[1]}` gets more arrivals in a phase than it expects")
            new_objs = dict(objs)
            if new_state != state or a.obj in objs:
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
    return found


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
    if kind in ("wait", "wait_ge", "write", "read", "read_async", "read_done") or a.sync_wait:
        return state, None
    if kind == "add":
        return (x + a.op.amount, y, z), None
    if kind.startswith("bar_"):
        arrived, gen = x + a.op.amount, y
        if arrived >= bars[a.op.channel]:
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
    r: int,
    pcs: tuple[int, ...],
    rings: dict[str, _Ring],
    last_write: dict[tuple[str, int], int],
    done: dict[tuple[str, int, int], int],
    used: set[tuple[str, int, int]],
) -> list[str]:
    ring = rings.get(a.op.channel)
    if ring is None or a.data < 0:
        return []
    ch, out = a.op.channel, []
    if a.op.kind in ("write", "copy"):
        prev = ring.previous(a.data)
        for c in ring.consumers:
            if prev is None or (ch, c, prev) not in used:
                continue  # not its unit (consumers taking turns)
            until = done.get((ch, c, prev))
            if until is None or pcs[c] <= until:
                out.append(f"L-RACE: the producer can overwrite a slot of `{ch}` before it is released")
    if a.op.kind in ("read", "read_async"):
        last = last_write.get((ch, a.data))
        if last is not None and pcs[ring.producer] <= last:
            out.append(f"L-RACE: a consumer can read a slot of `{ch}` before it is filled")
    return out


__all__ = ["TooLarge", "problems_of", "unmodelled"]
