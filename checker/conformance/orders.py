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

``orders C`` of a **counter** claim (:func:`_counter`): a barrier between the role's global writes and each release
of ``C`` and between each acquire of ``C`` and the role's global reads after it, where a release or acquire is an
ordered access of the counter (``.release``, ``.acquire``, an atomic's ``.acq_rel``: both), a call of its
``_counter_add()``/``_counter_wait()``, or a relaxed access of it with a fence (the PTX release and acquire patterns,
checked at the fence: :func:`_fenced`). In one pass, a barrier between them; **across passes**, for a loop around
both, the write a pass makes after the release (in the body's order) precedes the next pass's release, and the read
a pass makes before the acquire follows the previous pass's acquire: such a loop-carried pair can be a race (the
next release publishes a write no barrier ordered before it; a read may run before the thread that acquired saw the
counter), so it is checked like the loop-carried pairs of a shared-memory claim: a barrier in the innermost loop
around both (in no loop of its own), after the earlier of the two or before the later, that runs whenever both do,
orders it; one that may not run leaves it undecided; none is a finding (``across``). A step's in-pass finding stands
for its loop-carried one (one barrier next to the step orders both). A global access (``gmem-access``) is a load or
store the value analysis cannot place in shared memory, the params block or the function's own local memory (a
pointer the PTX shows the function keeps in its own frame is one it can place: package/codefacts/values.py,
``Frame``); an address it cannot place is a global access, never skipped.
"""

from __future__ import annotations

import dataclasses
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
                    yield from _counter(ctx, bar, role, counter, facts, syncs, code)


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
    ctx: Ctx,
    bar: A.BarrierClaim,
    role: A.Role,
    counter: A.CounterClaim,
    facts: Sequence[Fact],
    syncs: Sequence[Fact],
    code: CodeFacts,
) -> Iterator[Finding]:
    """``orders C`` of a counter claim: a barrier between the role's global writes and each release of ``C`` (its
    ``add`` step), and between each acquire of ``C`` (its ``wait`` step) and the role's later global reads, in one
    pass. An access or a step the facts cannot show (an unknown summary, an unbound release) is undecided.

    A release is a store, reduction or atomic of ``C`` with release semantics (``.release``, ``.acq_rel``), or a
    relaxed, plain or volatile one after a ``fence.sc``/``fence.acq_rel``/``fence.release``/``membar`` of gpu or sys
    scope (:func:`_fenced`): that release pattern orders what precedes the fence, so the fence is where the barrier
    must already lie. An acquire is a load or atomic of ``C`` with acquire semantics (``.acquire``, an atomic's
    ``.acq_rel``: both), or a relaxed one followed by such a fence (the acquire pattern: what follows the fence)."""
    releases: list[Fact] = []
    acquires: list[Fact] = []
    writes: list[Fact] = []
    reads: list[Fact] = []
    steps = {id(f): _step(ctx, counter, f) for f in facts}
    for f in facts:
        if f.kind == "call":  # a function of the module: its global accesses are the call's
            made = _called(ctx, counter, code, f.detail, set())
            if "step" in made:
                yield unknown("barrier-orders", f, "helper-step", bar)
            if "write" in made:
                writes.append(dataclasses.replace(f, detail="write"))
            if "read" in made:
                reads.append(dataclasses.replace(f, detail="read"))
            continue
        step = steps[id(f)]
        if step in ("release", "both"):
            releases.append(f)
        if step in ("acquire", "both"):
            acquires.append(f)
        if step == "relaxed":
            for release in _sides(f):  # an atomic reads and writes: half of either pattern
                fenced = _fenced(ctx, counter, code, facts, steps, f, release=release)
                if isinstance(fenced, str):
                    yield unknown("barrier-orders", f, "counter-pattern", bar)
                    break
                if fenced is not None:
                    (releases if release else acquires).append(fenced)
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


def _sides(f: Fact) -> tuple[bool, ...]:
    """The patterns a relaxed access can be half of: True a release (it writes), False an acquire (it reads)."""
    base = f.opcode.split(".")[0]
    return {"st": (True,), "red": (True,), "atom": (True, False)}.get(base, (False,))


def _fenced(
    ctx: Ctx,
    counter: A.CounterClaim,
    code: CodeFacts,
    facts: Sequence[Fact],
    steps: dict[int, str],
    f: Fact,
    *,
    release: bool,
) -> Fact | str | None:
    """A relaxed (plain, volatile) access ``f`` of counter ``C`` as a ``release`` (else acquire) pattern: the step to
    check at the fence's position; None when it is neither and orders nothing (a reset of the counter after an acquire
    of it, a relaxed poll); ``unknown`` for a relaxed write that is neither (it publishes without a release) or whose
    fences the facts cannot show (an access of another stage's callable: its summary holds no fences).

    PTX ISA, Memory Consistency Model, "Release and Acquire Patterns": a fence.sc or fence.acq_rel (membar is a
    fence.sc) followed in program order by a strong write (st/red/atom, .relaxed or .volatile) of M is a release
    pattern on M; a strong read of M followed by such a fence, an acquire pattern (the PTX writers' guide's atomics ABI
    maps a C++ seq_cst store to ``fence.sc.<scope>; st.relaxed.<scope>``). The fence must run whenever the access does
    (every thread that runs it, under no thread-invariant branch the access is not under, in no loop it is not in)
    and no global access may lie between the two on any path (it would be on the wrong side of the fence): then the
    pattern orders exactly what the fence does, so the step is checked at the fence's position."""
    # a relaxed write after an acquire of the counter that runs whenever it does (in the same call, for a callable's)
    # is the awaiting side's reset: what it orders is that acquire's
    reset = release and any(
        steps.get(id(g)) in ("acquire", "both")
        and g.order < f.order
        and (g.guard == EVERY_THREAD or g.guard == f.guard)
        and set(g.conds) <= set(f.conds)
        and (g.loops[: len(f.loops)] == f.loops or f.loops[: len(g.loops)] == g.loops)
        and (f.via is None or (g.via is not None and g.via[0] == f.via[0] and g.line == f.line))
        for g in facts
    )
    if f.via is not None:
        # the summary holds no fences: any other relaxed access may be half of a pattern the facts do not show
        return None if reset else "unknown"
    fences = [
        g
        for g in facts
        if g.kind == "fence"
        and g.detail in ("gpu", "sys")
        and _fence_sides(g.opcode) & {"release" if release else "acquire"}
        and (g.order < f.order if release else g.order > f.order)
        and (g.loops == f.loops if release else g.loops == f.loops[: len(g.loops)])
        and (g.guard == EVERY_THREAD or g.guard == f.guard)
        and set(g.conds) <= set(f.conds)
    ]
    for fence in sorted(fences, key=lambda g: g.order, reverse=release):  # the nearest first
        low, high = sorted((fence.order, f.order))
        if any(low < g.order < high and _may_access(ctx, counter, code, g, steps) for g in facts):
            continue  # a global access between: on the wrong side of this fence
        return dataclasses.replace(f, order=fence.order, loops=fence.loops, conds=fence.conds)
    # no pattern: a relaxed read orders nothing (a poll); a relaxed write that is no reset publishes without a release,
    # which this check cannot take as ordered
    return None if reset or not release else "unknown"


def _may_access(ctx: Ctx, counter: A.CounterClaim, code: CodeFacts, g: Fact, steps: dict[int, str]) -> bool:
    """Whether fact ``g`` may access global memory (none may lie between a pattern's fence and its relaxed access)."""
    if g.kind == "call":
        return bool(_called(ctx, counter, code, g.detail, set()))
    return g.kind == "summary-unknown" or (g.kind == "gmem-access" and steps.get(id(g)) != "other")


def _fence_sides(opcode: str) -> set[str]:
    """What a fence or ``membar`` is half of: ``release`` and ``acquire`` patterns (``fence.sc``, ``fence.acq_rel``,
    a ``fence.<scope>`` without a semantics, ``membar``), one of them (``fence.release``, ``fence.acquire``), or none
    (a proxy fence, a restricted one)."""
    parts = opcode.split(".")
    if parts[0] == "membar":
        return {"release", "acquire"}
    if parts[0] != "fence" or any(
        p.startswith(("proxy", "mbarrier_init", "op_restrict")) or "restrict" in p for p in parts
    ):
        return set()
    if "release" in parts:
        return {"release"}
    if "acquire" in parts:
        return {"acquire"}
    return {"release", "acquire"}  # .sc, .acq_rel, or no .sem (acq_rel, PTX ISA `fence`)


def _called(ctx: Ctx, counter: A.CounterClaim, code: CodeFacts, function: str, seen: set[str]) -> set[str]:
    """What a call of ``function`` of the module makes, through the functions it calls: ``read``, ``write`` (a global
    access) and ``step`` (a release or acquire of a counter, or a relaxed access of it in a function that fences:
    where the call's position cannot order it, undecided)."""
    if function in seen:
        return set()
    seen.add(function)
    mine = [f for f in code.facts if f.function == function]
    fences = any(f.kind == "fence" and _fence_sides(f.opcode) for f in mine)
    made: set[str] = set()
    for f in mine:
        if f.kind == "call":
            made |= _called(ctx, counter, code, f.detail, seen)
            continue
        step = _step(ctx, counter, f)
        if step == "access":
            made |= {"read", "write"} if f.detail == "unknown" else {f.detail}
        elif step not in ("other", "relaxed") or (step == "relaxed" and fences):
            made.add("step")
    return made


def _step(ctx: Ctx, counter: A.CounterClaim, f: Fact) -> str:
    """What a fact is to counter ``C``'s ordering: its ``release``, ``acquire`` or ``both`` (an atomic with
    ``.acq_rel``), a ``relaxed`` access of it (a release or acquire pattern with a fence, :func:`_fenced`), an
    ``unbound`` release or acquire (of a counter the analysis cannot tell), a global ``access`` of the role, or
    ``other``."""
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
        return "relaxed" if mine else "access"  # a relaxed access of the counter itself orders nothing by itself
    if addr is None or addr.kind == "unknown":
        return "unbound"
    if any(s.item == counter.name for s in ctx.handles_of(addr, "counter_ptr")):
        return ordered
    return "other"


def _ordering(opcode: str) -> str | None:
    """``release`` for a store, reduction or atomic with release semantics, ``acquire`` for a load or an atomic with
    acquire semantics, ``both`` for an atomic with ``.acq_rel`` (a read-modify-write: its read acquires, its write
    releases), None for a relaxed or plain access. (``red`` has no ``.acq_rel`` in the PTX ISA, nor any ``.acquire``:
    it returns nothing to acquire with; one written so is a release.)"""
    parts = opcode.split(".")
    if "acq_rel" in parts:
        return "both" if parts[0] == "atom" else "release"
    if "release" in parts:
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
    that no ``bar.sync`` on the barrier running whenever both do lies between, in one pass, else across the passes of
    a loop around both: one finding per step (one barrier before the release, or after the acquire, orders both).

    Across passes: in a loop around both, a write after the release in the loop's body comes before the release of
    the next pass, and a read before the acquire after the acquire of the previous pass. A barrier in that loop's body
    (in no loop of its own) orders such a pair where it lies after the earlier of the two in time or before the later
    one: the pass's own barrier before the release orders the previous pass's writes too."""
    for across in (False, True):
        for a in sorted(accesses, key=lambda g: g.order, reverse=before != across):
            p, q = (a, step) if before else (step, a)  # p runs first: in one pass, or in the previous pass
            common = _common_loops(p, q)
            if (p.order < q.order) == across or (across and not common):
                continue
            if p.via is not None and q.via is not None and (p.line, p.via[0]) == (q.line, q.via[0]):
                continue  # one call of a callable: what orders its own thread's accesses is the callable's
            if across:
                between = [b for b in syncs if b.loops == common and (b.order > p.order or b.order < q.order)]
            else:
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
                step if before else a,
                bar,
                barrier=bar.name,
                claim=counter.name,
                role=role.name,
                first=(a if before else step).line,
                first_op=(a if before else step).opcode,
                first_via=_via(a if before else step),
                across=across,
            )
            return


def _via(f: Fact) -> str:
    return "" if f.via is None else f"{f.via[0]}:{f.via[1]}"


def _holds(b: Fact, p: Fact, q: Fact) -> bool:
    """Barrier ``b`` sits in no loop that does not also hold ``p`` or ``q``: on a pass that runs it after ``p`` (or
    before ``q``), it runs once between them."""
    return b.loops == p.loops[: len(b.loops)] or b.loops == q.loops[: len(b.loops)]
