"""Deciding a protocol: static accounting, races, deadlock; findings with traces and cores.

Order of work (each step one or more solver checks under ``rlimit``):

1. L-INIT from the declarations (who initializes each barrier).
2. Per barrier, the arithmetic rules (L-ARRIVE, L-TXBYTES) and, per wait, the first-parity
   convention (L-PARITY); a conflict is reported with its minimised unsat core.
3. Per ring, the two race queries, first on the ring's slice of the protocol (an
   over-approximation, so unsat there is unsat everywhere), then on the whole model if
   the slice finds one. Every race proved absent becomes a lemma of the whole model.
4. The deadlock query on the whole model, helped by those lemmas.

A check that ends ``unknown`` (the budget ran out) is an undecided query: the verdict
says so and never reports it as a pass.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from checker.memo import Memo
from checker.protocol.events import SYNC_ARRIVE, Event
from checker.protocol.model import BarrierKind, Op, Protocol, Provenance, Ring, Step, remap_provenance
from checker.protocol.smt import (
    FIRST_PARITY_RULE,
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
from checker.protocol.verdict import Finding, ModelStats, Proof, ProtocolVerdict, Trace, TraceRow, Undecided
from diagnostics.span import Span
from diagnostics.symbols import Code
from solver import DEFAULT_RLIMIT as DEFAULT_RLIMIT
from solver import MAX_RLIMIT as MAX_RLIMIT
from solver import UNKNOWN_CODE as UNKNOWN_CODE
from solver import Verdict, validate_rlimit

L_INIT = Code.L_INIT
L_DEADLOCK = Code.L_DEADLOCK
L_RACE = Code.L_RACE


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
    init: bool = True,
) -> ProtocolVerdict:
    """Decide L-INIT, L-ARRIVE, L-TXBYTES, L-PARITY, L-RACE and L-DEADLOCK for ``protocol``.

    ``bound`` is the number of iterations every role runs (default: enough to wrap every
    ring twice, ``2 * max depth + 1``); ``rlimit`` the Z3 resource budget of each check;
    ``explain`` adds a minimal unsat core ("why safe") for every query proved unsat;
    ``memo`` keeps ring slices' verdicts for the caller's later checks (checker/memo.py).
    ``init=False`` leaves L-INIT out (:func:`with_init` adds it: it reads who initializes
    each barrier, which nothing else reads).
    """
    validate_rlimit(rlimit)
    start = time.perf_counter()
    run = _Run(protocol, bound or protocol.default_bound(), rlimit, explain, memo)
    if init:
        _check_init(run)
    _check_static(run)
    _check_races(run)
    _check_deadlock(run)
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
        tuple(run.undecided),
        tuple(run.proofs),
        stats,
        run.deadlock,
        frozenset(run.races),
        frozenset(run.static),
        rlimit,
    )


# -- L-INIT ---------------------------------------------------------------------------


@dataclass
class _Inits:
    """What L-INIT reads and writes of a check (it needs no model)."""

    protocol: Protocol
    findings: list[Finding] = field(default_factory=list)
    static: set[tuple[str, str, str]] = field(default_factory=set)


def with_init(verdict: ProtocolVerdict, protocol: Protocol) -> ProtocolVerdict:
    """``verdict``, decided with ``init=False``, with ``protocol``'s L-INIT findings first (as
    :func:`check_protocol` orders them)."""
    inits = _Inits(protocol)
    _check_init(inits)
    if not inits.findings:
        return verdict
    return dataclasses.replace(
        verdict, findings=(*inits.findings, *verdict.findings), static=verdict.static | inits.static
    )


def _check_init(run: _Run | _Inits) -> None:
    for ring in run.protocol.rings:
        for kind in BarrierKind:
            bar = ring.barrier(kind)
            name = f"{ring.name}.{kind.value}"
            roles = bar.initializers
            participants = ring.sides
            if len(roles) == 1 and roles[0] in participants:
                continue
            run.static.add((L_INIT, ring.name, kind.value))
            primary: tuple[tuple[Provenance, str], ...]
            secondary: tuple[tuple[Provenance, str], ...] = ()
            if not roles:
                message = f"`{name}` is initialized by no role"
                primary = ((bar.provenance, "no `init by` covers this barrier"),)
            elif len(roles) > 1:
                listed = ", ".join(f"`{r}`" for r in roles)
                message = f"`{name}` is initialized by several roles ({listed})"
                primary = tuple((i.provenance, f"`{i.role}` initializes it") for i in bar.init_by)
                secondary = ((bar.provenance, "the barrier"),)
            else:
                message = f"`{name}` is initialized by `{roles[0]}`, which does not take part in ring `{ring.name}`"
                primary = ((bar.init_by[0].provenance, f"`{roles[0]}` is neither side"),)
                secondary = ((ring.provenance, "the ring's sides"),)
            run.findings.append(
                Finding(
                    L_INIT,
                    message,
                    primary,
                    secondary,
                    notes=(
                        "an mbarrier is initialized exactly once, by one thread, before any "
                        "use; a second `mbarrier.init` on a live barrier is undefined "
                        "(PTX §9.7.13.15.9)",
                    ),
                    helps=(f"state `init by {ring.producer}` (or a consumer role) once, on one side of the ring",),
                    key=(L_INIT, ring.name, kind.value),
                )
            )


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
                run.undecided.append(
                    Undecided(check.kind.value, f"`{check.ring}.{check.barrier.value}`", (bar.provenance,))
                )
            elif result.unsat:
                failing.append((check, run.core(model, facts, solver="static")))
        if failing:
            run.findings.append(_static_finding(run, failing))


def _static_finding(run: _Run, failing: list[tuple[StaticCheck, tuple[str, ...]]]) -> Finding:
    check, core = failing[0]
    ring = run.protocol.ring(check.ring)
    bar = ring.barrier(check.barrier)
    name = f"{ring.name}.{check.barrier.value}"
    run.static.add((check.kind.value, ring.name, check.barrier.value))
    acct = _accounting(run.protocol, ring, check.barrier)
    facts = tuple(run.model.facts[k] for k in core)
    messages = [_static_message(run, c, name, bar.init_count, bar.expect_tx, acct) for c, _ in failing]
    steps = _core_steps(run.protocol, core)
    primary: list[tuple[Provenance, str]] = []
    secondary: list[tuple[Provenance, str]] = []
    decl_in_core = any(k.startswith("decl:") for k in core)
    if check.kind is StaticKind.PARITY and check.wait is not None:
        wait = check.wait
        primary.append((wait.provenance, f"`{wait.role}` first waits with parity {wait.parity}"))
        arms = [s for s in steps if s.prearm]
        for s in arms:
            secondary.append((s.provenance, f"`{s.role}` pre-arms `{name}`"))
        if not arms:
            secondary.append((ring.provenance, f"nothing pre-arms `{name}`"))
        helps = (_parity_help(check.barrier, bool(arms), name),)
    else:
        if decl_in_core:
            primary.append((bar.provenance, _decl_label(check, bar.init_count, bar.expect_tx)))
        for s in steps:
            target = secondary if primary else primary
            target.append((s.provenance, _step_label(s)))
        helps = (_static_help(check, name, bar.init_count, acct),)
    notes = tuple(f"also: {m}" for m in messages[1:])
    notes += tuple(f"rule: {f.text}" for f in facts if isinstance(f, Rule))
    data = (
        ("barrier", name),
        ("init", str(bar.init_count)),
        ("arrivals", str(acct.arrivals)),
        ("expected_tx", str(acct.expected)),
        ("completed_tx", str(acct.completed)),
    )
    return Finding(
        check.kind.value,
        messages[0],
        tuple(primary),
        tuple(secondary),
        notes,
        helps,
        core=facts,
        key=(check.kind.value, ring.name, check.barrier.value),
        data=data,
    )


@dataclass(frozen=True)
class _Accounting:
    arrivals: int
    prearm: int
    expected: int
    completed: int


def _accounting(protocol: Protocol, ring: Ring, kind: BarrierKind) -> _Accounting:
    steps = [s for _, prog in protocol.programs for s in prog if s.channel == ring.name and s.barrier is kind]
    return _Accounting(
        sum(s.count for s in steps if s.op is Op.ARRIVE and not s.prearm),
        sum(s.count for s in steps if s.prearm),
        sum(s.nbytes for s in steps if s.op in (Op.ARRIVE, Op.EXPECT_TX)),
        sum(s.nbytes for s in steps if s.op is Op.COPY),
    )


def _static_message(
    run: _Run, check: StaticCheck, name: str, init: int, declared: int | None, acct: _Accounting
) -> str:
    rule = run.model.facts[check.rule_key]
    assert isinstance(rule, Rule)
    if rule.name == "arrive":
        made = f"its participants arrive {_times(acct.arrivals)}" if acct.arrivals else "no role arrives on it"
        return f"`{name}` is initialized for {_arrivals(init)} per phase but {made}"
    if rule.name == "prearm":
        return f"the pre-arm of `{name}` arrives {_times(acct.prearm)} but a phase needs {_arrivals(init)}"
    if rule.name == "range" and check.kind is StaticKind.ARRIVE:
        return f"`{name}` is initialized for {_arrivals(init)}, above the mbarrier limit of 1048575"
    if rule.name == "range":
        most = max(acct.expected, acct.completed)
        return f"`{name}` moves {most} transaction bytes per phase, above the tx-count limit of 1048575"
    if rule.name == "txbytes":
        return f"`{name}` expects {acct.expected} transaction bytes per phase but its copies complete {acct.completed}"
    if rule.name == "declared-tx" and check.rule_key.startswith("rule:declared-expect"):
        return f"`{name}` declares {declared} transaction bytes per phase but its arrivals expect {acct.expected}"
    if rule.name == "declared-tx":
        return f"`{name}` declares {declared} transaction bytes per phase but its copies complete {acct.completed}"
    wait = check.wait
    assert wait is not None and rule is FIRST_PARITY_RULE
    armed = acct.prearm > 0
    who = f"`{wait.role}` first waits on `{name}` with parity {wait.parity}"
    if check.barrier is BarrierKind.EMPTY and not armed:
        return f"{who} but nothing pre-arms it, so the first wait blocks on a fresh barrier"
    if check.barrier is BarrierKind.EMPTY:
        return f"{who} but it is pre-armed, so the wait skips the pre-armed phase"
    if not armed:
        return f"{who}, which passes on a fresh barrier before the slot is filled"
    return f"{who} but it is pre-armed, so the first fill is taken for the pre-armed phase"


def _arrivals(n: int) -> str:
    return f"{n} arrival" + ("" if n == 1 else "s")


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _decl_label(check: StaticCheck, init: int, declared: int | None) -> str:
    if check.kind is StaticKind.ARRIVE:
        return f"initialized for {_arrivals(init)} per phase"
    return f"declares {declared} bytes per phase" if declared is not None else "the barrier"


def _step_label(step: Step) -> str:
    if step.op is Op.ARRIVE and step.prearm:
        return f"`{step.role}` pre-arms with {_arrivals(step.count)}"
    if step.op is Op.ARRIVE:
        tx = f" and expects {step.nbytes} bytes" if step.nbytes else ""
        return f"`{step.role}` arrives {_times(step.count)} per phase{tx}"
    if step.op is Op.EXPECT_TX:
        return f"`{step.role}` expects {step.nbytes} bytes per phase"
    if step.op is Op.COPY:
        return f"a copy by `{step.role}` completes {step.nbytes} bytes"
    return f"`{step.role}` step"


def _static_help(check: StaticCheck, name: str, init: int, acct: _Accounting) -> str:
    if check.kind is StaticKind.ARRIVE and not acct.arrivals:
        return f"add an `arrive` on `{name}` to the side that " + (
            "fills the slot" if name.endswith(".full") else "releases the slot"
        )
    if check.kind is StaticKind.ARRIVE:
        return (
            f"make the arrivals per phase equal the init count ({init}) — e.g. "
            "`per_warp(role)` for one arrival per warp — or initialize "
            f"`{name}` with {acct.arrivals}"
        )
    # Which side is wrong cannot be told: offer both fixes, in the contract's units (KiB as written).
    expected, completed = _size(acct.expected), _size(acct.completed)
    gap = _size(abs(acct.expected - acct.completed))
    if acct.expected > acct.completed:
        return (
            f"either a copy is missing: copy {gap} more per phase (the copies complete {completed} of the "
            f"{expected} expected); or the expectation is too high: expect {completed} in the `arrive … tx` "
            "and `expect_tx` steps"
        )
    return (
        f"either the expectation is short: expect {completed} in the `arrive … tx` and `expect_tx` steps "
        f"(now {expected}); or a copy is extra: copy only {expected} per phase ({gap} fewer)"
    )


def _size(n: int) -> str:
    """Bytes as contracts write them: `48KiB` when whole KiB, else a plain byte count."""
    return f"{n // 1024}KiB" if n >= 1024 and n % 1024 == 0 else str(n)


def _parity_help(kind: BarrierKind, armed: bool, name: str) -> str:
    if kind is BarrierKind.EMPTY:
        good = 0 if armed else 1
        why = "after the consumer's pre-arm" if armed else "it passes on a fresh barrier"
        return (
            f"the producer's first wait on `{name}` uses parity {good} ({why}); pre-arm "
            "from the consumer only together with parity 0"
        )
    good = 1 if armed else 0
    return f"the consumer's first wait on `{name}` uses parity {good}: it waits for the first fill"


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
        ring = run.protocol.ring(qk.ring or "")
        run.undecided.append(Undecided(L_RACE, f"{qk.query.value} on ring `{qk.ring}`", (ring.provenance,)))
    elif result.sat:
        run.races.add((qk.ring, qk.query.value))
        run.findings.append(_race_finding(run, qk, model.last_model()))
    else:
        core = run.core(model, facts, [lit]) if run.explain else tuple(facts)
        _prove_race(run, qk, core)


def _prove_race(run: _Run, qk: QueryKey, core: Sequence[str]) -> None:
    model = run.model
    basis = _flatten(model.facts[k] for k in core if k in model.facts)
    what = "overwrite" if qk.query is Query.OVERWRITE else "early read"
    lemma = Lemma(f"no {what} on ring `{qk.ring}` (proved)", basis)
    key = f"lemma:{qk.query.value}:{qk.ring}"
    model.add_lemma(key, lemma, qk)
    if run.explain:
        run.proofs.append(Proof(f"{L_RACE} {qk.query.value} `{qk.ring}`", basis))


def _flatten(facts: Iterable[Fact]) -> tuple[Provenance | Rule, ...]:
    out: list[Provenance | Rule] = []
    for fact in facts:
        out.extend(fact.basis if isinstance(fact, Lemma) else (fact,))
    return tuple(dict.fromkeys(out))


def _race_finding(run: _Run, qk: QueryKey, zmodel: Any) -> Finding:
    model = run.model
    ring = run.protocol.ring(qk.ring)
    zmodel = _shorten(run, [model.queries[qk]], zmodel)
    order = model.order(zmodel)
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
    shown = order[: order.index(culprit) + 1]
    every = _rows(run, zmodel, shown)
    rows = every[:-1]
    trace = Trace(rows, every[-1:])
    slot = culprit.slot
    secondary: list[tuple[Provenance, str]] = []
    if qk.query is Query.OVERWRITE:
        assert culprit.data is not None
        message = f"`{ring.producer}` can overwrite slot {slot} of ring `{ring.name}` before `{partner}` releases it"
        primary = (
            (culprit.step.provenance, f"writes slot {slot} for iteration {culprit.data} (the trace's last step)"),
        )
        if other is not None:
            secondary.append(
                (
                    other.step.provenance,
                    f"`{partner}` is done with iteration {culprit.data - ring.depth} of slot {slot} only later",
                )
            )
        waits = any(
            s.op is Op.WAIT and s.channel == ring.name and s.barrier is BarrierKind.EMPTY
            for s in run.protocol.program(ring.producer)
        )
        help_text = (
            f"make `{ring.producer}` wait for the release before writing: the "
            "parities and the release's lag decide which use of the slot it waits for"
            if waits
            else f"wait on `{ring.name}.empty` before writing the slot"
        )
    else:
        assert other is not None
        reader = culprit.role
        message = f"`{reader}` can read slot {slot} of ring `{ring.name}` before `{ring.producer}` fills it"
        primary = ((culprit.step.provenance, f"reads slot {slot} of iteration {culprit.data} (the trace's last step)"),)
        secondary.append((other.step.provenance, f"`{ring.producer}` writes it only later"))
        waits = any(
            s.op is Op.WAIT and s.channel == ring.name and s.barrier is BarrierKind.FULL
            for s in run.protocol.program(reader)
        )
        help_text = (
            f"wait on `{ring.name}.full` with the parity of the fill before reading"
            if waits
            else f"wait on `{ring.name}.full` before reading the slot"
        )
    secondary += _trace_labels(rows, exclude={culprit.step.provenance})
    return Finding(
        L_RACE,
        message,
        primary,
        tuple(secondary),
        helps=(help_text,),
        trace=trace,
        key=(L_RACE, ring.name, qk.query.value),
        data=(("ring", ring.name), ("kind", qk.query.value), ("slot", str(slot)), ("trace_length", str(len(rows)))),
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
            run.proofs.append(Proof(L_DEADLOCK, _flatten(model.facts[k] for k in core)))
        return
    result = run.check(model, facts, [lit])
    if result.unknown:
        run.undecided.append(Undecided(L_DEADLOCK, "whether the protocol can deadlock", _anchor(run.protocol)))
        return
    run.deadlock = result.sat
    if result.sat:
        run.findings.append(_deadlock_finding(run, model.last_model()))
    elif run.explain:
        core = run.core(model, facts, [lit])
        run.proofs.append(Proof(L_DEADLOCK, _flatten(model.facts[k] for k in core)))


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


def _deadlock_finding(run: _Run, zmodel: Any) -> Finding:
    model = run.model
    zmodel = _shorten(run, [model.queries[QueryKey(Query.DEADLOCK)]], zmodel)
    order = model.order(zmodel)
    rows = _rows(run, zmodel, order)
    stuck: list[TraceRow] = []
    finished: list[str] = []
    phases = _phases_at_end(model, zmodel, order)
    for seq in model.sequences:
        if not seq:
            continue
        pc = model.pc_at(zmodel, seq[0].rank)
        if pc >= len(seq):
            finished.append(seq[0].role)
            continue
        e = seq[pc]
        phase = phases.get(str(e.obj), 0) if e.op in (Op.WAIT, Op.BAR_SYNC) else None
        stuck.append(
            TraceRow(
                len(rows) + len(stuck) + 1,
                e.role,
                e.step,
                e.iteration,
                str(e.obj) if e.obj is not None else "",
                e.slot,
                phase,
                e.parity,
                "blocks",
            )
        )
    trace = Trace(rows, tuple(stuck))
    who = ", ".join(f"`{r.role}` on `{r.barrier}`" for r in stuck)
    message = f"the protocol can deadlock: every live role waits ({who})"
    primary = tuple((r.step.provenance, _blocked_label(r)) for r in stuck)
    lagging = _lag_labels(model, stuck)
    secondary = (*lagging, *_trace_labels(rows, exclude={p for p, _ in primary} | {p for p, _ in lagging}))
    notes: list[str] = []
    if finished:
        notes.append("finished: " + ", ".join(f"`{r}`" for r in finished) + f" ran all {run.bound} iterations")
    helps = (
        "each wait needs an arrival that does not depend on the waiter's own later "
        "steps: check the order of waits and releases across rings, a release's lag "
        "against the ring depth, and a wait on a barrier no role arrives on",
    )
    return Finding(
        L_DEADLOCK,
        message,
        primary,
        secondary,
        tuple(notes),
        helps,
        trace,
        key=(L_DEADLOCK,),
        data=(("blocked", "; ".join(f"{r.role}@{r.barrier}" for r in stuck)), ("trace_length", str(len(rows)))),
    )


def _lag_labels(model: ProtocolModel, stuck: list[TraceRow]) -> list[tuple[Provenance, str]]:
    """The lagging releases on the rings the blocked roles wait on: the line that causes the deadlock."""
    rings = {r.barrier.split(".", 1)[0] for r in stuck}
    found: dict[Provenance, str] = {}
    for seq in model.sequences:
        for e in seq:
            step = e.step
            if step.lag and step.channel in rings and step.provenance not in found:
                late = f"{step.lag} iteration" + ("" if step.lag == 1 else "s")
                found[step.provenance] = (
                    f"`{step.role}` releases each slot {late} late (`lag {step.lag}`): the waiter needs it first"
                )
    return list(found.items())


def _blocked_label(row: TraceRow) -> str:
    where = f"iteration {row.iteration}" if row.iteration >= 0 else "the prologue"
    parity = f", parity {row.parity}" if row.parity is not None else ""
    phase = f", phase {row.phase}" if row.phase is not None else ""
    return f"`{row.role}` blocks here forever ({where}{phase}{parity})"


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
        effect = _effect(e, completes, phases.get(obj, 0), counters)
        if completes:
            phases[obj] = phases.get(obj, 0) + 1
        if e.op is Op.ADD:
            counters[obj] = counters.get(obj, 0) + e.step.count
        slot = e.slot
        rows.append(TraceRow(i, e.role, e.step, e.iteration, obj or e.step.channel, slot, phase, e.parity, effect))
    return tuple(rows)


def _effect(e: Event, completes: bool, phase: int, counters: dict[str, int]) -> str:
    done = f", completes phase {phase}" if completes else ""
    op = e.op
    if op is Op.WAIT:
        return "passes"
    if op is Op.ARRIVE:
        tx = f", expects {e.step.nbytes} B" if e.step.nbytes else ""
        return f"arrives {e.step.count}{tx}{done}"
    if op is Op.EXPECT_TX:
        return f"expects {e.step.nbytes} B{done}"
    if op is Op.COPY:
        return f"writes slot {e.slot}, completes {e.step.nbytes} B{done}"
    if op is Op.WRITE:
        return f"writes slot {e.slot}"
    if op is Op.READ:
        return f"reads slot {e.slot}"
    if op is Op.ADD:
        return f"adds {e.step.count} (value {counters.get(str(e.obj), 0) + e.step.count})"
    if op is Op.WAIT_GE:
        return f"passes (value {counters.get(str(e.obj), 0)} >= {e.threshold})"
    if op is Op.BAR_ARRIVE or e.part == SYNC_ARRIVE:
        return f"arrives {e.step.count} threads{done}"
    return "passes"


def _trace_labels(rows: Sequence[TraceRow], exclude: set[Provenance]) -> list[tuple[Provenance, str]]:
    seen: dict[Provenance, list[int]] = {}
    for row in rows:
        if row.step.provenance not in exclude:
            seen.setdefault(row.step.provenance, []).append(row.index)
    labels = []
    for prov, indices in seen.items():
        shown = ", ".join(f"#{i}" for i in indices[:6]) + (", …" if len(indices) > 6 else "")
        labels.append((prov, f"runs at trace {shown}"))
    return labels
