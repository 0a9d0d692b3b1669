"""A named barrier that ``orders`` a claim stands between its participants' accesses of it (check ``barrier-orders``).

``claim barrier B participants R orders C``: in the entry of each participant role ``R``, a
``bar.sync`` that waits for every thread of ``R`` (barrier ``B``, or a rendezvous ``R`` takes
part in with ``sync``), in no loop that does not hold both accesses, lies

- between a write of claim ``C`` and an access of ``C`` after it in the function's order
  (``unordered``: a read-after-write or write-after-write in one pass), and between a read
  of ``C`` and a write after it (write-after-read);
- for a read and a write of ``C`` in a loop around both, in the innermost such loop's body,
  after the earlier access of a pass or before the later one (``unordered`` across passes:
  the next pass's write overwrites what this pass's readers may still read, or its reads
  see a stale write).

A write is a generic store (``st``, ``stmatrix``, an atomic); a read, a load or an asynchronous read
of the claim (a TMA or bulk store from it: its issue is what the barrier orders). With the
composition, the accesses a role makes inside another stage's callables are seen through their
summaries (:mod:`.summary`); the accesses of one call are one step of the role.

Positions are the function's instruction order on paths without back edges (``Fact.order``). A
barrier orders a pair only where it runs whenever both accesses run: every thread of the role runs it
(no thread-dependent guard) and each thread-invariant branch it sits under (``Fact.conds``) also holds
one of the two accesses. A pair that only such a conditional barrier stands between is undecided
(I-CONFORM, an error under ``--strict``), never taken as ordered.

An access whose claim the analysis cannot tell is ``smem-literal``'s; a barrier another thread
count or mode runs is ``named-barrier``'s and ``barrier-threads``'.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.conformance.context import Ctx, Finding, found, unknown
from checker.conformance.staging import in_claim
from contract_lang import ast as A
from package.codefacts.facts import EVERY_THREAD, CodeFacts, Fact, Operand

ORDER_CHECKS = ("barrier-orders",)


def orders(ctx: Ctx, code: CodeFacts) -> Iterator[Finding]:
    """The findings of ``barrier-orders`` for every claimed barrier that states ``orders``."""
    for bar in ctx.stage.items:
        if not isinstance(bar, A.BarrierClaim) or not bar.orders:
            continue
        for role in ctx.stage.roles:
            if role.name not in bar.participants or not role.entry:
                continue
            facts = [f for f in code.facts if f.function == role.entry]
            syncs = [f for f in facts if f.kind == "barrier" and f.detail == "sync" and _whole(ctx, bar, role, f)]
            for name in bar.orders:
                claim = next((c for c in ctx.stage.items if isinstance(c, A.SmemClaim) and c.name == name), None)
                if claim is not None:
                    yield from _pairs(ctx, bar, role, claim, facts, syncs)
                counter = next((c for c in ctx.stage.items if isinstance(c, A.CounterClaim) and c.name == name), None)
                if counter is not None and not _later(ctx.stage, facts):
                    yield from _counter(ctx, bar, role, counter, facts, syncs)


def _whole(ctx: Ctx, bar: A.BarrierClaim, role: A.Role, f: Fact) -> bool:
    """Whether a ``bar.sync`` waits for every thread of ``role``: barrier ``bar``, or a rendezvous the role syncs."""
    for spec in ctx.handles_of(f.operand("id"), "bar_id"):
        if spec.item == bar.name:
            return True
        if any(
            isinstance(i, A.Rendezvous) and i.name == spec.item and i.role == role.name and i.mode == "sync"
            for i in ctx.stage.items
        ):
            return True
    return False


def _pairs(
    ctx: Ctx, bar: A.BarrierClaim, role: A.Role, claim: A.SmemClaim, facts: Sequence[Fact], syncs: Sequence[Fact]
) -> Iterator[Finding]:
    accesses = [
        f
        for f in facts
        if (f.kind == "smem-access" and in_claim(ctx, claim, f.operand("addr")))
        or (f.kind == "bulk-store" and in_claim(ctx, claim, f.operand("src")))
    ]
    reported: set[bool] = set()  # one finding per missing barrier: in one pass, across passes
    for p in accesses:
        for q in accesses:
            if not (_writes(p) or _writes(q)):
                continue
            if p.via is not None and q.via is not None and (p.line, p.via[0]) == (q.line, q.via[0]):
                continue  # one call of a callable: its accesses are one step of the caller's (its summary's)
            common = _common_loops(p, q)
            inside = [b for b in syncs if b.loops == common[: len(b.loops)]]
            sure = [b for b in inside if _runs_with(b, p, q)]
            maybe = [b for b in inside if b not in sure]
            later = p.order < q.order and not any(_in_pass(b, p, q) for b in sure)
            across = bool(common) and _writes(p) != _writes(q) and not any(_across(b, p, q, common) for b in sure)
            if (later or across) and later not in reported:
                reported.add(later)
                if any(_in_pass(b, p, q) if later else _across(b, p, q, common) for b in maybe):
                    # only a barrier that may not run stands between them: not decided either way
                    yield unknown("barrier-orders", q, "ordering-barrier", bar)
                    continue
                yield found(
                    "barrier-orders",
                    "unordered",
                    q,
                    bar,
                    barrier=bar.name,
                    claim=claim.name,
                    role=role.name,
                    first=p.line,
                    first_op=p.opcode,
                    across=not later,
                )


def _in_pass(b: Fact, p: Fact, q: Fact) -> bool:
    """Barrier ``b`` lies between ``p`` and ``q`` in one pass."""
    return p.order < b.order < q.order


def _across(b: Fact, p: Fact, q: Fact, common: tuple[int, ...]) -> bool:
    """Barrier ``b`` lies in the loop around both, after ``p`` or before ``q`` of the next pass."""
    return b.loops == common and (b.order > p.order or b.order < q.order)


def _runs_with(b: Fact, p: Fact, q: Fact) -> bool:
    """Whether barrier ``b`` runs whenever accesses ``p`` and ``q`` do: all the role's threads run it, under no
    thread-invariant branch that neither access is under."""
    return b.guard == EVERY_THREAD and set(b.conds) <= set(p.conds) | set(q.conds)


def _writes(f: Fact) -> bool:
    return f.kind == "smem-access" and f.opcode.startswith(("st.", "stmatrix", "atom.", "red."))


def _common_loops(p: Fact, q: Fact) -> tuple[int, ...]:
    """The loops around both accesses (their headers' positions), outermost first."""
    common: list[int] = []
    for a, b in zip(p.loops, q.loops, strict=False):
        if a != b:
            break
        common.append(a)
    return tuple(common)


def deferred(stage: A.Stage, code: CodeFacts) -> list[tuple[str, str, str]]:
    """The (role, barrier, counter) orderings a component's code alone cannot show: the role calls another stage's
    callables, which may make the global accesses or run the counter steps; the composed check judges them
    (``kernlink pack`` says so)."""
    found: set[tuple[str, str, str]] = set()
    for bar in stage.items:
        if not isinstance(bar, A.BarrierClaim):
            continue
        counters = [c.name for c in stage.items if isinstance(c, A.CounterClaim) and c.name in bar.orders]
        for role in stage.roles:
            mine = [f for f in code.facts if f.function == role.entry]
            if role.name in bar.participants and role.entry and counters and _later(stage, mine):
                found |= {(role.name, bar.name, c) for c in counters}
    return sorted(found)


def _later(stage: A.Stage, facts: Sequence[Fact]) -> bool:
    """The role calls another stage's callables whose summaries these facts do not hold (``kernlink pack`` of the
    component alone): the composed check judges its counter's ordering."""
    calls = {c.symbol for c in stage.items if isinstance(c, A.Call)}
    spliced = any(f.via is not None or f.kind == "summary-unknown" for f in facts)
    return not spliced and any(f.kind == "xcall" and f.detail in calls for f in facts)


def _counter(
    ctx: Ctx, bar: A.BarrierClaim, role: A.Role, counter: A.CounterClaim, facts: Sequence[Fact], syncs: Sequence[Fact]
) -> Iterator[Finding]:
    """``orders C`` of a counter claim: a barrier between the role's global writes and each release of ``C`` (its
    ``add`` step), and between each acquire of ``C`` (its ``wait`` step) and the role's later global reads, in one
    pass. An access or a step the facts cannot show (an unknown summary, an unbound release) is undecided."""
    releases: list[Fact] = []
    acquires: list[Fact] = []
    writes: list[Fact] = []
    reads: list[Fact] = []
    for f in facts:
        step = _step(ctx, counter, f)
        if step == "release":
            releases.append(f)
        elif step == "acquire":
            acquires.append(f)
        elif step == "unbound":
            yield unknown("barrier-orders", f, "counter-step", bar)
        elif step == "access":
            if f.kind == "summary-unknown" or f.detail in ("write", "unknown"):
                writes.append(f)
            if f.kind == "summary-unknown" or f.detail in ("read", "unknown"):
                reads.append(f)
    for q in releases:
        yield from _first_unordered(ctx, bar, role, counter, writes, q, syncs, before=True)
    for p in acquires:
        yield from _first_unordered(ctx, bar, role, counter, reads, p, syncs, before=False)


def _step(ctx: Ctx, counter: A.CounterClaim, f: Fact) -> str:
    """What a fact is to counter ``C``'s ordering: its ``release`` or ``acquire``, an ``unbound`` release or acquire
    (of a counter the analysis cannot tell), a global ``access`` of the role, or ``other``."""
    if f.kind == "xcall":
        for spec in ctx.handles_of(Operand("handle", handles=(f.detail,))):
            if spec.item == counter.name and spec.kind == "counter_add":
                return "release"
            if spec.item == counter.name and spec.kind == "counter_wait":
                return "acquire"
        return "other"
    if f.kind == "summary-unknown":
        return "access"
    if f.kind != "gmem-access":
        return "other"
    addr = f.operand("addr")
    if addr is not None and addr.kind == "local":
        return "other"
    ordered = _ordering(f.opcode)
    if ordered is None:
        mine = any(s.item == counter.name for s in ctx.handles_of(addr, "counter_ptr"))
        return "other" if mine else "access"  # a relaxed access of the counter itself (a reset) orders nothing
    if addr is None or addr.kind == "unknown":
        return "unbound"
    if any(s.item == counter.name for s in ctx.handles_of(addr, "counter_ptr")):
        return ordered
    return "other"


def _ordering(opcode: str) -> str | None:
    """``release`` for a store, reduction or atomic with release semantics, ``acquire`` for a load (or an atomic)
    with acquire semantics, None for a relaxed or plain access."""
    parts = opcode.split(".")
    if "release" in parts or ("acq_rel" in parts and parts[0] in ("st", "red", "atom")):
        return "release"
    if "acquire" in parts:
        return "acquire"
    return None


def _first_unordered(
    ctx: Ctx,
    bar: A.BarrierClaim,
    role: A.Role,
    counter: A.CounterClaim,
    accesses: Sequence[Fact],
    step: Fact,
    syncs: Sequence[Fact],
    *,
    before: bool,
) -> Iterator[Finding]:
    """The first access (``before``: a write before the release ``step``; else a read after the acquire ``step``)
    that no ``bar.sync`` on the barrier running whenever both do lies between, in one pass: one finding per step."""
    for a in sorted(accesses, key=lambda g: g.order, reverse=before):
        p, q = (a, step) if before else (step, a)
        if not p.order < q.order:
            continue
        if p.via is not None and q.via is not None and (p.line, p.via[0]) == (q.line, q.via[0]):
            continue  # one call of a callable: what orders its own thread's accesses is the callable's
        between = [b for b in syncs if p.order < b.order < q.order and _holds(b, p, q)]
        if any(_runs_with(b, p, q) for b in between):
            continue
        if between or a.kind == "summary-unknown" or a.detail == "unknown":
            # only a barrier that may not run stands between them, or what the call accesses is not known
            yield unknown("barrier-orders", a, "ordering-barrier" if between else "summary", bar)
            return
        yield found(
            "barrier-orders",
            "counter-release" if before else "counter-acquire",
            q,
            bar,
            barrier=bar.name,
            claim=counter.name,
            role=role.name,
            first=p.line,
            first_op=p.opcode,
            first_via="" if p.via is None else f"{p.via[0]}:{p.via[1]}",
        )
        return


def _holds(b: Fact, p: Fact, q: Fact) -> bool:
    """Barrier ``b`` sits in no loop that does not also hold ``p`` or ``q``: on a pass that runs it after ``p`` (or
    before ``q``), it runs once between them."""
    return b.loops == p.loops[: len(b.loops)] or b.loops == q.loops[: len(b.loops)]
