"""An explicit-state protocol oracle read straight from the contracts, for ``kernlink fuzz``.

It shares nothing with the checker's protocol model (``checker/protocol``): no adapter,
no :class:`~checker.protocol.model.Protocol`, no solver. It reads the resolved
composition's ring sides, counter endpoints and rendezvous sides, applies the language's
rules itself (specs/language.md §8, §9) and walks every interleaving of a short run at the
ring depths placement chose, in every CTA the steps reach. It never leaves a channel out:
what it cannot run is a problem it reports, or a reason (:func:`unmodelled`) the caller
counts as not re-verified, so an accepted composition the checker could not model is
refuted here rather than agreed with.

Semantics (language.md §8, §9): every role runs the same trip count, each count from 1 to
``2 × depth + 1`` (and past a restart; 3 when there is no ring); a role taking turns (``turn T
of N``) serves units ``T, T + N, …``. A role runs its sides' items in stage, then source order,
once per phase. ``X wait`` passes once the slot's phase parity differs from its parity (first
parity 1 on ``empty``, 0 on ``full``, flipped on every earlier use of the slot); ``X arrive N [tx
B] [lag L] [prearm]`` takes ``N`` from the pending count of data iteration ``i-L``'s slot and adds
``B`` expected bytes (a ``prearm`` arrives once per slot before the loop); ``full copy B``
completes ``B`` bytes; a phase completes when pending and bytes reach zero. A side's ``lag N``
shifts its steps ``N`` phases later and runs the last ``N`` after the loop (the role's peeled
phases); ``once`` runs its steps up to its first ``empty arrive`` before the loop on data
iteration 0, the rest after the loop (a producer side, releasing nothing, runs all of them
before it); ``restart R`` indexes slot ``(j mod R) mod depth``. The producer writes the slot at
its first copy, else right before its first plain ``full arrive`` (or as the copy its ``tx``
implies); a side that states no fill writes at its end. A consumer reads where a ``read`` line
says, else after its first ``full wait``, else before its first release, else at its end; a
``read async`` is done only at a later ``read wait [lag L]`` (the reads of units up to ``L``
phases back), and a slot is overwritten safely only after every consumer that used it is done
with it. A ring without barriers is ordered by program order alone and may be one role's
staging buffer. Counters: ``add N`` / ``wait ge N`` (threshold ``N·(j+1)``), one of each implied.
Rendezvous: ``arrive``/``sync`` add the role's threads; the barrier completes a generation when
the stated ``threads`` arrived, and a ``sync`` waits for the generation it arrived in;
``prearm`` runs once before the loop, ``lag N`` ``N`` phases late (and after the loop),
``peeled`` in the loop's and the role's peeled phases.

Several CTAs (language.md §8.5, §8.7, §9.1). Every role runs in every CTA, each CTA with its own
slots, barriers, named barriers and (a counter whose sides pair in one CTA) counter word. CTA
``c`` of a run is split ``c // C`` of its tile's group and rank ``c mod C`` of its cluster of
``C``. When a step reaches or names another CTA of the cluster (``multicast``, ``remote``, ``on
leader``, ``on peer``) the run has every cluster size all stages accept (the pipeline's
``cluster`` line when it states one); ``multicast`` reaches every CTA of the cluster, ``remote``
the next rank, ``on leader`` runs on rank 0, ``on peer`` on the others. A remote copy lands in
its own CTA's slot and completes on the peer's barrier, a multicast copy lands in every CTA's
slot and completes on each one's barrier, a ``read multicast`` reads every CTA's slot; arrival
counts and bytes are checked per CTA barrier. A counter that one role raises and awaits, or
whose steps name splits (``wait ge split|others|all``, ``on first|rest``), is the grid's: one
word per tile (data iteration) and cluster rank, shared by the CTAs of the tile's group, of
which the run has three (the first split, one between, the last: every kind of split these
steps tell apart). ``wait ge N`` waits for the tile's word to reach ``N``; ``split``, ``others``
and ``all`` for what the earlier splits, the other splits or all splits of the tile add to it,
counted from the run's own adds. The producer side writes the tile's data before its first
``add`` (where that add runs), the consumer side reads it after its first wait: a read that can
run while another CTA is about to write the same tile is a race. CTAs that no step connects
are not run twice: they share nothing, so one is the run of each.

The search is exhaustive up to a partial-order reduction that is exact for these verdicts:
where every unfinished role of one CTA is about to act only on what no other CTA ever touches
(its own barriers, slots and words), only that CTA's enabled roles are stepped (the other CTAs'
steps commute with them and cannot enable or disable them), which reaches every deadlock and
every race the full interleaving reaches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace

from checker.composition import Composition
from contract_lang import ast as A

MBAR_MAX = (1 << 20) - 1
GROUP = 3
"""The CTAs of a tile's group a grid counter runs in: the first split, one between, the last."""
NO_RING_BOUND = 3
"""The trip counts a protocol without rings runs: as many as a ring of depth 1 would ask."""


class TooLarge(RuntimeError):
    """The run has more states than the oracle explores."""


def unmodelled(comp: Composition) -> str | None:
    """The first construct of ``comp`` this oracle does not run (None: it runs them all).

    A ring whose sides restart its slot index differently (the language leaves it undecided)
    and cluster steps in a composition whose stages accept no common cluster shape are not
    re-verified here (the campaign counts them as unverified, with this reason), never judged.
    """
    for name, sides in sorted(comp.rings.items()):
        restarts = {it.every for s in sides for it in s.item.items if isinstance(it, A.RingRestart)}
        if len(restarts) > 1:
            return f"ring `{name}`'s sides state different slot restarts ({', '.join(map(str, sorted(restarts)))})"
    for ring in comp.items(A.Ring):
        for it in ring.item.items:
            on = getattr(it, "on", None)
            if on is not None and on not in A.PARTS:
                return f"ring `{ring.item.name}` runs a step `on {on}` (no such part of the grid)"
    for ctr in comp.items(A.Counter):
        for step in ctr.item.steps:
            if step.on is not None and step.on not in A.PARTS:
                return f"counter `{ctr.item.name}` runs a step `on {step.on}` (no such part of the grid)"
            if step.threshold is not None and step.threshold not in A.THRESHOLDS:
                return f"counter `{ctr.item.name}` waits for `{step.threshold}` (no such threshold)"
    if _clustered(comp) and not cluster_sizes(comp):
        return "cluster steps, and no cluster shape every stage accepts"
    return None


def cluster_sizes(comp: Composition) -> tuple[int, ...]:
    """The cluster sizes the kernel may launch with: the pipeline's `cluster` line, else every
    shape each stage accepts (a stage without a `cluster` line accepts only 1x1x1)."""
    for item in comp.pipeline.items:
        if isinstance(item, A.PipelineCluster):
            return (item.shape.size,)
    common: set[int] | None = None
    for entry in comp.stages:
        lines = [it for it in entry.stage.items if isinstance(it, A.Cluster)]
        sizes = {s.size for line in lines for s in line.shapes} if lines else {1}
        common = sizes if common is None else common & sizes
    return tuple(sorted(common or ()))


def _clustered(comp: Composition) -> bool:
    for ring in comp.items(A.Ring):
        for it in ring.item.items:
            if getattr(it, "multicast", False) or getattr(it, "remote", False):
                return True
            if getattr(it, "on", None) in ("leader", "peer"):
                return True
    return any(s.on in ("leader", "peer") for c in comp.items(A.Counter) for s in c.item.steps)


@dataclass(frozen=True)
class _Op:
    role: int
    # wait, arrive, copy, write, read, read_async, read_done, add, wait_ge, tile_write, tile_read, bar_arrive, bar_sync
    kind: str
    channel: str
    barrier: str = ""
    amount: int = 0  # arrivals, bytes, counter amount or threads
    tx: int = 0
    parity: int = 0
    lag: int = 0  # the step's own lag (an arrive's, a read wait's)
    prearm: bool = False
    shift: int = 0  # the side's lag (a ring side's or a rendezvous side's)
    when: str = "loop"  # loop; peeled (the loop's and the role's peeled phases); pre / post (before / after the loop)
    target: str = "own"  # own, peer (the next cluster rank), all (every CTA of the cluster)
    part: str = ""  # the CTAs that run it: every one, leader, peer, first, rest
    threshold: str = ""  # a grid counter wait's relative threshold: split, others, all
    grid: bool = False  # a counter step on the grid's word


@dataclass(frozen=True)
class _Launch:
    """The CTAs a run has: ``cluster`` ranks times ``group`` splits; CTA ``c`` is split ``c // cluster``."""

    cluster: int = 1
    group: int = 1

    @property
    def ctas(self) -> int:
        return self.cluster * self.group

    def runs(self, part: str, cta: int) -> bool:
        rank, split = cta % self.cluster, cta // self.cluster
        return {"": True, "leader": rank == 0, "peer": rank > 0, "first": split == 0, "rest": split > 0}[part]

    def aims(self, target: str, cta: int) -> list[int]:
        rank = cta % self.cluster
        base = cta - rank
        if target == "all":
            return [base + r for r in range(self.cluster)]
        if target == "peer":
            return [base + (rank + 1) % self.cluster]
        return [cta]


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


def _target(it: A.RingItem) -> str:
    return "all" if getattr(it, "multicast", False) else "peer" if getattr(it, "remote", False) else "own"


def _side_ops(comp: Composition, role: int, side: A.Ring, problems: list[str]) -> list[_Op]:
    name, producer = side.name, side.side == "produce"
    ops: list[_Op] = []
    copies = [it for it in side.items if isinstance(it, A.RingCopy)]
    explicit = any(isinstance(it, A.RingRead) for it in side.items)
    wrote, read = False, explicit
    for it in side.items:
        part = getattr(it, "on", None) or ""
        if isinstance(it, A.RingWait):
            parity = it.parity if it.parity is not None else (1 if it.barrier == "empty" else 0)
            ops.append(_Op(role, "wait", name, it.barrier, parity=parity, part=part))
            if not producer and it.barrier == "full" and not read:
                ops.append(_Op(role, "read", name, part=part))
                read = True
        elif isinstance(it, A.RingArrive):
            n = _count(comp, it.count)
            if n < 1:
                problems.append(f"L-ARRIVE: an arrive on `{name}.{it.barrier}` counts {n} arrivals")
                continue
            if producer and it.barrier == "full" and not copies and not it.tx and not wrote:
                ops.append(_Op(role, "write", name, part=part))
                wrote = True
            if not producer and it.barrier == "empty" and not read and not it.prearm:
                ops.append(_Op(role, "read", name, part=part))
                read = True
            ops.append(
                _Op(
                    role,
                    "arrive",
                    name,
                    it.barrier,
                    n,
                    it.tx or 0,
                    lag=it.lag or 0,
                    prearm=it.prearm,
                    target=_target(it),
                    part=part,
                )
            )
            if producer and it.barrier == "full" and not copies and it.tx and not wrote:
                ops.append(_Op(role, "copy", name, "full", it.tx, target=_target(it), part=part))
                wrote = True
        elif isinstance(it, A.RingCopy):
            ops.append(_Op(role, "copy", name, it.barrier, it.bytes, target=_target(it), part=part))
            wrote = True
        elif isinstance(it, A.RingRead):
            kind = "read_async" if it.asynchronous else "read"
            ops.append(_Op(role, kind, name, target=_target(it), part=part))
        elif isinstance(it, A.RingReadWait):
            ops.append(_Op(role, "read_done", name, lag=it.lag or 0, part=part))
    if producer and not wrote:
        ops.append(_Op(role, "write", name))
    if not producer and not read:
        ops.append(_Op(role, "read", name))
    lag = next((it.count for it in side.items if isinstance(it, A.RingLag)), 0)
    if not any(isinstance(it, A.RingOnce) for it in side.items):
        return [o if o.prearm else replace(o, shift=lag) for o in ops]
    if lag or any(isinstance(it, A.RingRestart) for it in side.items):
        problems.append(f"L-DEADLOCK: ring `{name}`'s {side.side} side runs once and also lags or restarts")
    # `once`: the steps before the first release run before the loop, the release and the rest after it
    cut = next((k for k, o in enumerate(ops) if o.kind == "arrive" and o.barrier == "empty" and not o.prearm), len(ops))
    return [o if o.prearm else replace(o, when="pre" if k < cut else "post") for k, o in enumerate(ops)]


def _counter_ops(role: int, item: A.Counter, grid: bool) -> list[_Op]:
    """A counter side's steps; on the grid's word, the tile's data is written before the first
    add and read after the first wait (a side without one: at its end, at its start)."""
    producer = item.side == "produce"
    steps = item.steps or (A.CounterStep("add" if producer else "wait_ge", 1),)
    ops = [
        _Op(
            role,
            "add" if s.op == "add" else "wait_ge",
            item.name,
            amount=s.amount,
            part=s.on or "",
            threshold=s.threshold or "",
            grid=grid,
        )
        for s in steps
    ]
    if not grid:
        return ops
    mark = "add" if producer else "wait_ge"
    first = next((k for k, o in enumerate(ops) if o.kind == mark), None)
    data = _Op(role, "tile_write" if producer else "tile_read", item.name, grid=True)
    if first is None:
        return [*ops, data] if producer else [data, *ops]
    data = replace(data, part=ops[first].part)
    at = first if producer else first + 1
    return [*ops[:at], data, *ops[at:]]


@dataclass(frozen=True)
class _Ring:
    depth: int
    inits: dict[str, int]
    restart: int = 0
    declared: int | None = None  # the bytes `full init … expect_tx` declares per phase

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
    Raises :class:`TooLarge` when a run has more than ``max_states`` states.
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
        declared: int | None = None
        barriers = False
        for s in sides:
            for it in s.item.items:
                if isinstance(it, A.RingBarrierInit):
                    inits.setdefault(it.barrier, _count(comp, it.count))
                    if it.barrier == "full" and it.expect_tx is not None and declared is None:
                        declared = it.expect_tx
                barriers = barriers or isinstance(it, (A.RingBarrierInit, A.RingWait, A.RingArrive, A.RingCopy))
        consumers = {c.role for c in cons}
        if barriers:
            for kind in ("full", "empty"):
                if not 1 <= inits.get(kind, 0) <= MBAR_MAX:
                    problems.append(f"L-ARRIVE: `{name}.{kind}` is initialized with {inits.get(kind, 0)} arrivals")
            if prods[0].role in consumers:
                problems.append(f"L-UNPAIRED: ring `{name}` is produced and consumed by one role")
                continue
        restart = next((it.every for s in sides for it in s.item.items if isinstance(it, A.RingRestart)), 0)
        rings[name] = _Ring(max(1, depths.get(name, 1)), inits, restart, declared)
    grid: set[str] = set()
    counters: set[str] = set()
    for name, ends in sorted(comp.counters.items()):
        p = [e.item.role for e in ends if e.item.side == "produce"]
        c = [e.item.role for e in ends if e.item.side == "consume"]
        if len(p) != 1 or len(c) != 1 or p[0] not in index or c[0] not in index:
            problems.append(f"L-UNPAIRED: counter `{name}` needs one producer and one consumer")
            continue
        counters.add(name)
        # its partner is the same role in other CTAs, or a step names the CTAs sharing a tile
        splits = any(s.threshold is not None or s.on in ("first", "rest") for e in ends for s in e.item.steps)
        if p[0] == c[0] or splits:
            grid.add(name)
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
                programs[index[item.role]] += _counter_ops(index[item.role], item, item.name in grid)
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
    ops = [o for prog in programs for o in prog]
    clustered = any(o.target != "own" or o.part in ("leader", "peer") for o in ops)
    split = bool(grid) or any(o.part in ("first", "rest") for o in ops)
    launches = [_Launch(c if clustered else 1, GROUP if split else 1) for c in (cluster_sizes(comp) or (1,))]
    launches = list(dict.fromkeys(launches))
    found: list[str] = []
    for launch in launches:
        found += _static(rings, programs, turns, launch)
    if found:
        return tuple(dict.fromkeys(found))
    for launch in launches:
        found += _explore(rings, bars, programs, turns, launch, max_states)
    return tuple(sorted(set(found)))


def _turn(role: A.Role) -> tuple[int, int]:
    if role.turns and role.turn is not None and 0 <= role.turn < role.turns:
        return role.turn, role.turns
    return 0, 1


def _static(
    rings: dict[str, _Ring], programs: list[list[_Op]], turns: list[tuple[int, int]], launch: _Launch
) -> list[str]:
    """Per-phase arrival counts and bytes on each CTA's barriers and first parities, read off the steps."""
    out = []
    for name, ring in rings.items():
        if not ring.inits:
            continue
        for kind in ("full", "empty"):
            mine = [o for prog in programs for o in prog if o.channel == name and o.barrier == kind]
            for cta in range(launch.ctas):
                # roles taking turns each serve the phases of their units: one of them arrives per phase
                loop_by: dict[tuple[int, int], int] = {}
                pre = 0
                expected = done = 0
                used = False
                for src in range(launch.ctas):
                    for r, prog in enumerate(programs):
                        amount = 0
                        for o in prog:
                            if o.channel != name or o.barrier != kind or not launch.runs(o.part, src):
                                continue
                            if o.kind == "wait":
                                used = used or src == cta
                                continue
                            if cta not in launch.aims(o.target, src):
                                continue
                            used = True
                            if o.kind == "arrive" and o.prearm:
                                pre += o.amount
                            elif o.kind == "arrive":
                                amount += o.amount
                                expected += o.tx
                            elif o.kind == "copy":
                                done += o.amount
                        key = (src, -1 - r) if turns[r][1] == 1 else (src, turns[r][1])
                        loop_by[key] = max(loop_by.get(key, 0), amount)
                if not used:
                    continue  # no step of any CTA reaches this CTA's barrier
                where = f" of CTA {cta}" if launch.ctas > 1 else ""
                loop = sum(loop_by.values())
                if loop != ring.inits[kind] or (pre and pre != ring.inits[kind]):
                    out.append(
                        f"L-ARRIVE: `{name}.{kind}`{where} gets {loop} arrivals per phase, "
                        f"initialized for {ring.inits[kind]}"
                    )
                if expected != done:
                    out.append(
                        f"L-TXBYTES: `{name}.{kind}`{where} expects {expected} bytes per phase, copies complete {done}"
                    )
                if kind == "full" and ring.declared is not None and ring.declared != expected:
                    out.append(
                        f"L-TXBYTES: `{name}.full`{where} is declared to expect {ring.declared} bytes per phase, "
                        f"its arrivals expect {expected}"
                    )
            pre_any = any(o.prearm for o in mine)
            right = (1 if pre_any else 0) if kind == "full" else (0 if pre_any else 1)
            if any(o.kind == "wait" and o.parity != right for o in mine):
                out.append(f"L-PARITY: a first wait on `{name}.{kind}` uses the wrong parity")
    return out


_Key = tuple[object, ...]


@dataclass(frozen=True)
class _Act:
    op: _Op
    key: _Key | None  # the barrier, counter word or named barrier it acts on
    data: int = -1  # the data iteration (unit) of a ring or grid-counter step
    parity: int = 0
    threshold: int = 0
    sync_wait: bool = False
    slot: int = -1  # the CTA whose slot a read, write or copy touches


def _schedule(prog: list[_Op], rings: dict[str, _Ring], units: list[int], cta: int, launch: _Launch) -> list[_Act]:
    """One role's run in CTA ``cta``: its prearms, its sides' steps before the loop, its phases, the steps after it.

    Phase ``p`` of the loop serves unit ``units[p]``; a side with lag ``N`` acts at phase ``p`` on
    phase ``p - N``'s unit (none in the first ``N``; the role then runs the peeled phases after
    the loop), a step's own lag adds to it. Steps ``on`` a part the CTA is not in do not run.
    """
    m = len(units)
    peeled = max((o.shift for o in prog if o.when == "loop" and o.kind not in ("bar_arrive", "bar_sync")), default=0)
    phases = m + max((o.shift for o in prog if o.when == "loop"), default=0)
    rank = cta % launch.cluster
    seq: list[_Act] = []

    def emit(op: _Op, j: int) -> None:
        if not launch.runs(op.part, cta):
            return
        if op.kind in ("add", "wait_ge", "tile_write", "tile_read"):
            if not op.grid:
                seq.append(_Act(op, ("ctr", op.channel, cta), threshold=op.amount * (j + 1)))
            else:
                seq.append(_Act(op, ("word", op.channel, j, rank), j, threshold=op.amount, slot=cta))
        elif op.kind.startswith("bar_"):
            seq.append(_Act(op, ("bar", op.channel, cta)))
            if op.kind == "bar_sync":
                seq.append(_Act(op, ("bar", op.channel, cta), sync_wait=True))
        else:
            ring = rings[op.channel]
            slot = ring.slot(j)
            parity = op.parity ^ (ring.uses_before(j) & 1)
            if op.kind in ("arrive", "copy"):
                for aim in launch.aims(op.target, cta):
                    # a copy fills its own CTA's slot, every CTA's when multicast
                    lands = aim if op.kind == "copy" and op.target == "all" else cta
                    seq.append(_Act(op, ("mbar", op.channel, op.barrier, slot, aim), j, slot=lands))
            elif op.kind == "wait":
                seq.append(_Act(op, ("mbar", op.channel, op.barrier, slot, cta), j, parity))
            elif op.kind in ("read", "read_async"):
                seq.extend(_Act(op, None, j, slot=aim) for aim in launch.aims(op.target, cta))
            else:  # write, read_done
                seq.append(_Act(op, None, j, slot=cta))

    for op in prog:
        if op.prearm and launch.runs(op.part, cta):
            for s in range(rings[op.channel].depth):
                seq += [_Act(op, ("mbar", op.channel, op.barrier, s, aim)) for aim in launch.aims(op.target, cta)]
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
    bars: dict[str, int],
    programs: list[list[_Op]],
    turns: list[tuple[int, int]],
    launch: _Launch,
    max_states: int,
) -> list[str]:
    """Every trip count up to a bound that wraps every ring twice, the same in every role and CTA
    (a deadlock of a short loop, where peeled phases meet the first ones, is not one of a long one)."""
    bound = max(
        (max(2 * r.depth + 1, r.restart + r.depth + 1 if r.restart else 0) for r in rings.values()),
        default=NO_RING_BOUND,
    )
    found: set[str] = set()
    for trips in range(1, bound + 1):
        acts = [
            _schedule(prog, rings, list(range(turns[r][0], trips, turns[r][1])), cta, launch)
            for cta in range(launch.ctas)
            for r, prog in enumerate(programs)
        ]
        _thresholds(acts, launch, len(programs))
        found.update(_run(rings, bars, acts, len(programs), launch, max_states))
    return sorted(found)


def _thresholds(acts: list[list[_Act]], launch: _Launch, per_cta: int) -> None:
    """Resolve the relative grid-counter waits: what the splits they name add to the tile's word in this run."""
    added: dict[tuple[_Key, int], int] = {}
    for p, seq in enumerate(acts):
        for a in seq:
            if a.op.kind == "add" and a.op.grid and a.key is not None:
                split = (p // per_cta) // launch.cluster
                added[(a.key, split)] = added.get((a.key, split), 0) + a.op.amount
    for p, seq in enumerate(acts):
        mine = (p // per_cta) // launch.cluster
        for k, a in enumerate(seq):
            if a.op.kind != "wait_ge" or not a.op.threshold or a.key is None:
                continue
            splits: Iterable[int] = {
                "split": range(mine),
                "others": [s for s in range(launch.group) if s != mine],
            }.get(a.op.threshold, range(launch.group))
            seq[k] = replace(a, threshold=sum(added.get((a.key, s), 0) for s in splits))


def _run(
    rings: dict[str, _Ring],
    bars: dict[str, int],
    acts: list[list[_Act]],
    per_cta: int,
    launch: _Launch,
    max_states: int,
) -> set[str]:
    """Every interleaving of the processes' runs ``acts`` (process ``p`` is role ``p mod per_cta``
    of CTA ``p // per_cta``): the problems some reachable state shows."""
    n = len(acts)
    cta_of = [p // per_cta for p in range(n)]
    # where each unit's slot (of each CTA) is written, and where each consumer is done with it
    last_write: dict[tuple[str, int, int], dict[int, int]] = {}
    done: dict[tuple[str, int, int, int], int] = {}  # (ring, process, unit, slot's CTA)
    used: set[tuple[str, int, int, int]] = set()
    slots_of: dict[tuple[int, str], set[int]] = {}  # the slots' CTAs a process touches on a ring
    for p, seq in enumerate(acts):
        pending: dict[str, list[tuple[int, int]]] = {}
        read_at: dict[tuple[str, int], set[int]] = {}
        released: set[tuple[str, int]] = set()
        for pos, a in enumerate(seq):
            ch, kind = a.op.channel, a.op.kind
            if ch not in rings or a.op.grid:
                continue
            slots_of.setdefault((p, ch), {cta_of[p]}).add(a.slot if a.slot >= 0 else cta_of[p])
            if a.data < 0:
                continue
            if kind in ("write", "copy"):
                last_write.setdefault((ch, a.data, a.slot), {})[p] = pos
            elif kind in ("read", "read_async"):
                used.add((ch, p, a.data, a.slot))
                read_at.setdefault((ch, a.data), set()).add(a.slot)
                if kind == "read_async":
                    pending.setdefault(ch, []).append((a.data, a.slot))
                    done.pop((ch, p, a.data, a.slot), None)
                else:
                    done[(ch, p, a.data, a.slot)] = pos
            elif kind == "read_done":
                for j, x in [(j, x) for j, x in pending.get(ch, []) if j <= a.data]:
                    done[(ch, p, j, x)] = pos
                    pending[ch].remove((j, x))
            elif kind == "arrive" and a.op.barrier != "full" and (ch, a.data) not in released:
                released.add((ch, a.data))  # done with its slots at its (first) release, one instruction
                for x in read_at.get((ch, a.data), ()):
                    if (a.data, x) not in pending.get(ch, []):
                        done[(ch, p, a.data, x)] = pos
        for ch, left in pending.items():
            for j, x in left:
                done[(ch, p, j, x)] = len(seq)  # never completed: the slot is in use to the end

    # what each act reads and writes (barriers, words, named barriers, tiles, and the slots of its
    # ring whose use a race check compares), and per process the last position that touches each
    reads: list[list[tuple[_Key, ...]]] = []
    writes: list[list[tuple[_Key, ...]]] = []
    last_any: list[dict[_Key, int]] = []
    last_write_of: list[dict[_Key, int]] = []
    touchers: dict[_Key, list[int]] = {}
    for p, seq in enumerate(acts):
        rrow, wrow = [], []
        any_: dict[_Key, int] = {}
        wr: dict[_Key, int] = {}
        for pos, a in enumerate(seq):
            r, w = _touches(a, slots_of.get((p, a.op.channel), set()), rings)
            for k in r:
                any_[k] = pos
            for k in w:
                any_[k] = wr[k] = pos
            rrow.append(r)
            wrow.append(w)
        for k in any_:
            touchers.setdefault(k, []).append(p)
        reads.append(rrow)
        writes.append(wrow)
        last_any.append(any_)
        last_write_of.append(wr)
    tiles = [[(a.op.kind, a.key) if a.op.kind in ("tile_read", "tile_write") else None for a in seq] for seq in acts]

    def persistent(pcs: tuple[int, ...], live: list[int], enabled: set[int]) -> list[int]:
        """The enabled processes of a smallest persistent set: closed under "a process that can
        still do something its next act depends on" (an enabled next act: any later act that writes
        what it touches or touches what it writes; a waiting one: any later act that writes what it
        waits on), grown from each unfinished process; one with no enabled process is no answer."""
        best = sorted(enabled)
        for seed in live:
            members, todo = {seed}, [seed]
            while todo:
                q = todo.pop()
                pc = pcs[q]
                ready = q in enabled
                for k, wrote in [(k, False) for k in reads[q][pc]] + [(k, True) for k in writes[q][pc]]:
                    last = last_any if wrote and ready else last_write_of
                    for r in touchers[k]:
                        if r not in members and last[r].get(k, -1) >= pcs[r]:
                            members.add(r)
                            todo.append(r)
                if sum(1 for m in members if m in enabled) >= len(best):
                    break
            chosen = [p for p in sorted(members) if p in enabled]
            if not todo and 0 < len(chosen) < len(best):
                best = chosen
                if len(best) == 1:
                    break
        return best

    index: dict[_Key, int] = {}
    start_objs: list[tuple[int, int, int]] = []
    ids: list[list[int]] = []
    for seq in acts:
        row = []
        for a in seq:
            if a.key is None:
                row.append(-1)
                continue
            if a.key not in index:
                index[a.key] = len(start_objs)
                init = rings[str(a.key[1])].inits[str(a.key[2])] if a.key[0] == "mbar" else 0
                start_objs.append((0, init, 0))
            row.append(index[a.key])
        ids.append(row)
    limits = {index[k]: bars[str(k[1])] for k in index if k[0] == "bar"}
    mbars = {index[k]: rings[str(k[1])].inits[str(k[2])] for k in index if k[0] == "mbar"}

    start = ((0,) * n, tuple(start_objs), (0,) * n)
    seen = {start}
    queue = deque([start])
    found: set[str] = set()
    while queue:
        pcs, objs, synced = queue.popleft()
        live = [p for p in range(n) if pcs[p] < len(acts[p])]
        enabled = [p for p in live if ids[p][pcs[p]] < 0 or _enabled(acts[p][pcs[p]], objs[ids[p][pcs[p]]], synced[p])]
        if live and not enabled:
            found.add("L-DEADLOCK: a reachable state where every unfinished role waits")
            continue
        found.update(_tile_races(pcs, tiles, cta_of))
        for p in persistent(pcs, live, set(enabled)):
            a = acts[p][pcs[p]]
            found.update(_races(a, pcs, rings, last_write, done, used))
            o = ids[p][pcs[p]]
            new_objs, new_synced = objs, synced
            if o >= 0:
                value, seen_gen = _apply(a, objs[o], limits.get(o, 0), mbars.get(o, 0))
                if a.op.kind == "arrive" and value[1] < 0:
                    where = f"`{a.op.channel}.{a.op.barrier}`"
                    found.add(f"L-ARRIVE: {where} gets more arrivals in a phase than it expects")
                if value != objs[o]:
                    new_objs = (*objs[:o], value, *objs[o + 1 :])
                if seen_gen is not None:
                    new_synced = (*synced[:p], seen_gen, *synced[p + 1 :])
            nxt = ((*pcs[:p], pcs[p] + 1, *pcs[p + 1 :]), new_objs, new_synced)
            if nxt not in seen:
                if len(seen) >= max_states:
                    raise TooLarge(f"more than {max_states} states")
                seen.add(nxt)
                queue.append(nxt)
    return found


def _touches(a: _Act, slots: set[int], rings: dict[str, _Ring]) -> tuple[tuple[_Key, ...], tuple[_Key, ...]]:
    """What an act reads and what it writes (a wait reads its barrier or word; a ring's data step
    writes its process's slots of the ring, where race checks compare positions)."""
    kind = a.op.kind
    if kind in ("tile_read", "tile_write"):
        tile = ("tile", *(a.key or ())[1:])
        return ((tile,), ()) if kind == "tile_read" else ((), (tile,))
    key = () if a.key is None else (a.key,)
    data: tuple[_Key, ...] = ()
    ring = rings.get(a.op.channel)
    if ring is not None and not a.op.grid and a.data >= 0 and kind != "wait":
        # a read wait completes reads of earlier units: every slot
        which = range(ring.depth) if kind == "read_done" else (ring.slot(a.data),)
        data = tuple(("slot", a.op.channel, i, x) for i in which for x in sorted(slots))
    if kind in ("wait", "wait_ge") or a.sync_wait:
        return key, data
    return (), key + data


def _enabled(a: _Act, state: tuple[int, int, int], synced: int) -> bool:
    if a.op.kind == "wait":
        return state[0] % 2 != a.parity
    if a.op.kind == "wait_ge":
        return state[0] >= a.threshold
    if a.sync_wait:
        return state[1] > synced
    return True


def _apply(a: _Act, state: tuple[int, int, int], threads: int, init: int) -> tuple[tuple[int, int, int], int | None]:
    x, y, z = state
    kind = a.op.kind
    if kind in ("wait", "wait_ge", "tile_write", "tile_read") or a.sync_wait:
        return state, None
    if kind == "add":
        return (x + a.op.amount, y, z), None
    if kind.startswith("bar_"):
        arrived, gen = x + a.op.amount, y
        if arrived >= threads:
            arrived, gen = 0, gen + 1
        return (arrived, gen, z), (y if kind == "bar_sync" else None)
    phase, pending, tx = x, y, z
    if kind == "arrive":
        pending, tx = pending - a.op.amount, tx + a.op.tx
    elif kind == "copy":
        tx -= a.op.amount
    if pending == 0 and tx == 0:
        phase, pending = phase + 1, init
    return (phase, pending, tx), None


def _races(
    a: _Act,
    pcs: tuple[int, ...],
    rings: dict[str, _Ring],
    last_write: dict[tuple[str, int, int], dict[int, int]],
    done: dict[tuple[str, int, int, int], int],
    used: set[tuple[str, int, int, int]],
) -> list[str]:
    ring = rings.get(a.op.channel)
    if ring is None or a.op.grid or a.data < 0:
        return []
    ch, out = a.op.channel, []
    if a.op.kind in ("write", "copy"):
        prev = ring.previous(a.data)
        if prev is None:
            return []
        for c in range(len(pcs)):
            if (ch, c, prev, a.slot) not in used:
                continue  # it did not read that use of the slot (not its unit, not its CTA's slot)
            until = done.get((ch, c, prev, a.slot))
            if until is None or pcs[c] <= until:
                out.append(f"L-RACE: the producer can overwrite a slot of `{ch}` before it is released")
    if a.op.kind in ("read", "read_async"):
        for w, last in last_write.get((ch, a.data, a.slot), {}).items():
            if pcs[w] <= last:
                out.append(f"L-RACE: a consumer can read a slot of `{ch}` before it is filled")
    return out


def _tile_races(
    pcs: tuple[int, ...], tiles: list[list[tuple[str, _Key | None] | None]], cta_of: list[int]
) -> list[str]:
    """A grid counter's tile read by one CTA while another CTA is about to write the same tile."""
    nxt = [tiles[p][pcs[p]] if pcs[p] < len(tiles[p]) else None for p in range(len(pcs))]
    reads = [(p, t[1]) for p, t in enumerate(nxt) if t is not None and t[0] == "tile_read"]
    if not reads:
        return []
    writes = [(p, t[1]) for p, t in enumerate(nxt) if t is not None and t[0] == "tile_write"]
    return [
        f"L-RACE: a CTA can read the tile of counter `{k[1]}` while another CTA writes it"
        for p, k in reads
        for q, w in writes
        if k == w and k is not None and cta_of[p] != cta_of[q]
    ]


__all__ = ["TooLarge", "cluster_sizes", "problems_of", "unmodelled"]
