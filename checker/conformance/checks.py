"""The conformance checks: a component's code facts judged against its stage's contract.

Each check has a stable name (the ``check`` datum of an L-CONFORM diagnostic):

| check | the code … |
|---|---|
| ``barrier-id`` | names a named barrier by a literal ID instead of a barrier handle |
| ``barrier-threads`` | gives a named barrier a thread count other than the contract's |
| ``block-barrier`` | runs barrier 0 (``__syncthreads``) in a role that is not the whole block, or in a ring init |
| ``mbarrier-init`` | initialises a ring mbarrier with a count other than the ring's ``init`` |
| ``expect-tx`` | expects transaction bytes other than the ring's ``full arrive … tx`` |
| ``copy-bytes`` | completes bytes (bulk copies on a ring barrier, ``mbarrier.complete_tx``) other than ``full copy`` |
| | per fill, or some only under a condition the fill's ``expect_tx`` does not share; with a box or a |
| | condition of params fields that state their values (``in {…}``), at one of those values (:mod:`.stated`) |
| ``copy-count`` | issues per fill another number of copies than the ring states ``full copy`` lines (with stated |
| | field values: the lines are the copies at none of them) |
| ``setmaxnreg`` | runs its own ``setmaxnreg``, although the dispatch kernel sets every warpgroup's budget |
| ``static-shared`` | declares static ``__shared__`` memory, which no claim accounts for |
| ``smem-literal`` | addresses dynamic shared memory (or passes an address to a call) at an offset that comes |
| | from no claim or ring handle |
| ``scope`` | runs an atomic or fence at a scope other than the counters' declared scope |
| ``proxy-fence`` | writes shared memory (generic proxy), then has the async proxy read it unfenced |
| ``launch-directive`` | carries ``.maxntid``/``.reqntid``/cluster directives that disagree with the contract |
| ``tmem-alloc`` | runs its own ``tcgen05.alloc``/``dealloc``/``relinquish_alloc_permit`` |
| ``tid-index`` | indexes by absolute ``%tid`` in a role, instead of relative to its first-warp handle |
| ``feature`` | runs an instruction whose feature the stage does not ``require`` |
| ``params-read`` | reads params the contract does not declare |

and the step checks of :mod:`.steps` (``ring-step``, ``arrive-count``, ``wait-parity``,
``step-order``, ``ring-fence``, ``named-barrier``, ``init-hook``) and of :mod:`.private`
(``private-mbarrier``: a claim's own mbarrier against its ``signal``) and :mod:`.orders`
(``barrier-orders``: a named barrier between the accesses of the claims it ``orders``).

A check returns typed findings (:class:`Finding`): the check, the problem within it, the
fact and contract item involved, and the values the wording names. The words are the
clause's (``checker/clauses/l_conform.py``). What the analysis cannot decide (a value it
cannot trace, a TMA copy whose size the tensor map holds) is an undecided finding, never
a pass; ``--strict`` makes those errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from checker.conformance.context import Ctx, Finding, found, unknown
from checker.conformance.orders import ORDER_CHECKS, orders
from checker.conformance.private import PRIVATE_CHECKS, private
from checker.conformance.staging import staging
from checker.conformance.stated import applies, extra_conds, per_value, stated_fields
from checker.conformance.steps import STEP_CHECKS, steps
from contract_lang import ast as A
from contract_lang.transform import TMA_BOX_MAX
from package.abi import init_hook_symbol
from package.codefacts.facts import CodeFacts, Fact, Operand
from package.codefacts.values import Linear, linear_sum

CHECKS = (
    "barrier-id",
    "barrier-threads",
    "block-barrier",
    "mbarrier-init",
    "expect-tx",
    "copy-bytes",
    "copy-count",
    "setmaxnreg",
    "static-shared",
    "smem-literal",
    "scope",
    "proxy-fence",
    "launch-directive",
    "tmem-alloc",
    "tid-index",
    "feature",
    "params-read",
    *STEP_CHECKS,
    *PRIVATE_CHECKS,
    *ORDER_CHECKS,
)


PROTOCOL_CHECKS = frozenset(CHECKS) - {
    "setmaxnreg",
    "static-shared",
    "smem-literal",
    "launch-directive",
    "tmem-alloc",
    "tid-index",
    "feature",
    "params-read",
}
"""The checks whose finding means the code synchronises otherwise than its contract states: the
protocol model's verdict (no hang, no race) is about the contract, so it does not hold for that
code, and a clause selection never hides such a finding (``checker/policy.py``)."""


_ONCE_PER_FUNCTION = frozenset({"smem-literal", "tid-index", "params-read"})


def _ctx(stage: A.Stage) -> Ctx:
    return Ctx(
        stage,
        {r.entry: r for r in stage.roles if r.entry},
        {init_hook_symbol(stage, r.name): r for r in stage.rings if any(isinstance(i, A.RingInitBy) for i in r.items)},
    )


def check(stage: A.Stage, code: CodeFacts) -> list[Finding]:
    """Every finding of every check, in fact order (one per instruction and check)."""
    ctx = _ctx(stage)
    out: list[Finding] = []
    seen: set[tuple[str, str, int, str, int]] = set()
    judged = (finding for fact in code.facts for finding in _judge(ctx, fact, code))
    for finding in (*judged, *steps(ctx, code), *staging(ctx, code), *private(ctx, code), *orders(ctx, code)):
        # One diagnostic per mistake: a misplaced buffer, an index or an undeclared feature shows at
        # every access; report the first.
        fact = finding.fact
        once = finding.check in _ONCE_PER_FUNCTION
        line = 0 if once else fact.line
        item = 0 if once or finding.node is None else finding.node.span.line
        problem = "" if once else finding.problem
        if finding.check == "feature":  # one per feature and function, at its first instruction
            line, problem = 0, fact.detail
        key = (finding.check, fact.function, line, problem, item)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return _one_per_line(_root_causes(stage, out))


#: Checks of a ring's byte accounting, which read the fill's steps (its `expect_tx` arrive, its copies).
_FILL_CHECKS = frozenset({"copy-bytes", "copy-count", "expect-tx"})


def _root_causes(stage: A.Stage, found: list[Finding]) -> list[Finding]:
    """One mistake, one diagnostic: where a ring side misses or misplaces a step (a decided ``ring-step``), an
    undecided site of its byte accounting follows from that step (a fill whose `expect_tx` arrive is gone
    cannot pair its copies' bytes) and is not reported beside it. The verdict is a rejection either way."""
    broken = {dict(f.facts).get("ring") for f in found if f.check == "ring-step" and f.decided}
    if not broken:
        return found
    items = {id(item): ring.name for ring in stage.rings if ring.name in broken for item in ring.items}
    return [f for f in found if f.decided or f.check not in _FILL_CHECKS or id(f.node) not in items]


def through_calls(parts: Sequence[tuple[A.Stage, CodeFacts]]) -> Iterator[tuple[int, Finding]]:
    """What only the composition decides: a role's protocol steps that run inside another stage's callables.

    Each part's facts with the summaries of the callables it calls spliced in at their calls
    (:mod:`.summary`) are judged by the checks that read steps across a call (the staging ring's
    steps, ``barrier-orders``); a finding the part's own facts give already (reported with the
    stage's own check) is not reported again."""
    from checker.conformance.summary import splice

    for index, ((stage, code), after) in enumerate(zip(parts, splice(parts), strict=True)):
        if after is code:
            continue
        ctx = _ctx(stage)
        alone = {_seen(f) for f in (*staging(ctx, code), *orders(ctx, code), *steps(ctx, code))}
        # a spliced named barrier or expect-tx is judged at the call like the caller's own (its ID, its bytes)
        judged = (g for f in after.facts if _at_call(f) for g in _judge(ctx, f, after))
        stepped = _root_causes(stage, [*steps(ctx, after), *judged])
        ordered = list(orders(ctx, after))
        if any(f.check == "barrier-id" and not f.decided for f in stepped):
            # a spliced barrier whose ID is not known may be the one that orders: its finding is the root cause
            ordered = []
        new = [f for f in (*staging(ctx, after), *ordered, *stepped) if _seen(f) not in alone]
        for finding in _one_per_line(new):
            yield index, finding


def _at_call(f: Fact) -> bool:
    """A spliced named barrier whose ID, or expect-tx whose barrier, the caller passes: judged at the call like the
    caller's own (the callable's own ID or barrier is judged with the callable, :func:`_at_calls`)."""
    if f.via is None:
        return False
    if f.kind == "barrier":
        bid = f.operand("id")
        return f.operand("param:id") is not None or (bid is not None and bid.kind == "unknown" and bid.arg)
    return f.kind == "expect-tx" and f.operand("param:addr") is not None


def _seen(f: Finding) -> tuple[object, ...]:
    return (f.check, f.problem, f.fact.function, f.fact.line, f.fact.opcode, f.facts)


def callable_addresses(parts: Sequence[tuple[A.Stage, CodeFacts]]) -> Iterator[tuple[int, Finding]]:
    """What only the composition decides: a callable that addresses shared memory from some of its
    parameters (``smem-param``: the base and any offsets the address adds) is given, at each call
    (``call-arg``), an address from one of the caller's claims or ring slots (a placement handle) in
    one of them, as the caller's own accesses must be built on one, or an address of the caller's own
    stack (``local``), which is never shared memory.

    A function that passes one of its own parameters on to such a position (``param-pass``: to another
    stage's callable, or to a function of its own module) addresses shared memory from that parameter
    too: the property is followed through any chain of calls, and the address is judged at the call
    that makes it. So a callable or helper is judged like a role for what it computes itself."""
    exports: dict[str, tuple[int, str]] = {}
    used: dict[tuple[int, str], set[int]] = {}
    for index, (stage, code) in enumerate(parts):
        for item in stage.items:
            if isinstance(item, A.ExportCallable):
                exports[item.name] = (index, item.symbol)
        for f in code.facts:
            if f.kind == "smem-param":
                used.setdefault((index, f.function), set()).update(int(p) for p in f.detail.split(","))
    targets = [_call_targets(index, stage, code, exports) for index, (stage, code) in enumerate(parts)]
    passes = [
        (index, f, targets[index].get((f.function, f.line, f.detail)))
        for index, (_, code) in enumerate(parts)
        for f in code.facts
        if f.kind == "param-pass"
    ]
    changed = True
    while changed:  # the chains of parameters passed on: each round adds a position, so it ends
        changed = False
        for index, f, target in passes:
            at, param = f.operand("at"), f.operand("param")
            if target is None or at is None or param is None or param.value is None:
                continue
            into = used.setdefault((index, f.function), set())
            if at.value in used.get(target[0], set()) and param.value not in into:
                into.add(param.value)
                changed = True
    for index, (stage, code) in enumerate(parts):
        ctx = _ctx(stage)
        # an address the code itself shows to be shared (`smem-arg`) is judged with the stage's own facts
        evident = {(f.function, f.line, f.detail, f.operands[0][1]) for f in code.facts if f.kind == "smem-arg"}
        for f in code.facts:
            target = targets[index].get((f.function, f.line, f.detail)) if f.kind == "call-arg" else None
            positions = sorted(used.get(target[0], set())) if target is not None else []
            passed = [op for op in (f.operand(f"a{p}") for p in positions) if op is not None]
            # an address of the caller's own stack is never shared; one computed from the caller's
            # own parameter is judged at the caller's callers (`param-pass`)
            # a role entry's or init hook's own arguments are the params and smem: judged there
            deferred = f.function not in ctx.roles and f.function not in ctx.inits
            if any((f.function, f.line, f.detail, op) in evident for op in passed):
                continue  # the address's base is evidently shared: judged with the stage's own facts (its offsets too)
            judged = [op for op in passed if op.kind != "local" and not (deferred and op.arg and op.kind != "unknown")]
            if target is None or not judged:
                if target is not None and positions and not passed:
                    yield index, unknown("smem-literal", f, "smem-address", target[1])
                continue
            if any(ctx.handles_of(op, *_PLACEMENT) for op in judged):
                continue
            if any(op.kind == "unknown" for op in judged):
                yield index, unknown("smem-literal", f, "smem-address", target[1])
                continue
            base = next((op for op in judged if op.smem), judged[0])
            claim = next((c for c in stage.items if isinstance(c, A.SmemClaim)), None)
            yield (
                index,
                found(
                    "smem-literal",
                    "fixed",
                    f,
                    target[1],
                    offset="" if base.value is None else base.value,
                    claimed=claim is not None,
                ),
            )


def _call_targets(
    index: int, stage: A.Stage, code: CodeFacts, exports: dict[str, tuple[int, str]]
) -> dict[tuple[str, int, str], tuple[tuple[int, str], A.Node | None]]:
    """Each call site of the stage's code (function, PTX line, callee) that reaches a function the
    composition has: another stage's exported callable through a `call` item (with that item), or a
    function of the stage's own module."""
    calls = {c.symbol: c for c in stage.items if isinstance(c, A.Call)}
    own = {f.function for f in code.facts} | {f.detail for f in code.facts if f.kind == "call"}
    out: dict[tuple[str, int, str], tuple[tuple[int, str], A.Node | None]] = {}
    for f in code.facts:
        if f.kind not in ("call-arg", "param-pass"):
            continue
        call = calls.get(f.detail)
        if call is not None and call.name in exports:
            out[(f.function, f.line, f.detail)] = (exports[call.name], call)
        elif call is None and f.detail in own:
            out[(f.function, f.line, f.detail)] = ((index, f.detail), None)
    return out


def _one_per_line(found: list[Finding]) -> list[Finding]:
    """One finding per mistake: the copies of one source line (an unrolled loop, a helper inlined at
    several call sites) that break the same rule the same way are one finding with their count."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in found:
        line = f.fact.origin or f.fact.src
        key: tuple[object, ...] = (
            (f.check, f.problem, f.facts, f.decided, f.fact.function, line, f.node.span if f.node else None)
            if line is not None
            else (id(f),)
        )
        groups.setdefault(key, []).append(f)
    return [dataclasses.replace(g[0], sites=len(g)) if len(g) > 1 else g[0] for g in groups.values()]


def _judge(ctx: Ctx, fact: Fact, code: CodeFacts) -> Iterator[Finding]:
    kind = fact.kind
    if kind == "barrier":
        yield from _barrier(ctx, fact)
    elif kind == "mbarrier-init":
        yield from _mbarrier_init(ctx, fact)
    elif kind == "expect-tx":
        yield from _expect_tx(ctx, fact)
    elif kind in ("bulk-copy", "tensor-copy", "complete-tx"):
        yield from _copy(ctx, fact, code)
    elif kind == "setmaxnreg":
        yield from _setmaxnreg(ctx, fact)
    elif kind == "shared-decl":
        yield from _static_shared(ctx, fact)
    elif kind in ("smem-access", "smem-arg"):
        yield from _smem(ctx, fact)
    elif kind in ("atomic", "fence"):
        yield from _scope(ctx, fact)
    elif kind == "proxy":
        yield _proxy(ctx, fact)
    elif kind == "directive":
        yield from _directive(ctx, fact)
    elif kind in ("tmem-alloc", "tmem-op"):
        yield _tmem(ctx, fact)
    elif kind == "tid-index":
        yield from _tid(ctx, fact)
    elif kind == "feature":
        yield from _feature(ctx, fact)
    elif kind == "params-read":
        yield from _params(ctx, fact)


def _role_of(ctx: Ctx, fact: Fact) -> A.Role | None:
    return ctx.roles.get(fact.function)


def _block_threads(stage: A.Stage) -> int | None:
    launch = next((i for i in stage.items if isinstance(i, A.Launch)), None)
    if launch is not None and launch.threads:
        return launch.threads
    return None


def _barrier_items(stage: A.Stage) -> list[A.BarrierClaim | A.Rendezvous]:
    return [i for i in stage.items if isinstance(i, (A.BarrierClaim, A.Rendezvous))]


def _threads_of(stage: A.Stage, node: A.Node) -> int | None:
    if isinstance(node, A.BarrierClaim):
        if node.threads is not None:
            return node.threads
        widths = {r.name: r.warps for r in stage.roles}
        total = 0
        for p in node.participants:
            w = widths.get(p)
            if w is None:
                return None
            total += 32 * w
        return total or None
    if isinstance(node, A.Rendezvous):
        return node.threads
    return None


def _at_calls(ctx: Ctx, fact: Fact, role: str) -> bool:
    """A step of an exported callable whose operand ``role`` its caller passes (``param:ROLE``, or an address built
    on a parameter): judged at each call, through the callable's summary (:mod:`.summary`), not in the callable."""
    if fact.via is not None or fact.function not in _exported(ctx.stage):
        return False
    op = fact.operand(role)
    return op is not None and op.arg


def _exported(stage: A.Stage) -> frozenset[str]:
    return frozenset(i.symbol for i in stage.items if isinstance(i, A.ExportCallable))


def _barrier(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    bid, threads = fact.operand("id"), fact.operand("threads")
    role = _role_of(ctx, fact)
    items = _barrier_items(ctx.stage)
    if bid is None or _at_calls(ctx, fact, "id"):
        return
    if bid.kind == "constant" and bid.value == 0:
        block = _block_threads(ctx.stage)
        if fact.function in ctx.inits:
            yield found("block-barrier", "init-hook", fact, ctx.inits[fact.function])
        elif role is None:
            yield unknown("block-barrier", fact, "barrier-0-role", None)
        elif role.warps is not None and (block is None or role.warps * 32 < block):
            yield found("block-barrier", "narrow-role", fact, role, role=role.name, warps=role.warps, block=block or 0)
        return
    if bid.kind == "constant":
        node = items[0] if items else role
        yield found("barrier-id", "literal", fact, node, id=bid.value, claimed=bool(items))
        return
    specs = ctx.handles_of(bid, "bar_id")
    if not specs:
        yield unknown("barrier-id", fact, "barrier-id", role)
        return
    claim = specs[0].node
    if threads is None:
        return
    if threads.kind == "constant" and claim is not None:
        want = _threads_of(ctx.stage, claim)
        if want is None:
            yield found(
                "barrier-threads",
                "literal",
                fact,
                claim,
                barrier=specs[0].item,
                threads=threads.value,
                handle=specs[0].symbol.removesuffix("_bar_id") + "_threads",
            )
        elif want != threads.value:
            yield found(
                "barrier-threads", "count", fact, claim, barrier=specs[0].item, threads=threads.value, want=want
            )
    elif threads.kind != "handle":
        yield unknown("barrier-threads", fact, "thread-count", claim)


def _mbarrier_init(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    where = ctx.ring_barrier(fact.operand("addr"))
    count = fact.operand("count")
    if where is None and ctx.private_barrier(fact.operand("addr")):
        return  # an mbarrier in the stage's own claim (`use mbarrier`): `private-mbarrier` judges it
    if where is None or count is None:
        yield unknown("mbarrier-init", fact, "ring-barrier", None)
        return
    ring, which = where
    init = next((i for i in ring.items if isinstance(i, A.RingBarrierInit) and i.barrier == which), None)
    specs = ctx.handles_of(count, "ring_full_count", "ring_empty_count")
    if specs:
        other = "full" if specs[0].kind == "ring_full_count" else "empty"
        if other != which:
            yield found(
                "mbarrier-init",
                "other-count",
                fact,
                init or ring,
                ring=ring.name,
                which=which,
                other=other,
                symbol=specs[0].symbol,
                instead=specs[0].symbol.replace(f"_{other}_count", f"_{which}_count"),
            )
        return
    if count.kind != "constant" or init is None:
        yield unknown("mbarrier-init", fact, "arrival-count", init or ring)
        return
    want = ctx.count_value(init.count)
    if want is None or want != count.value:
        yield found(
            "mbarrier-init",
            "count",
            fact,
            init,
            ring=ring.name,
            which=which,
            count=count.value,
            want="" if want is None else want,
        )


def _declared(ring: A.Ring, cls: type[A.RingArrive] | type[A.RingCopy]) -> tuple[int | None, A.Node | None]:
    if cls is A.RingArrive:
        arrives = [i for i in ring.items if isinstance(i, A.RingArrive) and i.barrier == "full" and i.tx]
        if arrives:
            return arrives[0].tx, arrives[0]
        init = next((i for i in ring.items if isinstance(i, A.RingBarrierInit) and i.expect_tx), None)
        return (init.expect_tx, init) if init is not None else (None, None)
    copies = [i for i in ring.items if isinstance(i, A.RingCopy)]
    return (sum(c.bytes for c in copies), copies[0]) if copies else (None, None)


def _expect_tx(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    if _at_calls(ctx, fact, "addr"):
        return
    where = ctx.ring_barrier(fact.operand("addr"))
    nbytes = fact.operand("bytes")
    if where is None or nbytes is None:
        yield unknown("expect-tx", fact, "ring-barrier", None)
        return
    ring = where[0]
    want, node = _declared(ring, A.RingArrive)
    if nbytes.kind != "constant":
        yield unknown("expect-tx", fact, "expected-bytes", node or ring)
    elif want is None or want != nbytes.value:
        yield found(
            "expect-tx",
            "bytes",
            fact,
            node or ring,
            ring=ring.name,
            bytes=nbytes.value,
            want="" if want is None else want,
        )


def _completion_bar(fact: Fact) -> Operand | None:
    """The barrier a copy completes on, or a ``complete_tx`` credits."""
    return fact.operand("addr") if fact.kind == "complete-tx" else fact.operand("bar")


def _copy(ctx: Ctx, fact: Fact, code: CodeFacts) -> Iterator[Finding]:
    """Copies and ``complete_tx`` credits together complete the ring's declared ``full copy`` bytes.

    Per function and barrier, one finding at the first site: the bytes of every bulk copy (its size
    operand), every tensor copy (the box its tensor map's params field declares) and every credit
    (a thread completing bytes no copy delivers, e.g. those of a clipped box) of one fill add up to
    the ring's declared bytes; a size the analysis cannot tell makes the sum undecided. A fill is
    the sites after one ``arrive.expect_tx`` on the barrier and before the next (an unrolled loop
    has several); with at most one such arrive in the function, every site is one fill's.
    """
    credit = fact.kind == "complete-tx"
    where = ctx.ring_barrier(_completion_bar(fact))
    if where is None:
        yield unknown("copy-bytes", fact, "credit-barrier" if credit else "copy-barrier", None)
        return
    sites = [
        f
        for f in code.facts
        if f.kind in ("bulk-copy", "tensor-copy", "complete-tx")
        and f.function == fact.function
        and ctx.ring_barrier(_completion_bar(f)) == where
    ]
    if fact is not sites[0]:
        return  # the group's first site reports it
    arrives = [
        f
        for f in code.facts
        if f.kind == "expect-tx" and f.function == fact.function and ctx.ring_barrier(f.operand("addr")) == where
    ]
    for group, expects in _fills(sites, arrives):
        problem = next(_fill(ctx, where[0], group, expects), None)
        if problem is not None:
            yield problem
            return


def _fills(sites: list[Fact], arrives: list[Fact]) -> list[tuple[list[Fact], list[Fact]]]:
    """The fills of one barrier in one function: each ``expect_tx`` arrive with the sites it is the
    nearest such arrive before (on a path without a back edge); sites after none form a fill of
    their own (with the arrives that precede none); one arrive or none: a single fill."""
    if len(arrives) <= 1:
        return [(sites, arrives)]

    def nearest(site: Fact) -> list[Fact]:
        before = [a for a in arrives if site.order in a.reaches]
        return [a for a in before if not any(b is not a and b.order in a.reaches for b in before)]

    groups: dict[int, list[Fact]] = {id(a): [] for a in arrives}
    orphans: list[Fact] = []
    for site in sites:
        found = nearest(site)
        for a in found:
            groups[id(a)].append(site)
        if not found:
            orphans.append(site)
    out = [(groups[id(a)], [a]) for a in arrives if groups[id(a)]]
    if orphans:
        out.append((orphans, [a for a in arrives if not groups[id(a)]]))
    return out


def _fill(ctx: Ctx, ring: A.Ring, sites: list[Fact], expects: list[Fact]) -> Iterator[Finding]:
    """The finding of one fill's sites (see :func:`_copy`), if any."""
    want, node = _declared(ring, A.RingCopy)
    first = sites[0]
    sizes = [(f, _copy_bytes(ctx, f)) for f in sites]
    unknowns = [(f, field) for f, (size, field) in sizes if size is None]
    if unknowns:
        site, field = unknowns[0]
        if site.kind == "tensor-copy":
            yield Finding(
                "copy-bytes",
                "undecided",
                site,
                node or ring,
                (
                    ("what", "tensor-box" if field else "tensor-bytes"),
                    ("field", field),
                    ("others", str(len(unknowns) - 1)),
                ),
                decided=False,
            )
        else:
            what = "credit-bytes" if site.kind == "complete-tx" else "copy-bytes"
            yield Finding(
                "copy-bytes",
                "undecided",
                site,
                node or ring,
                (("what", what), ("others", str(len(unknowns) - 1))),
                False,
            )
        return
    fills = [set(f.conds) for f in expects]
    stated = stated_fields(ctx.stage)
    known = [(f, size) for f, (size, _) in sizes if size is not None]
    if stated and applies(known, fills, stated):
        # a box or a condition of stated fields (`in {…}`): the fill at each of their values
        yield from per_value(ring, known, fills, stated)
        return
    conditional = next((f for f in sites if extra_conds(f, fills)), None)
    if conditional is not None:
        # A copy or credit some fills skip: the bytes a fill completes are the sum without it on those.
        yield Finding(
            "copy-bytes",
            "undecided",
            conditional,
            node or ring,
            (("what", "conditional"), ("conds", _conds(conditional, fills)), ("others", "0")),
            False,
        )
        return
    forms = [size for _, (size, _) in sizes if size is not None]
    total = linear_sum(forms)
    if total[1]:
        # The sum still depends on a run-time params value: equal to the declared bytes for some
        # values of it at most, which the code does not show are the ones the host writes.
        yield Finding(
            "copy-bytes",
            "undecided",
            first,
            node or ring,
            (("what", "sum-bytes"), ("fields", _field_names(ctx, total)), ("others", "0")),
            False,
        )
        return
    wraps = next((f for f, (size, _) in sizes if size is not None and size[1] and not _in_range(f, size)), None)
    if wraps is not None:
        # The sum is the declared bytes modulo 2**32 only: a part that may wrap (a credit of
        # `16384 - 128 * rows` with `rows` unbounded) is no count the barrier takes.
        yield unknown("copy-bytes", wraps, "part-range", node or ring)
        return
    credited = linear_sum([size for f, (size, _) in sizes if size is not None and f.kind == "complete-tx"])
    here = _copy_bytes(ctx, first)[0]
    if want is None or total[0] != want:
        yield found(
            "copy-bytes",
            "credit" if first.kind == "complete-tx" else "bytes",
            first,
            node or ring,
            ring=ring.name,
            total=total[0],
            credited=_show(ctx, credited),
            here="" if here is None else _show(ctx, here),
            want="" if want is None else want,
        )
        return
    yield from _copy_count(ring, sites, expects)


def _copy_count(ring: A.Ring, sites: list[Fact], expects: list[Fact]) -> Iterator[Finding]:
    """A fill whose bytes conform issues one copy per ``copy`` line of the ring (credits are no copies).

    Decided where the fill's ``expect_tx`` is in the same function (a copy helper called per copy
    is judged by its bytes alone)."""
    lines = [i for i in ring.items if isinstance(i, A.RingCopy)]
    issued = [f for f in sites if f.kind != "complete-tx"]
    if expects and lines and issued and len(issued) != len(lines):
        yield found("copy-count", "count", issued[0], lines[0], ring=ring.name, got=len(issued), want=len(lines))


def _conds(site: Fact, fills: list[set[str]]) -> str:
    """The conditions of ``site`` no fill's arrive shares, as PTX lines (``line 512, taken``)."""
    words = []
    for cond in extra_conds(site, fills):
        if cond.startswith("@"):
            words.append(f"guard `{cond[1:].split(':')[0]}`")
        else:
            line, _, taken = cond.partition(":")
            words.append(f"the branch at PTX line {line} {'taken' if taken == 't' else 'not taken'}")
    return ", ".join(words)


def _copy_bytes(ctx: Ctx, fact: Fact) -> tuple[Linear | None, str]:
    """The bytes one copy or credit completes, as a linear form over params fields (None: undecided),
    and the params field of a tensor copy's map.

    A tensor copy completes its whole box (rows past the tensor's edge count too); a box dimension
    that names a params field makes the bytes a multiple of that field's value.
    """
    if fact.kind == "tensor-copy":
        # a map's address loaded from a `ptr` field, or (in a role, whose first argument is its params
        # block) the map itself held in a `tensormap` field
        inline = fact.operand("map-inline") if fact.function in ctx.roles else None
        where = inline or fact.operand("map")
        block = next((i for i in ctx.stage.items if isinstance(i, A.Params)), None)
        field = None
        if where is not None and where.field is not None and block is not None:
            field = next((f for f in block.fields if f.offset == where.field), None)
        if field is None or block is None or field.type != ("tensormap" if inline else "ptr"):
            return None, ""
        if field.box is None:
            return None, field.name
        return _box_bytes(field.box, block), field.name
    size = fact.operand("bytes")
    if size is not None and size.kind == "constant" and size.value is not None:
        return (size.value % (1 << 32), ()), ""
    return (size.linear if size is not None else None), ""


#: A barrier phase's transaction count stays below 2**20 (PTX ISA, mbarrier tx-count).
_TX_LIMIT = 1 << 20


def _in_range(fact: Fact, form: Linear) -> bool:
    """Whether a copy's or credit's bytes, an expression of params fields, stay in 0 .. 2**20 - 1 for every
    value the code lets the fields take there (the trap checks before it; a box dimension is 1 .. 256)."""
    bounds: dict[int, list[int]] = {}
    for role, o in fact.operands:
        if role in ("low", "high") and o.field is not None and o.value is not None:
            bounds.setdefault(o.field, [0, (1 << 32) - 1])[role == "high"] = o.value
    const, terms = form
    low = high = const - (1 << 32) if const >= 1 << 31 else const
    for off, coef in terms:
        lo, hi = bounds.get(off, (0, (1 << 32) - 1))
        if fact.kind == "tensor-copy":
            lo, hi = max(lo, 1), min(hi, TMA_BOX_MAX)
        k = coef - (1 << 32) if coef >= 1 << 31 else coef
        low, high = low + min(k * lo, k * hi), high + max(k * lo, k * hi)
    return low >= 0 and high < _TX_LIMIT


def _box_bytes(box: A.TmaBox, block: A.Params) -> Linear | None:
    """A box's bytes: a constant, or a constant times the one params field that sizes a dimension."""
    scale = A.ELEM_BYTES[box.elem]
    for d in box.dims:
        if isinstance(d, int):
            scale *= d
    names = box.fields
    if not names:
        return (scale % (1 << 32), ())
    offsets = [f.offset for f in block.fields if f.name in names]
    if len(names) != 1 or len(offsets) != 1:
        return None  # a product of two run-time values is no linear form
    return linear_sum([(0, ((offsets[0], 1),))], [scale])


def _show(ctx: Ctx, form: Linear) -> str:
    """A linear form as the contract names it: ``16384 - 128 * a_box_rows``."""
    const, terms = form
    names = _names(ctx)
    text = str(const) if const or not terms else ""
    for off, coef in terms:
        signed = coef - (1 << 32) if coef >= 1 << 31 else coef
        name = names.get(off, f"params[{off}]")
        part = name if abs(signed) == 1 else f"{abs(signed)} * {name}"
        text = (
            (f"{text} - {part}" if signed < 0 else f"{text} + {part}") if text else ("-" if signed < 0 else "") + part
        )
    return text


def _names(ctx: Ctx) -> dict[int, str]:
    block = next((i for i in ctx.stage.items if isinstance(i, A.Params)), None)
    return {f.offset: f.name for f in block.fields} if block is not None else {}


def _field_names(ctx: Ctx, form: Linear) -> str:
    names = _names(ctx)
    return ", ".join(f"`{names.get(off, f'params[{off}]')}`" for off, _ in form[1])


def _setmaxnreg(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    role = _role_of(ctx, fact)
    regs = fact.operand("regs")
    value = regs.value if regs is not None and regs.kind == "constant" else None
    budget = (
        role
        if role is not None and role.regs is not None
        else next((r for r in ctx.stage.roles if r.regs is not None), role)
    )
    yield found(
        "setmaxnreg",
        "own",
        fact,
        budget,
        mode=fact.detail,
        regs="" if value is None else value,
        budget="" if budget is None or not budget.regs else budget.regs,
    )


def _static_shared(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    size = fact.operand("bytes")
    claim = next((i for i in ctx.stage.items if isinstance(i, A.SmemClaim)), None)
    yield found("static-shared", "declared", fact, claim, name=fact.detail, bytes=size.value if size is not None else 0)


def _smem(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    addr = fact.operand("addr")
    if addr is None:
        return
    if fact.function not in ctx.roles and fact.function not in ctx.inits:
        # Only an entry's or init hook's second argument is the shared-memory base. A callable or
        # helper addresses what its caller passed: relative to its argument, the address is the
        # caller's, judged where the caller makes it (`smem-arg`: what a role passes on, by this
        # same rule). Anything else it cannot place.
        if addr.kind != "handle" and not (addr.arg and addr.kind != "unknown"):
            yield unknown("smem-literal", fact, "helper-address", None)
        return
    if ctx.handles_of(addr, *_PLACEMENT):
        return
    if addr.kind == "handle" and not ctx.handles_of(addr):
        yield unknown("smem-literal", fact, "address-claim", None)
        return
    if addr.kind == "unknown":
        yield unknown("smem-literal", fact, "smem-address", None)
        return
    claim = next((i for i in ctx.stage.items if isinstance(i, A.SmemClaim)), None)
    yield found(
        "smem-literal",
        "fixed",
        fact,
        claim or _role_of(ctx, fact),
        offset="" if addr.value is None else addr.value,
        claimed=claim is not None,
    )


# Handles that place something in shared memory: an address built from one of them comes from a claim.
_PLACEMENT = ("smem", "ring_slot_smem", "ring_full_bar", "ring_empty_bar")


def _counter_scopes(stage: A.Stage) -> list[tuple[str, A.Node]]:
    out: list[tuple[str, A.Node]] = []
    for item in stage.items:
        if isinstance(item, (A.CounterClaim, A.Counter)) and item.scope:
            out.append((item.scope, item))
    return out


def _scope(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    scopes = _counter_scopes(ctx.stage)
    if fact.kind == "atomic":
        specs = ctx.handles_of(fact.operand("addr"), "counter")
        if not specs:
            return
        node = specs[0].node
        declared = getattr(node, "scope", None)
        if declared and fact.detail and declared != fact.detail:
            yield found("scope", "atomic", fact, node, counter=specs[0].item, scope=fact.detail, declared=declared)
        return
    if not scopes or not fact.detail:
        return
    if all(fact.detail != s for s, _ in scopes):
        scope, node = scopes[0]
        yield found("scope", "fence", fact, node, scope=fact.detail, declared=scope)


def _proxy(ctx: Ctx, fact: Fact) -> Finding:
    line, _, opcode = fact.detail.partition(":")
    ring = next((r for r in ctx.stage.rings if any(isinstance(i, A.RingProxy) for i in r.items)), None)
    node = next((i for i in ring.items if isinstance(i, A.RingProxy)), None) if ring else _role_of(ctx, fact)
    return found("proxy-fence", "unfenced", fact, node, write_line=line, write=opcode)


def _cluster_shapes(stage: A.Stage) -> list[A.ClusterShape]:
    cluster = next((i for i in stage.items if isinstance(i, A.Cluster)), None)
    return list(cluster.shapes) if cluster is not None else []


def _directive(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    values = [o.value or 1 for _, o in fact.operands]
    product = 1
    for v in values:
        product *= v
    shown = ", ".join(map(str, values))
    launch = next((i for i in ctx.stage.items if isinstance(i, A.Launch)), None)
    if fact.detail in ("maxntid", "reqntid"):
        threads = launch.threads if launch is not None else None
        bad = threads is None or (product != threads if fact.detail == "reqntid" else product < threads)
        if bad:
            yield found(
                "launch-directive",
                "block",
                fact,
                launch,
                directive=fact.detail,
                values=shown,
                product=product,
                threads="" if threads is None else threads,
            )
    elif fact.detail in ("reqnctapercluster", "explicitcluster"):
        shapes = _cluster_shapes(ctx.stage)
        if fact.detail == "explicitcluster" and shapes:
            return
        if not any((s.x, s.y, s.z) == tuple([*values, 1, 1, 1][:3]) for s in shapes):
            yield found(
                "launch-directive", "cluster", fact, launch, directive=fact.detail, values=shown, shapes=bool(shapes)
            )


def _tmem(ctx: Ctx, fact: Fact) -> Finding:
    """The dispatch kernel allocates every ``claim tmem`` (and deallocates, and gives up the permit) itself."""
    claims = [i for i in ctx.stage.items if isinstance(i, A.TmemClaim)]
    cols = fact.operand("columns")
    shown = cols.value if cols is not None and cols.kind == "constant" else ""
    what = "alloc" if fact.kind == "tmem-alloc" else fact.detail
    node = claims[0] if claims else _role_of(ctx, fact)
    return found("tmem-alloc", what, fact, node, columns=shown, claimed=", ".join(str(c.columns) for c in claims))


def _tid(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    role = _role_of(ctx, fact)
    if role is None:
        return
    op = fact.operands[0][1] if fact.operands else None
    if op is not None and not op.tid_abs and op.tid_wg and role.warpgroup:
        return  # `threadIdx.x % 128` in a warpgroup-aligned role is its own thread index
    yield found("tid-index", "absolute", fact, role, role=role.name)


def _feature(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    """An instruction that needs a hardware feature the contract does not require (`requires feature`)."""
    if fact.detail in ctx.stage.features:
        return
    node = next((i for i in ctx.stage.items if isinstance(i, A.Features)), None) or ctx.stage.target
    yield found("feature", "undeclared", fact, node, feature=fact.detail, declared=", ".join(ctx.stage.features))


def _params(ctx: Ctx, fact: Fact) -> Iterator[Finding]:
    """A read through the entry's params pointer: the contract must declare the block, and the read fit it."""
    block = next((i for i in ctx.stage.items if isinstance(i, A.Params)), None)
    if fact.function not in ctx.roles and fact.function not in ctx.inits:
        return  # only an entry's or init hook's first argument is the params pointer
    if block is None:
        yield found("params-read", "undeclared", fact, _role_of(ctx, fact), stage=ctx.stage.name)
        return
    offset = fact.operand("offset")
    width = int(fact.detail or 0)
    if offset is None or offset.value is None:
        yield unknown("params-read", fact, "params-offset", block)
    elif offset.value + width > block.size:
        yield found(
            "params-read",
            "beyond",
            fact,
            block,
            block=block.name,
            size=block.size,
            offset=offset.value,
            width=width,
            stage=ctx.stage.name,
        )
