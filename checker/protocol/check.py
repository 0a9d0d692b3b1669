"""Deciding a protocol: static accounting, races, deadlock; typed findings with traces and cores.

Order of work (each step one or more solver checks under ``rlimit``):

0. Unless a bound or an explanation is asked for, the parametric argument (``parametric.py``):
   when it proves the protocol free of deadlocks and races at every depth and trip count,
   that is the verdict (safe; its class has no static finding). Otherwise the bounded model
   decides, and the verdict's :class:`Coverage` says why the argument did not.
1. Per barrier, the arithmetic rules (L-ARRIVE, L-TXBYTES) and, per wait, the first-parity
   convention (L-PARITY); a conflict is a :class:`StaticViolation` with its minimised unsat core.
2. Per ring, the two race queries, first on the ring's slice of the protocol (an
   over-approximation, so unsat there is unsat everywhere), then on the whole model if
   the slice finds one (a :class:`RaceWitness`). Every race proved absent becomes a lemma
   of the whole model.
3. The deadlock query on the whole model, helped by those lemmas (a :class:`DeadlockWitness`).

A check that ends ``unknown`` (the budget ran out) is an :class:`Undecided` query: the
verdict says so and never reports it as a pass. The findings are typed; the clause each
names words it (``checker/clauses/l_<code>.py``). Who initializes a barrier (L-INIT) is no
question of the model: :func:`checker.protocol.model.init_fault` decides it from the
declarations. :func:`verdict` keeps a verdict on the protocol's meaning (:func:`canonical`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from checker.memo import Memo
from checker.protocol import parametric
from checker.protocol.events import Event
from checker.protocol.model import BarrierKind, Op, Protocol, Provenance, Ring, Step, remap_provenance
from checker.protocol.smt import (
    Fact,
    Lemma,
    ProtocolModel,
    Query,
    QueryKey,
    Rule,
    StaticCheck,
    StaticKind,
    declared_facts,
    ring_slice,
)
from checker.protocol.verdict import (
    Accounting,
    Coverage,
    DeadlockWitness,
    Finding,
    ModelStats,
    Proof,
    ProtocolVerdict,
    RaceWitness,
    StaticViolation,
    Trace,
    TraceRow,
    Undecided,
)
from diagnostics.span import Span
from diagnostics.symbols import Code
from solver import DEFAULT_RLIMIT as DEFAULT_RLIMIT
from solver import MAX_RLIMIT as MAX_RLIMIT
from solver import Verdict, validate_rlimit

MAX_MODEL_DEPTH = 32
"""The deepest ring the bounded model unrolls (``2 * depth + 1`` iterations per role); the
parametric argument has no such limit."""


@dataclass(frozen=True)
class ModelOptions:
    """The solver budget per query and the iterations each role runs (None: ``2·depth+1``)."""

    rlimit: int = DEFAULT_RLIMIT
    bound: int | None = None

    def __post_init__(self) -> None:
        validate_rlimit(self.rlimit)
        if self.bound is not None and not 1 <= self.bound <= 4 * MAX_MODEL_DEPTH + 1:
            raise ValueError(f"bound must be in 1..{4 * MAX_MODEL_DEPTH + 1}")


class _Run:
    """The mutable state of one check (findings, proofs, counters)."""

    def __init__(self, protocol: Protocol, bound: int, rlimit: int, explain: bool, memo: Memo | None = None) -> None:
        self.protocol = protocol
        self.memo = memo or Memo()
        self.bound = bound
        self.rlimit = rlimit
        self.explain = explain
        start = time.perf_counter()
        self.model = ProtocolModel(protocol, bound=bound, rlimit=rlimit)
        self.build_seconds = time.perf_counter() - start
        self.findings: list[Finding] = []
        self.undecided: list[Undecided] = []
        self.proofs: list[Proof] = []
        self.races: set[tuple[str, str]] = set()
        self.static: set[tuple[str, str, str]] = set()
        self.deadlock: bool | None = None
        self.checks = 0

    def check(
        self, model: ProtocolModel, facts: Sequence[str], extra: Sequence[Any] = (), *, solver: str = "model"
    ) -> Verdict:
        self.checks += 1
        return model.check(facts, extra, solver=solver)

    def core(
        self, model: ProtocolModel, facts: Sequence[str], extra: Sequence[Any] = (), *, solver: str = "model"
    ) -> tuple[str, ...]:
        kept = model.core(facts, extra, solver=solver)
        self.checks += len(kept) + 1
        return kept


def check_protocol(
    protocol: Protocol,
    *,
    bound: int | None = None,
    rlimit: int = DEFAULT_RLIMIT,
    explain: bool = False,
    memo: Memo | None = None,
) -> ProtocolVerdict:
    """Decide L-ARRIVE, L-TXBYTES, L-PARITY, L-RACE and L-DEADLOCK for ``protocol``.

    With no ``bound`` and no ``explain``, the parametric argument is tried first: a protocol
    it proves safe is safe at its depths for every trip count. Otherwise ``bound`` is the
    number of iterations every role runs (default: enough to wrap every ring twice,
    ``2 * max depth + 1``); ``rlimit`` the Z3 resource budget of each check; ``explain``
    adds a minimal unsat core ("why safe") for every query proved unsat; ``memo`` keeps
    ring slices' verdicts and parametric results for the caller's later checks (checker/memo.py).
    """
    validate_rlimit(rlimit)
    start = time.perf_counter()
    fallback = ""
    if bound is None and not explain:
        proof = parametric_proof(protocol, None, rlimit, memo)
        if proof.proved:
            return _proved(proof, rlimit, time.perf_counter() - start)
        fallback = proof.reason
    run = _bounded(protocol, bound or protocol.default_bound(), rlimit, explain, memo)
    model = run.model
    stats = ModelStats(
        run.bound,
        len(model.events),
        model.assertions,
        model.variables,
        run.checks,
        time.perf_counter() - start,
        run.build_seconds,
    )
    return ProtocolVerdict(
        tuple(run.findings),
        tuple(dataclasses.replace(u, stats=stats, rlimit=rlimit) for u in run.undecided),
        tuple(run.proofs),
        stats,
        run.deadlock,
        frozenset(run.races),
        frozenset(run.static),
        rlimit,
        Coverage(False, (), fallback),
    )


def _bounded(protocol: Protocol, bound: int, rlimit: int, explain: bool, memo: Memo | None) -> _Run:
    """The bounded model's run at ``bound``. A peeled protocol's shorter runs are no prefixes of
    longer ones (its peeled steps follow the loop), so it is decided at every trip count up to
    the bound, each unrolled by itself; the first that finds or cannot decide something is the
    verdict's run."""
    counts = range(1, bound + 1) if protocol.peeled else range(bound, bound + 1)
    for n in counts:
        run = _Run(protocol, n, rlimit, explain, memo)
        _check_static(run)
        _check_races(run)
        _check_deadlock(run)
        if run.findings or run.undecided:
            break
    return run


def parametric_proof(
    protocol: Protocol,
    depths: dict[str, parametric.DepthRange] | None,
    rlimit: int,
    memo: Memo | None = None,
) -> parametric.ParametricResult:
    """:func:`parametric.prove` over ``depths`` (ring → range; default: each ring's own depth),
    kept in ``memo`` on the protocol's meaning (:func:`canonical`, with each ring at the
    least depth of its range: the argument reads ranges, not depths)."""
    memo = memo or Memo()
    ranges = {r.name: (depths or {}).get(r.name, (r.depth, r.depth)) for r in protocol.rings}
    at_least = protocol
    for name, (lo, _) in ranges.items():
        if at_least.ring(name).depth != lo:
            at_least = at_least.with_depth(name, lo)
    canon, _ = canonical(at_least)
    key = tuple(sorted((name, lo, hi) for name, (lo, hi) in ranges.items()))
    return memo.proofs.get((canon, key, rlimit), lambda: parametric.prove(canon, ranges, rlimit=rlimit))


def _proved(proof: parametric.ParametricResult, rlimit: int, seconds: float) -> ProtocolVerdict:
    """The verdict of a protocol the parametric argument proved: safe, nothing unrolled."""
    stats = ModelStats(0, 0, 0, 0, proof.checks, seconds, 0.0)
    coverage = Coverage(True, proof.depths)
    return ProtocolVerdict((), (), (), stats, False, frozenset(), frozenset(), rlimit, coverage)


# -- L-ARRIVE, L-TXBYTES, L-PARITY ----------------------------------------------------


def _check_static(run: _Run) -> None:
    model = run.model
    groups: dict[tuple[StaticKind, str, BarrierKind, int], list[StaticCheck]] = {}
    for check in model.static_checks:
        wait = id(check.wait) if check.wait is not None else 0
        groups.setdefault((check.kind, check.ring, check.barrier, wait), []).append(check)
    for checks in groups.values():
        failing: list[tuple[StaticCheck, tuple[str, ...]]] = []
        for check in checks:
            facts = [*check.fact_keys, check.rule_key]
            result = run.check(model, facts, solver="static")
            if result.unknown:
                bar = run.protocol.ring(check.ring).barrier(check.barrier)
                run.undecided.append(Undecided(check.kind.value, check.ring, check.barrier.value, (bar.provenance,)))
            elif result.unsat:
                failing.append((check, run.core(model, facts, solver="static")))
        if failing:
            run.findings.append(_static_violation(run, failing))


def _static_violation(run: _Run, failing: list[tuple[StaticCheck, tuple[str, ...]]]) -> StaticViolation:
    check, core = failing[0]
    ring = run.protocol.ring(check.ring)
    bar = ring.barrier(check.barrier)
    run.static.add((check.kind.value, ring.name, check.barrier.value))
    return StaticViolation(
        check.kind.value,
        ring.name,
        check.barrier,
        tuple(c.case for c, _ in failing),
        bar.init_count,
        bar.expect_tx,
        Accounting(*check.totals),
        tuple(run.model.facts[k] for k in core),
        tuple(_core_steps(run.protocol, core)),
        any(k.startswith("decl:") for k in core),
        bar.provenance,
        ring.provenance,
        check.wait if check.kind is StaticKind.PARITY else None,
    )


def _core_steps(protocol: Protocol, core: Iterable[str]) -> list[Step]:
    steps = []
    for key in core:
        if not key.startswith("step:"):
            continue
        role, index = key[len("step:") :].rsplit("#", 1)
        steps.append(protocol.program(role)[int(index)])
    return steps


# -- L-RACE ---------------------------------------------------------------------------


def _check_races(run: _Run) -> None:
    """Race queries per ring: on the ring's slice first when other channels exist."""
    protocol = run.protocol
    for counter in protocol.counters:
        qk = QueryKey(Query.CONFLICT, counter.name)
        if qk in run.model.queries:
            _race_on_model(run, qk)
    whole = len(protocol.rings) == 1 and not protocol.counters and not protocol.named_barriers
    for ring in protocol.rings:
        queries = [
            QueryKey(q, ring.name)
            for q in (Query.OVERWRITE, Query.EARLY_READ)
            if QueryKey(q, ring.name) in run.model.queries
        ]
        if not queries:
            continue
        if whole:
            for qk in queries:
                _race_on_model(run, qk)
            continue
        sliced, keys = ring_slice(protocol, ring.name)
        if run.explain:  # a proof names its core: the slice's model is needed
            part = ProtocolModel(sliced, bound=run.bound, rlimit=run.rlimit)
            for qk in queries:
                facts = part.dynamic_facts()
                lit = part.queries[qk]
                if run.check(part, facts, [lit]).unsat:
                    _prove_race(run, qk, tuple(keys.get(k, k) for k in run.core(part, facts, [lit])))
                else:
                    _race_on_model(run, qk)
            continue
        nowhere = remap_provenance(sliced, lambda _: _NOWHERE)
        safe = run.memo.slices.get(
            (nowhere, run.bound, run.rlimit), functools.partial(_slice_safe, nowhere, run.bound, run.rlimit)
        )
        run.checks += len(queries)
        facts = [keys.get(k, k) for k, _ in declared_facts(sliced)]
        for qk in queries:
            if qk.query in safe:
                _prove_race(run, qk, facts)
            else:
                _race_on_model(run, qk)


_NOWHERE = Provenance(Span("<slice>", 1, 1, 1, 1), "-")


def _slice_safe(sliced: Protocol, bound: int, rlimit: int) -> frozenset[Query]:
    """The race queries a ring's slice proves impossible (unsat), kept in the memo on the slice's meaning.

    ``sliced`` carries no spans (every provenance is one placeholder): the model reads
    names, counts and steps only, so mutants that leave a ring's steps alone share its
    slice's verdict. An undecided or satisfiable query is not in the set (the whole model
    decides it).
    """
    part = ProtocolModel(sliced, bound=bound, rlimit=rlimit)
    facts = part.dynamic_facts()
    return frozenset(
        qk.query
        for qk, lit in part.queries.items()
        if qk.query in (Query.OVERWRITE, Query.EARLY_READ) and part.check(facts, [lit]).unsat
    )


def _race_on_model(run: _Run, qk: QueryKey) -> None:
    model = run.model
    facts = [*model.dynamic_facts()]
    lit = model.queries[qk]
    result = run.check(model, facts, [lit])
    if result.unknown:
        where = run.protocol.counter(qk.ring) if qk.query is Query.CONFLICT else run.protocol.ring(qk.ring)
        run.undecided.append(Undecided(Code.L_RACE, qk.ring, qk.query.value, (where.provenance,)))
    elif result.sat:
        run.races.add((qk.ring, qk.query.value))
        run.findings.append(_race_witness(run, qk, model.last_model()))
    else:
        core = run.core(model, facts, [lit]) if run.explain else tuple(facts)
        _prove_race(run, qk, core)


def _prove_race(run: _Run, qk: QueryKey, core: Sequence[str]) -> None:
    model = run.model
    basis = _flatten(model.facts[k] for k in core if k in model.facts)
    what = {Query.OVERWRITE: "overwrite", Query.EARLY_READ: "early read"}.get(qk.query, "conflicting access")
    lemma = Lemma(
        f"no {what} on `{qk.ring}` (proved)"
        if qk.query is Query.CONFLICT
        else f"no {what} on ring `{qk.ring}` (proved)",
        basis,
    )
    key = f"lemma:{qk.query.value}:{qk.ring}"
    model.add_lemma(key, lemma, qk)
    if run.explain:
        run.proofs.append(Proof(Code.L_RACE, basis, qk.query.value, qk.ring))


def _flatten(facts: Iterable[Fact]) -> tuple[Provenance | Rule, ...]:
    out: list[Provenance | Rule] = []
    for fact in facts:
        out.extend(fact.basis if isinstance(fact, Lemma) else (fact,))
    return tuple(dict.fromkeys(out))


def _race_witness(run: _Run, qk: QueryKey, zmodel: Any) -> RaceWitness:
    model = run.model
    zmodel = _shorten(run, [model.queries[qk]], zmodel)
    order = model.order(zmodel)
    if qk.query is Query.CONFLICT:
        return _conflict_witness(run, qk, zmodel, order)
    ring = run.protocol.ring(qk.ring)
    executed = {e.id for e in order}
    pairs: list[tuple[Event, str, Event | None]]
    if qk.query is Query.OVERWRITE:
        pairs = [
            (w, c, prev)
            for w, c, prev in model.overwrite_pairs(ring)
            if w.id in executed and (prev is None or not _before_in(order, prev, w))
        ]
    else:
        pairs = [
            (r, ring.producer, lw)
            for r, lw in model.read_pairs(ring)
            if r.id in executed and not _before_in(order, lw, r)
        ]
    culprit, partner, other = min(pairs, key=lambda p: order.index(p[0]))
    every = _rows(run, zmodel, order[: order.index(culprit) + 1])
    # the racer waits on the barrier that orders it: the producer on `empty`, a reader on `full`
    barrier = BarrierKind.EMPTY if qk.query is Query.OVERWRITE else BarrierKind.FULL
    waits = any(
        s.op is Op.WAIT and s.channel == ring.name and s.barrier is barrier
        for s in run.protocol.program(ring.producer if qk.query is Query.OVERWRITE else culprit.role)
    )
    return RaceWitness(
        ring.name,
        qk.query,
        ring.depth,
        ring.producer,
        model.process(culprit.rank),
        partner if qk.query is Query.OVERWRITE else model.process(other.rank) if other is not None else partner,
        culprit.slot,
        culprit.data,
        culprit.step,
        other.step if other is not None else None,
        waits,
        Trace(every[:-1], every[-1:]),
        qk.query is Query.OVERWRITE
        and any(
            s.op is Op.READ and s.asynchronous and s.channel == ring.name
            for c in ring.consumers
            for s in run.protocol.program(c)
        ),
    )


def _conflict_witness(run: _Run, qk: QueryKey, zmodel: Any, order: list[Event]) -> RaceWitness:
    """A state in which one CTA reads a grid counter's tile while another CTA is about to write it."""
    model = run.model
    read, write = next(
        (r, w)
        for r, w in model.conflict_pairs(qk.ring)
        if model.pc_at(zmodel, r.rank) == r.pos and model.pc_at(zmodel, w.rank) == w.pos
    )
    counter = run.protocol.counter(qk.ring)
    rows = _rows(run, zmodel, order)
    both = tuple(
        TraceRow(len(rows) + k, model.process(e.rank), e.step, e.iteration, e.step.channel, None, None, None)
        for k, e in enumerate((read, write), 1)
    )
    waits = any(s.op is Op.WAIT_GE and s.channel == counter.name for s in run.protocol.program(read.role))
    return RaceWitness(
        counter.name,
        qk.query,
        0,
        counter.producer,
        model.process(read.rank),
        model.process(write.rank),
        None,
        read.data,
        read.step,
        write.step,
        waits,
        Trace(rows, both),
    )


def _before_in(order: list[Event], a: Event, b: Event) -> bool:
    ids = [e.id for e in order]
    return a.id in ids and ids.index(a.id) < ids.index(b.id)


# -- L-DEADLOCK -----------------------------------------------------------------------


def _check_deadlock(run: _Run) -> None:
    model = run.model
    qk = QueryKey(Query.DEADLOCK)
    if qk not in model.queries:
        run.deadlock = False
        return
    lit = model.queries[qk]
    facts = model.dynamic_facts()
    refuted = run.check(model, facts, [lit], solver="cut").unsat
    if not refuted and _prove_no_overshoot(run):
        facts = model.dynamic_facts()
        refuted = run.check(model, facts, [lit], solver="cut").unsat
    if refuted:
        run.deadlock = False
        if run.explain:
            core = run.core(model, facts, [lit], solver="cut")
            run.proofs.append(Proof(Code.L_DEADLOCK, _flatten(model.facts[k] for k in core)))
        return
    result = run.check(model, facts, [lit])
    if result.unknown:
        run.undecided.append(Undecided(Code.L_DEADLOCK, where=_anchor(run.protocol)))
        return
    run.deadlock = result.sat
    if result.sat:
        run.findings.append(_deadlock_witness(run, model.last_model()))
    elif run.explain:
        core = run.core(model, facts, [lit])
        run.proofs.append(Proof(Code.L_DEADLOCK, _flatten(model.facts[k] for k in core)))


def _anchor(protocol: Protocol) -> tuple[Provenance, ...]:
    """Where a whole-protocol question is shown: its first channel's declaration."""
    found = [r.provenance for r in protocol.rings] + [c.provenance for c in protocol.counters]
    return tuple((found + [b.provenance for b in protocol.named_barriers])[:1])


def _prove_no_overshoot(run: _Run) -> bool:
    """Lemmas for barriers several roles arrive on: no arrival jumps a phase boundary.

    The lemmas only speed the deadlock query up, so each proof gets an eighth of the
    budget and is skipped when it does not finish. Returns whether any lemma was added.
    """
    model = run.model
    added = False
    model.set_rlimit(max(1, run.rlimit // 8))
    try:
        for qk in [q for q in model.queries if q.query is Query.OVERSHOOT]:
            facts = model.dynamic_facts()
            lit = model.queries[qk]
            if not run.check(model, facts, [lit]).unsat:
                continue
            core = run.core(model, facts, [lit]) if run.explain else tuple(facts)
            basis = _flatten(model.facts[k] for k in core)
            model.add_overshoot_lemma(
                f"lemma:overshoot:{qk.ring}", Lemma(f"no arrival jumps a phase of `{qk.ring}` (proved)", basis), qk.ring
            )
            added = True
    finally:
        model.set_rlimit(run.rlimit)
    return added


def _deadlock_witness(run: _Run, zmodel: Any) -> DeadlockWitness:
    model = run.model
    zmodel = _shorten(run, [model.queries[QueryKey(Query.DEADLOCK)]], zmodel)
    order = model.order(zmodel)
    rows = _rows(run, zmodel, order)
    stuck: list[TraceRow] = []
    finished: list[str] = []
    phases = _phases_at_end(model, zmodel, order)
    trips = model.trips_at(zmodel)
    for seq in model.sequences:
        if not seq:
            continue
        pc = model.pc_at(zmodel, seq[0].rank)
        if pc >= model.trip_steps(seq[0].rank, trips):
            finished.append(model.process(seq[0].rank))
            continue
        e = seq[pc]
        phase = phases.get(str(e.obj), 0) if e.op in (Op.WAIT, Op.BAR_SYNC) else None
        stuck.append(
            TraceRow(
                len(rows) + len(stuck) + 1,
                model.process(e.rank),
                e.step,
                e.iteration,
                str(e.obj) if e.obj is not None else "",
                e.slot,
                phase,
                e.parity,
                blocked=True,
            )
        )
    return DeadlockWitness(Trace(rows, tuple(stuck)), tuple(finished), trips, _lagging(model, stuck))


def _lagging(model: ProtocolModel, stuck: list[TraceRow]) -> tuple[Step, ...]:
    """The lagging releases on the rings the blocked roles wait on: the lines that cause the deadlock."""
    rings = {r.barrier.split(".", 1)[0] for r in stuck}
    found: dict[Provenance, Step] = {}
    sides: set[tuple[str, str]] = set()  # a lagged side (`lag N`) is named once, at its first step
    for seq in model.sequences:
        for e in seq:
            step = e.step
            if not step.lag or step.channel not in rings or step.provenance in found:
                continue
            if step.peel and (step.role, step.channel) in sides:
                continue
            sides.add((step.role, step.channel))
            found[step.provenance] = step
    return tuple(found.values())


# -- traces ---------------------------------------------------------------------------


SHORTEN_ROUNDS = 6
"""Binary-search steps spent on shortening a counterexample (each on a smaller budget)."""


def _shorten(run: _Run, extra: list[Any], zmodel: Any) -> Any:
    """A counterexample with as few executed steps as a short binary search finds.

    Shortening only makes traces readable, so each of its checks gets an eighth of the
    budget; an ``unknown`` ends the search with the best trace so far.
    """
    model = run.model
    facts = model.dynamic_facts()
    total = model.steps_run()
    best = zmodel
    low, high = 0, best.eval(total, model_completion=True).as_long()
    model.set_rlimit(max(1, run.rlimit // 8))
    try:
        best = _bisect(run, facts, extra, total, best, low, high)
    finally:
        model.set_rlimit(run.rlimit)
    return best


def _bisect(run: _Run, facts: list[str], extra: list[Any], total: Any, best: Any, low: int, high: int) -> Any:
    model = run.model
    for _ in range(SHORTEN_ROUNDS):
        if low >= high:
            break
        middle = (low + high) // 2
        result = run.check(model, facts, [*extra, model.at_most(total, middle)])
        if result.sat:
            best = model.last_model()
            high = best.eval(total, model_completion=True).as_long()
        elif result.unsat:
            low = middle + 1
        else:
            break
    return best


def _phases_at_end(model: ProtocolModel, zmodel: Any, order: list[Event]) -> dict[str, int]:
    phases: dict[str, int] = {}
    for e in order:
        if e.obj is not None and model.completes(zmodel, e):
            phases[str(e.obj)] = phases.get(str(e.obj), 0) + 1
    return phases


def _rows(run: _Run, zmodel: Any, order: list[Event]) -> tuple[TraceRow, ...]:
    model = run.model
    phases: dict[str, int] = {}
    counters: dict[str, int] = {}
    rows = []
    for i, e in enumerate(order, 1):
        obj = str(e.obj) if e.obj is not None else ""
        phase = phases.get(obj, 0) if e.obj is not None and e.op is not Op.ADD and e.op is not Op.WAIT_GE else None
        completes = model.completes(zmodel, e)
        if completes:
            phases[obj] = phases.get(obj, 0) + 1
        value = None
        if e.op is Op.ADD:
            counters[obj] = value = counters.get(obj, 0) + e.step.count
        elif e.op is Op.WAIT_GE:
            value = counters.get(obj, 0)
        slot = e.slot
        rows.append(
            TraceRow(
                i,
                model.process(e.rank),
                e.step,
                e.iteration,
                obj or e.step.channel,
                slot,
                phase,
                e.parity,
                completes,
                value,
                e.threshold,
                e.part,
            )
        )
    return tuple(rows)


# -- a verdict kept on the protocol's meaning --------------------------------------------


_CANON_FILE = "<canonical>"


def canonical(protocol: Protocol) -> tuple[Protocol, dict[Provenance, Provenance]]:
    """``protocol`` reduced to what the model decides of it, and the way back.

    Every provenance becomes a numbered placeholder (span and text) in order of
    appearance, every role is one warp wide and no barrier says who initializes it: the
    model reads none of these (a role's width is in the counts it was evaluated into; the
    text is quoted only when a finding is put in words, after the way back; who
    initializes is L-INIT's, decided from the declarations). Compositions that differ only
    in layout, in the wording of a line (``empty wait`` and ``empty wait parity 1``), in a
    width no count reads or in their `init by` share one verdict.
    """
    back: dict[Provenance, Provenance] = {}
    forth: dict[Provenance, Provenance] = {}

    def swap(p: Provenance) -> Provenance:
        if p not in forth:
            n = len(forth) + 1
            forth[p] = Provenance(Span(_CANON_FILE, n, 1, n, 2), f"#{n}")
            back[forth[p]] = p
        return forth[p]

    roles = tuple(r if r.warps == 1 else dataclasses.replace(r, warps=1) for r in protocol.roles)
    rings = tuple(_uninitialised(r) for r in protocol.rings)
    canon: Protocol = remap_provenance(dataclasses.replace(protocol, roles=roles, rings=rings), swap)
    return canon, back


def _uninitialised(ring: Ring) -> Ring:
    """``ring`` without its `init by` statements: the model reads none of them."""
    if not ring.full.init_by and not ring.empty.init_by:
        return ring
    full, empty = (dataclasses.replace(b, init_by=()) for b in (ring.full, ring.empty))
    return dataclasses.replace(ring, full=full, empty=empty)


def verdict(protocol: Protocol, options: ModelOptions, memo: Memo | None = None) -> ProtocolVerdict:
    """The protocol's verdict, kept in ``memo`` on its meaning (:func:`canonical`), not its spans or text."""
    memo = memo or Memo()

    def decide() -> ProtocolVerdict:
        canon, back = canonical(protocol)
        found = memo.verdicts.get(
            (canon, options.bound, options.rlimit),
            lambda: check_protocol(canon, bound=options.bound, rlimit=options.rlimit, memo=memo),
        )
        mapped: ProtocolVerdict = remap_provenance(found, lambda p: back.get(p, p))
        return mapped

    return memo.worded.get((protocol, options.bound, options.rlimit), decide)
