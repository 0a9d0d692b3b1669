"""The bounded SMT model of a protocol, with every assertion tracked by its provenance.

Interleavings (a timestamp encoding of bounded model checking). Every event ``e`` of the
unrolled run (``events.py``) has an integer time ``t_e``; the schedule is the order of
``(t_e, rank of e's role)``, a total order extending program order (times increase
strictly along a role). The cut is a program counter ``pc_r`` per role: the first
``pc_r`` events of ``r`` ran, all of them before a time ``T`` and the rest after it. An
assignment is a reachable state iff every executed wait passes when it runs.

Objects. An mbarrier slot's state before an event is determined by the events on it
ordered before it. When all its state changes come from one role (the usual case: the
producer arrives and copies on ``full``, the consumer releases ``empty``), their order is
program order, so which of them complete a phase is computed here by simulation, and a
wait sees the parity after the last of them ordered before it (its *frontier*). When
several roles change it, the general encoding sums over order atoms:

* arrivals ``A_e``, expected bytes ``X_e``, completed bytes ``C_e`` (including ``e``),
  completed phases ``P_e`` (the completing events ordered before ``e``);
* ``e`` completes a phase iff ``A_e = n * (P_e + 1)`` and ``X_e = C_e``: pending is
  ``n * (P_e + 1) - A_e``; below zero (over-arrival) the phase never completes;
* a wait with parity ``p`` passes iff ``P_w mod 2 != p`` (``try_wait.parity``).

A named barrier is counted the same way without bytes, and ``bar.sync`` passes once a
completion happened at or after its own arrival; a counter wait passes when the
additions ordered before it reach its threshold.

Queries (selector literals, checked under assumptions): *deadlock* — at the cut every
unfinished role is at a wait that cannot pass, and some role is unfinished; *overwrite* —
the producer writes data iteration ``i`` of a ring before the consumer's last access
(read or release) of iteration ``i - depth``; *early read* — the consumer reads
iteration ``i`` before the producer's last write of it. Per-phase accounting (L-ARRIVE,
L-TXBYTES) and first-parity conventions (L-PARITY) are rule literals over the same step
variables, decided in a second solver that holds only the declarations.

Every assertion is ``Implies(guard, fact)`` where the guard is the conjunction of the
literals of the facts it comes from (a step, a declaration, a role's program order, a
rule); ``facts`` maps each literal to its provenance.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal, TypeAlias

import z3

from checker.protocol.events import Event, ObjKey, process_name, runs_in, targets, trip_cuts, unroll
from checker.protocol.model import (
    MBAR_MAX_COUNT,
    BarrierKind,
    Op,
    Part,
    Protocol,
    Provenance,
    Ring,
    Step,
    Threshold,
)
from diagnostics.symbols import Code
from solver import UNSAT, Tracked, Verdict, context, minimise_core, verdict_of
from solver import text as T
from solver.text import Script, Term


@dataclass(frozen=True, order=True)
class Rule:
    """A semantic rule the model asserts (the provenance of rule literals)."""

    name: str
    text: str


@dataclass(frozen=True, order=True)
class Lemma:
    """A race-freedom invariant proved on the model, with the facts its proof used."""

    text: str
    basis: tuple[Provenance | Rule, ...]


Fact = Provenance | Rule | Lemma

PHASE_RULE = Rule(
    "phase",
    "a phase completes when the pending arrival count and the tx-count "
    "are both zero; pending then resets to the init count (PTX §9.7.13.15.6)",
)
PARITY_RULE = Rule(
    "parity",
    "a parity wait passes iff the preceding phase, of the other "
    "parity, is complete: on a fresh barrier parity 1 passes and parity 0 "
    "blocks (PTX §9.7.13.15.16)",
)
ARRIVE_RULE = Rule("arrive", "per phase, the arrivals of all participants equal the initialized arrival count")
PREARM_RULE = Rule("prearm", "the pre-arm arrivals complete exactly one phase")
TX_RULE = Rule("txbytes", "per phase, the expected transaction bytes equal the bytes the async copies complete")
DECL_RULE = Rule(
    "declared-tx", "the declared transaction bytes per phase equal what the participants expect and complete"
)
RANGE_RULE = Rule("range", "arrival counts and tx-counts stay within 2^20 - 1 (PTX §9.7.13.15.2)")
FIRST_PARITY_RULE = Rule(
    "first-parity",
    "the first wait on a full barrier waits for the "
    "first fill (parity 0, or 1 after a pre-arm); the first wait on an "
    "empty barrier waits for the previous release (parity 1, or 0 "
    "after a pre-arm)",
)


def aligned_barriers(protocol: Protocol, bound: int, rlimit: int) -> frozenset[str]:
    """The barriers several processes change whose phases (generations) provably do not overlap.

    Starting from every one, a probe model encodes them by phases and the rest by counting;
    the barriers it finds out of order go back to counting, until the probe finds none (or
    cannot decide: then none is phase-encoded).
    """
    candidates = frozenset(str(e.obj) for seq in unroll(protocol, bound) for e in seq if e.obj is not None)
    while candidates:
        found = ProtocolModel(protocol, bound=bound, rlimit=rlimit, aligned=candidates).misaligned()
        if found is None:
            return frozenset()
        if not found:
            return candidates
        candidates -= found
    return candidates


ALIGNED_KEY = "lemma:phases-in-order"
ALIGNED = Rule(
    "phases-in-order",
    "no arrival or copy of a barrier's phase happens before every arrival and copy of the phase before it "
    "(proved on the model; each phase then completes at its last step)",
)


def fact_text(fact: Fact) -> str:
    """A fact for people: source text and location, or the rule's or lemma's text."""
    if isinstance(fact, Provenance):
        return f"`{fact.text}` ({fact.span})"
    return fact.text


class Query(enum.Enum):
    """The dynamic questions asked of the model."""

    DEADLOCK = "deadlock"
    OVERWRITE = "overwrite"
    EARLY_READ = "early-read"
    CONFLICT = "conflict"
    """A grid counter's tile: one CTA reads it while another CTA is about to write it."""
    OVERSHOOT = "overshoot"
    """Internal: an arrival jumps past a phase boundary of a barrier several roles arrive on;
    proved absent, it pins the completions at the cut (a lemma for the deadlock query)."""


class StaticKind(enum.Enum):
    """The arithmetic checks decided per barrier or per wait."""

    ARRIVE = Code.L_ARRIVE
    TXBYTES = Code.L_TXBYTES
    PARITY = Code.L_PARITY


StaticRule = Literal[
    "arrive", "prearm", "range-count", "txbytes", "declared-expect", "declared-copy", "range-tx", "first-parity"
]
"""The static rules a barrier's declarations can break: its arrivals, pre-arm and count range
(L-ARRIVE), its bytes against the copies and the declaration and their range (L-TXBYTES), a
first wait's parity (L-PARITY)."""


@dataclass(frozen=True)
class StaticCheck:
    """One rule literal and the facts it relates; unsat under them means a conflict (``case``: which rule).

    ``totals`` is what the steps make per phase on the barrier the rule is about: loop
    arrivals, pre-arm arrivals, expected and completed bytes.
    """

    kind: StaticKind
    rule_key: str
    case: StaticRule
    fact_keys: tuple[str, ...]
    ring: str
    barrier: BarrierKind
    wait: Step | None = None
    totals: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(frozen=True)
class Tally:
    """The steps that act on one CTA's barrier in one phase, each key with how often it acts there.

    ``where`` names the barrier and phase (``@cta/residue``) when a ring's barriers differ:
    CTAs of a cluster or a group, or data iterations of consumers that take turns.
    """

    where: str
    loop: tuple[tuple[str, int], ...]
    prearm: tuple[tuple[str, int], ...]
    expects: tuple[tuple[str, int], ...]
    copies: tuple[tuple[str, int], ...]

    def totals(self, protocol: Protocol, ring: str, kind: BarrierKind) -> tuple[int, int, int, int]:
        steps = {
            step_key(s, k): s
            for _, prog in protocol.programs
            for k, s in enumerate(prog)
            if s.channel == ring and s.barrier is kind
        }

        def total(terms: tuple[tuple[str, int], ...], attr: str) -> int:
            return sum(n * int(getattr(steps[k], attr)) for k, n in terms)

        return (
            total(self.loop, "count"),
            total(self.prearm, "count"),
            total(self.expects, "nbytes"),
            total(self.copies, "nbytes"),
        )


def tallies(protocol: Protocol, ring: Ring, kind: BarrierKind) -> list[Tally]:
    """The distinct per-phase tallies of ``ring``'s ``kind`` barriers, over every CTA and data residue.

    A barrier no step acts on in a CTA is left out, unless no step acts on any: then it
    counts no arrivals (and a wait on it would hang).
    """
    period = math.lcm(*(r.turns for r in protocol.roles)) if protocol.roles else 1
    keyed = [
        (protocol.role(role), step_key(s, k), s)
        for role, prog in protocol.programs
        for k, s in enumerate(prog)
        if s.channel == ring.name and s.barrier is kind
    ]
    found: dict[tuple[object, ...], Tally] = {}
    for x in range(protocol.ctas):
        for j in range(period):
            loop: dict[str, int] = {}
            armed: dict[str, int] = {}
            expects: dict[str, int] = {}
            copies: dict[str, int] = {}
            touched = False
            for info, key, s in keyed:
                if s.op is Op.WAIT:
                    touched = touched or (runs_in(protocol, s, x) and (s.prearm or info.takes(j)))
                    continue
                times = sum(1 for c in range(protocol.ctas) if runs_in(protocol, s, c) and x in targets(protocol, s, c))
                if not times or not (s.prearm or info.takes(j)):
                    continue
                touched = True
                if s.prearm:
                    armed[key] = armed.get(key, 0) + times
                    continue
                if s.op is Op.ARRIVE:
                    loop[key] = loop.get(key, 0) + times
                if s.op in (Op.ARRIVE, Op.EXPECT_TX) and s.nbytes:
                    expects[key] = expects.get(key, 0) + times
                if s.op is Op.COPY:
                    copies[key] = copies.get(key, 0) + times
            if not touched:
                continue
            tally = Tally(
                f"@{x}/{j}", tuple(loop.items()), tuple(armed.items()), tuple(expects.items()), tuple(copies.items())
            )
            found.setdefault((tally.loop, tally.prearm, tally.expects, tally.copies), tally)
    return list(found.values()) or [Tally("@0/0", (), (), (), ())]


@dataclass(frozen=True)
class QueryKey:
    """A dynamic query, optionally about one ring."""

    query: Query
    ring: str = ""

    @property
    def key(self) -> str:
        return f"query:{self.query.value}:{self.ring}"


def step_key(step: Step, index: int) -> str:
    """The fact key of the ``index``-th step of its role's program."""
    return f"step:{step.role}#{index}"


def decl_key(ring: str, kind: BarrierKind) -> str:
    return f"decl:{ring}.{kind.value}"


def role_key(role: str) -> str:
    return f"role:{role}"


Cond: TypeAlias = "Term | bool"


class ProtocolModel:
    """The SMT model of one protocol at one bound; built once, queried many times."""

    def __init__(self, protocol: Protocol, *, bound: int, rlimit: int, aligned: frozenset[str] | None = None) -> None:
        """``aligned``: the barriers (by name, ``kv.full[0]@1``) that several processes change and
        that are encoded by their phases (:meth:`_aligned_barrier`, :meth:`_aligned_named`); None:
        those a probe proves exact (:func:`aligned_barriers`) in a protocol of several CTAs."""
        if aligned is None:
            aligned = aligned_barriers(protocol, bound, rlimit) if protocol.ctas > 1 else frozenset()
        self.aligned = aligned
        self.protocol = protocol
        self.bound = bound
        self.sequences = unroll(protocol, bound)
        self.events = [e for seq in self.sequences for e in seq]
        self.ctx = context()
        self.script = Script(self.ctx)
        self.solver = self._solver(rlimit)
        self.static_solver = self._solver(rlimit)
        self.cut_solver = self._solver(rlimit)
        self._pending: dict[str, list[str]] = {"model": [], "static": [], "cut": []}
        self.facts: dict[str, Fact] = {}
        self.tracked: Tracked[str] = Tracked(self.ctx)
        """Each fact's literal (named by its key) and, for a contract fact, its span."""
        self.lits = self.tracked.literal
        self._lit_terms: dict[str, Term] = {}
        self.assertions = 0
        self.variables = 0
        self.static_checks: list[StaticCheck] = []
        self.queries: dict[QueryKey, z3.BoolRef] = {}
        self.time = {e.id: self._int(f"t{e.id}") for e in self.events}
        self.cut = self._int("T")
        self.pc: dict[int, Term] = {}
        self.done: dict[int, Term | bool] = {}
        self._cut_pass: dict[int, Term] = {}
        self._count: dict[str, Term] = {}
        self._bytes: dict[str, Term] = {}
        self._guards: dict[tuple[str, ...], str] = {}
        self.overshoots: dict[str, tuple[dict[int, Term], list[Event], int, Term, Term, list[str]]] = {}
        self._misaligned: list[tuple[str, Term]] = []
        self._phase_of: dict[int, list[Event]] = {}
        self._name = ""
        self._declare_facts()
        self._encode_steps()
        for ring in protocol.rings:
            for kind in BarrierKind:
                self._encode_static(ring, kind)
        self._encode_order()
        self._encode_objects()
        self._encode_queries()
        self._flush()

    # -- building blocks -------------------------------------------------------------

    def _solver(self, rlimit: int) -> z3.Solver:
        solver = z3.Solver(ctx=self.ctx)
        solver.set("rlimit", rlimit)
        solver.set("smt.arith.solver", 2)
        return solver

    def _flush(self) -> None:
        """Parse the assertions written since the last flush into their solvers."""
        for name, pending in self._pending.items():
            if pending:
                self.script.parse(self.pick(name), pending)
                pending.clear()

    def _int(self, name: str) -> Term:
        self.variables += 1
        return self.script.int(name)

    def _bool(self, name: str) -> Term:
        self.variables += 1
        return self.script.bool(name)

    def _val(self, value: int) -> Term:
        return T.Val(value)

    def _const(self, value: bool) -> Term:
        return T.Val(value)

    def _z3(self, term: Term) -> z3.ExprRef:
        """The Z3 constant of a declared symbol's term (for assumptions and models)."""
        return self.script.handle(term.text[1:-1])

    def _fact(self, key: str, fact: Fact) -> None:
        if key not in self.lits:
            self.facts[key] = fact
            self._lit_terms[key] = self._bool(key)
            self.tracked.add(key, key, fact.span if isinstance(fact, Provenance) else None)

    def _add(
        self, keys: str | Sequence[str], expr: Cond, *, dynamic: bool = True, static: bool = False, cut: bool = False
    ) -> None:
        """Assert ``expr`` guarded by the literals of ``keys`` (its provenance).

        ``dynamic``, ``static`` and ``cut`` pick the solvers that receive it: the whole
        model, the declaration checks, and the cut abstraction of the deadlock query.
        """
        names = (keys,) if isinstance(keys, str) else tuple(dict.fromkeys(keys))
        guard = self._guards.get(names)
        if guard is None:
            guard = (
                self._lit_terms[names[0]].text if len(names) == 1 else T.And(*[self._lit_terms[k] for k in names]).text
            )
            self._guards[names] = guard
        assertion = f"(=> {guard} {T.lit(expr)})"
        self.assertions += 1
        if dynamic:
            self._pending["model"].append(assertion)
        if static:
            self._pending["static"].append(assertion)
        if cut:
            self._pending["cut"].append(assertion)

    def _sum(self, terms: Sequence[Term]) -> Term:
        return T.Sum(list(terms)) if terms else self._val(0)

    def before(self, a: Event, b: Event) -> Cond:
        """Whether ``a`` precedes ``b`` in the schedule (a Python bool within one role)."""
        if a.rank == b.rank:
            return a.pos < b.pos
        ta, tb = self.time[a.id], self.time[b.id]
        order: Term = ta <= tb if a.rank < b.rank else ta < tb
        return order

    def _before_fn(self, later: Event) -> Callable[[Event], Cond]:
        return lambda e: self.before(e, later)

    def executed(self, e: Event) -> Term:
        """Whether ``e`` ran before the cut."""
        return self.pc[e.rank] > e.pos

    def _key(self, e: Event) -> str:
        return step_key(e.step, e.step_index)

    def _count_value(self, e: Event) -> int:
        return e.step.count

    # -- facts and step variables ----------------------------------------------------

    def _declare_facts(self) -> None:
        for key, fact in declared_facts(self.protocol):
            self._fact(key, fact)
        if self.aligned:
            self._fact(ALIGNED_KEY, ALIGNED)

    def _encode_steps(self) -> None:
        """Each step's amounts as variables fixed by the step's own literal."""
        for _, steps in self.protocol.programs:
            for k, step in enumerate(steps):
                key = step_key(step, k)
                if step.count:
                    self._count[key] = var = self._int(f"count:{key}")
                    self._add(key, var == step.count, static=True, cut=True)
                if step.op in (Op.ARRIVE, Op.EXPECT_TX, Op.COPY):
                    self._bytes[key] = var = self._int(f"bytes:{key}")
                    self._add(key, var == step.nbytes, static=True, cut=True)

    # -- per-phase accounting and parity conventions ---------------------------------

    def _encode_static(self, ring: Ring, kind: BarrierKind) -> None:
        if not ring.synchronized:
            return
        bar = ring.barrier(kind)
        dkey = decl_key(ring.name, kind)
        name = f"{ring.name}.{kind.value}"
        init = self._int(f"init:{name}")
        self._add(dkey, init == bar.init_count, dynamic=False, static=True)
        steps = [
            (step_key(s, k), s)
            for _, prog in self.protocol.programs
            for k, s in enumerate(prog)
            if s.channel == ring.name and s.barrier is kind
        ]
        prearm = [k for k, s in steps if s.prearm]
        declared: Term | None = None
        if bar.expect_tx is not None:
            declared = self._int(f"declared:{name}")
            self._add(dkey, declared == bar.expect_tx, dynamic=False, static=True)

        def rule(
            case: StaticRule,
            fact: Rule,
            expr: Term,
            related: Iterable[str],
            check: StaticKind,
            wait: Step | None = None,
            at: str = "",
            tally: Tally | None = None,
        ) -> None:
            key = f"rule:{case}{at}:{name}"
            self._fact(key, fact)
            self._add(key, expr, dynamic=False, static=True)
            facts = tuple(dict.fromkeys([dkey, *related]))
            totals = tally.totals(self.protocol, ring.name, kind) if tally is not None else (0, 0, 0, 0)
            self.static_checks.append(StaticCheck(check, key, case, facts, ring.name, kind, wait, totals))

        def weighted(terms: tuple[tuple[str, int], ...], values: dict[str, Term]) -> Term:
            return self._sum([values[k] if n == 1 else values[k] * n for k, n in terms])

        found = tallies(self.protocol, ring, kind)
        for tally in found:
            at = tally.where if len(found) > 1 else ""
            loop = [k for k, _ in tally.loop]
            rule(
                "arrive",
                ARRIVE_RULE,
                weighted(tally.loop, self._count) == init,
                loop,
                StaticKind.ARRIVE,
                at=at,
                tally=tally,
            )
            if tally.prearm:
                armed_keys = [k for k, _ in tally.prearm]
                rule(
                    "prearm",
                    PREARM_RULE,
                    weighted(tally.prearm, self._count) == init,
                    armed_keys,
                    StaticKind.ARRIVE,
                    at=at,
                    tally=tally,
                )
            if tally is found[0]:
                rule("range-count", RANGE_RULE, init <= MBAR_MAX_COUNT, (), StaticKind.ARRIVE, tally=tally)
            expects = [k for k, _ in tally.expects]
            copies = [k for k, _ in tally.copies]
            expected = weighted(tally.expects, self._bytes)
            completed = weighted(tally.copies, self._bytes)
            rule("txbytes", TX_RULE, expected == completed, [*expects, *copies], StaticKind.TXBYTES, at=at, tally=tally)
            if declared is not None:
                rule(
                    "declared-expect", DECL_RULE, declared == expected, expects, StaticKind.TXBYTES, at=at, tally=tally
                )
                rule("declared-copy", DECL_RULE, declared == completed, copies, StaticKind.TXBYTES, at=at, tally=tally)
            rule(
                "range-tx",
                RANGE_RULE,
                T.And(expected <= MBAR_MAX_COUNT, completed <= MBAR_MAX_COUNT),
                [*expects, *copies],
                StaticKind.TXBYTES,
                at=at,
                tally=tally,
            )
        armed = self._int(f"prearmed:{name}")
        for k in prearm:
            self._add(k, armed == 1, dynamic=False, static=True)
        if not prearm:
            self._add(f"ring:{ring.name}", armed == 0, dynamic=False, static=True)
        right = armed if kind is BarrierKind.FULL else 1 - armed
        for k, step in steps:
            if step.op is not Op.WAIT:
                continue
            first = self._int(f"first-parity:{k}")
            self._add(k, first == step.parity, dynamic=False, static=True)
            related = [k, *prearm] if prearm else [k, f"ring:{ring.name}"]
            rule(
                "first-parity",
                FIRST_PARITY_RULE,
                first == right,
                related,
                StaticKind.PARITY,
                step,
                f":{k}",
                found[0] if found else None,
            )

    # -- interleaving semantics ------------------------------------------------------

    def _encode_order(self) -> None:
        """Program order and the cut: the first ``pc_r`` events of ``r`` ran before ``T``."""
        for seq in self.sequences:
            if not seq:
                continue
            key = role_key(seq[0].role)
            self.pc[seq[0].rank] = pc = self._int(f"pc:{self.process(seq[0].rank)}")
            self._add(key, T.And(pc >= 0, pc <= len(seq)), cut=True)
            for a, b in pairwise(seq):
                self._add(key, self.time[a.id] < self.time[b.id])
            for e in seq:
                self._add(key, (pc > e.pos) == (self.time[e.id] < self.cut))

    def _encode_objects(self) -> None:
        by_obj: dict[ObjKey, list[Event]] = defaultdict(list)
        for e in self.events:
            if e.obj is not None:
                by_obj[e.obj].append(e)
        for obj, evs in by_obj.items():
            movers = [e for e in evs if not e.is_wait]
            waits = [e for e in evs if e.is_wait]
            one_role = len({e.rank for e in movers}) <= 1
            if obj.barrier is not None:
                bar = self.protocol.ring(obj.channel).barrier(obj.barrier)
                decl = decl_key(obj.channel, obj.barrier)
                phases = self._phases(movers, bar.init_count) if str(obj) in self.aligned and not one_role else None
                self._name = str(obj)
                if one_role:
                    self._mbarrier_chain(str(obj), movers, waits, bar.init_count, decl)
                elif phases is not None:
                    self._aligned_barrier(str(obj), phases, waits, decl)
                else:
                    self._counting(str(obj), movers, waits, bar.init_count, decl)
            elif any(e.op in (Op.ADD, Op.WAIT_GE) for e in evs):
                if self.protocol.counter(obj.channel).grid:
                    self._grid_counter(movers, waits)
                elif one_role:
                    self._counter_chain(movers, waits)
                else:
                    self._counter(movers, waits)
            else:
                nb = self.protocol.named_barrier(obj.channel)
                generations = self._generations(movers, nb.threads) if str(obj) in self.aligned else None
                self._name = str(obj)
                if self._lockstep(nb.name, nb.threads):
                    self._lockstep_barrier(str(obj), movers, waits, f"bar:{nb.name}")
                elif generations is not None:
                    self._aligned_named(generations, waits, f"bar:{nb.name}")
                else:
                    self._counting(str(obj), movers, waits, nb.threads, f"bar:{nb.name}")

    def _lockstep(self, name: str, threads: int) -> bool:
        """Whether every role on named barrier ``name`` runs one ``bar.sync`` per iteration, in
        every CTA and in the same iterations, and their thread counts add up to its count.

        Then generation ``j`` completes exactly at the last of the participants' ``j``-th
        arrivals (each blocks until it does, so none arrives twice in a generation), and
        no partial sum can overshoot: the barrier is a rendezvous per iteration.
        """
        steps = [s for _, prog in self.protocol.programs for s in prog if s.channel == name]
        roles = [s.role for s in steps]
        return (
            all(s.op is Op.BAR_SYNC and s.part is Part.ALL and not s.prearm for s in steps)
            and len({(s.lag, s.peel) for s in steps}) == 1  # the same iterations (a rendezvous side's phases)
            and len(set(roles)) == len(roles)
            and sum(s.count for s in steps) == threads
        )

    def _lockstep_barrier(self, name: str, movers: list[Event], waits: list[Event], decl: str) -> None:
        """A rendezvous per iteration: a ``bar.sync`` of iteration ``j`` passes once every
        participant made its ``j``-th arrival (see :meth:`_lockstep`)."""
        basis = [decl, *dict.fromkeys(self._key(e) for e in movers)]
        by_round: dict[int, list[Event]] = defaultdict(list)
        for e in movers:
            by_round[e.iteration].append(e)
        for e in movers:
            last = [b for o in by_round[e.iteration] if o is not e and (b := self.before(o, e)) is not True]
            flag = self._bool(f"done{e.id}")
            self.done[e.id] = flag
            self._add(basis, flag == (T.And(*[b for b in last]) if last else self._const(True)))
        for w in waits:
            group = by_round[w.iteration]
            seen = [b for o in group if (b := self.before(o, w)) is not True]
            passes = T.And(*[b for b in seen]) if seen else self._const(True)
            now = self._bool(f"met-cut:{name}:{w.iteration}")
            self._add(basis, now == T.And(*[self.executed(o) for o in group]), cut=True)
            self._cut_pass[w.id] = now
            self._add([self._key(w), *basis], T.Implies(self.executed(w), passes))

    def _mbarrier_chain(self, name: str, movers: list[Event], waits: list[Event], n: int, decl: str) -> None:
        """An mbarrier slot whose state changes all come from one role, in program order.

        Which changes complete a phase follows from the declaration and the movers' steps
        alone (simulated here, the facts guard it); a wait sees the parity after its
        frontier, the last change ordered before it.
        """
        pending, tx, odd = n, 0, False
        parity: list[bool] = []
        for e in movers:
            step = e.step
            if step.op is Op.COPY:
                tx -= step.nbytes
            else:
                tx += step.nbytes
                pending -= 0 if step.op is Op.EXPECT_TX else step.count
            done = pending == 0 and tx == 0
            if done:
                pending, odd = n, not odd
            self.done[e.id] = done
            parity.append(odd)
        basis = [decl, *(self._key(e) for e in movers)]
        odd_cut = self._bool(f"odd-cut:{name}")
        self._add(basis, odd_cut == self._frontier(movers, parity, self.executed), cut=True)
        for w in waits:
            seen = self._frontier(movers, parity, self._before_fn(w))
            self._cut_pass[w.id] = odd_cut if w.parity == 0 else T.Not(odd_cut)
            passes = seen if w.parity == 0 else T.Not(seen)
            self._add([self._key(w), *basis], T.Implies(self.executed(w), passes))

    def _counter_chain(self, adds: list[Event], waits: list[Event]) -> None:
        """A counter all of whose additions come from one role: prefix sums, frontiers."""
        sums, total = [], 0
        for a in adds:
            total += a.step.count
            sums.append(total)
        basis = [self._key(a) for a in adds]
        for w in waits:
            threshold = w.threshold or 0
            reached = [s >= threshold for s in sums]
            keys = [self._key(w), *basis]
            passes = self._frontier(adds, reached, self._before_fn(w))
            now = self._bool(f"reached-cut:{w.id}")
            self._add(keys, now == self._frontier(adds, reached, self.executed), cut=True)
            self._cut_pass[w.id] = now
            self._add(keys, T.Implies(self.executed(w), passes))

    def _counter(self, adds: list[Event], waits: list[Event]) -> None:
        """A counter added to by several roles: sums over order atoms."""
        for w in waits:
            key = self._key(w)
            threshold = self._count[key] * ((w.threshold or 0) // w.step.count)
            value = [
                T.If(b, self._count[self._key(a)], self._val(0)) if b is not True else self._count[self._key(a)]
                for a in adds
                if (b := self.before(a, w)) is not False
            ]
            now = [T.If(self.executed(a), self._count[self._key(a)], self._val(0)) for a in adds]
            self._cut_pass[w.id] = self._sum(now) >= threshold
            self._add(key, T.Implies(self.executed(w), self._sum(value) >= threshold))

    def _grid_counter(self, adds: list[Event], waits: list[Event]) -> None:
        """A grid counter's word of one tile: the adds ordered before a wait reach its threshold.

        A relative threshold (``split``, ``others``, ``all``) is the value the adds of the splits
        it names make, so the facts of those adds are its basis as well.
        """
        adds_of = [self._key(a) for a in adds]
        for w in waits:
            key = self._key(w)
            threshold = self._val(w.threshold or 0)
            basis = [key] if w.step.threshold is Threshold.COUNT else [key, *dict.fromkeys(adds_of)]
            value = [
                T.If(b, self._count[self._key(a)], self._val(0)) if b is not True else self._count[self._key(a)]
                for a in adds
                if (b := self.before(a, w)) is not False
            ]
            now = [T.If(self.executed(a), self._count[self._key(a)], self._val(0)) for a in adds]
            reached = self._bool(f"reached-cut:{w.id}")
            self._add(basis, reached == (self._sum(now) >= threshold), cut=True)
            self._cut_pass[w.id] = reached
            self._add(basis, T.Implies(self.executed(w), self._sum(value) >= threshold))

    # -- barriers encoded by their phases ----------------------------------------------

    def _phases(self, movers: list[Event], n: int) -> list[tuple[list[Event], bool]] | None:
        """The movers of an mbarrier slot by the phase they belong to, each with whether they
        complete it; None when they cannot be grouped so (then the counting encoding decides).

        A pre-arm belongs to phase 0, a step of the slot's ``k``-th use to phase ``k`` (plus one
        after a pre-arm). The movers of a phase complete it when their arrivals are the init
        count and their bytes balance; fewer arrivals complete nothing (a use the bounded run
        cuts short), but only at the end: a phase that over-arrives, or fills with bytes out of
        balance, or is followed by one that completes, is left to the counting encoding.
        """
        armed = any(e.iteration < 0 for e in movers)
        grouped: dict[int, list[Event]] = defaultdict(list)
        for e in movers:
            grouped[0 if e.iteration < 0 else (e.use or 0) + armed].append(e)
        phases: list[tuple[list[Event], bool]] = []
        short = False
        for k in range(max(grouped) + 1):
            group = grouped.get(k, [])
            arrivals = sum(e.step.count for e in group if e.op is Op.ARRIVE)
            expected = sum(e.step.nbytes for e in group if e.op is not Op.COPY)
            completed = sum(e.step.nbytes for e in group if e.op is Op.COPY)
            full = arrivals == n
            if arrivals > n or (full and expected != completed) or (full and short) or not group:
                return None
            short = short or not full
            phases.append((group, full))
        return phases

    def _aligned_barrier(
        self, name: str, phases: list[tuple[list[Event], bool]], waits: list[Event], decl: str
    ) -> None:
        """An mbarrier slot whose phases do not overlap: phase ``k`` completes at the last of its
        movers, after every mover of phase ``k - 1`` (:meth:`ordered` proves that order).

        Then the completions before an event are the phases all of whose movers precede it,
        and a wait passes on their parity. Exact under the order; much cheaper than counting
        over every pair of movers when several processes (CTAs) change one barrier.
        """
        movers = [e for group, _ in phases for e in group]
        basis = [decl, ALIGNED_KEY, *dict.fromkeys(self._key(e) for e in movers)]
        self._last_of_phase(phases, basis)
        self._order_phases(phases, basis)
        complete = [g for g, full in phases if full]
        for w in waits:
            seen = [T.And(*[t for m in g if (t := self.before(m, w)) is not True]) for g in complete]
            odd = _xor(seen)
            now = _xor([T.And(*[self.executed(m) for m in g]) for g in complete])
            self._cut_pass[w.id] = now if w.parity == 0 else T.Not(now)
            self._add([self._key(w), *basis], T.Implies(self.executed(w), odd if w.parity == 0 else T.Not(odd)))

    def _generations(self, movers: list[Event], threads: int) -> list[tuple[list[Event], bool]] | None:
        """The arrivals on a named barrier by generation: the ``k``-th arrival of each process is in
        generation ``k``; each with whether its threads complete it. None unless every
        generation but trailing short ones has exactly the barrier's threads."""
        grouped: dict[int, list[Event]] = defaultdict(list)
        seen: dict[int, int] = defaultdict(int)
        for e in movers:
            grouped[seen[e.rank]].append(e)
            seen[e.rank] += 1
        generations: list[tuple[list[Event], bool]] = []
        short = False
        for k in range(len(grouped)):
            total = sum(e.step.count for e in grouped[k])
            if total > threads or (short and total == threads):
                return None
            short = short or total < threads
            generations.append((grouped[k], total == threads))
        return generations

    def _aligned_named(self, generations: list[tuple[list[Event], bool]], waits: list[Event], decl: str) -> None:
        """A named barrier whose generations do not overlap (:meth:`ordered` proves it): generation
        ``k`` completes at the last of its arrivals, and a ``bar.sync`` passes once every arrival
        of the generation its own arrival is in precedes it."""
        movers = [e for group, _ in generations for e in group]
        basis = [decl, ALIGNED_KEY, *dict.fromkeys(self._key(e) for e in movers)]
        of = {e.id: k for k, (group, _) in enumerate(generations) for e in group}
        self._last_of_phase(generations, basis)
        self._order_phases(generations, basis)
        for w in waits:
            group, full = generations[of[self.sequences[w.rank][w.pos - 1].id]]
            if not full:
                self._cut_pass[w.id] = T.FALSE
                self._add([self._key(w), *basis], T.Not(self.executed(w)))
                continue
            seen = T.And(*[t for m in group if (t := self.before(m, w)) is not True])
            self._cut_pass[w.id] = T.And(*[self.executed(m) for m in group])
            self._add([self._key(w), *basis], T.Implies(self.executed(w), seen))

    def _last_of_phase(self, phases: list[tuple[list[Event], bool]], basis: list[str]) -> None:
        """Which step completes a phase: the last of a full one (read off a model's schedule by
        :meth:`completes`; nothing is asserted)."""
        for group, full in phases:
            for e in group:
                self._phase_of[e.id] = group if full else []

    def _order_phases(self, phases: list[tuple[list[Event], bool]], basis: list[str]) -> None:
        """The order a phase encoding assumes: no step of a phase before every step of the one
        before it; to be proved (:meth:`ordered`), and a fact of the cut abstraction."""
        for (earlier, _), (later, _) in pairwise(phases):
            for m in later:
                for o in earlier:
                    order = self.before(o, m)
                    if order is not True:
                        late = self.executed(m)
                        self._misaligned.append((self._name, late if order is False else T.And(late, T.Not(order))))
                        self._add(basis, T.Implies(late, self.executed(o)), dynamic=False, cut=True)

    def misaligned(self) -> frozenset[str] | None:
        """The phase-encoded barriers on which a step of a phase can run before every step of the phase
        before it, from one model of the probe (empty: on none; None: undecided).

        The first such step of an exact run is preceded by a run on which the phase and the
        counting encodings agree, so the probe finds a barrier with such a step whenever one
        exists: an empty answer makes the phase encoding exact for every run.
        """
        if not self._misaligned:
            return frozenset()
        flags = []
        for k, (_, term) in enumerate(self._misaligned):
            flag = self._bool(f"misaligned:{k}")
            self._pending["model"].append((flag == term).text)
            flags.append(flag)
        lit = self._bool("query:misaligned")
        self._pending["model"].append(T.Implies(lit, T.Or(*flags)).text)
        self._flush()
        verdict = self.check(self.dynamic_facts(), [self._z3(lit)])
        if verdict.unsat:
            return frozenset()
        if not verdict.sat:
            return None
        model = self.last_model()
        return frozenset(
            name
            for (name, _), flag in zip(self._misaligned, flags, strict=True)
            if z3.is_true(model.eval(self._z3(flag), model_completion=True))
        )

    def _completions_before(self, movers: Sequence[Event], e: Event) -> Term:
        terms = []
        for o in movers:
            b = False if o is e else self.before(o, e)
            flag = self.done[o.id]
            assert not isinstance(flag, bool)
            if b is not False:
                both = flag if b is True else T.And(b, flag)
                terms.append(T.If(both, self._val(1), self._val(0)))
        return self._sum(terms)

    def _counting(self, name: str, movers: list[Event], waits: list[Event], n: int, decl: str) -> None:
        """An mbarrier slot or named barrier changed by several roles: sums over order atoms.

        Besides the exact encoding, the cut abstraction gets facts true in every reachable
        state: completions at the cut are at most ``arrivals / n``; a ``bar.sync`` arrival
        saw a generation no later than the cut's, and one more once its wait passed.
        """
        flags = {e.id: self._bool(f"done{e.id}") for e in movers}
        self.done.update(flags)
        basis = [decl, *dict.fromkeys(self._key(e) for e in movers)]
        over: dict[int, Term] = {}
        if any(e.step.nbytes for e in movers):
            self._completions_with_bytes(movers, flags, n, decl)
        else:
            over = self._completions_plain(movers, flags, n, decl)
        cut = [T.And(self.executed(o), flags[o.id]) for o in movers]
        gen_cut = self._int(f"gen-cut:{name}")
        self._add(decl, gen_cut == self._sum([T.If(t, self._val(1), self._val(0)) for t in cut]))
        arrived = self._sum(
            [
                T.If(self.executed(o), self._count[self._key(o)], self._val(0))
                for o in movers
                if o.op is not Op.EXPECT_TX and o.op is not Op.COPY
            ]
        )
        self._add(basis, T.And(gen_cut >= 0, n * gen_cut <= arrived), cut=True)
        if over:
            self.overshoots[name] = (over, movers, n, gen_cut, arrived, basis)
            self._query(QueryKey(Query.OVERSHOOT, name), T.Or(*[T.And(self.executed(e), over[e.id]) for e in movers]))
        odd_cut = gen_cut % 2 == 1
        seen: dict[int, Term] = {}
        for w in waits:
            if w.op is Op.WAIT:
                odd = _xor(
                    [
                        flags[o.id] if b is True else T.And(b, flags[o.id])
                        for o in movers
                        if (b := self.before(o, w)) is not False
                    ]
                )
                self._cut_pass[w.id] = odd_cut if w.parity == 0 else T.Not(odd_cut)
                passes = odd if w.parity == 0 else T.Not(odd)
                self._add(self._key(w), T.Implies(self.executed(w), passes))
                continue
            arrival = self.sequences[w.rank][w.pos - 1]
            gen = self._int(f"gen-at:{arrival.id}")
            self._add(decl, gen == self._completions_before(movers, arrival))
            self._cut_pass[w.id] = gen_cut > gen
            passes = self._completions_before(movers, w) > gen
            self._add(self._key(w), T.Implies(self.executed(w), passes))
            own = [o for o in movers if o.rank == arrival.rank and o.pos < arrival.pos]
            others = [o for o in movers if o.rank != arrival.rank]
            bound = self._sum(
                [self._count[self._key(o)] for o in own]
                + [T.If(self.executed(o), self._count[self._key(o)], self._val(0)) for o in others]
            )
            facts = [*basis, self._key(w)]
            self._add(
                facts,
                T.And(gen >= 0, T.Implies(self.executed(arrival), T.And(gen <= gen_cut, n * gen <= bound))),
                dynamic=False,
                cut=True,
            )
            self._add(facts, T.Implies(self.executed(w), gen + 1 <= gen_cut), dynamic=False, cut=True)
            previous = seen.get(arrival.rank)
            if previous is not None:
                self._add(
                    [*facts, role_key(arrival.role)],
                    T.Implies(self.executed(arrival), gen >= previous + 1),
                    dynamic=False,
                    cut=True,
                )
            seen[arrival.rank] = gen

    def _completions_plain(self, movers: list[Event], flags: dict[int, Term], n: int, decl: str) -> dict[int, Term]:
        """Completions of a counting object without bytes, from arrival sums alone.

        Until some arrival jumps past the next multiple of ``n`` (over-arrival, after which
        nothing completes), ``e`` completes a phase iff its arrival total lands exactly on
        the next multiple: no completion flag depends on another one.
        """
        over: dict[int, Term] = {}
        lands: dict[int, Term] = {}
        total_max = sum(self._count_value(e) for e in movers)
        levels = [n * j for j in range(1, total_max // n + 1)]
        for e in movers:
            before = [
                T.If(b, self._count[self._key(o)], self._val(0)) if b is not True else self._count[self._key(o)]
                for o in movers
                if o is not e and (b := self.before(o, e)) is not False
            ]
            prev = self._acc(decl, f"prev{e.id}", self._sum(before))
            total = prev + self._count[self._key(e)]
            over[e.id] = self._bool(f"over{e.id}")
            crossed = [T.And(prev < level, level < total) for level in levels]
            self._add(decl, over[e.id] == (T.Or(*crossed) if crossed else self._const(False)))
            hit = [total == level for level in levels]
            lands[e.id] = T.And(T.Or(*hit), T.Not(over[e.id])) if hit else self._const(False)
        for e in movers:
            stuck = [
                T.And(b, over[o.id]) if b is not True else over[o.id]
                for o in movers
                if o is not e and (b := self.before(o, e)) is not False
            ]
            ok = T.And(lands[e.id], T.Not(T.Or(*stuck))) if stuck else lands[e.id]
            self._add(decl, flags[e.id] == ok)
        return over

    def _completions_with_bytes(self, movers: list[Event], flags: dict[int, Term], n: int, decl: str) -> None:
        """Completions of an mbarrier slot with bytes: each flag from the earlier ones."""
        for e in movers:
            arrivals: list[Term] = []
            expected: list[Term] = []
            completed: list[Term] = []
            for o in movers:
                incl = True if o is e else self.before(o, e)
                if incl is False:
                    continue
                key = self._key(o)

                def part(var: Term, incl: Cond = incl) -> Term:
                    return var if incl is True else T.If(incl, var, self._val(0))

                if o.op is Op.COPY:
                    completed.append(part(self._bytes[key]))
                    continue
                if o.step.nbytes:
                    expected.append(part(self._bytes[key]))
                if o.op is not Op.EXPECT_TX:
                    arrivals.append(part(self._count[key]))
            completes = T.And(
                self._sum(arrivals) == n * self._completions_before(movers, e) + n,
                self._sum(expected) == self._sum(completed),
            )
            self._add(decl, flags[e.id] == completes)

    def _acc(self, key: str, name: str, value: Term) -> Term:
        """A fresh integer defined as ``value`` (under ``key``)."""
        var = self._int(name)
        self._add(key, var == value)
        return var

    def _frontier(self, chain: list[Event], values: Sequence[bool], at: Callable[[Event], Cond]) -> Term:
        """``values[f]`` for the last ``f`` with ``at(chain[f])`` (false when there is none).

        ``at`` must be monotone along the chain (true on a prefix of it).
        """
        marks = [at(e) for e in chain]
        terms: list[Term] = []
        for f, mark in enumerate(marks):
            nxt = marks[f + 1] if f + 1 < len(marks) else False
            if not values[f] or mark is False or nxt is True:
                continue
            seg = [m for m in (mark, True if nxt is False else T.Not(nxt)) if m is not True]
            terms.append(T.And(*seg) if len(seg) > 1 else seg[0] if seg else self._const(True))
        if not terms:
            return self._const(False)
        return terms[0] if len(terms) == 1 else T.Or(*terms)

    # -- queries and lemmas ----------------------------------------------------------

    def _query(self, qk: QueryKey, expr: Term) -> None:
        lit = self._bool(qk.key)
        self.queries[qk] = self._z3(lit)
        self.assertions += 1
        assertion = T.Implies(lit, expr).text
        self._pending["model"].append(assertion)
        if qk.query is Query.DEADLOCK:
            self._pending["cut"].append(assertion)

    def _encode_queries(self) -> None:
        finished: list[Term] = []
        stuck: list[Term] = []
        within: list[Term] = []
        trips = self._int("trips")
        for seq in self.sequences:
            if not seq:
                continue
            pc = self.pc[seq[0].rank]
            cuts = trip_cuts(seq, self.bound)
            limit = self._int(f"limit:{seq[0].rank}")
            within.append(T.Or(*[T.And(trips == n, limit == cuts[n]) for n in self.trip_counts]))
            within.append(pc <= limit)
            done = pc == limit
            blocked = [T.And(pc == e.pos, T.Not(self._cut_pass[e.id])) for e in seq if e.is_wait]
            finished.append(done)
            stuck.append(T.Or(done, *blocked))
        if finished:
            self._query(
                QueryKey(Query.DEADLOCK),
                T.And(trips >= 1, trips <= self.bound, *within, *stuck, T.Or(*[T.Not(f) for f in finished])),
            )
        for ring in self.protocol.rings:
            overwrite = [self._misordered(prev, w) for w, _, prev in self.overwrite_pairs(ring)]
            early = [self._misordered(lw, r) for r, lw in self.read_pairs(ring)]
            if overwrite:
                self._query(QueryKey(Query.OVERWRITE, ring.name), T.Or(*overwrite))
            if early:
                self._query(QueryKey(Query.EARLY_READ, ring.name), T.Or(*early))
        for counter in self.protocol.counters:
            both = [
                T.And(self.pc[r.rank] == r.pos, self.pc[w.rank] == w.pos) for r, w in self.conflict_pairs(counter.name)
            ]
            if both:
                self._query(QueryKey(Query.CONFLICT, counter.name), T.Or(*both))

    def _misordered(self, first: Event | None, later: Event) -> Term:
        """``later`` ran but ``first`` did not run before it."""
        if first is None:
            return self.executed(later)
        order = self.before(first, later)
        return T.And(self.executed(later), T.Not(order))

    def ring_accesses(self, ring: Ring) -> tuple[list[Event], dict[tuple[int, int, int], Event | None], list[Event]]:
        """The writes of the ring's slots, each consumer process's last access per slot and data
        iteration it reads (None: an asynchronous read no read wait completes), and the reads.

        Keys are (process, the CTA of the slot, data iteration). A consumer's accesses are its
        reads (done at the read wait that completes them when they are asynchronous) and its
        first release of the data iteration on `empty`: a consumer releases a slot only when it
        is done reading it, whichever CTA's barrier that release reaches.
        """
        writes = [e for e in self.events if e.step.channel == ring.name and e.op in (Op.COPY, Op.WRITE)]
        reads = [e for e in self.events if e.step.channel == ring.name and e.op is Op.READ]
        last: dict[tuple[int, int, int], Event | None] = {}
        for r in reads:
            assert r.data is not None and r.lands is not None
            done: Event | None = r
            if r.step.asynchronous:
                done = next(
                    (
                        e
                        for e in self.sequences[r.rank][r.pos + 1 :]
                        if e.op is Op.READ_WAIT and e.step.channel == ring.name and (e.data or 0) >= r.data
                    ),
                    None,
                )
            key = (r.rank, r.lands, r.data)
            prior = last.get(key, r)
            last[key] = None if prior is None or done is None else max(prior, done, key=lambda e: e.pos)
        released: set[tuple[int, int | None]] = set()
        for e in self.events:  # each process's events in program order
            if e.step.channel != ring.name or e.op is not Op.ARRIVE or e.step.barrier is not BarrierKind.EMPTY:
                continue
            if (e.rank, e.data) in released:
                continue  # a consumer is done with a slot at its first release of it, whatever barrier that reaches
            released.add((e.rank, e.data))
            for key, prior in list(last.items()):
                if key[0] == e.rank and key[2] == e.data and prior is not None and prior.pos < e.pos:
                    last[key] = e
        return writes, last, reads

    def overwrite_pairs(self, ring: Ring) -> list[tuple[Event, str, Event | None]]:
        """Each write of a reused slot, per consumer process that read the slot's previous use
        (its name), with its last access of that use (None: never done)."""
        writes, last, _ = self.ring_accesses(ring)
        out: list[tuple[Event, str, Event | None]] = []
        for w in writes:
            assert w.data is not None and w.lands is not None
            prev = ring.previous_use(w.data)
            if prev is None:
                continue
            for (rank, x, data), access in last.items():
                if x == w.lands and data == prev:
                    out.append((w, self.process(rank), access))
        return out

    def read_pairs(self, ring: Ring) -> list[tuple[Event, Event]]:
        """Each read, with every writer process's last write of the same slot and data iteration."""
        writes, _, reads = self.ring_accesses(ring)
        last: dict[tuple[int, int, int], Event] = {}
        for w in writes:
            assert w.data is not None and w.lands is not None
            last[(w.rank, w.lands, w.data)] = w
        return [(r, lw) for r in reads for (_, x, data), lw in last.items() if x == r.lands and data == r.data]

    def conflict_pairs(self, counter: str) -> list[tuple[Event, Event]]:
        """Each read of a grid counter's tile with each write of that tile by another CTA."""
        data = [
            e for e in self.events if e.step.channel == counter and e.op in (Op.READ, Op.WRITE) and e.data is not None
        ]
        rank = self.protocol.cluster
        return [
            (r, w)
            for r in data
            if r.op is Op.READ
            for w in data
            if w.op is Op.WRITE and w.data == r.data and w.cta != r.cta and w.cta % rank == r.cta % rank
        ]

    def process(self, rank: int) -> str:
        """The name of process ``rank`` in traces (``role``, or ``role@cta`` across CTAs)."""
        seq = self.sequences[rank]
        role = self.protocol.roles[rank % len(self.protocol.roles)].name
        return process_name(self.protocol, role, seq[0].cta if seq else rank // len(self.protocol.roles))

    def add_lemma(self, key: str, fact: Fact, qk: QueryKey) -> None:
        """Assert, under ``key``, that the race of ``qk`` (proved unsat) never happens.

        It is an invariant of every execution, so it removes none; it only gives the
        deadlock query the ordering facts in a form the solver reasons with quickly.
        """
        if qk.query is Query.CONFLICT:
            self._fact(key, fact)  # a state the run never reaches: nothing orders the deadlock query by it
            return
        ring = self.protocol.ring(qk.ring)
        pairs: list[tuple[Event, Event | None]]
        if qk.query is Query.OVERWRITE:
            pairs = [(w, prev) for w, _, prev in self.overwrite_pairs(ring)]
        else:
            pairs = [(r, lw) for r, lw in self.read_pairs(ring)]
        self._fact(key, fact)
        for later, first in pairs:
            if first is None:
                self._add(key, T.Not(self.executed(later)), cut=True)
                continue
            order = self.before(first, later)
            self._add(key, T.Implies(self.executed(later), order))
            self._add(key, T.Implies(self.executed(later), self.executed(first)), cut=True)

    def add_overshoot_lemma(self, key: str, fact: Fact, name: str) -> None:
        """Assert, under ``key``, that no arrival on ``name`` jumps a phase (proved unsat).

        Then every crossing of a multiple of the init count lands on it, so the phases
        completed at the cut are exactly ``arrivals // n`` (a fact for the cut abstraction).
        """
        over, movers, n, gen_cut, arrived, basis = self.overshoots[name]
        self._fact(key, fact)
        self._add(key, T.Not(T.Or(*[T.And(self.executed(e), over[e.id]) for e in movers])))
        self._add([key, *basis], arrived < n * gen_cut + n, dynamic=False, cut=True)

    # -- solving ---------------------------------------------------------------------

    def dynamic_facts(self) -> list[str]:
        """Facts assumed by the dynamic queries (all but the static-check rules)."""
        static = {c.rule_key for c in self.static_checks}
        return [k for k in self.lits if k not in static]

    def pick(self, solver: str) -> z3.Solver:
        """One of the model's solvers: ``"model"``, ``"static"`` or ``"cut"``."""
        return {"model": self.solver, "static": self.static_solver, "cut": self.cut_solver}[solver]

    def check(self, facts: Iterable[str], extra: Iterable[z3.BoolRef] = (), *, solver: str = "model") -> Verdict:
        self._flush()
        chosen = self.pick(solver)
        return verdict_of(chosen.check(*[self.lits[k] for k in facts], *extra), chosen)

    def core(self, facts: Sequence[str], extra: Sequence[z3.BoolRef] = (), *, solver: str = "model") -> tuple[str, ...]:
        """A minimal subset of ``facts`` that stays unsat with ``extra`` (:func:`solver.minimise_core`).

        Starts from Z3's core; a literal whose removal gives ``unknown`` is kept.
        """
        chosen = self.pick(solver)

        def core_of(verdict: Verdict) -> tuple[Verdict, set[str] | None]:
            return (UNSAT, set(self.tracked.labels(chosen.unsat_core()))) if verdict.unsat else (verdict, None)

        _, found = core_of(self.check(facts, extra, solver=solver))
        if found is None:
            return tuple(facts)
        kept, _ = minimise_core(
            [k for k in facts if k in found], lambda trial: core_of(self.check(trial, extra, solver=solver))
        )
        return kept

    def last_model(self) -> z3.ModelRef:
        """The model of the last satisfiable check of the whole model."""
        return self.solver.model()

    def set_rlimit(self, rlimit: int) -> None:
        """The budget of each later check of the whole model."""
        self.solver.set("rlimit", rlimit)

    def steps_run(self) -> z3.ArithRef:
        """The number of steps executed before the cut (a counterexample's length)."""
        return z3.Sum([self._z3(pc) for pc in self.pc.values()]) if self.pc else z3.IntVal(0, self.ctx)

    def at_most(self, total: z3.ArithRef, bound: int) -> z3.BoolRef:
        """A literal that, assumed, keeps ``total`` at most ``bound``."""
        lit = z3.Bool(f"at-most:{bound}", self.ctx)
        self.solver.add(z3.Implies(lit, total <= bound))
        return lit

    def pc_at(self, model: z3.ModelRef, rank: int) -> int:
        """How many steps of the role of ``rank`` ran before the cut in ``model``."""
        return int(model.eval(self._z3(self.pc[rank]), model_completion=True).as_long())

    def trips_at(self, model: z3.ModelRef) -> int:
        """The least trip count (iterations every CTA runs) whose run ``model``'s deadlock is a state of:
        every process has run at most that many iterations, and one short of them, as every
        such one, waits."""
        pcs = {seq[0].rank: self.pc_at(model, seq[0].rank) for seq in self.sequences if seq}
        for n in self.trip_counts:
            cuts = {rank: trip_cuts(self.sequences[rank], self.bound)[n] for rank in pcs}
            short = [r for r, pc in pcs.items() if pc < cuts[r]]
            if (
                short
                and all(pc <= cuts[r] for r, pc in pcs.items())
                and all(self.sequences[r][pcs[r]].is_wait for r in short)
            ):
                return n
        return self.bound

    @property
    def trip_counts(self) -> range:
        """The trip counts whose runs end in the model: every one up to the bound, or only the bound
        when the protocol is peeled (its shorter runs are no prefixes: each has its own model)."""
        return range(self.bound, self.bound + 1) if self.protocol.peeled else range(1, self.bound + 1)

    def trip_steps(self, rank: int, trips: int) -> int:
        """How many steps process ``rank`` runs in ``trips`` iterations."""
        return trip_cuts(self.sequences[rank], self.bound)[trips]

    def order(self, model: z3.ModelRef) -> list[Event]:
        """The executed events of ``model`` in schedule order."""
        pcs = {rank: model.eval(self._z3(pc), model_completion=True).as_long() for rank, pc in self.pc.items()}
        times = {e.id: model.eval(self._z3(self.time[e.id]), model_completion=True).as_long() for e in self.events}
        executed = [e for e in self.events if e.pos < pcs.get(e.rank, 0)]
        return sorted(executed, key=lambda e: (times[e.id], e.rank, e.pos))

    def completes(self, model: z3.ModelRef, e: Event) -> bool:
        """Whether ``e`` completed a phase of its barrier in ``model``."""
        group = self._phase_of.get(e.id)
        if group is not None:

            def at(x: Event) -> tuple[int, int, int]:
                t = model.eval(self._z3(self.time[x.id]), model_completion=True).as_long()
                return (t, x.rank, x.pos)

            return bool(group) and all(at(o) < at(e) for o in group if o is not e)
        flag = self.done.get(e.id, False)
        if isinstance(flag, bool):
            return flag
        return bool(z3.is_true(model.eval(self._z3(flag), model_completion=True)))


def declared_facts(protocol: Protocol) -> list[tuple[str, Provenance]]:
    """The facts of the declarations and steps, in model order: the facts a fresh model's
    dynamic queries assume (:meth:`ProtocolModel.dynamic_facts`)."""
    out = [(role_key(role.name), role.provenance) for role in protocol.roles]
    for ring in protocol.rings:
        out.append((f"ring:{ring.name}", ring.provenance))
        out += [(decl_key(ring.name, kind), ring.barrier(kind).provenance) for kind in BarrierKind]
    out += [(f"counter:{ctr.name}", ctr.provenance) for ctr in protocol.counters]
    out += [(f"bar:{bar.name}", bar.provenance) for bar in protocol.named_barriers]
    for _, steps in protocol.programs:
        out += [(step_key(step, k), step.provenance) for k, step in enumerate(steps)]
    return out


def ring_slice(protocol: Protocol, ring: str) -> tuple[Protocol, dict[str, str]]:
    """``protocol`` restricted to the steps on ``ring`` and a map of its step keys back.

    Dropping the other channels' steps only removes constraints, so a race that this
    slice cannot reach is unreachable in the whole protocol. The slice runs one cluster of
    the group: steps of a ring never reach another cluster's barriers or slots, and the
    steps that tie clusters together (a grid counter's) are gone; a ring whose steps tell
    splits apart (`on first`, `on rest`) keeps the whole group.
    """
    keys: dict[str, str] = {}
    programs = []
    for role, steps in protocol.programs:
        kept: list[Step] = []
        for k, step in enumerate(steps):
            if step.channel == ring:
                keys[step_key(step, len(kept))] = step_key(step, k)
                kept.append(step)
        programs.append((role, tuple(kept)))
    # a ring's barriers and slots are its cluster's: without the counters, the clusters of a
    # tile's group run independently, and one of them shows every race of the ring, unless
    # its steps tell splits apart
    splits = any(s.part in (Part.FIRST, Part.REST) for _, steps in programs for s in steps)
    sliced = dataclasses.replace(
        protocol,
        rings=(protocol.ring(ring),),
        counters=(),
        named_barriers=(),
        programs=tuple(programs),
        group=protocol.group if splits else 1,
    )
    return sliced, keys


def _xor(terms: Sequence[Term]) -> Term:
    if not terms:
        return T.FALSE
    acc = terms[0]
    for t in terms[1:]:
        acc = T.Xor(acc, t)
    return acc
