"""Every protocol step of a role has its instruction in the role's code, and every instruction its step.

For each role with an entry and each side of a ring the role takes (``ring R produce|consume
by ROLE``), the synchronisation facts of the role's code (:mod:`package.codefacts`) are
matched with the side's steps:

- the barrier: an instruction belongs to a ring's full or empty barrier through the handle
  its address comes from (``_full_bar``/``_empty_bar``, or the ring's wait handles);
- the iteration: the steps run once per iteration of the loop around the side's first wait
  (its first arrive when it waits on nothing); instructions before that loop are the
  side's ``prearm`` arrives, instructions after it drain the ring; a lagged side (``lag N``)
  also runs each step after the loop (its peeled phase), waits included; when that loop sits
  in another (a persistent kernel's k-loop in its loop over units of work), every lagged step
  (the side's ``lag N``, an arrive's own ``lag L``) runs after the inner loop, on each pass of
  the outer one, as often as it lags (:func:`_flushes`): missing, the unit's last slot is never
  released; twice, a phase completes early; or, carried into the next unit's loop (its first
  iterations release what the previous unit held back: the release's slot enters the inner loop
  carried, ``Fact.entry``, not reset per unit), as often as it lags after the outer loop
  (:func:`_carried`: the drain of the last unit);
- a consume side whose role reads the slots with ``wgmma`` releases each slot after a
  ``wgmma.wait_group`` that retired the group that read it (:func:`_retired`, ``unretired``);
- ``ring-step``: a step with no instruction in the iteration (``missing``), an instruction
  on a ring barrier no step of the role names (``extra``), or a step that runs more often per
  iteration than the others (``times``: a path with two arrives per wait);
- ``arrive-count``: the arrivals of each arrive instruction (the threads of the role its
  guard selects, times the instruction's count) against the step's count;
- ``wait-parity``: the parity each wait uses first (the side's ``parity P``, else 0 for
  ``full`` and 1 for ``empty``), and that it changes from one iteration to the next; a
  copy of the step after ``k`` earlier waits on its barrier uses ``P ^ ((k // depth) & 1)``
  at every depth the stage's ``depth`` allows (:func:`_advanced`); and, for a side that does not
  ``restart``, that a wait whose loop is nested in another (a persistent kernel's loop over units
  of work) enters its loop at the slot and phase the previous pass left, not at a position reset
  on every pass (:func:`_entry`);
- ``step-order``: the first instruction of each step comes after the first instruction of
  the step written before it;
- ``ring-fence``: a side that states ``fence proxy_async`` runs ``fence.proxy.async`` after
  its slot accesses and before its release arrive (the producer's ``full``, the consumer's
  ``empty``);
- ``read-proxy``: a consume side's ``reads`` proxy against the instructions of its role that
  read the slots: ``reads async`` while a generic load (``ld.shared``, ``ldmatrix``) reads
  a slot, or ``reads generic`` while no generic load reads one and the role's slot readers
  are asynchronous (``wgmma``, ``tcgen05.mma``, a TMA or bulk store from shared memory);
- ``named-barrier``: a role runs a claimed barrier or rendezvous it takes part in, in the
  mode it states (``bar.sync`` for ``sync``, ``bar.arrive`` for ``arrive``), and no other;
- ``init-hook``: a ring's init hook initialises both barriers and, for ``init by R
  fenced``, fences the inits; no role initialises a ring barrier again.

A side of a ring that carries a ring-fed tensor of its role (``generation ring R``) is run by
the hand-off the linker generates behind the tensor handle (``linker/ring_fed.py``): the role's
own code runs none of its steps, and an instruction of it on the ring's barriers is ``ring-fed``.

A side that states ``loops N`` runs its steps in ``N`` alternative loops, one per unit of work
(specs/language.md §8.8, :func:`_alternatives`): ``ring-step`` ``loops`` when the copies of its first
step sit in another number of innermost loops (or in loops of different parents), ``ring-step``
``sequence`` when one loop reaches another without a back edge; each loop is then checked as the one
loop above, the others' instructions set aside, and ``wait-parity`` checks each loop's entry position
against the one every alternative leaves (``Fact.entry``, ``Fact.across``).

A guard, parity or barrier the analysis cannot read is an undecided finding, never a pass.

A role may run a step inside another stage's callable, passing it the ring's barrier (an argument built on
its ``_full_bar``/``_empty_bar`` handle) or a claimed barrier's ID: the composition splices the callable's
summary at the call (:mod:`.summary`) and these checks judge its steps like the role's own. The component
alone (``kernlink pack``) cannot: a step of such a ring or barrier the role's code lacks is left to the
composition (:func:`deferred`, which ``kernlink pack`` notes), and a callable passed it whose summary is
unknown makes the lacking step undecided. A callable has none of its caller's handles: a ring or barrier
the role passes no callable is judged on the role's code alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from checker.conformance.context import Ctx, Finding, found, unknown
from contract_lang import ast as A
from package.abi import init_hook_symbol
from package.codefacts.facts import MAX_DEPTH, CodeFacts, Fact, Guard, longest_chain

STEP_CHECKS = (
    "ring-step",
    "arrive-count",
    "wait-parity",
    "step-order",
    "ring-fence",
    "read-proxy",
    "named-barrier",
    "init-hook",
)
_RING_FACTS = ("wait", "arrive", "tensor-copy", "bulk-copy")


@dataclass(frozen=True)
class Site:
    """A synchronisation instruction on a ring barrier: what it does (``wait``, ``arrive``, ``copy``) and where."""

    fact: Fact
    ring: str
    barrier: str
    kind: str


@dataclass(frozen=True)
class Step:
    """One step of a ring side: a wait, an arrive or a copy on one barrier (``item`` is its contract line)."""

    kind: str
    barrier: str
    item: A.RingWait | A.RingArrive | A.RingCopy

    @property
    def words(self) -> str:
        return f"{self.barrier} {self.kind}"


def guard_text(guard: Guard) -> str:
    """A guard as data (``lane eq 0;warp eq 0|…``; ``*`` every thread; ``?`` undecided)."""
    if guard is None:
        return "?"
    return "|".join(";".join(f"{q} {op} {v}" for q, op, v in conj) or "*" for conj in guard)


def threads(guard: Guard, warps: int, aligned: bool) -> int | None:
    """How many of a role's ``32 * warps`` threads a guard selects (None: it names what placement decides)."""
    if guard is None:
        return None
    count = 0
    for t in range(32 * warps):
        values = {"lane": t % 32, "warp": t // 32, "wgt": t % 128, "wg": t // 128, "thread": t}
        values["elect"] = int(t % 32 == 0)
        if aligned:
            values["awgt"] = t % 128
        for conj in guard:
            if any(q not in values for q, _, _ in conj):
                return None
            if all(_holds(op, values[q], v) for q, op, v in conj):
                count += 1
                break
    return count


def _holds(op: str, x: int, v: int) -> bool:
    return {"eq": x == v, "ne": x != v, "lt": x < v, "le": x <= v, "gt": x > v, "ge": x >= v}[op]


def steps(ctx: Ctx, code: CodeFacts) -> Iterator[Finding]:
    """The findings of every step check (module docstring), role by role.

    A role that calls another stage's callables may run steps inside them: with their summaries spliced in
    (the composition, :mod:`.summary`) they are judged like the role's own; without (its component alone) a
    step the role's code lacks is left to the composition (:func:`deferred`); a callable whose summary is
    unknown makes a lacking step undecided, never a pass."""
    by_function: dict[str, list[Fact]] = {}
    for f in code.facts:
        by_function.setdefault(f.function, []).append(f)
    calls = {c.symbol for c in ctx.stage.items if isinstance(c, A.Call)}
    for role in ctx.stage.roles:
        if not role.entry or role.entry not in by_function:
            continue
        facts = by_function[role.entry]
        later, opaque = _through(ctx, facts, calls)
        said: set[object] = set()
        for finding in _role(ctx, role, facts, by_function):
            name = _passed_name(finding)
            if name is not None and name in later:
                continue  # the composition judges it, with the callables' summaries
            unknowns = []
            for u in opaque.get(name or "", []):
                if u.via not in said:
                    said.add(u.via)
                    unknowns.append(u)
            if unknowns:  # the step may run in a callable whose summary is unknown: one finding per callable
                yield from (unknown(finding.check, u, "summary", finding.node) for u in unknowns)
                continue
            if name is not None and name in opaque:
                continue  # said at that callable already
            yield finding
    yield from _init_hooks(ctx, by_function)


def deferred(stage: A.Stage, code: CodeFacts) -> list[tuple[str, str, str]]:
    """The (role, check, ring or barrier) whose missing steps a component's code alone cannot decide: the role
    passes the ring's barrier (``ring-step``) or the barrier's ID (``named-barrier``) to another stage's callable,
    which may run the step with it; the composed check judges it (``kernlink pack`` says so, deferral.py)."""
    ctx = Ctx(stage, {r.entry: r for r in stage.roles if r.entry}, {})
    calls = {c.symbol for c in stage.items if isinstance(c, A.Call)}
    by_function: dict[str, list[Fact]] = {}
    for f in code.facts:
        by_function.setdefault(f.function, []).append(f)
    out: set[tuple[str, str, str]] = set()
    for role in stage.roles:
        facts = by_function.get(role.entry or "")
        if facts is None:
            continue
        later, _ = _through(ctx, facts, calls)
        for finding in _role(ctx, role, facts, by_function):
            name = _passed_name(finding)
            if name is not None and name in later:
                out.add((role.name, finding.check, name))
    return sorted(out)


def _passed_name(finding: Finding) -> str | None:
    """The ring or named barrier of a decided ``missing`` step finding (None: another finding)."""
    if not (finding.problem == "missing" and finding.check in ("ring-step", "named-barrier") and finding.decided):
        return None
    facts = dict(finding.facts)
    return facts.get("ring") or facts.get("barrier")


def _through(ctx: Ctx, facts: Sequence[Fact], calls: set[str]) -> tuple[set[str], dict[str, list[Fact]]]:
    """The rings and named barriers a role passes to another stage's callables (an argument built on a ring
    barrier's handle or a barrier ID's): a callable can run their steps with it, and no other's (it has none of
    the caller's handles). Without the callables' summaries (the component alone), a step of them the role's code
    lacks is left to the composition (the first set); spliced, the calls among them whose summary is unknown
    (``summary-unknown``, by ring or barrier) make it undecided."""
    spliced = any(f.via is not None or f.kind == "summary-unknown" for f in facts)
    passed: dict[int, set[str]] = {}  # by the call's PTX line
    for f in facts:
        if f.kind != "call-arg" or f.detail not in calls:
            continue
        names = passed.setdefault(f.line, set())
        for _, op in f.operands:
            where = ctx.ring_barrier(op)
            if where is not None:
                names.add(where[0].name)
            names.update(s.item for s in ctx.handles_of(op, "bar_id"))
    if not spliced:
        return {n for names in passed.values() for n in names}, {}
    opaque: dict[str, list[Fact]] = {}
    for f in facts:
        if f.kind == "summary-unknown":
            for name in sorted(passed.get(f.line, set())):
                opaque.setdefault(name, []).append(f)
    return set(), opaque


def _role(ctx: Ctx, role: A.Role, facts: list[Fact], by_function: dict[str, list[Fact]]) -> Iterator[Finding]:
    """The step findings of one role (its code's facts ``facts``)."""
    anchor = next(f for f in facts if f.kind == "function")
    sites, stray = _sites(ctx, facts)
    yield from stray
    sides = [r for r in ctx.stage.rings if r.role == role.name]
    carried = _ring_fed(ctx.stage, role.name)
    for side in sides:
        mine = [s for s in sites if s.ring == side.name]
        if side.name in carried:  # the generated hand-off runs the side's steps: the role's code runs none
            for site in mine:
                step = f"{site.barrier} {site.kind}"
                yield found(
                    "ring-step",
                    "ring-fed",
                    site.fact,
                    side,
                    ring=side.name,
                    role=role.name,
                    step=step,
                    side=side.side,
                )
            continue
        yield from _side(ctx, role, side, mine, anchor, facts)
    named = {r.name for r in sides}
    for site in sites:
        if site.ring not in named:
            yield found(
                "ring-step",
                "foreign",
                site.fact,
                _ring_node(ctx, site.ring),
                ring=site.ring,
                role=role.name,
                step=f"{site.barrier} {site.kind}",
            )
    yield from _named_barriers(ctx, role, facts, anchor)
    yield from _calls(facts, by_function)


def _ring_fed(stage: A.Stage, role: str) -> set[str]:
    """The rings whose slots carry a ring-fed tensor this role exports or imports (``generation ring R``)."""
    return {
        it.ring
        for it in stage.items
        if isinstance(it, (A.ExportTensor, A.ImportTensor)) and it.ring is not None and it.role == role
    }


def _ring_node(ctx: Ctx, ring: str) -> A.Node | None:
    return next((r for r in ctx.stage.rings if r.name == ring), None)


def _sites(ctx: Ctx, facts: Sequence[Fact]) -> tuple[list[Site], list[Finding]]:
    """The ring-barrier instructions of one role's code, and the undecided ones (their barrier unknown)."""
    sites: list[Site] = []
    stray: list[Finding] = []
    for f in facts:
        if f.kind not in _RING_FACTS:
            continue
        kind = "copy" if f.kind.endswith("-copy") else f.kind
        handle = f.detail.removeprefix("handle:") if f.detail.startswith("handle:") else None
        if handle is not None:
            spec = ctx.handle(handle)
            if spec is not None and spec.kind in ("ring_full_wait", "ring_empty_wait"):
                sites.append(Site(f, spec.item, "full" if spec.kind == "ring_full_wait" else "empty", kind))
            continue
        addr = f.operand("bar" if kind == "copy" else "addr")
        where = ctx.ring_barrier(addr)
        if where is not None:
            sites.append(Site(f, where[0].name, where[1], kind))
        elif ctx.private_barrier(addr):
            continue  # an mbarrier in the stage's own claim (`use mbarrier`): `private-mbarrier` judges it
        elif kind != "copy":
            stray.append(unknown("ring-step", f, "ring-barrier", None))
    return sites, stray


def _steps(side: A.Ring) -> list[Step]:
    out: list[Step] = []
    for it in side.items:
        if isinstance(it, A.RingWait):
            out.append(Step("wait", it.barrier, it))
        elif isinstance(it, A.RingArrive):
            out.append(Step("arrive", it.barrier, it))
        elif isinstance(it, A.RingCopy):
            out.append(Step("copy", it.barrier, it))
    if not any(s.kind == "copy" for s in out):
        tx = next((s for s in out if isinstance(s.item, A.RingArrive) and s.item.tx), None)
        if tx is not None:
            out.append(Step("copy", "full", tx.item))  # an arrive with `tx` and no copy line stands for one copy
    return out


def _side(
    ctx: Ctx, role: A.Role, side: A.Ring, sites: list[Site], anchor: Fact, facts: Sequence[Fact]
) -> Iterator[Finding]:
    first = _first_site(_steps(side), sites)
    if side.loops == 1 or first is None:
        yield from _iteration(ctx, role, side, sites, anchor, facts, first)
        return
    yield from _alternatives(ctx, role, side, sites, anchor, facts, first)


def _alternatives(
    ctx: Ctx, role: A.Role, side: A.Ring, sites: list[Site], anchor: Fact, facts: Sequence[Fact], first: Site
) -> Iterator[Finding]:
    """A side run in ``loops N`` alternative loops (specs/language.md §8.8): exactly ``N`` innermost loops
    around copies of its first step, in one parent loop or none (``ring-step`` ``loops``); alternatives, no
    instruction of one reaching another's without a back edge (``ring-step`` ``sequence``); each an
    iteration of the side by every step check, the others' instructions set aside; and each entered at the
    ring position the previous unit's loop left, whichever ran (:func:`_alternative_entries`)."""
    item = side.first(A.RingLoops)
    key = (first.kind, first.barrier)
    copies = sorted((s for s in sites if (s.kind, s.barrier) == key and s.fact.loops), key=lambda s: s.fact.order)
    innermost = {s.fact.loops[-1] for s in copies}
    alts = sorted(lp for lp in innermost if not any(lp in c.fact.loops[:-1] for c in copies))
    heads = [next(c for c in copies if c.fact.loops[-1] == lp) for lp in alts]
    parents = {h.fact.loops[-2] if len(h.fact.loops) > 1 else None for h in heads}
    words = f"{first.barrier} {first.kind}"
    if len(alts) != side.loops or len(parents) != 1:
        at = heads[side.loops] if len(heads) > side.loops else (heads or [first])[0]
        yield found(
            "ring-step",
            "loops",
            at.fact,
            item,
            ring=side.name,
            role=role.name,
            step=words,
            side=side.side,
            got=len(alts),
            want=side.loops,
            parents=len(parents),
        )
        return
    members = {lp: [s.fact for s in sites if lp in s.fact.loops] for lp in alts}
    for a, b in ((a, b) for a in alts for b in alts if a != b):
        if any(g.order in f.reaches for f in members[a] for g in members[b]):
            later = heads[alts.index(b)]
            yield found("ring-step", "sequence", later.fact, item, ring=side.name, role=role.name, step=words)
            return
    out: list[Finding] = []
    for lp, head in zip(alts, heads, strict=True):
        mine = [s for s in sites if not any(_aside(s.fact, members, lp, other) for other in alts if other != lp)]
        for f in _iteration(ctx, role, side, mine, anchor, facts, head, alternatives=True):
            if f not in out:
                out.append(f)
    out = _once_for_all(out, len(alts))
    yield from out
    if not any(f.check == "wait-parity" for f in out):
        yield from _alternative_entries(side, sites, heads, alts)
    if not out:
        yield from _read_proxy(ctx, role, side, facts)


def _once_for_all(out: list[Finding], alternatives: int) -> list[Finding]:
    """A step missing from every alternative is one mistake (most likely the contract's): one finding,
    naming no alternative, in place of one per loop."""

    def plain(f: Finding) -> tuple[tuple[str, str], ...]:
        return tuple(kv for kv in f.facts if kv[0] != "alternative")

    tagged = [f for f in out if any(k == "alternative" for k, _ in f.facts)]
    counts = Counter((f.check, f.problem, plain(f)) for f in tagged)
    kept: list[Finding] = []
    merged: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    for f in out:
        key = (f.check, f.problem, plain(f))
        if f in tagged and counts[key] == alternatives:
            if key not in merged:
                merged.add(key)
                kept.append(Finding(f.check, f.problem, f.fact, f.node, plain(f), f.decided, f.sites))
            continue
        kept.append(f)
    return kept


def _aside(fact: Fact, members: dict[int, list[Fact]], mine: int, other: int) -> bool:
    """An instruction of alternative ``other``, set aside when alternative ``mine`` is checked: in its loop,
    or on a path through it only (after it and not after ``mine``, or before it and not before ``mine``)."""
    if other in fact.loops:
        return True
    after = any(fact.order in f.reaches for f in members[other])
    before = any(f.order in fact.reaches for f in members[other])
    return (after and not any(fact.order in f.reaches for f in members[mine])) or (
        before and not any(f.order in fact.reaches for f in members[mine])
    )


def _alternative_entries(side: A.Ring, sites: list[Site], heads: list[Site], alts: list[int]) -> Iterator[Finding]:
    """§8.8 item 4 across ``loops N``: each wait of each alternative enters its loop at the position the
    previous unit's loop left, whichever ran: its own loop's (``Fact.entry``) and each other's
    (``Fact.across``). One mistake, one finding: a reset an alternative's own entry shows is that
    alternative's finding alone (what the others enter with after it follows from it); else the first
    reset after another alternative; else each undecided entry, never a pass."""
    if side.restart is not None or side.once:
        return
    plan = {(s.kind, s.barrier): s for s in _steps(side) if s.kind == "wait"}
    nested = [
        (s, plan[(s.kind, s.barrier)])
        for s in sorted(sites, key=lambda s: s.fact.order)
        if (s.kind, s.barrier) in plan and len(s.fact.loops) >= 2 and s.fact.loops[-1] in alts
    ]
    resets = [(s, st, [r for r in ("slot", "parity") if dict(s.fact.entry).get(r) == "reset"]) for s, st in nested]
    if any(r for _, _, r in resets):
        for s, step, reset in resets:
            if reset:
                yield _reset(side, step, s.fact, reset)
        return
    undecided: list[tuple[Site, Step]] = []
    for s, step in nested:
        how = dict(s.fact.entry)
        for other in alts:
            if other == s.fact.loops[-1]:
                continue
            after = {r: w for lp, r, w in s.fact.across if lp == other}
            reset = [r for r in ("slot", "parity") if after.get(r) == "reset"]
            if reset:
                previous = next(h.fact.line for h in heads if h.fact.loops[-1] == other)
                yield _reset(side, step, s.fact, reset, after=previous)
                return
            if any(after.get(r) != "carried" for r in ("slot", "parity")):
                undecided.append((s, step))
        if any(how.get(r) != "carried" for r in ("slot", "parity")):
            undecided.append((s, step))
    for s, step in dict.fromkeys(undecided):
        yield unknown("wait-parity", s.fact, "entry-position", step.item)


def _iteration(
    ctx: Ctx,
    role: A.Role,
    side: A.Ring,
    sites: list[Site],
    anchor: Fact,
    facts: Sequence[Fact],
    first: Site | None,
    alternatives: bool = False,
) -> Iterator[Finding]:
    """The step checks of one iteration loop of a side: the innermost loop around ``first``, its first
    step (``alternatives``: one of a ``loops N`` side's, whose entry :func:`_alternative_entries` judges)."""
    plan = _steps(side)
    looping = [s for s in plan if not (isinstance(s.item, A.RingArrive) and s.item.prearm)]
    loop = first.fact.loops[-1] if first is not None and first.fact.loops else None
    # a step missing from one alternative of `loops N`: which one (the PTX line of its first step)
    which = {"alternative": first.fact.line} if alternatives and first is not None else {}

    def in_iteration(site: Site) -> bool:
        return loop is None or loop in site.fact.loops

    def of(step: Step, inside: bool = True) -> list[Site]:
        return [s for s in sites if (s.kind, s.barrier) == (step.kind, step.barrier) and in_iteration(s) == inside]

    def sited(step: Step) -> list[Site]:
        return of(step)

    def peeled(site: Site) -> bool:
        """After the loop: a lagged side's peeled phase (`lag N`)."""
        inside = [s.fact for s in sites if loop is not None and in_iteration(s)]
        return bool(side.lag) and not in_iteration(site) and any(site.fact.order in f.reaches for f in inside)

    declared = {(s.kind, s.barrier) for s in plan}
    # a wait outside the side's loop is no step (its arrives may drain or prearm the ring there; its
    # waits not), unless it is the peeled phase of a lagged side
    extra = [
        site
        for site in sites
        if (site.kind, site.barrier) not in declared
        or (site.kind == "wait" and not in_iteration(site) and not peeled(site))
    ]
    absent = [
        s for s in plan if not of(s, inside=not (isinstance(s.item, A.RingArrive) and s.item.prearm) or loop is None)
    ]
    unpeeled = [
        s
        for s in looping
        if side.lag and loop is not None and s not in absent
        if not any(peeled(site) for site in sites if (site.kind, site.barrier) == (s.kind, s.barrier))
    ]
    for step in absent:
        # an instruction of the step's kind on the ring's other barrier: one mistake, the barrier
        wrong = [site for site in extra if site.kind == step.kind]
        if wrong:
            extra = [site for site in extra if site.kind != step.kind]
            yield found(
                "ring-step",
                "barrier",
                wrong[0].fact,
                step.item,
                ring=side.name,
                role=role.name,
                step=step.words,
                got=f"{wrong[0].barrier} {wrong[0].kind}",
            )
            continue
        prearm = isinstance(step.item, A.RingArrive) and step.item.prearm
        yield _missing(anchor, side, role, step, prearm=prearm, **which)
    for step in unpeeled[:1]:  # a side with no peeled phase: one mistake, named at its first step
        yield _missing(anchor, side, role, step, prearm=False, peeled=side.lag, **which)
    for site in extra:
        yield found(
            "ring-step",
            "extra",
            site.fact,
            side,
            ring=side.name,
            role=role.name,
            step=f"{site.barrier} {site.kind}",
            side=side.side,
        )
    if absent or extra or unpeeled:
        return  # the counts, parities and order of a side with a wrong step follow from that one mistake
    disorder = [*_times(side, role, looping, sited, _cluster_size(ctx.stage)), *_order(side, looping, sited)]
    if disorder:
        yield from disorder  # parities and counts of misplaced steps follow from the misplacement
        return
    flushed = list(_flushes(ctx, role, side, looping, sites, loop, first, anchor))
    yield from (f for f, _ in flushed if f is not None)
    if any(f is not None for f, _ in flushed):
        return  # the counts and parities of a pass with a missing or doubled lagged step follow from it
    after = {key: here for f, (key, here) in flushed}
    for step in looping:
        if step.kind == "arrive":
            yield from _arrivals(ctx, role, side, step, [*of(step), *after.get((step.kind, step.barrier), [])])
        elif step.kind == "wait":
            # the step's waits in the loop, and a lagged side's peeled phase after it
            peeled_waits = [site for site in of(step, inside=False) if peeled(site)]
            yield from _parities(ctx, role, side, step, [*of(step), *peeled_waits], None if alternatives else loop)
    yield from _fence(ctx, role, side, plan, sited, facts)
    yield from _retired(role, side, plan, sites, loop, facts, _cluster_size(ctx.stage))
    if not alternatives:  # a `loops N` side's proxy is its role's, judged once
        yield from _read_proxy(ctx, role, side, facts)


def _flushes(
    ctx: Ctx,
    role: A.Role,
    side: A.Ring,
    looping: list[Step],
    sites: list[Site],
    loop: int | None,
    first: Site | None,
    anchor: Fact,
) -> Iterator[tuple[Finding | None, tuple[tuple[str, str], list[Site]]]]:
    """A lagged step whose iteration loop sits in another loop (a persistent kernel's k-loop in its loop over
    units of work): the first ``lag`` iterations of each pass of the inner loop skip the step, so each pass
    of the outer loop runs it ``lag`` times after the inner loop (the unit's peeled phase: ``side lag`` for
    every step, plus a step's own ``lag`` for an arrive), before the outer loop's next pass. None: a step
    that lags not, or a side whose loop is not nested. Yields each lagged step's finding (None: it runs as
    often as it lags) with the step's instructions in the outer pass after the inner loop."""
    loops = first.fact.loops if first is not None else ()
    if loop is None or len(loops) < 2 or loops[-1] != loop:
        return
    outer = loops[-2]
    cluster = _cluster_size(ctx.stage)
    seen: set[tuple[str, str]] = set()
    for step in looping:
        key = (step.kind, step.barrier)
        if step.kind == "copy" or key in seen:
            continue
        seen.add(key)
        same = [s for s in looping if (s.kind, s.barrier) == key]
        lag = sum(side.lag + (s.item.lag or 0 if isinstance(s.item, A.RingArrive) else 0) for s in same)
        if not lag:
            continue
        want = lag * (cluster if isinstance(step.item, A.RingArrive) and step.item.multicast and cluster else 1)
        here = [s for s in _after_loop(sites, sites, loop) if (s.kind, s.barrier) == key and outer in s.fact.loops]
        chain = longest_chain([s.fact for s in here])
        drained = _carried(step, sites, loop, outer) if chain == 0 else []
        carried = _carried_entry(step, sites, loop) if drained else "reset"
        if chain == 0 and carried == "carried" and longest_chain([s.fact for s in drained]) == want:
            yield None, (key, drained)  # carried into the next unit's loop, the last unit's drained after the loop
        elif chain == 0 and carried == "unknown":
            at = next(s for s in sites if (s.kind, s.barrier) == key and loop in s.fact.loops)
            yield unknown("ring-step", at.fact, "carried-release", step.item), (key, drained)
        elif chain == 0:
            yield _missing(anchor, side, role, step, prearm=False, peeled=lag, per_pass=True), (key, here)
        elif chain != want:
            site = max(here, key=lambda s: s.fact.order)
            yield (
                found(
                    "ring-step",
                    "times",
                    site.fact,
                    step.item,
                    ring=side.name,
                    role=role.name,
                    step=step.words,
                    base=step.words,
                    times=chain,
                    per=want,
                    per_pass=True,
                ),
                (key, here),
            )
        else:
            yield None, (key, here)


def _carried(step: Step, sites: list[Site], loop: int, outer: int) -> list[Site]:
    """A lagged release carried across units of work (CUTLASS's persistent mainloops): no release after
    the inner loop within the outer pass; the first iterations of the next unit's loop release what the
    previous unit held back (the same instructions as every other iteration's), and the role drains the last
    unit's after the outer loop. The step's instructions after the outer loop that the inner loop reaches
    (arrives only: a wait is no release). None of it is seen when the side is not lagged: ``_flushes``."""
    if step.kind != "arrive":
        return []
    return [
        s
        for s in _after_loop(sites, sites, loop)
        if (s.kind, s.barrier) == (step.kind, step.barrier) and outer not in s.fact.loops
    ]


def _after_loop(candidates: list[Site], sites: list[Site], loop: int) -> list[Site]:
    """The ``candidates`` outside ``loop`` that one of ``sites`` in it reaches (on a path without a back edge)."""
    inside = [s.fact for s in sites if loop in s.fact.loops]
    return [s for s in candidates if loop not in s.fact.loops and any(s.fact.order in f.reaches for f in inside)]


def _retired(
    role: A.Role,
    side: A.Ring,
    plan: list[Step],
    sites: list[Site],
    loop: int | None,
    facts: Sequence[Fact],
    cluster: int | None,
) -> Iterator[Finding]:
    """A consume side whose role reads the slots with ``wgmma`` in the side's loop: each release (its ``empty``
    arrive) runs after a ``wgmma.wait_group N`` that retired the group that read the slot it releases. The loop
    commits ``p`` groups per iteration (``wgmma.commit_group``, its longest chain); a release lagged ``L``
    iterations (the side's ``lag`` plus the arrive's own) in an iteration that committed ``c`` groups before the
    wait needs ``N <= L * p - 1 + c``; the ``k``-th release after the loop (a unit's peeled phase, or the drain of
    a release carried across units) ``N <= (L - k) * p - 1``; ``wgmma.wait_group 0`` retires every group. A
    release no such wait precedes on a path without a back edge is ``unretired`` (the producer refills the slot
    while the tensor cores may still read it); a wait whose group count is no constant, where none other decides,
    is undecided. Which slot an arrive addresses, and which of an iteration's groups read it, are not in the
    facts: the bound takes the slot's group to be its iteration's first (never a false rejection of a loop that
    commits several groups, the attention kernels' two), and holds the release to the lag its contract states (a
    release of the previous slot after ``wgmma.wait_group 1`` states ``lag 1``; stated without it, the same code
    could release the current slot while its group is pending)."""
    if side.side != "consume" or loop is None:
        return
    if not any(f.kind == "feature" and f.opcode.startswith("wgmma.mma_async") and loop in f.loops for f in facts):
        return
    commits = [f for f in facts if f.kind == "mma-commit" and loop in f.loops]
    groups_per = max(longest_chain(commits), 1)  # `p`: the groups one iteration commits
    waits = [f for f in facts if f.kind == "mma-wait"]
    for step in plan:
        item = step.item
        if step.kind != "arrive" or step.barrier != "empty" or not isinstance(item, A.RingArrive) or item.prearm:
            continue
        lag = side.lag + (item.lag or 0)
        per = (cluster or 1) if item.multicast else 1  # a multicast release: one arrive per CTA of the cluster
        mine = sorted((s for s in sites if (s.kind, s.barrier) == ("arrive", "empty")), key=lambda s: s.fact.order)
        after = [s.fact for s in _after_loop(mine, sites, loop)]
        for site in mine:
            release = site.fact
            within = loop in release.loops
            if not within and release not in after:
                continue  # before the loop: no group read a slot yet
            # after the loop: the k-th release there on its path; any wait before it (the loop's last pass too)
            k = 0 if within else sum(1 for f in after if release.order in f.reaches) // per
            before = [w for w in waits if release.order in w.reaches and (not within or loop in w.loops)]
            retired = undecided = False
            for w in before:
                groups = w.operand("groups")
                if groups is None or groups.kind != "constant" or groups.value is None:
                    undecided = True
                    continue
                committed = longest_chain([c for c in commits if w.order in c.reaches]) if within else 0
                # the stated lag: which slot an arrive addresses is not in the facts, so the code is held to it;
                # `wgmma.wait_group 0` retires every group: a release after it is never early (one past the lag
                # is an extra arrive, `ring-step`'s or no one's to judge, not an unretired slot)
                bound = max(0, (lag - k) * groups_per - 1 + committed)
                retired = retired or groups.value <= bound
            if retired:
                continue
            if undecided:
                yield unknown("ring-step", release, "retired", item)
            else:
                yield found(
                    "ring-step", "unretired", release, item, ring=side.name, role=role.name, step=step.words, lag=lag
                )
            return  # one release: the others follow from the same wait


def _carried_entry(step: Step, sites: list[Site], loop: int) -> str:
    """Whether the step's releases in the inner loop address, on a unit's first iteration, the slot the previous
    unit left (``carried``: they release what it held back), one reset per unit (``reset``: a per-unit lag, whose
    held-back release belongs after the unit's loop), or neither shown (``unknown``); from ``Fact.entry``."""
    how = {
        dict(s.fact.entry).get("slot", "unknown")
        for s in sites
        if (s.kind, s.barrier) == (step.kind, step.barrier) and loop in s.fact.loops
    }
    if how == {"carried"}:
        return "carried"
    return "reset" if "reset" in how else "unknown"


#: Instructions that read shared memory through the async proxy.
_ASYNC_READERS = ("wgmma.mma_async", "tcgen05.mma", "tcgen05.cp", "cp.async.bulk.global.shared", "cp.reduce.async.bulk")


def _async_reader(fact: Fact) -> bool:
    op = fact.opcode
    return fact.kind == "feature" and (
        op.startswith(_ASYNC_READERS) or (op.startswith("cp.async.bulk.tensor") and ".global.shared" in op)
    )


def _read_proxy(ctx: Ctx, role: A.Role, side: A.Ring, facts: Sequence[Fact]) -> Iterator[Finding]:
    """``reads async|generic``: the proxy of the instructions that read the side's slots."""
    said = next((it for it in side.items if isinstance(it, A.RingProxy) and it.access == "reads"), None)
    if said is None or side.side != "consume":
        return
    loads = [
        f
        for f in facts
        if f.kind == "smem-access"
        and f.opcode.split(".")[0] in ("ld", "ldu", "ldmatrix")
        and _slot_of(ctx, f) == side.name
    ]
    if said.proxy == "async" and loads:
        yield found("read-proxy", "generic", loads[0], said, ring=side.name, role=role.name)
        return
    readers = [f for f in facts if _async_reader(f)]
    if said.proxy == "generic" and not loads and readers:
        yield found("read-proxy", "async", readers[0], said, ring=side.name, role=role.name)


def _slot_of(ctx: Ctx, access: Fact) -> str | None:
    """The ring whose slots an access addresses (through a per-slot claim's or the ring's slot handle)."""
    for spec in ctx.handles_of(access.operand("addr"), "smem", "ring_slot_smem"):
        if spec.kind == "ring_slot_smem":
            return spec.item
        if isinstance(spec.node, A.SmemClaim) and spec.node.per_slot:
            return spec.node.per_slot
    return None


def _first_site(plan: list[Step], sites: list[Site]) -> Site | None:
    for kind in ("wait", "arrive", "copy"):
        keys = {(s.kind, s.barrier) for s in plan if s.kind == kind and not getattr(s.item, "prearm", False)}
        chosen = sorted((s for s in sites if (s.kind, s.barrier) in keys), key=lambda s: s.fact.order)
        if chosen:
            return chosen[0]
    return None


Sited = Callable[[Step], list[Site]]


def _cluster_size(stage: A.Stage) -> int | None:
    """The CTAs of the stage's cluster when it states one shape (None: several, or none stated)."""
    shapes = [s for it in stage.items if isinstance(it, A.Cluster) for s in it.shapes]
    return shapes[0].size if len(shapes) == 1 else None


def _times(side: A.Ring, role: A.Role, looping: list[Step], of: Sited, cluster: int | None) -> Iterator[Finding]:
    """Every wait and arrive of the side runs as often per iteration as the others (copies are counted
    in bytes: ``copy-bytes``, ``expect-tx``). A ``multicast`` arrive is one ``mbarrier.arrive`` per CTA
    of the cluster (PTX has no multicast arrive: each is a ``mapa`` + ``.shared::cluster`` arrive), so
    it runs ``cluster`` instructions per iteration when the stage states one cluster shape."""
    counted: list[tuple[Step, int, list[Site]]] = []
    seen: set[tuple[str, str]] = set()
    for step in looping:
        key = (step.kind, step.barrier)
        if key in seen or step.kind == "copy":
            continue
        seen.add(key)
        here = of(step)
        chain = longest_chain([s.fact for s in here])
        per = sum(1 for s in looping if (s.kind, s.barrier) == key)
        if isinstance(step.item, A.RingArrive) and step.item.multicast and cluster is not None:
            per *= cluster
        counted.append((step, chain // per if chain % per == 0 else -1, here))
    if not counted:
        return
    base_step, base, _ = counted[0]
    for step, times, here in counted[1:]:
        if times != base:
            site = max(here, key=lambda s: s.fact.order)
            yield found(
                "ring-step",
                "times",
                site.fact,
                step.item,
                ring=side.name,
                role=role.name,
                step=step.words,
                base=base_step.words,
                times=max(times, 0) or len(here),
                per=base,
            )


def _arrivals(ctx: Ctx, role: A.Role, side: A.Ring, step: Step, here: list[Site]) -> Iterator[Finding]:
    assert isinstance(step.item, A.RingArrive)
    want = ctx.count_value(step.item.count)
    for site in here:
        selected = threads(site.fact.guard, role.warps or 0, role.warpgroup)
        count = site.fact.operand("count")
        times = 1 if count is None else (count.value if count.kind == "constant" else None)
        if selected is None or times is None:
            yield unknown("arrive-count", site.fact, "arrivals", step.item)
            continue
        if want is None:
            yield unknown("arrive-count", site.fact, "declared-count", step.item)
            continue
        got = selected * times
        if got != want:
            yield found(
                "arrive-count",
                "count",
                site.fact,
                step.item,
                ring=side.name,
                role=role.name,
                step=step.words,
                got=got,
                want=want,
                guard=guard_text(site.fact.guard),
                times=times,
                threads=selected,
                width=32 * (role.warps or 0),
            )


def _parities(
    ctx: Ctx, role: A.Role, side: A.Ring, step: Step, here: list[Site], loop: int | None
) -> Iterator[Finding]:
    assert isinstance(step.item, A.RingWait)
    want = step.item.parity if step.item.parity is not None else (0 if step.barrier == "full" else 1)
    # one ring position per wait: not a role on turns (it takes every N-th fill) or a restarting index
    stepwise = (role.turns or 1) == 1 and side.restart is None
    for site in here:
        parity = site.fact.operand("parity")
        if parity is None or site.fact.detail == "state":
            yield unknown("wait-parity", site.fact, "first-parity", step.item)
            continue
        if parity.first is None:
            got = list(_advanced(ctx, side, step, site, want)) if stepwise else []
            if not stepwise:
                got = [unknown("wait-parity", site.fact, "first-parity", step.item)]
            yield from got or _entry(side, step, site, loop)
            continue
        wrong: list[Finding] = []
        if stepwise and any(site.fact.prior):
            # a copy after earlier waits of the step, on a constant parity: the ring position there
            constant = ((parity.first,) * len(site.fact.prior),) * (MAX_DEPTH + 1)
            wrong = list(_advanced(ctx, side, step, site, want, constant))
        elif parity.first % 2 != want:
            wrong = [
                found(
                    "wait-parity",
                    "first",
                    site.fact,
                    step.item,
                    ring=side.name,
                    step=step.words,
                    got=parity.first % 2,
                    want=want,
                    stated=step.item.parity is not None,
                )
            ]
        after_loop = any(
            o.fact.loops and site.fact.order in o.fact.reaches and not set(o.fact.loops) <= set(site.fact.loops)
            for o in here
        )
        if not wrong and (site.fact.loops or after_loop) and parity.kind == "constant":
            # the ring position moves on each pass of the loop around it (or before it, for a peeled copy):
            # one parity is wrong on some pass
            wrong = [
                found(
                    "wait-parity",
                    "constant",
                    site.fact,
                    step.item,
                    ring=side.name,
                    step=step.words,
                    got=parity.first % 2,
                )
            ]
        yield from wrong or _entry(side, step, site, loop)


def _missing(anchor: Fact, side: A.Ring, role: A.Role, step: Step, **more: object) -> Finding:
    """``ring-step`` ``missing``: the role's code runs no instruction of a step its side states (``more``:
    ``prearm``, the peeled phase's ``lag`` and ``per_pass``, the alternative loop it is missing from)."""
    where = {"ring": side.name, "role": role.name, "step": step.words, "side": side.side}
    return found("ring-step", "missing", anchor, step.item, **where, **more)


def _reset(side: A.Ring, step: Step, fact: Fact, reset: list[str], **more: object) -> Finding:
    """``wait-parity`` ``reset``: the wait enters its loop at a position the same on every pass (``reset``:
    the slot, the parity or both), where its side carries the ring position from one unit to the next."""
    return found(
        "wait-parity",
        "reset",
        fact,
        step.item,
        ring=side.name,
        step=step.words,
        side=side.side,
        reset=" and ".join(reset),
        **more,
    )


def _entry(side: A.Ring, step: Step, site: Site, loop: int | None) -> Iterator[Finding]:
    """A wait of the side's iteration loop nested in another loop (a k-loop in a persistent kernel's loop
    over units of work): a side that does not `restart` enters its loop at the position the previous
    pass left, its slot and its parity carried (``Fact.entry``); a position the same on every pass
    (a cursor reset per unit of work) waits on the wrong slot and phase from the second pass on."""
    loops = site.fact.loops
    if side.restart is not None or side.once or loop is None or len(loops) < 2 or loops[-1] != loop:
        return
    how = dict(site.fact.entry)
    reset = [r for r in ("slot", "parity") if how.get(r) == "reset"]
    if reset:
        yield _reset(side, step, site.fact, reset)
    elif any(how.get(r) != "carried" for r in ("slot", "parity")):
        yield unknown("wait-parity", site.fact, "entry-position", step.item)


def _advanced(
    ctx: Ctx,
    side: A.Ring,
    step: Step,
    site: Site,
    want: int,
    constant: tuple[tuple[int | None, ...], ...] | None = None,
) -> Iterator[Finding]:
    """A wait whose first parity depends on the ring's depth: the ring position has advanced before it (an
    unrolled or peeled copy of the step). On its first pass, on the paths that ran ``k`` waits of the step
    before it (``Fact.prior``) at depth ``d``, the wait must use parity ``want ^ ((k // d) & 1)``; the facts
    hold the parity the code computes there at each depth its ring's depth handle may take
    (``Fact.depths``: 1 .. MAX_DEPTH, then every deeper one). Decided for every depth the stage's `depth`
    allows, or every depth where it states none (a consumer's ring is sized by its producer); a parity the
    facts do not fold is undecided. ``constant``: the parities the site uses, the same at every depth."""
    spec = next((s for s in ctx.expected.values() if s.kind == "ring_depth" and s.item == side.name), None)
    computed = constant or (dict(site.fact.depths).get(spec.symbol) if spec is not None else None)
    lo, hi = _depth_range(ctx, side.name) or (1, None)  # a consumer's ring: any depth its producer picks
    prior = site.fact.prior
    if computed is None or not prior:
        yield unknown("wait-parity", site.fact, "first-parity", step.item)
        return
    last = MAX_DEPTH + 1 if hi is None or hi > MAX_DEPTH else hi  # MAX_DEPTH + 1: every deeper depth at once
    for d in range(min(lo, last), last + 1):
        for k, got in zip(prior, computed[min(d, MAX_DEPTH + 1) - 1], strict=True):
            if got is None or (d > MAX_DEPTH and k >= d):
                yield unknown("wait-parity", site.fact, "first-parity", step.item)
                return
            should = want ^ ((k // d) & 1)
            if got % 2 != should:
                yield found(
                    "wait-parity",
                    "advanced",
                    site.fact,
                    step.item,
                    ring=side.name,
                    step=step.words,
                    got=got % 2,
                    want=should,
                    depth=d if d <= MAX_DEPTH else f"{d} or more",
                    waits=k,
                )
                return


def _depth_range(ctx: Ctx, ring: str) -> tuple[int, int] | None:
    """The depths a ring of the stage may have: its `depth` (a side that states it), else None."""
    for side in ctx.stage.rings:
        if side.name == ring:
            found = next((i for i in side.items if isinstance(i, A.RingDepth)), None)
            if found is not None:
                return found.lo, found.hi
    return None


def _order(side: A.Ring, looping: list[Step], of: Sited) -> Iterator[Finding]:
    previous: tuple[Step, int] | None = None
    for step in looping:
        here = of(step)
        if not here:
            continue
        at = min(s.fact.order for s in here)
        if previous is not None and at < previous[1]:
            site = min(here, key=lambda s: s.fact.order)
            yield found(
                "step-order", "before", site.fact, step.item, ring=side.name, step=step.words, before=previous[0].words
            )
            return
        previous = (step, at)


_RELEASE = {"produce": "full", "consume": "empty"}


def _fence(
    ctx: Ctx, role: A.Role, side: A.Ring, plan: list[Step], of: Sited, facts: Sequence[Fact]
) -> Iterator[Finding]:
    """`fence proxy_async`: a `fence.proxy.async` after the side's slot accesses and before its release arrive."""
    promise = next((it for it in side.items if isinstance(it, A.RingFence)), None)
    if promise is None:
        return
    release = next((s for s in plan if s.kind == "arrive" and s.barrier == _RELEASE[side.side]), None)
    if release is None:
        return
    fences = [f for f in facts if f.kind == "proxy-fence" and _covers_shared(f)]
    for site in of(release):
        arrive = site.fact
        before = [f for f in fences if arrive.order in f.reaches]
        if not before:
            yield found(
                "ring-fence",
                "missing",
                arrive,
                promise,
                ring=side.name,
                role=role.name,
                side=side.side,
                release=release.words,
            )
            continue
        last = max(f.order for f in before)
        accesses = [a for a in facts if a.kind == "smem-access" and last < a.order < arrive.order and _slot(ctx, a)]
        if accesses:
            yield found(
                "ring-fence",
                "early",
                accesses[0],
                promise,
                ring=side.name,
                role=role.name,
                side=side.side,
                release=release.words,
            )


def _covers_shared(fence: Fact) -> bool:
    """A proxy fence whose state space includes shared memory (``fence.proxy.async.global`` does not)."""
    return fence.kind == "init-fence" or fence.detail == "fence.proxy.async" or ".shared" in fence.detail


def _slot(ctx: Ctx, access: Fact) -> bool:
    """A shared-memory access to a ring's slots (through a per-slot claim's or a ring's slot handle)."""
    addr = access.operand("addr")
    for spec in ctx.handles_of(addr, "smem", "ring_slot_smem"):
        if spec.kind == "ring_slot_smem" or (isinstance(spec.node, A.SmemClaim) and spec.node.per_slot):
            return True
    return False


def _named_barriers(ctx: Ctx, role: A.Role, facts: Sequence[Fact], anchor: Fact) -> Iterator[Finding]:
    items = [i for i in ctx.stage.items if isinstance(i, (A.BarrierClaim, A.Rendezvous))]
    used: set[str] = set()
    unnamed = False  # a barrier whose ID is a literal or untraced (its own finding): it may be any of them
    for f in facts:
        if f.kind != "barrier":
            continue
        specs = ctx.handles_of(f.operand("id"), "bar_id")
        ident = f.operand("id")
        if not specs:
            unnamed = unnamed or ident is None or ident.value != 0
            continue
        name = specs[0].item
        used.add(name)
        mine = [i for i in items if i.name == name and _takes_part(i, role)]
        if not mine:
            node = next((i for i in items if i.name == name), None)
            yield found("named-barrier", "not-participant", f, node, barrier=name, role=role.name)
            continue
        modes = {i.mode for i in mine if isinstance(i, A.Rendezvous)}
        if modes and f.detail not in modes:
            yield found(
                "named-barrier", "mode", f, mine[0], barrier=name, role=role.name, got=f.detail, want=sorted(modes)[0]
            )
    for item in items:
        if _takes_part(item, role) and item.name not in used and not unnamed:
            yield found("named-barrier", "missing", anchor, item, barrier=item.name, role=role.name)


def _takes_part(item: A.BarrierClaim | A.Rendezvous, role: A.Role) -> bool:
    return role.name in item.participants if isinstance(item, A.BarrierClaim) else item.role == role.name


def _calls(facts: Sequence[Fact], by_function: dict[str, list[Fact]]) -> Iterator[Finding]:
    """A role calling a function of its module that synchronises: the analysis reads each function alone."""
    for f in facts:
        if f.kind == "call" and any(
            g.kind in _RING_FACTS or g.kind == "barrier" for g in by_function.get(f.detail, [])
        ):
            yield unknown("ring-step", f, "helper", None)


def _init_hooks(ctx: Ctx, by_function: dict[str, list[Fact]]) -> Iterator[Finding]:
    hooks: dict[str, A.Ring] = {}
    for ring in ctx.stage.rings:
        init = ring.first(A.RingInitBy)
        if isinstance(init, A.RingInitBy):
            hooks[init_hook_symbol(ctx.stage, ring.name)] = ring
    for symbol, ring in hooks.items():
        facts = by_function.get(symbol)
        if facts is None:
            continue  # L-SYMBOL: the stage does not define its hook
        anchor = next(f for f in facts if f.kind == "function")
        inits = [f for f in facts if f.kind == "mbarrier-init"]
        done = {
            w[1] for f in inits if (w := ctx.ring_barrier(f.operand("addr"))) is not None and w[0].name == ring.name
        }
        init = ring.first(A.RingInitBy)
        assert isinstance(init, A.RingInitBy)
        for which in ("full", "empty"):
            if which not in done:
                yield found("init-hook", "missing-init", anchor, init, ring=ring.name, barrier=which, hook=symbol)
        again = next(
            (f for f in inits if f.detail == "invariant" and ctx.ring_barrier(f.operand("addr")) is not None), None
        )
        if again is not None:
            yield found("init-hook", "same-slot", again, init, ring=ring.name, hook=symbol)
        per = {
            which: longest_chain(
                [f for f in inits if (w := ctx.ring_barrier(f.operand("addr"))) is not None and w == (ring, which)]
            )
            for which in ("full", "empty")
        }
        if done == {"full", "empty"} and per["full"] != per["empty"]:
            # every slot has one barrier of each: an unrolled init loop inits both kinds equally often
            fewer = min(per, key=lambda w: per[w])
            yield found("init-hook", "uneven", anchor, init, ring=ring.name, hook=symbol, fewer=fewer, **per)
        if init.fenced:
            fences = [f for f in facts if f.kind == "init-fence" or (f.kind == "proxy-fence" and _covers_shared(f))]
            cluster = any(r.scope == "cluster" for r in ctx.stage.rings if r.name == ring.name)
            if cluster:
                fences = [f for f in fences if f.kind == "init-fence"]
            last_init = max((f.order for f in inits), default=0)
            if not any(f.order > last_init for f in fences):
                yield found(
                    "init-hook",
                    "unfenced",
                    anchor,
                    init,
                    ring=ring.name,
                    hook=symbol,
                    fence="fence.mbarrier_init.release.cluster" if cluster else "fence.proxy.async.shared::cta",
                )
    for function, facts in by_function.items():
        if function in hooks:
            continue
        for f in facts:
            where = ctx.ring_barrier(f.operand("addr")) if f.kind == "mbarrier-init" else None
            if where is not None:
                init = where[0].first(A.RingInitBy)
                yield found("init-hook", "outside", f, init or where[0], ring=where[0].name, function=function)


def rendezvous_sites(stage: A.Stage, code: CodeFacts) -> dict[tuple[str, str], list[Fact]]:
    """The named-barrier instructions of each (rendezvous, role) of the stage, from the role's code."""
    ctx = Ctx(stage, {r.entry: r for r in stage.roles if r.entry}, {})
    names = {i.name for i in stage.items if isinstance(i, A.Rendezvous)}
    out: dict[tuple[str, str], list[Fact]] = {}
    for f in code.facts:
        role = ctx.roles.get(f.function)
        if f.kind != "barrier" or role is None:
            continue
        specs = ctx.handles_of(f.operand("id"), "bar_id")
        if specs and specs[0].item in names:
            out.setdefault((specs[0].item, role.name), []).append(f)
    return out


def rendezvous_shape(sites: Sequence[Fact]) -> tuple[int, ...]:
    """How a role meets a rendezvous: the loop depth of each instruction on its longest path, sorted."""
    chain = longest_chain(sites)
    depths = sorted(len(f.loops) for f in sites)
    return (chain, *depths)


def across_stages(parts: Sequence[tuple[A.Stage, CodeFacts]]) -> Iterator[tuple[int, Finding]]:
    """Every participant of a rendezvous meets it the same way (as often, at the same loop depths):
    a participant that syncs once where the others sync twice waits at a barrier the others left."""
    shapes: dict[str, list[tuple[int, str, tuple[int, ...], list[Fact], A.Node]]] = {}
    for index, (stage, code) in enumerate(parts):
        items = {(i.name, i.role): i for i in stage.items if isinstance(i, A.Rendezvous)}
        for (name, role), sites in rendezvous_sites(stage, code).items():
            item = items.get((name, role))
            if item is not None:
                shapes.setdefault(name, []).append((index, role, rendezvous_shape(sites), sites, item))
    for name, found_shapes in sorted(shapes.items()):
        counts = Counter(shape for _, _, shape, _, _ in found_shapes)
        if len(counts) < 2:
            continue
        usual, _ = counts.most_common(1)[0]
        first = next(f for f in found_shapes if f[2] == usual)
        for index, role, shape, sites, node in found_shapes:
            if shape == usual:
                continue
            site = sorted(sites, key=lambda f: f.order)[0]
            yield (
                index,
                found(
                    "named-barrier",
                    "count",
                    site,
                    node,
                    barrier=name,
                    role=role,
                    got=shape[0],
                    depths=",".join(map(str, shape[1:])),
                    other=first[1],
                    want=usual[0],
                    other_depths=",".join(map(str, usual[1:])),
                ),
            )
