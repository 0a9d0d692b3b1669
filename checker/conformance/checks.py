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
| ``setmaxnreg`` | runs its own ``setmaxnreg``, although the dispatch kernel sets every warpgroup's budget |
| ``static-shared`` | declares static ``__shared__`` memory, which no claim accounts for |
| ``smem-literal`` | addresses dynamic shared memory at an offset that comes from no claim or ring handle |
| ``scope`` | runs an atomic or fence at a scope other than the counters' declared scope |
| ``proxy-fence`` | writes shared memory (generic proxy), then has the async proxy read it unfenced |
| ``launch-directive`` | carries ``.maxntid``/``.reqntid``/cluster directives that disagree with the contract |
| ``tmem-columns`` | allocates a tensor-memory column count no ``claim tmem`` declares |
| ``tid-index`` | indexes by absolute ``%tid`` in a role, instead of relative to its first-warp handle |

What the analysis cannot decide (a value it cannot trace, a TMA copy whose size the
tensor map holds) is a *note*, never a pass; ``--strict`` makes those errors.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from checker.handles import HandleSpec, classify_handle, expected_handles, init_hook_symbol
from contract_lang import ast as A
from package.codefacts.facts import CodeFacts, Fact, Operand

Severity = Literal["error", "note"]
CHECKS = (
    "barrier-id",
    "barrier-threads",
    "block-barrier",
    "mbarrier-init",
    "expect-tx",
    "copy-bytes",
    "setmaxnreg",
    "static-shared",
    "smem-literal",
    "scope",
    "proxy-fence",
    "launch-directive",
    "tmem-columns",
    "tid-index",
)


@dataclass(frozen=True)
class Finding:
    """A disagreement between code and contract (``severity`` error) or an undecided site (note)."""

    check: str
    severity: Severity
    message: str
    fact: Fact
    node: A.Node | None = field(default=None, compare=False, repr=False)
    contract_text: str = "declared here"
    code_text: str = "in the code"
    help: str = ""


_ONCE_PER_FUNCTION = frozenset({"smem-literal", "tid-index"})


@dataclass(frozen=True)
class _Ctx:
    stage: A.Stage
    roles: dict[str, A.Role]  # entry symbol -> role
    inits: dict[str, A.Ring]  # init hook symbol -> ring

    @functools.cached_property
    def expected(self) -> Mapping[str, HandleSpec]:
        return expected_handles(self.stage)

    def handle(self, symbol: str) -> HandleSpec | None:
        return classify_handle(self.stage, symbol, self.expected)

    def handles_of(self, op: Operand | None, *kinds: str) -> list[HandleSpec]:
        if op is None:
            return []
        found = [self.handle(h) for h in op.handles]
        return [s for s in found if s is not None and (not kinds or s.kind in kinds)]


def check(stage: A.Stage, code: CodeFacts) -> list[Finding]:
    """Every finding of every check, in fact order (one per instruction and check)."""
    ctx = _Ctx(
        stage,
        {r.entry: r for r in stage.roles if r.entry},
        {init_hook_symbol(stage, r.name): r for r in stage.rings if any(isinstance(i, A.RingInitBy) for i in r.items)},
    )
    out: list[Finding] = []
    seen: set[tuple[str, str, int]] = set()
    for fact in code.facts:
        for finding in _judge(ctx, fact, code):
            # One diagnostic per mistake: a misplaced buffer or index shows at every access; report the first.
            line = 0 if finding.check in _ONCE_PER_FUNCTION else fact.line
            key = (finding.check, fact.function, line)
            if key not in seen:
                seen.add(key)
                out.append(finding)
    return out


def _judge(ctx: _Ctx, fact: Fact, code: CodeFacts) -> Iterator[Finding]:
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
    elif kind == "smem-access":
        yield from _smem(ctx, fact)
    elif kind in ("atomic", "fence"):
        yield from _scope(ctx, fact)
    elif kind == "proxy":
        yield _proxy(ctx, fact)
    elif kind == "directive":
        yield from _directive(ctx, fact)
    elif kind == "tmem-alloc":
        yield from _tmem(ctx, fact)
    elif kind == "tid-index":
        yield from _tid(ctx, fact)


def _unknown(check: str, fact: Fact, what: str, node: A.Node | None) -> Finding:
    return Finding(
        check,
        "note",
        f"cannot decide {what} of `{fact.opcode}` in `{fact.function}`",
        fact,
        node,
        "the contract item it should match",
        "this instruction",
        "pass the value from a handle or a literal the analysis can see, or review it by hand",
    )


def _role_of(ctx: _Ctx, fact: Fact) -> A.Role | None:
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


def _barrier(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    bid, threads = fact.operand("id"), fact.operand("threads")
    role = _role_of(ctx, fact)
    items = _barrier_items(ctx.stage)
    if bid is None:
        return
    if bid.kind == "constant" and bid.value == 0:
        block = _block_threads(ctx.stage)
        if fact.function in ctx.inits:
            ring = ctx.inits[fact.function]
            yield Finding(
                "block-barrier",
                "error",
                f"the init hook `{fact.function}` runs barrier 0 "
                "(`__syncthreads`), but the dispatch calls it from one thread",
                fact,
                ring,
                "the ring this hook initialises",
                "barrier 0 here",
                "remove the barrier: the dispatch's block-wide barrier follows every init",
            )
        elif role is None:
            yield _unknown("block-barrier", fact, "which role runs barrier 0 (`__syncthreads`)", None)
        elif role.warps is not None and (block is None or role.warps * 32 < block):
            size = f"{block} threads" if block else "a block of several roles"
            yield Finding(
                "block-barrier",
                "error",
                f"role `{role.name}` runs barrier 0 (`__syncthreads`), "
                f"which waits for the whole block ({size}); the role has {role.warps * 32} threads",
                fact,
                role,
                f"role `{role.name}` ({role.warps} warps)",
                "barrier 0 here",
                "claim a named barrier (`claim barrier NAME participants ROLE`) and sync on "
                "its `_bar_id()`/`_threads()` handles",
            )
        return
    if bid.kind == "constant":
        node = items[0] if items else role
        yield Finding(
            "barrier-id",
            "error",
            f"`{fact.function}` names barrier {bid.value} by a literal ID",
            fact,
            node,
            "the barrier the contract claims" if items else "the role that runs it",
            f"literal barrier ID {bid.value}",
            "read the ID from the claim's `_bar_id()` handle: the linker chooses IDs so they do not collide",
        )
        return
    specs = ctx.handles_of(bid, "bar_id")
    if not specs:
        yield _unknown("barrier-id", fact, "the barrier ID", role)
        return
    claim = specs[0].node
    if threads is None:
        return
    if threads.kind == "constant" and claim is not None:
        want = _threads_of(ctx.stage, claim)
        if want is None:
            yield Finding(
                "barrier-threads",
                "error",
                f"`{fact.function}` gives barrier `{specs[0].item}` the "
                f"literal thread count {threads.value}; the contract's count depends on the "
                "composition",
                fact,
                claim,
                "the barrier's participants",
                f"{threads.value} threads",
                f"read the count from `{specs[0].symbol.removesuffix('_bar_id')}_threads()`",
            )
        elif want != threads.value:
            yield Finding(
                "barrier-threads",
                "error",
                f"`{fact.function}` syncs {threads.value} threads on "
                f"barrier `{specs[0].item}`; the contract says {want}",
                fact,
                claim,
                f"{want} threads take part",
                f"{threads.value} threads here",
                "use the barrier's `_threads()` handle, or fix the participants",
            )
    elif threads.kind != "handle":
        yield _unknown("barrier-threads", fact, "the thread count", claim)


def _ring_barrier(ctx: _Ctx, op: Operand | None) -> tuple[A.Ring, str] | None:
    for spec in ctx.handles_of(op, "ring_full_bar", "ring_empty_bar"):
        ring = next((r for r in ctx.stage.rings if r.name == spec.item), None)
        if ring is not None:
            return ring, "full" if spec.kind == "ring_full_bar" else "empty"
    return None


def _count_value(ctx: _Ctx, count: A.Count) -> int | None:
    widths = {r.name: r.warps for r in ctx.stage.roles}
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        warps = widths.get(term.role or "")
        if warps is None:
            return None
        per = {"per_warp": warps, "per_thread": 32 * warps, "per_warpgroup": max(warps // 4, 0)}[term.unit]
        total += term.coef * per
    return total


def _mbarrier_init(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    where = _ring_barrier(ctx, fact.operand("addr"))
    count = fact.operand("count")
    if where is None or count is None:
        yield _unknown("mbarrier-init", fact, "which ring barrier", None)
        return
    ring, which = where
    init = next((i for i in ring.items if isinstance(i, A.RingBarrierInit) and i.barrier == which), None)
    specs = ctx.handles_of(count, "ring_full_count", "ring_empty_count")
    if specs:
        other = "full" if specs[0].kind == "ring_full_count" else "empty"
        if other != which:
            yield Finding(
                "mbarrier-init",
                "error",
                f"`{fact.function}` initialises a {which} barrier of ring "
                f"`{ring.name}` with the {other} barrier's count",
                fact,
                init or ring,
                f"`{which} init`",
                f"`{specs[0].symbol}()` here",
                f"use `{specs[0].symbol.replace(f'_{other}_count', f'_{which}_count')}()`",
            )
        return
    if count.kind != "constant" or init is None:
        yield _unknown("mbarrier-init", fact, "the arrival count", init or ring)
        return
    want = _count_value(ctx, init.count)
    if want is None or want != count.value:
        said = f"{want}" if want is not None else "a count that depends on the composition"
        yield Finding(
            "mbarrier-init",
            "error",
            f"`{fact.function}` initialises ring `{ring.name}`'s {which} "
            f"barrier with {count.value} arrivals; the contract says {said}",
            fact,
            init,
            f"`{which} init` declares {said}",
            f"count {count.value} here",
            f"initialise with the `{which}_count()` handle of ring `{ring.name}`",
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


def _expect_tx(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    where = _ring_barrier(ctx, fact.operand("addr"))
    nbytes = fact.operand("bytes")
    if where is None or nbytes is None:
        yield _unknown("expect-tx", fact, "which ring barrier", None)
        return
    ring = where[0]
    want, node = _declared(ring, A.RingArrive)
    if nbytes.kind != "constant":
        yield _unknown("expect-tx", fact, "the expected bytes", node or ring)
    elif want is None or want != nbytes.value:
        said = f"{want} bytes" if want is not None else "no transaction bytes"
        yield Finding(
            "expect-tx",
            "error",
            f"`{fact.function}` expects {nbytes.value} transaction bytes on "
            f"ring `{ring.name}`; the contract declares {said}",
            fact,
            node or ring,
            f"declared: {said}",
            f"expect_tx {nbytes.value} here",
            "make the contract's `tx` and the code's expect_tx agree (in bytes)",
        )


def _completion_bar(fact: Fact) -> Operand | None:
    """The barrier a copy completes on, or a ``complete_tx`` credits."""
    return fact.operand("addr") if fact.kind == "complete-tx" else fact.operand("bar")


def _copy(ctx: _Ctx, fact: Fact, code: CodeFacts) -> Iterator[Finding]:
    """Copies and ``complete_tx`` credits together complete the ring's declared ``full copy`` bytes.

    A credit stands for bytes of a declared copy that no copy delivers (a tensor copy of a
    clipped box, say): it counts with the bulk copies of the same barrier in the function.
    """
    credit = fact.kind == "complete-tx"
    where = _ring_barrier(ctx, _completion_bar(fact))
    if where is None:
        what = "which ring barrier the bytes are completed on" if credit else "which ring barrier the copy completes on"
        yield _unknown("copy-bytes", fact, what, None)
        return
    ring = where[0]
    want, node = _declared(ring, A.RingCopy)
    nbytes = fact.operand("bytes")
    if fact.kind == "tensor-copy" or nbytes is None or nbytes.kind != "constant":
        if fact.kind == "tensor-copy":
            what = "the bytes (a tensor copy's size is in its tensor map)"
        else:
            what = "the completed bytes" if credit else "the copied bytes"
        yield _unknown("copy-bytes", fact, what, node or ring)
        return
    sites = [
        f
        for f in code.facts
        if f.kind in ("bulk-copy", "complete-tx")
        and f.function == fact.function
        and _ring_barrier(ctx, _completion_bar(f)) == where
    ]
    sizes = [f.operand("bytes") for f in sites]
    if any(s is None or s.kind != "constant" for s in sizes):
        return  # the undecided site reports itself
    if credit and any(f.kind == "bulk-copy" for f in sites):
        return  # the copies report the total
    tensor = [f for f in code.facts if f.kind == "tensor-copy" and f.function == fact.function]
    if credit and any(_ring_barrier(ctx, f.operand("bar")) == where for f in tensor):
        return  # the tensor copy's size is in its tensor map: its own note says so
    total = sum(s.value or 0 for s in sizes if s is not None)
    credited = sum((f.operand("bytes") or Operand("constant", 0)).value or 0 for f in sites if f.kind == "complete-tx")
    if want is None or total != want:
        said = f"{want} bytes" if want is not None else "no `copy`"
        how = f" ({credited} of them by `mbarrier.complete_tx`)" if credited else ""
        yield Finding(
            "copy-bytes",
            "error",
            f"`{fact.function}` completes {total} bytes per fill of ring `{ring.name}`{how}; "
            f"the contract declares {said}"
            if credited
            else f"`{fact.function}` copies {total} bytes per fill of ring `{ring.name}`; the contract declares {said}",
            fact,
            node or ring,
            f"declared: {said}",
            f"completes {nbytes.value} bytes here" if credit else f"copies {nbytes.value} bytes here",
            "make the ring's `full copy` bytes and the code's copy sizes agree",
        )


def _setmaxnreg(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    role = _role_of(ctx, fact)
    regs = fact.operand("regs")
    value = regs.value if regs is not None and regs.kind == "constant" else None
    budget = (
        role
        if role is not None and role.regs is not None
        else next((r for r in ctx.stage.roles if r.regs is not None), role)
    )
    shown = f"`setmaxnreg.{fact.detail} {value}`" if value is not None else f"`setmaxnreg.{fact.detail}`"
    yield Finding(
        "setmaxnreg",
        "error",
        f"`{fact.function}` runs its own {shown}; the dispatch kernel sets every warpgroup's register budget",
        fact,
        budget,
        f"the budget the dispatch sets (`regs {budget.regs}`)"
        if budget is not None and budget.regs
        else "the role the dispatch budgets",
        f"{shown} here",
        "remove the component's `setmaxnreg` and declare the budget with `regs N` on the role; "
        "two `setmaxnreg` per warpgroup can exceed the register pool and hang the kernel",
    )


def _static_shared(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    size = fact.operand("bytes")
    nbytes = size.value if size is not None else 0
    claim = next((i for i in ctx.stage.items if isinstance(i, A.SmemClaim)), None)
    yield Finding(
        "static-shared",
        "error",
        f"`{fact.detail}` is static shared memory ({nbytes} bytes) that no claim accounts for",
        fact,
        claim,
        "the stage's shared-memory claims" if claim is not None else "",
        f"`__shared__ {fact.detail}` ({nbytes} bytes)",
        f"claim it (`claim smem {fact.detail} bytes {nbytes} align 16`) and address it through "
        f"its `_smem()` handle from the entry's `smem` pointer",
    )


def _smem(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    addr = fact.operand("addr")
    if addr is None:
        return
    if fact.function not in ctx.roles and fact.function not in ctx.inits:
        # Only an entry's or init hook's second argument is the shared-memory base; elsewhere
        # the analysis cannot tell where a pointer argument points.
        if addr.kind != "handle":
            yield _unknown("smem-literal", fact, "where a helper's shared-memory address comes from", None)
        return
    if ctx.handles_of(addr, *_PLACEMENT):
        return
    if addr.kind == "handle" and not ctx.handles_of(addr):
        yield _unknown("smem-literal", fact, "which claim the address comes from", None)
        return
    if addr.kind == "unknown":
        yield _unknown("smem-literal", fact, "the shared-memory address", None)
        return
    claim = next((i for i in ctx.stage.items if isinstance(i, A.SmemClaim)), None)
    at = f"at the fixed offset {addr.value}" if addr.value is not None else "from the `smem` base"
    yield Finding(
        "smem-literal",
        "error",
        f"`{fact.function}` addresses shared memory {at} without any claim's handle",
        fact,
        claim or _role_of(ctx, fact),
        "the stage's claims" if claim is not None else "the role that runs it",
        f"`{fact.opcode}` at a fixed offset",
        "add the claim's `_smem()` handle (or the ring's slot handle) to the `smem` pointer",
    )


# Handles that place something in shared memory: an address built from one of them comes from a claim.
_PLACEMENT = ("smem", "ring_slot_smem", "ring_full_bar", "ring_empty_bar")


def _counter_scopes(stage: A.Stage) -> list[tuple[str, A.Node]]:
    out: list[tuple[str, A.Node]] = []
    for item in stage.items:
        if isinstance(item, (A.CounterClaim, A.Counter)) and item.scope:
            out.append((item.scope, item))
    return out


def _scope(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    scopes = _counter_scopes(ctx.stage)
    if fact.kind == "atomic":
        specs = ctx.handles_of(fact.operand("addr"), "counter")
        if not specs:
            return
        node = specs[0].node
        declared = getattr(node, "scope", None)
        if declared and fact.detail and declared != fact.detail:
            yield Finding(
                "scope",
                "error",
                f"`{fact.function}` updates counter `{specs[0].item}` at scope "
                f"`{fact.detail}`; the contract declares `{declared}`",
                fact,
                node,
                f"scope `{declared}`",
                f"`{fact.opcode}` (scope `{fact.detail}`)",
                f"use the `.{declared}` form of the atomic",
            )
        return
    if not scopes or not fact.detail:
        return
    if all(fact.detail != s for s, _ in scopes):
        scope, node = scopes[0]
        yield Finding(
            "scope",
            "error",
            f"`{fact.function}` fences at scope `{fact.detail}`; its counters declare `{scope}`",
            fact,
            node,
            f"scope `{scope}`",
            f"`{fact.opcode}`",
            f"fence at the counters' scope (`.{scope}`)",
        )


def _proxy(ctx: _Ctx, fact: Fact) -> Finding:
    line, _, opcode = fact.detail.partition(":")
    ring = next((r for r in ctx.stage.rings if any(isinstance(i, A.RingProxy) for i in r.items)), None)
    node = next((i for i in ring.items if isinstance(i, A.RingProxy)), None) if ring else _role_of(ctx, fact)
    return Finding(
        "proxy-fence",
        "error",
        f"`{fact.function}` writes shared memory with `{opcode}` (PTX line "
        f"{line}) and then lets the async proxy read it with `{fact.opcode}`, with no "
        "`fence.proxy.async` between",
        fact,
        node,
        "the declared proxy use",
        "async-proxy read without a fence",
        "add `fence.proxy.async.shared::cta` after the generic writes, in the same role",
    )


def _cluster_shapes(stage: A.Stage) -> list[A.ClusterShape]:
    cluster = next((i for i in stage.items if isinstance(i, A.Cluster)), None)
    return list(cluster.shapes) if cluster is not None else []


def _directive(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    values = [o.value or 1 for _, o in fact.operands]
    product = 1
    for v in values:
        product *= v
    launch = next((i for i in ctx.stage.items if isinstance(i, A.Launch)), None)
    if fact.detail in ("maxntid", "reqntid"):
        threads = launch.threads if launch is not None else None
        bad = threads is None or (product != threads if fact.detail == "reqntid" else product < threads)
        if bad:
            said = f"{threads} threads" if threads is not None else "no block size"
            yield Finding(
                "launch-directive",
                "error",
                f"`{fact.function}` carries `.{fact.detail} "
                f"{', '.join(map(str, values))}` ({product} threads); the contract launches {said}",
                fact,
                launch,
                f"launch: {said}",
                f"`.{fact.detail}` here",
                "drop the launch bounds from the component: the dispatch kernel's are generated",
            )
    elif fact.detail in ("reqnctapercluster", "explicitcluster"):
        shapes = _cluster_shapes(ctx.stage)
        if fact.detail == "explicitcluster" and shapes:
            return
        if not any((s.x, s.y, s.z) == tuple([*values, 1, 1, 1][:3]) for s in shapes):
            yield Finding(
                "launch-directive",
                "error",
                f"`{fact.function}` carries `.{fact.detail}` "
                f"{', '.join(map(str, values))}; the contract declares "
                f"{'no cluster' if not shapes else 'other cluster shapes'}",
                fact,
                launch,
                "the contract's launch",
                f"`.{fact.detail}` here",
                "declare the cluster in the contract (`cluster X, Y, Z`) or drop the directive",
            )


def _tmem(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    cols = fact.operand("columns")
    claims = [i for i in ctx.stage.items if isinstance(i, A.TmemClaim)]
    if cols is None or cols.kind != "constant":
        yield _unknown("tmem-columns", fact, "the column count", claims[0] if claims else None)
        return
    if not any(c.columns == cols.value for c in claims):
        said = ", ".join(str(c.columns) for c in claims) or "none"
        yield Finding(
            "tmem-columns",
            "error",
            f"`{fact.function}` allocates {cols.value} tensor-memory columns; the contract claims {said}",
            fact,
            claims[0] if claims else _role_of(ctx, fact),
            "the tensor-memory claims",
            f"{cols.value} columns here",
            "allocate the claimed columns, or claim what the code allocates",
        )


def _tid(ctx: _Ctx, fact: Fact) -> Iterator[Finding]:
    role = _role_of(ctx, fact)
    if role is None:
        return
    op = fact.operands[0][1] if fact.operands else None
    if op is not None and not op.tid_abs and op.tid_wg and role.warpgroup:
        return  # `threadIdx.x % 128` in a warpgroup-aligned role is its own thread index
    yield Finding(
        "tid-index",
        "error",
        f"role `{role.name}` indexes by absolute `threadIdx` in "
        f"`{fact.function}`; the linker may place the role at any warp",
        fact,
        role,
        f"role `{role.name}` (placed by the linker)",
        "absolute `%tid` here",
        f"subtract `32 * kl_..._{role.name}_warp0()` from `threadIdx.x` first",
    )
