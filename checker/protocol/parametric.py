"""Deadlock and race freedom for every ring depth and every trip count: a counter abstraction.

The bounded model (``smt.py``) decides a protocol for one depth per ring and ``2·depth+1``
iterations per role. This module proves L-DEADLOCK's and L-RACE's queries for every depth
``D`` of each ring in a range (``lo..hi`` or ``lo..``) and every trip count ``N >= 1`` at
once, or says why it cannot; the caller then falls back to the bounded model. It only ever
answers *safe*: a rejection, with its shortest trace, stays the bounded model's.

Semantics (``model.py``, the same as ``events.py`` and ``explore.py``): every role runs its
prologue (each `prearm` step once per slot) and then ``N`` iterations of its program; a
step of iteration ``i`` acts on data iteration ``j = i - lag`` (none when ``j < 0``), slot
``j mod D``, and a wait with first parity ``p`` waits for parity ``p xor (j div D) mod 2``.
A role that takes turn ``t`` of ``n`` runs only the data iterations ``j = k·n + t``: its
iteration ``k`` runs data ``k·n + t``, and it runs the ``M`` iterations whose data is
below ``N`` (``M·n + t >= N > (M - 1)·n + t``, linear: ``n`` and ``t`` are constants).

The abstraction. A role's progress is a pair of counters, its iteration ``i`` and its
position in the program (a `bar.sync` takes two: arrive, then wait), plus its place in the
prologue. From them, every step's execution count ``c`` is linear (``i`` or ``i + 1``) and
so is the number of its role's data iterations it has acted on, ``d = max(0, c - lag)``;
it acted on data ``x >= 0`` of its role iff ``x < (c - lag)·n + t``. For a barrier
``B`` (a ring's `full` or `empty`), data iteration ``x`` is *done*, ``E_B(x)``, when every
step that changes ``B`` in the loop (its arrivals, expect_tx steps and copies, the
*movers*) of a role that takes ``x`` has acted on ``x``; a pre-armed barrier's prologue is
data ``-D .. -1`` (done when every pre-arm step passed its slot), and nothing earlier
exists. In the abstract system a parity wait on data ``j`` passes iff
``E_B(j - (p + b)·D)`` (``b``: the barrier is pre-armed), a counter wait iff the sum of the
counter's additions (linear in the counts) reaches its threshold, a `bar.sync` iff every
participant of the named barrier arrived for the same generation (a participant's arrival
before its loop is its generation 0, its loop arrivals the next ones). Every guard is linear
in the counters, ``D`` and ``N`` (``x mod n`` with a constant ``n`` included).

Asynchronous reads (``reads async``, ``tcgen05.ld``, a TMA store's reads of shared memory)
change no barrier: they only decide when a consumer is done with a slot. A read of data
``x`` is over at the first later read wait of its ring that covers ``x`` (a read wait of
iteration ``k`` with lag ``L`` covers data up to ``k - L``; without a lag, one placed
before the read in the program covers it only in the next iteration), so "over" is linear
in that read wait's count. A ring that is not synchronized (a role's own staging buffer) has
no barrier: only its races are asked, with the producer as its own consumer.

Several CTAs. The counters are per *process*: a role in one CTA (``ctas = cluster x group``
of them, named ``role@cta`` as in traces), running the steps its CTA runs (``part``: ``on
leader`` in cluster rank 0, ``on first`` in split 0, ...). Every barrier, slot and named
barrier is a CTA's own, so ``E_B`` and every other guard above is per CTA: the movers of CTA
``c``'s barrier are the positions of every process that act on it. A step that acts on several
CTAs' barriers or slots (``multicast``: every CTA of the cluster, in rank order; ``remote``: the
next rank's) is one position per target, in the order :func:`checker.protocol.events.unroll`
emits them, so a multicast release into the peer's barrier is a mover of that barrier, and a
multicast copy writes (and must find released) the peer's slot; a pre-arm of several barriers
arms them slot-major. A ``grid`` counter has a word per tile (data iteration) and cluster rank:
its value for tile ``x`` is the sum of the adds of the group's processes of that rank that
acted on ``x`` (linear, exact: a word is never reused), and a wait on it passes iff that sum
reaches its threshold: its count, or the adds of the splits a relative threshold names
(``split``, ``others``, ``all``: a constant per CTA and residue of the turns' period, from
:func:`checker.protocol.events.relative_threshold`). The first split of a tile waits for none
(``split``), so the order argument is the solver's: a tile's split ``s`` is blocked only while
some split before it has not added, and that one is not blocked on the tile (O4). Every trip
count is the same in every CTA (``model.py``).

The class of protocols covered (checked first; anything else falls back, with the reason):

* C1, accounting: per CTA's barrier of a synchronized ring that any step touches (some must) and
  per data iteration (its movers are those of the roles that take it: one residue per turn
  period) the loop arrivals equal its init count, the pre-arms (if any) too, a barrier
  pre-armed in one CTA is pre-armed in every CTA that touches it, expected bytes equal completed ones and the
  declared ones, counts are in range, and every first parity follows the convention (no
  L-ARRIVE, L-TXBYTES or L-PARITY finding);
* C2, exact completion: for every barrier some role waits on and every data iteration, no
  proper subset of its movers that the movers' program order allows (a prefix per process)
  has the arrivals of a phase with its bytes balanced, so a phase completes exactly when
  the last mover of its data iteration acts;
* C3, pre-arms: a role that pre-arms a barrier some role waits on also moves it in its loop;
* C4, named barriers: each role steps a named barrier some role syncs on at most once per
  iteration, and the participants' thread counts add up to its count; a role that arrives
  on it before its loop (once) also arrives in its loop, with as many threads, so every
  generation has the same arrivals;
* C5, the model: only the step kinds and fields above (a kind or field this module does
  not know, such as one another change adds to ``model.py``, falls back explicitly);
* C6, what stays outside (:func:`_beyond`, each with its reason): a slot index that restarts
  every ``R`` iterations on a ring with barriers (its phases follow ``(j mod R) mod D``, not
  linear in ``D``), a lagged counter step, and a one-shot step of a role that takes turns.
  C1–C4 are asked per CTA, of every process.

Software pipelining and one-shot sides (specs/protocol-proofs.md has the arguments). A role
whose steps peel (a side's ``lag N``; a rendezvous side's ``lag N`` or ``peeled``) runs its
loop ``P`` more times after its ``M`` iterations, in which only the steps that peel that far
run: a step runs in the iterations ``lag .. M + peel - 1`` and its count is capped at
``M + peel``. A one-shot step (``once``) runs in iteration 0 before the loop's positions or in
the last iteration after them, on data 0. A restarting slot index on a ring without barriers
enters only O5, through the slot's previous use (:meth:`_State.previous`), linear per case of
the depth below ``R``. A `bar.sync` before the loop is the prologue's two moves (arrive, then
wait for generation 0).

The invariant ``I`` over the counters (``D`` and ``N`` symbolic) is the conjunction of:

* S, structure: ranges of the counters; a process's loop starts after its prologue;
* H, history: a wait that ran ``c`` times saw its guard true in its iterations ``c - 1`` back
  to ``c - P`` (``P`` the turns' period: a guard of data ``x`` implies the one of ``x - P``,
  whose data the same roles take, but not of ``x - 1``, which another role may take);
* NM, no mixing: a mover that acted on data ``y`` found ``E_B(y - D)`` (the slot's
  previous use complete), and a named-barrier arrival of generation ``y`` found every
  participant arrived for ``y - 1`` (asked of barriers some role waits on: the state of
  one nobody waits on decides nothing).

Proof obligations, each an unsatisfiable query over linear integer arithmetic with every
depth in its range and ``N >= 1``:

* O1, initiation: the initial state satisfies ``I``;
* O2, consecution: ``I`` and a step of any role imply ``I`` after it (this includes that
  every mover, when it acts, finds its slot's previous use complete);
* O3, windows: at every parity wait on data ``j``, with ``x = j - (p + b)·D``, the barrier
  is neither two phases behind nor one ahead: ``E_B(x - D)`` and not ``E_B(x + D)``;
* O4, deadlock: no state of ``I`` has every unfinished role at a wait whose guard is false
  while some role is unfinished;
* O5, races per ring: no state of ``I`` has the producer at a write of data ``y >= D``
  while a consumer that takes ``y - D`` has not finished an access of it that exists (a
  read, over at its read wait when asynchronous, or a release; a release past the run's
  last iteration does not exist) (overwrite), or a consumer at a read of ``y`` while a
  write of ``y`` has not run (early read), per CTA whose slot the write or read touches (a
  consumer is done with a slot at its reads and its first release of the data iteration,
  whichever CTA's barrier that release reaches, as ``smt.py`` asks); per grid counter, no
  state has a process at a read of tile ``x`` while a process of another CTA of its rank is
  at a write of ``x`` (conflict).

O1 and the consecution of S and H hold by construction: the initial counters are zero,
a step keeps the counters' shape, and every guard only grows true as counters grow (a
wait runs only when its guard holds). NM's consecution is the pre-state question "a mover
about to act on ``y`` finds ``E_B(y - D)``". So the check asks the solver for that part
of O2 and for O3–O5 (:func:`prove`); ``exhaustive`` asks for O1 and O2 in full too, which
the tests do on random protocols.

Why they suffice. C1, C2 and NM make every barrier's real state a function of the
counters: its completed phases are the data iterations done on its slot, in order, and a
phase completes exactly at its last mover. With O3, a real parity wait (it passes iff the
completed phases have the other parity) passes exactly when the abstract guard holds: the
window leaves two candidate phase counts, one of each parity. A named barrier's generation
at a loop arrival of iteration ``y`` is ``y``, or ``y + 1`` for a role that arrived before
its loop (NM, C4: every generation gets each participant's arrival once), so its
`bar.sync` passes iff every participant arrived for that generation; a counter's value is
exactly the linear sum, and a grid counter's word of a tile the sum of that tile's adds.
Every process's steps on another CTA's barrier are positions of its own program, so the
barriers of several CTAs are barriers like one CTA's with more movers. Turns change only
which data a role's counters stand for, and an asynchronous read's completion is program
order in its own process: neither adds state to the real system. So, by induction on the
length of a run (O1, O2), the real and the abstract system have the same runs from the
initial state, and O4 and O5 over-approximate their reachable states: no run
of any length, at any depth in range, deadlocks or races. What O1–O5 cannot prove (the
invariant may be too weak, or the protocol is wrong) is left to the bounded model.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import z3

from checker.protocol.events import process_name, relative_threshold, runs_in, targets
from checker.protocol.model import (
    MBAR_MAX_COUNT,
    Barrier,
    BarrierKind,
    Counter,
    InitBy,
    NamedBarrier,
    Op,
    Protocol,
    Ring,
    Role,
    Step,
    Target,
    Threshold,
)
from solver import context, verdict_of
from solver import text as T
from solver.text import Script, Term

DepthRange = tuple[int, int | None]
"""A ring's depths: ``lo..hi``, ``hi`` None when unbounded."""

MAX_PREFIXES = 4096
"""The most prefix combinations C2 enumerates for one barrier (more falls back)."""

PARITY_OPS = frozenset({Op.WAIT})
MOVER_OPS = frozenset({Op.ARRIVE, Op.EXPECT_TX, Op.COPY})
KNOWN_OPS = frozenset(
    {
        Op.WAIT,
        Op.ARRIVE,
        Op.EXPECT_TX,
        Op.COPY,
        Op.WRITE,
        Op.READ,
        Op.READ_WAIT,
        Op.ADD,
        Op.WAIT_GE,
        Op.BAR_SYNC,
        Op.BAR_ARRIVE,
    }
)

_KNOWN_FIELDS: dict[type, frozenset[str]] = {
    Protocol: frozenset({"roles", "rings", "counters", "named_barriers", "programs", "cluster", "group"}),
    Role: frozenset({"name", "warps", "provenance", "turn", "turns"}),
    Ring: frozenset(
        {"name", "depth", "producer", "consumers", "full", "empty", "provenance", "restart", "synchronized"}
    ),
    Barrier: frozenset({"kind", "init_count", "provenance", "expect_tx", "init_by"}),
    InitBy: frozenset({"role", "provenance", "fenced"}),
    Counter: frozenset({"name", "producer", "consumer", "provenance", "scope", "grid"}),
    NamedBarrier: frozenset({"name", "threads", "provenance"}),
    Step: frozenset(
        {
            "role",
            "op",
            "channel",
            "provenance",
            "barrier",
            "count",
            "nbytes",
            "parity",
            "lag",
            "prearm",
            "asynchronous",
            "part",
            "target",
            "threshold",
            "peel",
            "once",
        }
    ),
}


@dataclass(frozen=True)
class ParametricResult:
    """What the parametric argument decided.

    ``proved``: O1–O5 hold, so no run at any depth in ``depths`` (ring, lo, hi; hi None:
    unbounded) and any trip count deadlocks or races; otherwise ``reason`` says which class
    condition or obligation failed. ``checks`` solver checks took ``seconds``.
    """

    proved: bool
    reason: str = ""
    depths: tuple[tuple[str, int, int | None], ...] = ()
    checks: int = 0
    seconds: float = 0.0


def prove(
    protocol: Protocol, depths: Mapping[str, DepthRange] | None = None, *, rlimit: int, exhaustive: bool = False
) -> ParametricResult:
    """Prove ``protocol`` free of deadlocks and races for every depth in ``depths`` and every trip count.

    ``depths`` maps a ring to its range (default: its own depth); ``rlimit`` bounds each
    solver check (a check that runs out proves nothing); ``exhaustive`` has the solver check
    the obligations that hold by construction too (O1, all of O2).
    """
    start = time.perf_counter()
    ranges = {r.name: (depths or {}).get(r.name, (r.depth, r.depth)) for r in protocol.rings}
    shown = tuple((name, lo, hi) for name, (lo, hi) in sorted(ranges.items()))
    for name, (lo, hi) in ranges.items():
        if lo < 1 or (hi is not None and hi < lo):
            raise ValueError(f"ring `{name}`: depth range {lo}..{hi} is empty")
    reason = outside(protocol)
    if reason is not None:
        return ParametricResult(False, f"outside the covered class: {reason}", shown, 0, time.perf_counter() - start)
    prover = _Prover(protocol, ranges, rlimit)
    reason = prover.run(exhaustive)
    return ParametricResult(reason is None, reason or "", shown, prover.checks, time.perf_counter() - start)


# -- the processes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pos:
    """One position of a process's loop: a step, one half (``arrive``, ``wait``) of a `bar.sync`, or
    one of the barriers or slots of a step that acts on several CTAs' (``remote``, ``multicast``).

    ``bar`` is the CTA whose barrier a mover acts on, ``lands`` the CTA whose slot a write or
    read touches (the process's own for the other steps).
    """

    index: int
    step: Step
    part: str = ""
    bar: int = 0
    lands: int = 0

    @property
    def waits(self) -> bool:
        return self.step.op in (Op.WAIT, Op.WAIT_GE) or self.part == "wait"

    @property
    def arrives_named(self) -> bool:
        return self.step.op is Op.BAR_ARRIVE or self.part == "arrive"


@dataclass(frozen=True)
class _Arm:
    """A step before the loop: a pre-arm runs once per slot on each barrier it targets (``bars``,
    slot-major as the hardware steps them), a named-barrier arrival once."""

    step: Step
    bars: tuple[int, ...]


@dataclass(frozen=True)
class _Program:
    """One process: a role in one CTA, with the steps that CTA runs (``part``)."""

    proc: str
    role: str
    cta: int
    prologue: tuple[_Arm, ...]
    loop: tuple[_Pos, ...]


def _programs(protocol: Protocol) -> list[_Program]:
    """Per process (CTA-major, roles in declaration order, as ``events.unroll``), its prologue and loop."""
    out = []
    for cta in range(protocol.ctas):
        for role in protocol.roles:
            steps = [s for s in protocol.program(role.name) if runs_in(protocol, s, cta)]
            # a one-shot side's steps open iteration 0 (before the loop) or close the last (after it)
            steps = (
                [s for s in steps if s.once == "before"]
                + [s for s in steps if not s.once]
                + [s for s in steps if s.once == "after"]
            )
            prologue = tuple(
                _Arm(s, targets(protocol, s, cta) if s.barrier is not None else (cta,)) for s in steps if s.prearm
            )
            loop: list[_Pos] = []
            for step in steps:
                if step.prearm:
                    continue
                if step.op is Op.BAR_SYNC:
                    loop += [_Pos(len(loop), step, "arrive", cta, cta), _Pos(len(loop) + 1, step, "wait", cta, cta)]
                elif step.op in MOVER_OPS:
                    for t in targets(protocol, step, cta):
                        lands = t if step.op is Op.COPY and step.target is Target.ALL else cta
                        loop.append(_Pos(len(loop), step, "", t, lands))
                elif step.op is Op.READ and step.barrier is None and _is_ring(protocol, step.channel):
                    loop += [_Pos(len(loop) + k, step, "", cta, t) for k, t in enumerate(targets(protocol, step, cta))]
                else:
                    loop.append(_Pos(len(loop), step, "", cta, cta))
            name = process_name(protocol, role.name, cta)
            out.append(_Program(name, role.name, cta, prologue, tuple(loop)))
    return out


def _is_ring(protocol: Protocol, channel: str) -> bool:
    return any(r.name == channel for r in protocol.rings)


# -- the class ------------------------------------------------------------------------------


def outside(protocol: Protocol) -> str | None:
    """Why ``protocol`` is not in the class the argument covers (C1–C6), or None when it is."""
    for found in (_beyond(protocol), _unknown_model(protocol)):
        if found is not None:
            return found
    programs = _programs(protocol)
    for found in (_accounting(protocol, programs), _completion(protocol, programs), _named(protocol, programs)):
        if found is not None:
            return found
    return None


def _beyond(protocol: Protocol) -> str | None:
    """C6: the constructs the argument leaves to the bounded model, each with its reason."""
    for ring in protocol.rings:
        if ring.restart and ring.synchronized:
            return (
                f"ring `{ring.name}`'s slot index restarts every {ring.restart} iterations and its barriers' "
                "phases follow the slots (not linear in the depth)"
            )
    for role, steps in protocol.programs:
        for step in steps:
            if step.once and protocol.role(role).turns > 1:
                return f"`{role}` takes turns and runs a one-shot step on `{step.channel}`"
            if step.lag and step.op in (Op.ADD, Op.WAIT_GE):
                return f"`{role}`'s step on counter `{step.channel}` lags (only ring and named-barrier steps may)"
    return None


def _unknown_model(protocol: Protocol) -> str | None:
    """C5: a step kind, or a model field with a value other than its default, this module does not know."""
    for role, steps in protocol.programs:
        for step in steps:
            if step.op not in KNOWN_OPS:
                return f"step kind `{step.op.value}` of `{role}`"
    objects: list[Any] = [protocol, *protocol.roles, *protocol.counters, *protocol.named_barriers]
    for ring in protocol.rings:
        objects += [ring, ring.full, ring.empty, *ring.full.init_by, *ring.empty.init_by]
    objects += [s for _, steps in protocol.programs for s in steps]
    for obj in objects:
        known = _KNOWN_FIELDS.get(type(obj))
        if known is None:
            return f"model part `{type(obj).__name__}`"
        for f in dataclasses.fields(obj):
            if f.name in known:
                continue
            if f.default is not dataclasses.MISSING and getattr(obj, f.name) == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and getattr(obj, f.name) == f.default_factory():
                continue
            return f"`{type(obj).__name__}.{f.name}` of the model"
    return None


def _period(protocol: Protocol) -> int:
    """The data iterations after which the roles' turns repeat (1 when no role takes turns)."""
    return math.lcm(*(r.turns for r in protocol.roles)) if protocol.roles else 1


@dataclass(frozen=True)
class _Touch:
    """What acts on one CTA's barrier of a ring: the loop positions of every process that move it
    (``(process, role, position)``), the pre-arm steps that arm it, and whether a process waits on it."""

    movers: tuple[tuple[str, str, _Pos], ...]
    armers: tuple[Step, ...]
    waited: bool

    @property
    def touched(self) -> bool:
        return bool(self.movers or self.armers or self.waited)


def _touches(protocol: Protocol, programs: list[_Program], ring: str, kind: BarrierKind) -> list[_Touch]:
    """Per CTA, what acts on its ``kind`` barrier of ``ring``."""
    out = []
    for cta in range(protocol.ctas):
        movers = tuple(
            (g.proc, g.role, p)
            for g in programs
            for p in g.loop
            if p.step.channel == ring and p.step.barrier is kind and p.step.op in MOVER_OPS and p.bar == cta
        )
        armers = tuple(
            a.step
            for g in programs
            for a in g.prologue
            if a.step.channel == ring and a.step.barrier is kind
            for t in a.bars
            if t == cta
        )
        waited = any(
            p.step.op is Op.WAIT and p.step.channel == ring and p.step.barrier is kind
            for g in programs
            if g.cta == cta
            for p in g.loop
        )
        out.append(_Touch(movers, armers, waited))
    return out


def _accounting(protocol: Protocol, programs: list[_Program]) -> str | None:
    """C1: per-phase accounting and first parities as the static rules ask (they report it otherwise),
    on every CTA's barrier that some step touches and for every data iteration: with turns, a phase's
    movers are those of the roles that take it. A barrier pre-armed in one CTA is pre-armed in every
    CTA that touches it."""
    for ring in protocol.rings:
        if not ring.synchronized:
            continue
        for kind in BarrierKind:
            bar = ring.barrier(kind)
            name = f"`{ring.name}.{kind.value}`"
            touches = [t for t in _touches(protocol, programs, ring.name, kind) if t.touched]
            if not touches:
                return f"the arrivals on {name} do not make its phases (L-ARRIVE)"
            if len({bool(t.armers) for t in touches}) > 1:
                return f"{name} is pre-armed in some CTAs and not in others"
            for touch in touches:
                for residue in range(_period(protocol)):
                    steps = [p.step for _, role, p in touch.movers if protocol.role(role).takes(residue)]
                    loop = sum(s.count for s in steps if s.op is Op.ARRIVE)
                    prearm = [s.count for s in touch.armers]
                    expected = sum(s.nbytes for s in steps if s.op in (Op.ARRIVE, Op.EXPECT_TX))
                    completed = sum(s.nbytes for s in steps if s.op is Op.COPY)
                    if (
                        loop != bar.init_count
                        or (prearm and sum(prearm) != bar.init_count)
                        or bar.init_count > MBAR_MAX_COUNT
                    ):
                        return f"the arrivals on {name} do not make its phases (L-ARRIVE)"
                    if expected != completed or max(expected, completed) > MBAR_MAX_COUNT:
                        return f"the bytes on {name} do not balance (L-TXBYTES)"
                    if bar.expect_tx is not None and bar.expect_tx != expected:
                        return f"the bytes on {name} differ from its declaration (L-TXBYTES)"
            every = [s for _, prog in protocol.programs for s in prog if s.channel == ring.name and s.barrier is kind]
            armed = any(s.prearm for s in every)
            right = (1 if armed else 0) if kind is BarrierKind.FULL else (0 if armed else 1)
            if any(s.op is Op.WAIT and s.parity != right for s in every):
                return f"a first parity on {name} breaks the convention (L-PARITY)"
    return None


def waited(protocol: Protocol) -> frozenset[tuple[str, BarrierKind | None]]:
    """The barriers, counters and named barriers some role waits on (channel, and the ring's barrier).

    The state of one nobody waits on decides nothing: C2–C4 and the no-mixing part of the
    invariant are asked of these only.
    """
    out: set[tuple[str, BarrierKind | None]] = set()
    for _, steps in protocol.programs:
        out.update((s.channel, s.barrier) for s in steps if s.op in (Op.WAIT, Op.WAIT_GE, Op.BAR_SYNC))
    return frozenset(out)


def _completion(protocol: Protocol, programs: list[_Program]) -> str | None:
    """C2 and C3, per CTA's barrier: a phase completes exactly at its data iteration's last mover; a
    process that pre-arms a barrier moves it in its loop."""
    watched = waited(protocol)
    for ring in protocol.rings:
        for kind in BarrierKind:
            if (ring.name, kind) not in watched:
                continue
            bar = ring.barrier(kind)
            name = f"`{ring.name}.{kind.value}`"
            for cta in range(protocol.ctas):
                movers = [
                    (g.proc, g.role, p)
                    for g in programs
                    for p in g.loop
                    if p.step.channel == ring.name
                    and p.step.barrier is kind
                    and p.step.op in MOVER_OPS
                    and p.bar == cta
                ]
                moving = {proc for proc, _, _ in movers}
                for g in programs:
                    arms = [a for a in g.prologue if a.step.channel == ring.name and a.step.barrier is kind]
                    if any(cta in a.bars for a in arms) and g.proc not in moving:
                        return f"a role pre-arms {name} but does not arrive on it in its loop"
                for residue in range(_period(protocol)):
                    taking = [(proc, p) for proc, role, p in movers if protocol.role(role).takes(residue)]
                    found = _early_completion(bar, name, taking)
                    if found is not None:
                        return found
    return None


def _early_completion(bar: Barrier, name: str, movers: list[tuple[str, _Pos]]) -> str | None:
    """C2 for one data iteration's ``movers``: no prefix per process but all of them completes a phase."""
    per_proc: dict[str, list[Step]] = {}
    for proc, p in sorted(movers, key=lambda m: (m[0], m[1].step.lag, m[1].index)):
        per_proc.setdefault(proc, []).append(p.step)
    sequences = list(per_proc.values())
    combos = 1
    for seq in sequences:
        combos *= len(seq) + 1
    if combos > MAX_PREFIXES:
        return f"{name} has too many movers to enumerate"
    full = tuple(len(seq) for seq in sequences)
    for cut in itertools.product(*(range(len(seq) + 1) for seq in sequences)):
        if cut == full:
            continue
        ran = [s for seq, n in zip(sequences, cut, strict=True) for s in seq[:n]]
        arrivals = sum(s.count for s in ran if s.op is Op.ARRIVE)
        expected = sum(s.nbytes for s in ran if s.op in (Op.ARRIVE, Op.EXPECT_TX))
        completed = sum(s.nbytes for s in ran if s.op is Op.COPY)
        if arrivals == bar.init_count and expected == completed:
            return f"a phase of {name} can complete before its last mover"
    return None


def _named(protocol: Protocol, programs: list[_Program]) -> str | None:
    """C4, per CTA: one step per process and iteration on a named barrier, whose participants make its
    count; a process that arrives before its loop arrives in it too, with as many threads (its
    arrivals of generation ``g`` are then its pre-arrival and its loop's first ``g``), or nobody
    steps the barrier in a loop and the arrivals before the loops make its count (one generation)."""
    watched = waited(protocol)
    for bar in protocol.named_barriers:
        if (bar.name, None) not in watched:
            continue
        for cta in range(protocol.ctas):
            here = [g for g in programs if g.cta == cta]
            steps = [(g.proc, p.step) for g in here for p in g.loop if p.step.channel == bar.name and p.part != "wait"]
            early = [(g.proc, a.step) for g in here for a in g.prologue if a.step.channel == bar.name]
            if len({proc for proc, _ in early}) != len(early):
                return f"a role arrives on named barrier `{bar.name}` more than once before its loop"
            if not steps:  # stepped before the loops only: one generation, which the arrivals must make
                if early and sum(s.count for _, s in early) != bar.threads:
                    return f"the arrivals on named barrier `{bar.name}` before the loops do not make its count"
                continue
            procs = [proc for proc, _ in steps]
            if len(set(procs)) != len(procs):
                return f"a role steps named barrier `{bar.name}` more than once per iteration"
            counts = dict((proc, s.count) for proc, s in steps)
            if any(counts.get(proc) != s.count for proc, s in early):
                return (
                    f"a role arrives on named barrier `{bar.name}` before its loop but not in it, or with other threads"
                )
            if sum(s.count for _, s in steps) != bar.threads:
                return f"the participants of named barrier `{bar.name}` do not make its count"
    return None


# -- the abstract system --------------------------------------------------------------------


class _State:
    """One copy of the state variables (``tag`` tells the copies apart) and the terms derived from them."""

    def __init__(self, prover: _Prover, tag: str) -> None:
        self.p = prover
        ints = prover.script.int
        procs = [g.proc for g in prover.programs]
        self.i = {r: ints(f"i:{r}{tag}") for r in procs}
        self.pos = {r: ints(f"pos:{r}{tag}") for r in procs}
        self.cur = {r: ints(f"cur:{r}{tag}") for r in procs}
        self.sig = {r: ints(f"sig:{r}{tag}") for r in procs}
        self._counts: dict[tuple[str, int], Term] = {}

    def variables(self) -> list[Term]:
        return [v for part in (self.i, self.pos, self.cur, self.sig) for v in part.values()]

    # -- counters

    def count(self, proc: str, pos: _Pos) -> Term:
        """How many loop iterations passed ``pos``: those before its lag included, those of the peeled
        tail in which it does not run not (its runs are the iterations ``lag .. count - 1``)."""
        key = (proc, pos.index)
        found = self._counts.get(key)
        if found is None:
            found = self.i[proc] + T.If(self.pos[proc] > pos.index, 1, 0)
            if pos.step.once == "before":  # it runs in iteration 0 only
                found = T.If(found > 1, 1, found)
            elif pos.step.once == "after":  # in the last iteration only (the loop's and its tail's)
                found = T.If(found >= self.p.t[proc], 1, 0)
            elif self.p.tail[self.p.program(proc).role]:
                end = self.p.m[proc] + pos.step.peel
                found = T.If(found > end, end, found)
            self._counts[key] = found
        return found

    def data(self, proc: str, pos: _Pos) -> Term:
        """How many of its role's data iterations ``pos`` has acted on."""
        c, lag = self.count(proc, pos), pos.step.lag
        return c if lag == 0 else T.If(c >= lag, c - lag, 0)

    def takes(self, proc: str, x: Term) -> Term:
        """Whether ``proc`` runs data iteration ``x`` (its role's turns)."""
        info = self.p.info(proc)
        return T.TRUE if info.turns == 1 else x % info.turns == info.turn

    def acted(self, proc: str, pos: _Pos, x: Term, later: int = 0) -> Term:
        """Whether ``pos`` acted on data iteration ``x >= 0`` of its role (``later``: extra lag); true of
        a data iteration its role does not take."""
        info = self.p.info(proc)
        done = self.count(proc, pos) - (pos.step.lag + later)
        if info.turns == 1:
            return x < done
        return T.Implies(self.takes(proc, x), x < done * info.turns + info.turn)

    def added(self, proc: str, pos: _Pos, x: Term) -> Term:
        """What ``pos`` (an add) added to the word of data iteration ``x >= 0``."""
        return T.If(T.And(self.takes(proc, x), self.acted(proc, pos, x)), pos.step.count, 0)

    def armed_at_least(self, proc: str, index: int, bar: int, least: Term) -> Term:
        """Whether the ``index``-th step before ``proc``'s loop has armed at least ``least`` slots of CTA
        ``bar``'s barrier (it arms slot-major: slot ``s`` of its ``u``-th target is its step ``s·T + u``)."""
        arm = self.p.program(proc).prologue[index]
        width, u = len(arm.bars), arm.bars.index(bar)
        cur, sig, depth = self.cur[proc], self.sig[proc], self.p.depth[arm.step.channel]
        now = T.Or(least <= 0, sig >= (least - 1) * width + u + 1)
        return T.If(cur > index, least <= depth, T.If(cur == index, now, least <= 0))

    def named_armed(self, proc: str, index: int) -> Term:
        """Whether ``proc``'s ``index``-th step before its loop (a named-barrier arrival, or the arrival of
        a `bar.sync`) ran."""
        return T.If(self.cur[proc] > index, 1, T.If(self.cur[proc] == index, self.sig[proc], 0))

    def in_loop(self, proc: str) -> Term:
        return self.cur[proc] == len(self.p.program(proc).prologue)

    def here(self, proc: str, pos: _Pos) -> Term:
        """``proc``'s loop is at ``pos`` (whether or not its step runs in this iteration)."""
        return T.And(self.in_loop(proc), self.i[proc] < self.p.t[proc], self.pos[proc] == pos.index)

    def runs(self, proc: str, pos: _Pos) -> Term:
        """Whether ``pos``'s step runs in ``proc``'s current iteration: not before its lag, and in the
        peeled tail only in the iterations it peels."""
        step, i = pos.step, self.i[proc]
        if step.once:  # a one-shot step: before the loop (iteration 0's first) or after it (the last's last)
            return i == 0 if step.once == "before" else i == self.p.t[proc] - 1
        conditions = [i >= step.lag] if step.lag else []
        if step.peel < self.p.tail[self.p.program(proc).role]:
            conditions.append(i < self.p.m[proc] + step.peel)
        return T.And(*conditions)

    def at(self, proc: str, pos: _Pos) -> Term:
        """``proc`` is about to run ``pos``."""
        return T.And(self.here(proc, pos), self.runs(proc, pos))

    def done(self, proc: str) -> Term:
        loop = self.p.program(proc).loop
        return T.And(self.in_loop(proc), self.i[proc] == self.p.t[proc]) if loop else self.in_loop(proc)

    # -- guards

    def mbar_done(self, ring: str, kind: BarrierKind, cta: int, x: Term) -> Term:
        """``E_B(x)`` of CTA ``cta``'s barrier: every step that changes it, of a role that takes ``x``,
        acted on data ``x``."""
        movers, armers = self.p.movers[(ring, kind, cta)], self.p.armers[(ring, kind, cta)]
        depth = self.p.depth[ring]
        loop = T.And(*[self.acted(r, pos, x) for r, pos in movers]) if movers else T.FALSE
        if not armers:
            return T.Or(x < 0, loop)
        every = T.And(*[self.armed_at_least(r, a, cta, depth) for r, a in armers])
        some = T.And(*[self.armed_at_least(r, a, cta, x + depth + 1) for r, a in armers])
        return T.If(x < T.Val(0) - depth, True, T.If(x < 0, some, T.And(every, loop)))

    def named_done(self, name: str, cta: int, x: Term) -> Term:
        """Every participant of CTA ``cta``'s named barrier ``name`` arrived for generation ``x`` (a
        pre-arrival is its participant's generation 0; a barrier stepped before the loops only has
        that one generation)."""
        parts = dict(self.p.participants[(name, cta)])
        ahead = self.p.named_armers[(name, cta)]
        arrivals = [
            (self.data(r, parts[r]) if r in parts else 0) + (self.named_armed(r, ahead[r]) if r in ahead else 0)
            for r in (*parts, *(r for r in ahead if r not in parts))
        ]
        return T.Or(x < 0, T.And(*[a >= x + 1 for a in arrivals]))

    def generation(self, proc: str, pos: _Pos, k: Term) -> Term:
        """The generation of its named barrier that ``proc``'s loop arrival at ``pos`` of iteration ``k``
        joins: its arrivals before it (a step that lags ``L`` arrives from iteration ``L`` on), one
        more when it arrived before its loop."""
        name, lag = pos.step.channel, pos.step.lag
        ahead = proc in self.p.named_armers[(name, self.p.program(proc).cta)]
        return k - lag + (1 if ahead else 0)

    def counter_value(self, name: str, cta: int) -> Term:
        """A counter of one CTA: every add of its processes."""
        return T.Sum([self.count(r, pos) * pos.step.count for r, pos in self.p.adds[(name, cta)]])

    def word(self, name: str, rank: int, x: Term) -> Term:
        """A grid counter's word of data iteration (tile) ``x`` and cluster rank ``rank``: the adds of
        that tile by the group's CTAs of that rank."""
        return T.Sum([self.added(r, pos, x) for r, pos in self.p.adds[(name, rank)]])

    def parity_target(self, proc: str, pos: _Pos, j: Term) -> Term:
        """The data iteration ``x`` whose completion a parity wait on data ``j`` waits for."""
        step = pos.step
        assert step.barrier is not None and step.parity is not None
        armed = self.p.armers[(step.channel, step.barrier, self.p.program(proc).cta)]
        shift = step.parity + (1 if armed else 0)
        return j if shift == 0 else j - self.p.depth[step.channel] * shift

    def guard(self, proc: str, pos: _Pos, k: Term) -> Term:
        """Whether the wait at ``pos`` passes in ``proc``'s iteration ``k`` (the abstract guard)."""
        step = pos.step
        cta = self.p.program(proc).cta
        if step.op is Op.WAIT:
            assert step.barrier is not None
            target = self.parity_target(proc, pos, self.p.step_data(proc, pos, k))
            return self.mbar_done(step.channel, step.barrier, cta, target)
        if step.op is Op.WAIT_GE:
            if not self.p.protocol.counter(step.channel).grid:
                return self.counter_value(step.channel, cta) >= (k + 1) * step.count
            x = self.p.data_of(proc, k)
            return self.word(step.channel, cta % self.p.protocol.cluster, x) >= self.p.threshold(proc, step, x)
        return self.named_done(step.channel, cta, self.generation(proc, pos, k))

    # -- the invariant

    def structure(self) -> list[Term]:
        p = self.p
        out: list[Term] = []
        for g in p.programs:
            r = g.proc
            i, pos, cur, sig = self.i[r], self.pos[r], self.cur[r], self.sig[r]
            out += [cur >= 0, cur <= len(g.prologue), sig >= 0, i >= 0, i <= p.t[r], pos >= 0]
            out += [T.Implies(cur == a, sig < p.slots(arm)) for a, arm in enumerate(g.prologue)]
            out.append(T.Implies(self.in_loop(r), sig == 0))
            out.append(T.Implies(T.Not(self.in_loop(r)), T.And(i == 0, pos == 0)))
            out.append(pos < max(1, len(g.loop)))
            out.append(T.Implies(i == p.t[r], pos == 0))
            if not g.loop:
                out.append(i == 0)
        return out

    def history(self) -> list[Term]:
        """A wait that ran ``c`` times saw its guard true in each of its last iterations, one turns'
        period of them (a guard of data ``x`` implies the guards of ``x - period``, not of every earlier
        data iteration: another role may take those); a `bar.sync` before the loop that passed saw its
        generation 0 complete."""
        out: list[Term] = []
        period = _period(self.p.protocol)
        for g in self.p.programs:
            for pos in g.loop:
                if pos.waits and self.p.modelled(pos.step.channel, pos.step.barrier):
                    c, lag = self.count(g.proc, pos), pos.step.lag
                    out += [
                        T.Implies(c - back >= lag, self.guard(g.proc, pos, c - back)) for back in range(1, period + 1)
                    ]
            for a, arm in enumerate(g.prologue):
                if arm.step.op is Op.BAR_SYNC:
                    out.append(T.Implies(self.cur[g.proc] > a, self.named_done(arm.step.channel, g.cta, T.Val(0))))
        return out

    def no_mixing(self) -> list[Term]:
        out: list[Term] = []
        for (ring, kind, cta), movers in self.p.movers.items():
            if not self.p.modelled(ring, kind):
                continue
            for r, pos in movers:
                d = self.data(r, pos)
                last = self.p.data_of(r, d - 1)
                out.append(T.Implies(d >= 1, self.mbar_done(ring, kind, cta, last - self.p.depth[ring])))
        for (name, cta), parts in self.p.participants.items():
            if not self.p.modelled(name, None):
                continue
            for r, pos in parts:
                c = self.count(r, pos)
                out.append(T.Implies(c - pos.step.lag >= 1, self.named_done(name, cta, self.generation(r, pos, c - 2))))
        return out

    def invariant(self) -> Term:
        return T.And(*self.structure(), *self.history(), *self.no_mixing())

    # -- what the obligations ask of one state

    def mixing(self) -> list[tuple[str, Term]]:
        """States where a mover is about to act on a slot whose previous use is not complete,
        or a named-barrier arrival finds the previous generation incomplete."""
        out = []
        for (ring, kind, cta), movers in self.p.movers.items():
            if not self.p.modelled(ring, kind):
                continue
            for r, pos in movers:
                k = self.i[r] - pos.step.lag
                y = self.p.step_data(r, pos, self.i[r])
                early = T.And(self.at(r, pos), k >= 0, T.Not(self.mbar_done(ring, kind, cta, y - self.p.depth[ring])))
                out.append((f"the slot reuse by `{r}`'s step on `{ring}.{kind.value}`{self.p.where(cta)}", early))
        for (name, cta), parts in self.p.participants.items():
            if not self.p.modelled(name, None):
                continue
            for r, pos in parts:
                previous = self.generation(r, pos, self.i[r] - 1)
                early = T.And(self.at(r, pos), T.Not(self.named_done(name, cta, previous)))
                out.append((f"the generation of `{r}`'s arrival on `{name}`", early))
        return out

    def blocked(self, proc: str) -> Term:
        """``proc`` is at a wait whose guard is false: in its loop, or at a `bar.sync` before it."""
        g = self.p.program(proc)
        waits = [
            T.And(self.pos[proc] == pos.index, self.runs(proc, pos), T.Not(self.guard(proc, pos, self.i[proc])))
            for pos in g.loop
            if pos.waits
        ]
        syncs = [
            T.And(self.cur[proc] == a, self.sig[proc] == 1, T.Not(self.named_done(arm.step.channel, g.cta, T.Val(0))))
            for a, arm in enumerate(g.prologue)
            if arm.step.op is Op.BAR_SYNC
        ]
        return T.Or(T.And(self.in_loop(proc), self.i[proc] < self.p.t[proc], T.Or(*waits)), *syncs)

    def deadlock(self) -> Term:
        procs = [g.proc for g in self.p.programs]
        return T.And(*[T.Or(self.done(r), self.blocked(r)) for r in procs], T.Or(*[T.Not(self.done(r)) for r in procs]))

    def windows(self) -> list[tuple[str, Term]]:
        out = []
        for g in self.p.programs:
            for pos in g.loop:
                step = pos.step
                if step.op is not Op.WAIT:
                    continue
                assert step.barrier is not None
                x = self.parity_target(g.proc, pos, self.p.step_data(g.proc, pos, self.i[g.proc]))
                depth = self.p.depth[step.channel]
                inside = T.And(
                    self.mbar_done(step.channel, step.barrier, g.cta, x - depth),
                    T.Not(self.mbar_done(step.channel, step.barrier, g.cta, x + depth)),
                )
                where = f"the parity window of `{g.proc}`'s wait on `{step.channel}.{step.barrier.value}`"
                out.append((where, T.And(self.at(g.proc, pos), T.Not(inside))))
        return out

    def finished(self, proc: str, pos: _Pos, x: Term) -> Term:
        """Whether ``proc``'s read at ``pos`` of data iteration ``x >= 0`` is over: a synchronous read has
        run on it, an asynchronous read has met the first later read wait that covers it. The read of
        ``x`` runs in iteration ``x + lag``; a read wait of iteration ``k`` with lag ``L`` covers data up
        to ``k - L`` read before it, so the first that covers ``x`` is of iteration ``x + L`` or, when
        the read comes later, ``x + lag`` (the next one when the read wait is before the read in the
        program)."""
        step = pos.step
        if not step.asynchronous:
            return self.acted(proc, pos, x)
        covers = [
            self.acted(proc, q, x, max(0, step.lag + (1 if q.index < pos.index else 0) - q.step.lag))
            for q in self.p.program(proc).loop
            if q.step.op is Op.READ_WAIT and q.step.channel == step.channel
        ]
        return T.Or(*covers)

    def released(self, proc: str, ring: str, x: Term) -> Term:
        """Whether ``proc`` is done with data iteration ``x >= 0`` of ``ring`` by its release: its first
        release of ``x`` (the least lag acts on it first; whichever CTA's barrier it reaches) ran, or it
        has none in the run (a release that lags beyond what it peels misses the last data iterations)."""
        loop = self.p.program(proc).loop
        releases = [q for q in loop if _releases(q.step, ring)]
        if not releases:
            return T.TRUE
        first = min(releases, key=lambda q: (q.step.lag, q.index))
        info, late = self.p.info(proc), first.step.lag - first.step.peel
        exists = x + late * info.turns < self.p.m[proc] * info.turns + info.turn if late else T.TRUE
        return T.Implies(exists, self.acted(proc, first, x))

    def previous(self, ring: Ring, y: Term) -> tuple[Term, Term]:
        """The data iteration that used the slot of data ``y`` last before it, and whether there is one.

        Without a restart it is ``y - D``. A slot index that restarts every ``R`` iterations uses slot
        ``(y mod R) mod D``: at a depth ``D >= R`` that is ``y mod R``, last used ``R`` iterations
        earlier; each depth below ``R`` (finitely many) is its own case, in which index ``r = y mod R``
        reuses the slot of ``r - D`` in its tile, or for ``r < D`` the last index of the previous
        tile with the same slot. Every case is linear (``R`` and the depth are constants in it)."""
        depth = self.p.depth[ring.name]
        if not ring.restart:
            x = y - depth
            return x, x >= 0
        period = ring.restart
        x = y - period
        lo, hi = self.p.ranges[ring.name]
        for d in range(min(period - 1, hi if hi is not None else period - 1), lo - 1, -1):
            within = y % period
            case: Term = y - d
            for r in range(d):
                last = r + d * ((period - 1 - r) // d)  # the last index of a tile with r's slot
                case = T.If(within == r, y - r - period + last, case)
            x = T.If(depth == d, case, x)
        return x, x >= 0

    def races(self, ring: Ring) -> list[tuple[str, Term]]:
        producers = [g for g in self.p.programs if g.role == ring.producer]
        consumers = [g for g in self.p.programs if g.role in ring.consumers]
        writes = [
            (g, pos)
            for g in producers
            for pos in g.loop
            if pos.step.channel == ring.name and pos.step.op in (Op.COPY, Op.WRITE)
        ]
        overwrite = []
        for g, pos in writes:
            x, reused = self.previous(ring, self.p.step_data(g.proc, pos, self.i[g.proc]))
            late = []
            for c in consumers:
                reads = [
                    q for q in c.loop if q.step.channel == ring.name and q.step.op is Op.READ and q.lands == pos.lands
                ]
                if not reads:
                    continue
                over = T.And(*[self.finished(c.proc, q, x) for q in reads], self.released(c.proc, ring.name, x))
                late.append(T.And(self.takes(c.proc, x), T.Not(over)))
            overwrite.append(T.And(self.at(g.proc, pos), reused, T.Or(*late)))
        early = []
        for c in consumers:
            for pos in c.loop:
                if pos.step.channel == ring.name and pos.step.op is Op.READ:
                    y = self.p.step_data(c.proc, pos, self.i[c.proc])
                    unwritten = [
                        T.And(self.takes(g.proc, y), T.Not(self.acted(g.proc, w, y)))
                        for g, w in writes
                        if w.lands == pos.lands
                    ]
                    early.append(T.And(self.at(c.proc, pos), T.Or(*unwritten)))
        return [
            (f"no overwrite on ring `{ring.name}`", T.Or(*overwrite)),
            (f"no early read on ring `{ring.name}`", T.Or(*early)),
        ]

    def conflicts(self, counter: Counter) -> list[tuple[str, Term]]:
        """A grid counter's tile read by one CTA while another CTA of its rank is about to write it."""
        if not counter.grid:
            return []
        cluster = self.p.protocol.cluster
        sides = [(g, pos) for g in self.p.programs for pos in g.loop if pos.step.channel == counter.name]
        both = [
            T.And(
                self.at(g.proc, r),
                self.at(h.proc, w),
                self.p.data_of(g.proc, self.i[g.proc]) == self.p.data_of(h.proc, self.i[h.proc]),
            )
            for g, r in sides
            if r.step.op is Op.READ
            for h, w in sides
            if w.step.op is Op.WRITE and h.cta != g.cta and h.cta % cluster == g.cta % cluster
        ]
        return [(f"no conflict on counter `{counter.name}`", T.Or(*both))] if both else []


def _releases(step: Step, ring: str) -> bool:
    """A consumer's release of a slot in the loop."""
    return step.channel == ring and not step.prearm and step.op is Op.ARRIVE and step.barrier is BarrierKind.EMPTY


class _Prover:
    """The abstract system of one protocol over symbolic depths and trip count, and its obligations."""

    def __init__(self, protocol: Protocol, ranges: Mapping[str, DepthRange], rlimit: int) -> None:
        self.protocol = protocol
        self.ranges = dict(ranges)
        self.ctx = context()
        self.script = Script(self.ctx)
        self.rlimit = rlimit
        self.checks = 0
        self.programs = _programs(protocol)
        self._by_proc = {g.proc: g for g in self.programs}
        self.n = self.script.int("N")
        self.depth = {r.name: self.script.int(f"D:{r.name}") for r in protocol.rings}
        self.params: list[Term] = [self.n >= 1]
        trips: dict[str, Term] = {}
        for role in protocol.roles:
            if role.turns == 1:
                trips[role.name] = self.n
                continue
            # the iterations of a role that takes turns: its data iterations below N
            m = trips[role.name] = self.script.int(f"M:{role.name}")
            self.params += [m >= 0, m * role.turns + role.turn >= self.n, (m - 1) * role.turns + role.turn < self.n]
        self.m = {g.proc: trips[g.role] for g in self.programs}
        # a role with peeled steps (a side's `lag`) runs its loop `tail` more times after its M
        # iterations (when it has any), in which only the steps that peel that far run
        self.tail = {r.name: max((s.peel for s in protocol.program(r.name)), default=0) for r in protocol.roles}
        self.t: dict[str, Term] = {}
        for g in self.programs:
            m, tail = self.m[g.proc], self.tail[g.role]
            self.t[g.proc] = m if not tail else T.If(m >= 1, m + tail, 0)
        for name, (lo, hi) in ranges.items():
            self.params.append(self.depth[name] >= lo)
            if hi is not None:
                self.params.append(self.depth[name] <= hi)
        ctas = range(protocol.ctas)
        self.movers: dict[tuple[str, BarrierKind, int], list[tuple[str, _Pos]]] = {
            (r.name, k, c): [] for r in protocol.rings for k in BarrierKind for c in ctas
        }
        self.armers: dict[tuple[str, BarrierKind, int], list[tuple[str, int]]] = {
            (r.name, k, c): [] for r in protocol.rings for k in BarrierKind for c in ctas
        }
        self.participants: dict[tuple[str, int], list[tuple[str, _Pos]]] = {
            (b.name, c): [] for b in protocol.named_barriers for c in ctas
        }
        self.named_armers: dict[tuple[str, int], dict[str, int]] = {
            (b.name, c): {} for b in protocol.named_barriers for c in ctas
        }
        # a counter's adds per CTA; a grid counter's per cluster rank (its word per tile and rank)
        self.adds: dict[tuple[str, int], list[tuple[str, _Pos]]] = {
            (c.name, k): [] for c in protocol.counters for k in ctas
        }
        self.waited = waited(protocol)
        for g in self.programs:
            for a, arm in enumerate(g.prologue):
                if arm.step.barrier is None:
                    self.named_armers[(arm.step.channel, g.cta)][g.proc] = a
                else:
                    for t in arm.bars:
                        self.armers[(arm.step.channel, arm.step.barrier, t)].append((g.proc, a))
            for pos in g.loop:
                step = pos.step
                if step.op in MOVER_OPS:
                    assert step.barrier is not None
                    self.movers[(step.channel, step.barrier, pos.bar)].append((g.proc, pos))
                elif pos.arrives_named:
                    self.participants[(step.channel, g.cta)].append((g.proc, pos))
                elif step.op is Op.ADD:
                    grid = protocol.counter(step.channel).grid
                    self.adds[(step.channel, g.cta % protocol.cluster if grid else g.cta)].append((g.proc, pos))

    def program(self, proc: str) -> _Program:
        return self._by_proc[proc]

    def info(self, proc: str) -> Role:
        return self.protocol.role(self._by_proc[proc].role)

    def where(self, cta: int) -> str:
        return f" of CTA {cta}" if self.protocol.ctas > 1 else ""

    def slots(self, arm: _Arm) -> int | Term:
        """How many moves a step before the loop takes: one per slot of each barrier it arms, one for an
        arrival on a named barrier, two for a `bar.sync` (its arrival, then its wait)."""
        if arm.step.barrier is not None:
            return self.depth[arm.step.channel] * len(arm.bars)
        return 2 if arm.step.op is Op.BAR_SYNC else 1

    def step_data(self, proc: str, pos: _Pos, k: Term) -> Term:
        """The data iteration ``pos``'s step acts on in ``proc``'s iteration ``k``: ``k - lag`` (its role's
        turns), or 0 for a one-shot step."""
        return T.Val(0) if pos.step.once else self.data_of(proc, k - pos.step.lag)

    def data_of(self, proc: str, k: Term) -> Term:
        """The data iteration ``proc`` runs in its iteration ``k`` (its role's turns)."""
        info = self.info(proc)
        return k if info.turns == 1 else k * info.turns + info.turn

    def threshold(self, proc: str, step: Step, x: Term) -> Term | int:
        """The value a grid counter wait of ``proc`` waits for in tile ``x``: its count, or the adds of the
        splits it names in that tile (constant per residue of the turns' period)."""
        if step.threshold is Threshold.COUNT:
            return step.count
        cta = self.program(proc).cta
        period = _period(self.protocol)
        values = [relative_threshold(self.protocol, step, cta, r) for r in range(period)]
        out: Term | int = values[-1]
        for r in range(period - 1):
            out = T.If(x % period == r, values[r], out)
        return out

    def modelled(self, channel: str, barrier: BarrierKind | None) -> bool:
        """Whether a barrier's state matters: some role waits on it (no-mixing is asked of those only)."""
        return (channel, barrier) in self.waited

    def run(self, exhaustive: bool) -> str | None:
        """None when the obligations hold, else why not (the first one that failed).

        O1 and the parts of O2 other than slot reuse hold by construction (see the module's
        docstring); ``exhaustive`` asks the solver for them too.
        """
        pre = _State(self, "")
        named: list[tuple[str, list[tuple[str, Term]]]] = []
        if exhaustive:
            start, post = _State(self, "@0"), _State(self, "'")
            initial = T.And(*[v == 0 for v in start.variables()], T.Not(start.invariant()))
            steps = T.Or(*[self._step(pre, post, g.proc) for g in self.programs])
            named += [
                ("O1", [("the invariant holding initially", initial)]),
                ("O2", [("the invariant being inductive", T.And(steps, T.Not(post.invariant())))]),
            ]
        named += [
            ("O2", pre.mixing()),
            ("O3", pre.windows()),
            ("O4", [("deadlock freedom", pre.deadlock())]),
            (
                "O5",
                [race for ring in self.protocol.rings for race in pre.races(ring)]
                + [c for counter in self.protocol.counters for c in pre.conflicts(counter)],
            ),
        ]
        assertions = [*[p.text for p in self.params], pre.invariant().text]
        queries: list[tuple[str, Term, list[tuple[str, Term]]]] = []
        for q, (label, cases) in enumerate(named):
            if not cases:
                continue
            flags = [self.script.bool(f"case:{q}#{k}") for k in range(len(cases))]
            assertions += [T.Implies(f, bad).text for f, (_, bad) in zip(flags, cases, strict=True)]
            query = self.script.bool(f"query:{q}")
            assertions.append(T.Implies(query, T.Or(*flags)).text)
            queries.append((label, query, [(what, f) for f, (what, _) in zip(flags, cases, strict=True)]))
        solver = z3.Solver(ctx=self.ctx)
        solver.set("rlimit", self.rlimit)
        solver.set("smt.arith.solver", 2)
        self.script.parse(solver, assertions)
        for label, query, cases in queries:
            self.checks += 1
            verdict = verdict_of(solver.check(self._handle(query)), solver)
            if verdict.unknown:
                return f"{label} ran out of budget (rlimit {self.rlimit})"
            if verdict.sat:
                model = solver.model()
                found = [w for w, f in cases if z3.is_true(model.eval(self._handle(f), model_completion=True))]
                return f"{(found or [cases[0][0]])[0]} is not proved ({label})"
        return None

    def _handle(self, symbol: Term) -> z3.ExprRef:
        return self.script.handle(symbol.text[1:-1])

    def _step(self, pre: _State, post: _State, proc: str) -> Term:
        """``proc`` takes one step from ``pre`` to ``post``; every other process stays."""
        g = self.program(proc)
        same = [
            T.And(
                post.i[o] == pre.i[o], post.pos[o] == pre.pos[o], post.cur[o] == pre.cur[o], post.sig[o] == pre.sig[o]
            )
            for o in (h.proc for h in self.programs)
            if o != proc
        ]
        cur, sig, i, pos = pre.cur[proc], pre.sig[proc], pre.i[proc], pre.pos[proc]
        moves: list[Term] = []
        for a, arm in enumerate(g.prologue):
            wrap = sig + 1 == self.slots(arm)
            # a `bar.sync` before the loop passes its wait (its second move) once generation 0 is complete
            passes = (
                T.Implies(sig == 1, pre.named_done(arm.step.channel, g.cta, T.Val(0)))
                if arm.step.op is Op.BAR_SYNC
                else True
            )
            moves.append(
                T.And(
                    cur == a,
                    passes,
                    post.cur[proc] == T.If(wrap, cur + 1, cur),
                    post.sig[proc] == T.If(wrap, 0, sig + 1),
                    post.i[proc] == i,
                    post.pos[proc] == pos,
                )
            )
        last = len(g.loop) - 1
        for p in g.loop:
            nxt = (
                [post.pos[proc] == 0, post.i[proc] == i + 1]
                if p.index == last
                else [post.pos[proc] == p.index + 1, post.i[proc] == i]
            )
            # a step that does not run in this iteration (before its lag, or in the tail) is skipped
            enabled = T.Implies(pre.runs(proc, p), pre.guard(proc, p, i)) if p.waits else True
            moves.append(T.And(pre.here(proc, p), enabled, post.cur[proc] == cur, post.sig[proc] == sig, *nxt))
        return T.And(T.Or(*moves), *same)
