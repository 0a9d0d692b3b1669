"""The abstract protocol: roles, mbarrier rings, counters, named barriers and per-role programs.

This is what the SMT model (``smt.py``) and the explicit-state oracle (``explore.py``)
both read. It is independent of the contract AST; :class:`ProtocolBuilder` applies the
language's defaults for hand-written models. An adapter from a resolved composition:

* one :class:`Role` per role (warps, declaration span);
* one :class:`Ring` per ring name at the chosen depth: the producer side's role, every
  consumer side's role, a :class:`Barrier` per ``full``/``empty`` with its ``init`` count
  evaluated from role widths (``per_warp(mma)`` → warps), its declared ``expect_tx`` and
  one :class:`InitBy` per ``init by`` statement;
* per role, its steps across channels in the declared order: ``X wait [parity p]`` →
  ``WAIT`` (default first parity: 1 on ``empty``, 0 on ``full``); ``X arrive N [tx B]
  [lag L] [prearm]`` → ``ARRIVE``; ``X copy B`` → ``COPY``; a producer side without a
  ``copy`` line gets one ``COPY`` of its tx bytes after its ``full arrive``, or a plain
  ``WRITE`` before it when there are no bytes; each consumer side gets one ``READ`` right
  after its first ``full wait`` (at the start of its block without one); counter
  ``add N``/``wait ge N`` → ``ADD``/``WAIT_GE``; ``bar.sync``/``bar.arrive`` with the
  role's threads → ``BAR_SYNC``/``BAR_ARRIVE``.

Semantics of one program: each role runs its prologue (``prearm`` steps, each on every
slot of its ring, or once on a named barrier) and then ``bound`` iterations of its step
list in order. A step of iteration ``i`` acts on data iteration ``j = i - lag``, slot
``j % depth`` of its ring (``(j % restart) % depth`` when the slot index restarts every
``restart`` iterations); a wait with first parity ``p`` waits on parity ``p`` flipped once
per earlier use of the slot. A role that takes turn ``t`` of ``n`` runs only the data
iterations ``j`` with ``j % n == t`` (ping-pong consumers).

CTAs. A protocol runs in ``ctas = cluster * group`` CTAs: ``cluster`` CTAs of one thread-block
cluster (cluster rank ``c % cluster``) times ``group`` clusters sharing each tile (split
``c // cluster``). Every role runs in every CTA; a step's ``part`` says in which
(:func:`runs`). Ring barriers, slots and named barriers are each CTA's own; an mbarrier
step's ``target`` says whose barrier it acts on (its own, the cluster peer's, every
CTA's), and a copy writes the slot of the CTAs it lands in (its own, or every CTA's when
multicast). A ``grid`` counter has a word per tile and cluster rank that the group's CTAs
share; its waits' thresholds may be relative to the adds of the other splits. Any other
counter is each CTA's own (its partner is another role of the same CTA).

Trip counts. Every CTA runs the same number ``n`` of iterations, any ``n`` from 1 to the
bound: a run of ``n`` iterations is the prefix of the bounded run that stops at
iteration ``n`` (:func:`checker.protocol.events.unroll` marks where).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from diagnostics.span import Span

MBAR_MAX_COUNT = (1 << 20) - 1
"""Largest mbarrier arrival count and tx-count magnitude (specs/hardware.md §5)."""

WARP_THREADS = 32


@dataclass(frozen=True, order=True)
class Provenance:
    """Where a modelled fact comes from: a contract span and its source text."""

    span: Span
    text: str

    def __post_init__(self) -> None:
        if not self.text:
            raise ValueError("a provenance needs its source text")


class BarrierKind(enum.Enum):
    """The two mbarriers of a ring slot."""

    FULL = "full"
    EMPTY = "empty"


class Scope(enum.Enum):
    """Memory scopes (specs/hardware.md §10)."""

    CTA = "cta"
    CLUSTER = "cluster"
    GPU = "gpu"
    SYS = "sys"


class Op(enum.Enum):
    """One protocol step kind."""

    WAIT = "wait"
    """Parity wait on an mbarrier (``try_wait.parity`` in a loop)."""
    ARRIVE = "arrive"
    """Arrive ``count`` on an mbarrier; with ``nbytes`` it is ``arrive.expect_tx``."""
    EXPECT_TX = "expect_tx"
    """Add ``nbytes`` to an mbarrier's tx-count without arriving."""
    COPY = "copy"
    """An async copy that writes the ring slot and completes ``nbytes`` on the barrier."""
    WRITE = "write"
    """Plain stores into the ring slot (no barrier effect)."""
    READ = "read"
    """The consumer's reads of the ring slot."""
    ADD = "add"
    """Add ``count`` to a counter."""
    WAIT_GE = "wait_ge"
    """Wait until a counter reaches ``count * (iteration + 1)``."""
    BAR_SYNC = "bar.sync"
    """Named barrier: arrive with ``count`` threads and wait for the barrier to complete."""
    BAR_ARRIVE = "bar.arrive"
    """Named barrier: arrive with ``count`` threads without waiting."""
    READ_WAIT = "read.wait"
    """Wait until this side's asynchronous reads of the slots are done (``cp.async.bulk.wait_group.read``,
    ``tcgen05.wait::ld``): at iteration ``i`` those of data iterations up to ``i - lag``."""


MBAR_OPS = frozenset({Op.WAIT, Op.ARRIVE, Op.EXPECT_TX, Op.COPY})
SLOT_OPS = frozenset({Op.WRITE, Op.READ, Op.READ_WAIT})
RING_OPS = MBAR_OPS | SLOT_OPS
COUNTER_OPS = frozenset({Op.ADD, Op.WAIT_GE})
BAR_OPS = frozenset({Op.BAR_SYNC, Op.BAR_ARRIVE})
WAIT_OPS = frozenset({Op.WAIT, Op.WAIT_GE, Op.BAR_SYNC})
WRITE_OPS = frozenset({Op.COPY, Op.WRITE})
MOVER_OPS = frozenset({Op.ARRIVE, Op.EXPECT_TX, Op.COPY})


class Part(enum.Enum):
    """Which CTAs run a step (``on leader`` …): all of them, or one side of the cluster or the group."""

    ALL = "all"
    LEADER = "leader"
    """Cluster rank 0."""
    PEER = "peer"
    """Every cluster rank but 0."""
    FIRST = "first"
    """The first CTA (split 0) of the group sharing a tile."""
    REST = "rest"
    """Every split but the first."""


class Target(enum.Enum):
    """Whose mbarrier an arrive or a copy acts on: this CTA's, the cluster peer's, or every CTA's of the cluster."""

    OWN = "own"
    PEER = "remote"
    """The next cluster rank's (``(rank + 1) % cluster``: the other CTA of a pair)."""
    ALL = "multicast"
    """Every CTA of the cluster, this one included; a multicast copy also lands in each CTA's slot."""


class Threshold(enum.Enum):
    """What a counter wait waits for: ``count`` per iteration, or the adds of other splits of its tile."""

    COUNT = "count"
    SPLIT = "split"
    """The adds of the splits before this one (split ``s`` waits for splits ``0 .. s-1``)."""
    OTHERS = "others"
    """The adds of every other split of the tile."""
    ALL = "all"
    """The adds of every split of the tile, its own included (a grid barrier)."""


@dataclass(frozen=True)
class Role:
    """A group of warps running one program."""

    name: str
    warps: int
    provenance: Provenance
    turn: int = 0
    turns: int = 1
    """The role runs data iterations ``j`` with ``j % turns == turn`` (1: every one)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a role needs a name")
        if self.warps < 1:
            raise ValueError(f"role `{self.name}` needs at least one warp")
        if self.turns < 1 or not 0 <= self.turn < self.turns:
            raise ValueError(f"role `{self.name}` takes turn {self.turn} of {self.turns}")

    def takes(self, data: int) -> bool:
        """Whether the role runs data iteration ``data``."""
        return data % self.turns == self.turn

    @property
    def threads(self) -> int:
        return WARP_THREADS * self.warps


def per_thread(role: Role) -> int:
    """One arrival per thread of ``role``."""
    return role.threads


def per_warp(role: Role) -> int:
    """One arrival per warp of ``role``."""
    return role.warps


def per_warpgroup(role: Role) -> int:
    """One arrival per warpgroup (4 warps) of ``role``."""
    if role.warps % 4:
        raise ValueError(f"role `{role.name}` is not a whole number of warpgroups")
    return role.warps // 4


@dataclass(frozen=True)
class InitBy:
    """A contract's statement that ``role`` initializes a barrier (``init by load [fenced]``)."""

    role: str
    provenance: Provenance
    fenced: bool = False


InitFault = Literal["none", "several", "outsider"]


def init_fault(
    stated: Sequence[tuple[str, bool]], participants: Collection[str], roles: Collection[str]
) -> InitFault | None:
    """What is wrong with who initializes a ring's barriers (L-INIT's one rule), None when nothing is.

    ``stated`` holds the ring's `init by` statements as (role, fenced). Exactly one role
    initializes: one of the ring's ``participants``, or any of the composition's ``roles``
    whose init is `fenced` (the dispatch runs every init, then a block-wide barrier, before
    any role starts). ``none``: no statement; ``several``: more than one role; ``outsider``:
    a role that takes no part, unfenced or unknown.
    """
    if not stated:
        return "none"
    if len({role for role, _ in stated}) > 1:
        return "several"
    role, fenced = stated[0]
    return None if role in participants or (role in roles and fenced) else "outsider"


@dataclass(frozen=True)
class Barrier:
    """One mbarrier of a ring (one physical mbarrier per slot).

    ``init_count`` is the evaluated arrival count per phase; ``expect_tx`` the declared
    transaction bytes per phase (``None`` when the declaration states none);
    ``init_by`` every statement of who initializes it (:func:`init_fault` says what is right).
    """

    kind: BarrierKind
    init_count: int
    provenance: Provenance
    expect_tx: int | None = None
    init_by: tuple[InitBy, ...] = ()

    @property
    def initializers(self) -> tuple[str, ...]:
        return tuple(i.role for i in self.init_by)

    def __post_init__(self) -> None:
        if self.init_count < 1:
            raise ValueError(f"{self.kind.value} barrier initialized with {self.init_count} < 1")
        if self.expect_tx is not None and self.expect_tx < 0:
            raise ValueError("declared transaction bytes are negative")


@dataclass(frozen=True)
class Ring:
    """An mbarrier ring: ``depth`` slots, each with a full and an empty barrier.

    One producer role fills the slots; every consumer role reads each slot it takes (every
    one, or those of its turns) and releases it (the empty barrier's init count covers the
    arrivals of one data iteration's consumers). ``restart`` > 0: the slot index restarts
    every ``restart`` iterations (a staging index per tile). A ring that is not
    ``synchronized`` has no barriers (its ``full`` and ``empty`` stand for none, and no step
    names them): program order alone orders its accesses, as in a role's own staging
    buffer, which it both writes and reads.
    """

    name: str
    depth: int
    producer: str
    consumers: tuple[str, ...]
    full: Barrier
    empty: Barrier
    provenance: Provenance
    restart: int = 0
    synchronized: bool = True

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"ring `{self.name}` has depth {self.depth} < 1")
        if self.restart < 0:
            raise ValueError(f"ring `{self.name}` restarts every {self.restart} iterations")
        if not self.consumers or len(set(self.consumers)) != len(self.consumers):
            raise ValueError(f"ring `{self.name}` needs distinct consumer roles")
        if self.synchronized and self.producer in self.consumers:
            raise ValueError(f"ring `{self.name}` is produced and consumed by one role")
        if self.full.kind is not BarrierKind.FULL or self.empty.kind is not BarrierKind.EMPTY:
            raise ValueError(f"ring `{self.name}` has its barriers' kinds swapped")

    def barrier(self, kind: BarrierKind) -> Barrier:
        return self.full if kind is BarrierKind.FULL else self.empty

    def slot(self, data: int) -> int:
        """The slot of data iteration ``data``."""
        return (data % self.restart if self.restart else data) % self.depth

    def use(self, data: int) -> int:
        """How often the slot of ``data`` was used by earlier data iterations."""
        if not self.restart:
            return data // self.depth
        tile, index = divmod(data, self.restart)
        per_tile = sum(1 for k in range(self.restart) if k % self.depth == index % self.depth)
        return tile * per_tile + index // self.depth

    def previous_use(self, data: int) -> int | None:
        """The data iteration that last used the slot of ``data`` before it (None: the first use)."""
        slot = self.slot(data)
        return next((j for j in range(data - 1, -1, -1) if self.slot(j) == slot), None)

    @property
    def sides(self) -> tuple[str, ...]:
        """The producer, then the consumers."""
        return (self.producer, *self.consumers)


@dataclass(frozen=True)
class Counter:
    """A monotone counter (readiness flag) written by ``producer`` and read by ``consumer``."""

    name: str
    producer: str
    consumer: str
    provenance: Provenance
    scope: Scope = Scope.CTA
    grid: bool = False
    """A word per tile (and cluster rank), shared by the CTAs of the group that shares the tile:
    the partner of a side is the same or another role in the other CTAs. Its producer writes
    the tile's data before it adds, its consumer reads it after it waits."""


@dataclass(frozen=True)
class NamedBarrier:
    """A named (CTA) barrier completing when ``threads`` threads have arrived."""

    name: str
    threads: int
    provenance: Provenance

    def __post_init__(self) -> None:
        if self.threads < WARP_THREADS or self.threads % WARP_THREADS:
            raise ValueError(f"named barrier `{self.name}` count {self.threads} is not whole warps")


@dataclass(frozen=True)
class Step:
    """One step of a role's per-iteration program.

    ``channel`` names the ring, counter or named barrier; ``barrier`` the ring's mbarrier
    for mbarrier ops. ``count`` is arrivals (``ARRIVE``), threads (``BAR_*``), the counter
    increment (``ADD``) or the per-iteration threshold (``WAIT_GE`` with ``threshold``
    ``COUNT``; a relative threshold has none); ``nbytes`` is transaction bytes; ``parity``
    the first parity of a ``WAIT``; ``lag`` delays an ``ARRIVE`` or a ``READ_WAIT`` to a
    later iteration; ``peel`` (at most ``lag``, on any loop step) runs the step ``peel`` more
    times after the loop, for the last data iterations its lag left (a side's ``lag N``: the
    software-pipelined phase the code peels out of its loop; a named-barrier step may peel more
    than it lags: a rendezvous side that runs in its role's peeled phases); ``prearm`` runs an ``ARRIVE``
    once per slot, or a named-barrier step once, before the loop. ``part`` says which CTAs run
    the step, ``target`` whose barrier an arrive or copy acts on; ``asynchronous`` marks a
    ``READ`` that completes only at a later ``READ_WAIT``; ``once`` runs a ring step once per
    CTA, on data iteration 0: ``before`` the loop (after the pre-arms) or ``after`` it (and its
    peeled phases), a one-shot side's (``once``).
    """

    role: str
    op: Op
    channel: str
    provenance: Provenance
    barrier: BarrierKind | None = None
    count: int = 0
    nbytes: int = 0
    parity: int | None = None
    lag: int = 0
    prearm: bool = False
    part: Part = Part.ALL
    target: Target = Target.OWN
    threshold: Threshold = Threshold.COUNT
    asynchronous: bool = False
    peel: int = 0
    once: Literal["", "before", "after"] = ""

    def __post_init__(self) -> None:
        op = self.op
        where = f"step `{self.provenance.text}`"
        if (op in MBAR_OPS) != (self.barrier is not None):
            raise ValueError(f"{where}: mbarrier ops, and only they, name a barrier")
        if (op is Op.WAIT) != (self.parity is not None):
            raise ValueError(f"{where}: waits, and only waits, have a parity")
        if self.parity is not None and self.parity not in (0, 1):
            raise ValueError(f"{where}: parity must be 0 or 1")
        if self.lag < 0 or (self.lag > self.peel and (op not in (Op.ARRIVE, Op.READ_WAIT) or self.prearm)):
            raise ValueError(f"{where}: only loop arrivals and read waits may lag, by a non-negative amount")
        if self.peel < 0 or (self.peel > self.lag and op not in BAR_OPS) or (self.peel and self.prearm):
            raise ValueError(f"{where}: a loop step peels at most the iterations it lags")
        if self.prearm and not ((op is Op.ARRIVE and not self.nbytes) or op in BAR_OPS):
            raise ValueError(f"{where}: only plain arrivals and named-barrier steps may pre-arm")
        if self.target is not Target.OWN and op not in MOVER_OPS and (op, self.target) != (Op.READ, Target.ALL):
            raise ValueError(
                f"{where}: only arrivals and copies act on another CTA's barrier (and reads on every CTA's slot)"
            )
        if self.threshold is not Threshold.COUNT and op is not Op.WAIT_GE:
            raise ValueError(f"{where}: only counter waits have a relative threshold")
        if self.once and (op not in RING_OPS or self.prearm or self.lag or self.peel):
            raise ValueError(f"{where}: only ring steps that neither lag nor pre-arm run once per CTA")
        if self.asynchronous and op is not Op.READ:
            raise ValueError(f"{where}: only reads are asynchronous")
        relative = op is Op.WAIT_GE and self.threshold is not Threshold.COUNT
        needs_count = (op in (Op.ARRIVE, Op.ADD, Op.WAIT_GE) or op in BAR_OPS) and not relative
        if needs_count != (self.count >= 1) or self.count < 0:
            raise ValueError(f"{where}: count {self.count} does not fit op `{op.value}`")
        if op in BAR_OPS and self.count % WARP_THREADS:
            raise ValueError(f"{where}: named barrier thread count is not whole warps")
        needs_bytes = op in (Op.EXPECT_TX, Op.COPY)
        if self.nbytes < 0 or (needs_bytes and self.nbytes < 1):
            raise ValueError(f"{where}: byte count {self.nbytes} does not fit op `{op.value}`")
        if self.nbytes and op not in (Op.ARRIVE, Op.EXPECT_TX, Op.COPY):
            raise ValueError(f"{where}: op `{op.value}` carries no bytes")

    @property
    def is_wait(self) -> bool:
        return self.op in WAIT_OPS


@dataclass(frozen=True)
class Protocol:
    """A whole composition's synchronization protocol.

    ``programs`` maps every role to its ordered step list (the concatenation of its
    sides across channels in the declared order). ``cluster`` CTAs of a cluster times
    ``group`` clusters sharing each tile run it (the module's docstring says how).
    """

    roles: tuple[Role, ...]
    rings: tuple[Ring, ...] = ()
    counters: tuple[Counter, ...] = ()
    named_barriers: tuple[NamedBarrier, ...] = ()
    programs: tuple[tuple[str, tuple[Step, ...]], ...] = ()
    cluster: int = 1
    group: int = 1

    def __post_init__(self) -> None:
        if self.cluster < 1 or self.group < 1:
            raise ValueError(f"a protocol runs in at least one CTA, not {self.cluster} x {self.group}")
        names = [r.name for r in self.roles]
        _unique(names, "role")
        channels = (
            [r.name for r in self.rings] + [c.name for c in self.counters] + [b.name for b in self.named_barriers]
        )
        _unique(channels, "channel")
        _unique([p for p, _ in self.programs], "program")
        known = set(names)
        for ring in self.rings:
            for who in (*ring.sides, *ring.full.initializers, *ring.empty.initializers):
                if who not in known:
                    raise ValueError(f"ring `{ring.name}` names unknown role `{who}`")
        for ctr in self.counters:
            if ctr.producer not in known or ctr.consumer not in known:
                raise ValueError(f"counter `{ctr.name}` names an unknown role")
            if ctr.producer == ctr.consumer and not ctr.grid:
                raise ValueError(f"counter `{ctr.name}` pairs role `{ctr.producer}` with itself in one CTA")
        for role, steps in self.programs:
            if role not in known:
                raise ValueError(f"program for unknown role `{role}`")
            for step in steps:
                self._check_step(role, step)
        for ring in self.rings:
            if not any(s.op in WRITE_OPS for s in self._ring_steps(ring.name)):
                raise ValueError(f"ring `{ring.name}`: the producer never writes a slot")
            for consumer in ring.consumers:
                if not any(s.op is Op.READ and s.role == consumer for s in self._ring_steps(ring.name)):
                    raise ValueError(f"ring `{ring.name}`: consumer `{consumer}` never reads a slot")

    @functools.cached_property
    def _index(self) -> dict[str, Ring | Counter | NamedBarrier]:
        index: dict[str, Ring | Counter | NamedBarrier] = {r.name: r for r in self.rings}
        index.update((c.name, c) for c in self.counters)
        index.update((b.name, b) for b in self.named_barriers)
        return index

    def _check_step(self, role: str, step: Step) -> None:
        where = f"step `{step.provenance.text}` of `{role}`"
        if step.role != role:
            raise ValueError(f"{where} belongs to role `{step.role}`")
        channel = self._index.get(step.channel)
        if step.op in (Op.WRITE, Op.READ) and isinstance(channel, Counter) and channel.grid:
            side = channel.producer if step.op is Op.WRITE else channel.consumer
            if role != side or step.asynchronous:
                raise ValueError(
                    f"{where}: only the {'producer' if step.op is Op.WRITE else 'consumer'} "
                    f"of counter `{channel.name}` accesses its data, synchronously"
                )
        elif step.op in RING_OPS:
            if not isinstance(channel, Ring):
                raise ValueError(f"{where} names unknown ring `{step.channel}`")
            if step.op in WRITE_OPS and role != channel.producer:
                raise ValueError(f"{where}: only the producer writes ring `{channel.name}`")
            if step.op in (Op.READ, Op.READ_WAIT) and role not in channel.consumers:
                raise ValueError(f"{where}: only consumers read ring `{channel.name}`")
            if step.op in MBAR_OPS and not channel.synchronized:
                raise ValueError(f"{where}: ring `{channel.name}` has no barriers")
        elif step.op in COUNTER_OPS:
            if not isinstance(channel, Counter):
                raise ValueError(f"{where} names unknown counter `{step.channel}`")
        elif not isinstance(channel, NamedBarrier):
            raise ValueError(f"{where} names unknown named barrier `{step.channel}`")

    def _ring_steps(self, ring: str) -> Iterable[Step]:
        return (s for _, steps in self.programs for s in steps if s.channel == ring)

    def program(self, role: str) -> tuple[Step, ...]:
        """The per-iteration step list of ``role`` (empty when it has none)."""
        return next((steps for r, steps in self.programs if r == role), ())

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    def ring(self, name: str) -> Ring:
        channel = self._index[name]
        if not isinstance(channel, Ring):
            raise KeyError(name)
        return channel

    def counter(self, name: str) -> Counter:
        channel = self._index[name]
        if not isinstance(channel, Counter):
            raise KeyError(name)
        return channel

    def named_barrier(self, name: str) -> NamedBarrier:
        channel = self._index[name]
        if not isinstance(channel, NamedBarrier):
            raise KeyError(name)
        return channel

    @property
    def peeled(self) -> bool:
        """Whether a step runs after the loop (``peel``, ``once`` after): a run of ``n`` iterations is
        then no prefix of a longer one, and each trip count is unrolled by itself."""
        return any(s.peel or s.once == "after" for _, steps in self.programs for s in steps)

    @property
    def max_depth(self) -> int:
        return max((r.depth for r in self.rings), default=1)

    def default_bound(self) -> int:
        """Iterations per role that wrap every ring at least twice: ``2 * max depth + 1``."""
        return 2 * self.max_depth + 1

    @property
    def ctas(self) -> int:
        """The CTAs the protocol runs in: the cluster's times the group's."""
        return self.cluster * self.group

    def with_depth(self, ring: str, depth: int) -> Protocol:
        """The same protocol with ``ring`` at another depth (for checking a depth range)."""
        rings = tuple(dataclasses.replace(r, depth=depth) if r.name == ring else r for r in self.rings)
        return dataclasses.replace(self, rings=rings)


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"duplicate {what} name `{name}`")
        seen.add(name)


class ProtocolBuilder:
    """Builds a :class:`Protocol` step by step, synthesizing spans for hand-written models.

    Each added item gets a one-line span in ``file`` (line numbers in order of addition)
    unless a provenance is given. :meth:`ring` applies the language's defaults through
    :meth:`produce` and :meth:`consume`.
    """

    def __init__(self, file: str = "<protocol>") -> None:
        self.file = file
        self._line = 0
        self._roles: list[Role] = []
        self._rings: list[Ring] = []
        self._counters: list[Counter] = []
        self._bars: list[NamedBarrier] = []
        self._programs: dict[str, list[Step]] = {}

    def provenance(self, text: str) -> Provenance:
        """A fresh synthetic provenance: the next line of ``file`` holding ``text``."""
        self._line += 1
        return Provenance(Span(self.file, self._line, 1, self._line, len(text) + 1), text)

    def role(self, name: str, warps: int, *, turn: int = 0, turns: int = 1) -> Role:
        text = f"role {name} warps {warps}" + (f" turn {turn} of {turns}" if turns > 1 else "")
        role = Role(name, warps, self.provenance(text), turn, turns)
        self._roles.append(role)
        self._programs.setdefault(name, [])
        return role

    def get_role(self, name: str) -> Role:
        return next(r for r in self._roles if r.name == name)

    def ring(
        self,
        name: str,
        *,
        depth: int,
        producer: str,
        consumer: str | Iterable[str],
        full_init: int,
        empty_init: int,
        full_tx: int | None = None,
        init_by: Iterable[str] = (),
        restart: int = 0,
        synchronized: bool = True,
    ) -> Ring:
        """Declare a ring (its barriers share the initializers ``init_by``)."""
        consumers = (consumer,) if isinstance(consumer, str) else tuple(consumer)
        header = self.provenance(f"ring {name} produce by {producer}")
        inits = tuple(InitBy(r, self.provenance(f"init by {r}")) for r in init_by)
        tx_text = f" expect_tx {full_tx}" if full_tx is not None else ""
        full = Barrier(BarrierKind.FULL, full_init, self.provenance(f"full init {full_init}{tx_text}"), full_tx, inits)
        empty = Barrier(BarrierKind.EMPTY, empty_init, self.provenance(f"empty init {empty_init}"), None, inits)
        ring = Ring(name, depth, producer, consumers, full, empty, header, restart, synchronized)
        self._rings.append(ring)
        return ring

    def counter(
        self, name: str, *, producer: str, consumer: str, scope: Scope = Scope.CTA, grid: bool = False
    ) -> Counter:
        ctr = Counter(
            name,
            producer,
            consumer,
            self.provenance(f"counter {name} produce by {producer} scope {scope.value}"),
            scope,
            grid,
        )
        self._counters.append(ctr)
        return ctr

    def named_barrier(self, name: str, threads: int) -> NamedBarrier:
        bar = NamedBarrier(name, threads, self.provenance(f"claim barrier {name} threads {threads}"))
        self._bars.append(bar)
        return bar

    def make_step(
        self,
        role: str,
        op: Op,
        channel: str,
        *,
        barrier: BarrierKind | None = None,
        count: int = 0,
        nbytes: int = 0,
        parity: int | None = None,
        lag: int = 0,
        prearm: bool = False,
        part: Part = Part.ALL,
        target: Target = Target.OWN,
        threshold: Threshold = Threshold.COUNT,
        asynchronous: bool = False,
        text: str | None = None,
    ) -> Step:
        """A step with a fresh provenance, not placed in any program."""
        if text is None:
            text = _step_text(op, channel, barrier, count, nbytes, parity, lag, prearm)
            text += "".join(
                f" {word}"
                for word, on in (
                    (target.value, target is not Target.OWN),
                    (f"on {part.value}", part is not Part.ALL),
                    (threshold.value, threshold is not Threshold.COUNT),
                    ("async", asynchronous),
                )
                if on
            )
        return Step(
            role,
            op,
            channel,
            self.provenance(text),
            barrier,
            count,
            nbytes,
            parity,
            lag,
            prearm,
            part,
            target,
            threshold,
            asynchronous,
        )

    def step(
        self,
        role: str,
        op: Op,
        channel: str,
        *,
        barrier: BarrierKind | None = None,
        count: int = 0,
        nbytes: int = 0,
        parity: int | None = None,
        lag: int = 0,
        prearm: bool = False,
        part: Part = Part.ALL,
        target: Target = Target.OWN,
        threshold: Threshold = Threshold.COUNT,
        asynchronous: bool = False,
        text: str | None = None,
    ) -> Step:
        """Append one step to ``role``'s program."""
        step = self.make_step(
            role,
            op,
            channel,
            barrier=barrier,
            count=count,
            nbytes=nbytes,
            parity=parity,
            lag=lag,
            prearm=prearm,
            part=part,
            target=target,
            threshold=threshold,
            asynchronous=asynchronous,
            text=text,
        )
        self._programs.setdefault(role, []).append(step)
        return step

    def set_program(self, role: str, steps: Iterable[Step]) -> None:
        """Replace ``role``'s program (for an explicit cross-channel order)."""
        self._programs[role] = list(steps)

    def produce(
        self,
        ring: str,
        *,
        wait_empty: bool = True,
        parity: int = 1,
        arrive: int = 1,
        tx: int | None = None,
        copies: Iterable[int] | None = None,
    ) -> None:
        """The producer side in the language's order: ``empty wait``, ``full arrive``, copies.

        ``tx`` defaults to the full barrier's declared bytes; with no ``copies`` one copy of
        the tx bytes is implied, or a plain write before the arrive when there are none.
        """
        r = self._ring(ring)
        nbytes = r.full.expect_tx if tx is None else tx
        nbytes = nbytes or 0
        sizes = list(copies) if copies is not None else ([nbytes] if nbytes else [])
        who = r.producer
        if wait_empty:
            self.step(who, Op.WAIT, ring, barrier=BarrierKind.EMPTY, parity=parity)
        if not sizes:
            self.step(who, Op.WRITE, ring)
        self.step(who, Op.ARRIVE, ring, barrier=BarrierKind.FULL, count=arrive, nbytes=nbytes)
        for size in sizes:
            self.step(who, Op.COPY, ring, barrier=BarrierKind.FULL, nbytes=size)

    def consume(
        self,
        ring: str,
        *,
        role: str | None = None,
        wait_full: bool = True,
        parity: int = 0,
        release: int | None = None,
        lag: int = 0,
        prearm: bool = False,
    ) -> None:
        """A consumer side in the language's order: ``full wait``, read, ``empty arrive``.

        ``role`` defaults to the ring's first consumer; ``release`` to the empty barrier's
        init count; ``prearm`` adds a pre-arm of the empty barrier (the producer must then
        first wait with parity 0).
        """
        r = self._ring(ring)
        who = r.consumers[0] if role is None else role
        count = r.empty.init_count if release is None else release
        if prearm:
            self.step(who, Op.ARRIVE, ring, barrier=BarrierKind.EMPTY, count=count, prearm=True)
        if wait_full:
            self.step(who, Op.WAIT, ring, barrier=BarrierKind.FULL, parity=parity)
        self.step(who, Op.READ, ring)
        self.step(who, Op.ARRIVE, ring, barrier=BarrierKind.EMPTY, count=count, lag=lag)

    def _ring(self, name: str) -> Ring:
        return next(r for r in self._rings if r.name == name)

    def build(self, *, cluster: int = 1, group: int = 1) -> Protocol:
        programs = tuple((r.name, tuple(self._programs.get(r.name, ()))) for r in self._roles)
        return Protocol(
            tuple(self._roles), tuple(self._rings), tuple(self._counters), tuple(self._bars), programs, cluster, group
        )


def _step_text(
    op: Op,
    channel: str,
    barrier: BarrierKind | None,
    count: int,
    nbytes: int,
    parity: int | None,
    lag: int,
    prearm: bool,
) -> str:
    """Contract-like source text for a synthesized step."""
    head = f"{channel}.{barrier.value}" if barrier is not None else channel
    words = [head, op.value]
    if op is Op.WAIT:
        words.append(f"parity {parity}")
    elif (op in (Op.ARRIVE, Op.ADD, Op.WAIT_GE) or op in BAR_OPS) and count:
        words.append(str(count))
    if nbytes:
        words.append(f"tx {nbytes}" if op is Op.ARRIVE else str(nbytes))
    if lag:
        words.append(f"lag {lag}")
    if prearm:
        words.append("prearm")
    return " ".join(words)


def remap_provenance(obj: Any, swap: Callable[[Provenance], Provenance]) -> Any:
    """``obj`` rebuilt with every :class:`Provenance` in it replaced by ``swap(p)``.

    A part in which nothing changes is kept as it is. A rebuilt dataclass is a copy of a
    valid one that differs in provenances only, so its ``__post_init__`` checks (which read
    no provenance but in their messages) are not run again: canonicalising a protocol and
    mapping a verdict back happen for every check of a fuzz campaign.
    """
    kind = _kind(type(obj))
    if kind is _LEAF:
        return obj
    if kind is _PROVENANCE:
        return swap(obj)
    if kind is _TUPLE:
        items = [remap_provenance(x, swap) for x in obj]
        if type(obj) is tuple and all(a is b for a, b in zip(items, obj, strict=True)):
            return obj
        return tuple(items)
    if kind is _FROZENSET:
        return frozenset(remap_provenance(x, swap) for x in obj)
    changed = False
    values = []
    for name in kind:
        old = getattr(obj, name)
        new = old if _kind(type(old)) is _LEAF else remap_provenance(old, swap)
        changed = changed or new is not old
        values.append((name, new))
    if not changed:
        return obj
    copy = object.__new__(type(obj))
    for name, new in values:
        object.__setattr__(copy, name, new)
    return copy


class _Marker(tuple[str, ...]):
    """How :func:`remap_provenance` treats a type that is not a dataclass with fields."""


_LEAF, _PROVENANCE, _TUPLE, _FROZENSET = _Marker(), _Marker(), _Marker(), _Marker()
_KINDS: dict[type, tuple[str, ...]] = {}


def _kind(cls: type) -> tuple[str, ...]:
    """A marker for ``cls``, or its ``__init__`` fields when it is a dataclass (looked up once per type)."""
    found = _KINDS.get(cls)
    if found is None:
        if issubclass(cls, Provenance):
            found = _PROVENANCE
        elif issubclass(cls, tuple):
            found = _TUPLE
        elif issubclass(cls, frozenset):
            found = _FROZENSET
        elif dataclasses.is_dataclass(cls):
            found = tuple(f.name for f in dataclasses.fields(cls) if f.init) or _LEAF
        else:
            found = _LEAF
        _KINDS[cls] = found
    return found
