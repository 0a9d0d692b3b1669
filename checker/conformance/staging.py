"""A staging ring's steps in its role's code: the slot's writes, its asynchronous reads and their bulk groups.

A ring without barriers whose slots one role writes and reads asynchronously (a role's own
staging buffer: ``ring out_stage produce by mma { depth 1  read wait lag 1  writes generic
fence proxy_async }`` and ``ring out_stage consume by mma { read async  reads async }``, its
slots the claim ``per_slot out_stage``) is checked against the role's facts, with the summaries
of the callables it calls spliced in where the composition has them (:mod:`.summary`):

- ``read async`` (``ring-step``): the role reads the slot with a bulk store from shared memory
  (a TMA store) in the loop around its writes (``missing``); every such read is committed to a
  bulk group (``cp.async.bulk.commit_group``) later in the same pass (``uncommitted``: a read
  wait never waits for it), and runs whenever the writes do (``conditional``: a read under a
  condition the writes are not under);
- ``read wait`` (``ring-step``): a ``cp.async.bulk.wait_group[.read] N`` in the loop runs before
  the pass's first write of the slot (``missing``), with ``N`` at most the ring's depth minus 1
  (``groups``: it lets the read of the slot it rewrites run on); when fewer threads run it than
  write, a ``bar.sync`` of the whole role follows it before the writes (``unshared``; where a barrier
  of the role ``orders`` the slot's claim, ``barrier-orders`` reports that sync instead); after the
  loop, the last reads are waited for before the role ends (``drain``);
- ``fence proxy_async`` with ``writes generic`` (``ring-fence``): between the generic writes of
  the slot and the asynchronous read after them, a ``fence.proxy.async`` covering shared memory
  run by the writing threads (``async-read``).

Not checked: that the bytes a TMA store reads lie inside the slot the read wait covers (the claim's
``per_slot`` stride). The facts hold the store's source address as the claim's handle plus a value
(its offset is not kept as a number once it is added to a handle) and not the tensor map the store
reads through (a ``bulk-store`` fact records no ``map``, unlike a TMA load's ``tensor-copy``): the
box is the map's, built on the host, which a params field may state (``box 64, 64 elem bf16``) but
the persistent GEMM's ``tmap_out`` does not, and the map reaches the store as a callable's
argument. A store past its slot is therefore not reported here; the staging claim's size is
checked against the placement (L-SMEM) only.

At ``kernlink pack`` of the role's component alone, the steps of a role that calls another
stage's callables are deferred to the composed check (the callables are not there); a callable
whose summary is unknown (:mod:`.summary`) makes a missing step undecided (I-CONFORM), never a pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.conformance.context import Ctx, Finding, found, unknown
from contract_lang import ast as A
from package.codefacts.facts import EVERY_THREAD, CodeFacts, Fact, Operand

STAGING_CHECKS = ("ring-step", "ring-fence")


def staging(ctx: Ctx, code: CodeFacts) -> Iterator[Finding]:
    """The findings of the staging-ring steps (module docstring), role by role."""
    for role, side, claim, facts, anchor, later in _sides(ctx.stage, code):
        if not later:
            yield from _side(ctx, role, side, claim, facts, anchor)


def deferred(stage: A.Stage, code: CodeFacts) -> list[tuple[str, str]]:
    """The (role, ring) sides whose staging steps a component's code alone cannot show: the role calls another
    stage's callables, which may run them; the composed check judges them (``kernlink pack`` says so)."""
    return sorted({(role.name, side.name) for role, side, _, _, _, later in _sides(stage, code) if later})


def _sides(stage: A.Stage, code: CodeFacts) -> Iterator[tuple[A.Role, A.Ring, A.SmemClaim, list[Fact], Fact, bool]]:
    """Each staging side of each role with an entry: its slot claim, the role's facts, where a missing step is
    shown, and whether the side is left to the composed check (the role calls imported callables whose
    summaries these facts do not hold)."""
    calls = {c.symbol for c in stage.items if isinstance(c, A.Call)}
    for role in stage.roles:
        if not role.entry:
            continue
        facts = [f for f in code.facts if f.function == role.entry]
        anchor = next((f for f in facts if f.kind == "function"), None)
        if anchor is None:
            continue
        spliced = any(f.via is not None or f.kind == "summary-unknown" for f in facts)
        imports = any(f.kind == "xcall" and f.detail in calls for f in facts)
        for side in stage.rings:
            if side.role != role.name or any(isinstance(i, (A.RingWait, A.RingArrive, A.RingCopy)) for i in side.items):
                continue  # a ring with barriers: steps.py
            claim = next((c for c in stage.items if isinstance(c, A.SmemClaim) and c.per_slot == side.name), None)
            if claim is not None:
                yield role, side, claim, facts, anchor, imports and not spliced


def _side(
    ctx: Ctx, role: A.Role, side: A.Ring, claim: A.SmemClaim, facts: Sequence[Fact], anchor: Fact
) -> Iterator[Finding]:
    def of_claim(f: Fact, role_: str) -> bool:
        return in_claim(ctx, claim, f.operand(role_))

    writes = [f for f in facts if f.kind == "smem-access" and writes_memory(f) and of_claim(f, "addr")]
    reads = [f for f in facts if f.kind == "bulk-store" and of_claim(f, "src")]
    waits = [f for f in facts if f.kind == "bulk-wait"]
    commits = [f for f in facts if f.kind == "bulk-commit"]
    opaque = [f for f in facts if f.kind == "summary-unknown"]
    unbound = [f for f in facts if f.via is not None and f.kind in ("smem-access", "bulk-store") and _unbound(f)]
    for f in unbound:
        yield unknown("ring-step", f, "address-claim", side)
    loop = _loop(writes or reads)
    words = {"ring": side.name, "role": role.name}

    def in_loop(f: Fact) -> bool:
        return loop is None or loop in f.loops

    def missing(step: str, **more: object) -> Iterator[Finding]:
        if opaque:  # the step may run in a callable whose summary is unknown: undecided, never a pass
            for u in opaque:
                yield unknown("ring-step", u, "summary", side)
            return
        yield found("ring-step", "missing", anchor, side, step=step, prearm=False, **words, **more)

    if any(isinstance(i, A.RingRead) and i.asynchronous for i in side.items):
        looped = [r for r in reads if in_loop(r)]
        if not looped:
            yield from missing("read async")
        for r in looped:
            if not any(c.order in r.reaches and in_loop(c) for c in commits):
                yield found("ring-step", "uncommitted", r, side, step="read async", **words)
            elif not set(r.conds) <= {c for w in writes for c in w.conds}:
                yield found("ring-step", "conditional", r, side, step="read async", **words)
        last = [r for r in looped if not any(q.order in r.reaches for q in looped)]
        for r in last:
            if loop is not None and not any(w.order in r.reaches and loop not in w.loops for w in waits):
                yield found("ring-step", "drain", r, side, step="read wait", **words)
                break
    wait = next((i for i in side.items if isinstance(i, A.RingReadWait)), None)
    if wait is not None and writes:
        first = [w for w in writes if in_loop(w) and not any(w.order in v.reaches for v in writes if in_loop(v))]
        before = [v for v in waits if in_loop(v) and all(w.order in v.reaches for w in first)]
        if not before:
            yield from missing("read wait")
        else:
            v = before[-1]
            depth = next((i.lo for i in _all_sides(ctx, side.name) if isinstance(i, A.RingDepth)), 1)
            groups = v.operand("groups")
            if groups is None or groups.value is None:
                yield unknown("ring-step", v, "groups", side)
            elif groups.value > depth - 1:
                yield found("ring-step", "groups", v, side, step="read wait", groups=groups.value, depth=depth, **words)
            elif (
                v.guard != EVERY_THREAD
                and not _ordered_by_claim(ctx, role, claim)
                and not any(
                    b.kind == "barrier"
                    and b.detail == "sync"
                    and b.guard == EVERY_THREAD
                    and b.order in v.reaches
                    and all(w.order in b.reaches for w in first)
                    for b in facts
                )
            ):
                yield found("ring-step", "unshared", v, side, step="read wait", **words)
    if any(isinstance(i, A.RingFence) for i in side.items):
        fences = [
            f for f in facts if f.kind == "proxy-fence" and (".shared" in f.detail or f.detail == "fence.proxy.async")
        ]
        for r in reads:
            before = [w for w in writes if r.order in w.reaches]
            if any(
                not any(
                    f.order in w.reaches and r.order in f.reaches and f.guard in (EVERY_THREAD, w.guard) for f in fences
                )
                for w in before
            ):
                yield found("ring-fence", "async-read", r, side, ring=side.name, role=role.name, claim=claim.name)
                break


def _ordered_by_claim(ctx: Ctx, role: A.Role, claim: A.SmemClaim) -> bool:
    """A barrier of the role `orders` the claim: `barrier-orders` reports a missing sync between the read wait's
    side (the previous pass's read) and the writes (one mistake, one diagnostic)."""
    return any(
        isinstance(b, A.BarrierClaim) and claim.name in b.orders and role.name in b.participants
        for b in ctx.stage.items
    )


def in_claim(ctx: Ctx, claim: A.SmemClaim, op: Operand | None) -> bool:
    """An address in ``claim``, through its handle or the slot handle of the ring it is ``per_slot`` of."""
    return any(
        s.node is claim or (s.kind == "ring_slot_smem" and claim.per_slot is not None and s.item == claim.per_slot)
        for s in ctx.handles_of(op, "smem", "ring_slot_smem")
    )


def writes_memory(f: Fact) -> bool:
    """A generic write of shared memory (``st``, ``stmatrix``, an atomic or a reduction)."""
    return f.opcode.startswith(("st.", "stmatrix", "atom.", "red."))


def _unbound(f: Fact) -> bool:
    op = f.operand("addr" if f.kind == "smem-access" else "src")
    return op is not None and op.kind == "unknown"


def _loop(facts: Sequence[Fact]) -> int | None:
    """The innermost loop around all of ``facts`` (its header's position), None when some is in no loop."""
    common: tuple[int, ...] | None = None
    for f in facts:
        if common is None:
            common = f.loops
            continue
        n = 0
        while n < min(len(common), len(f.loops)) and common[n] == f.loops[n]:
            n += 1
        common = common[:n]
    return common[-1] if common else None


def _all_sides(ctx: Ctx, ring: str) -> list[object]:
    return [i for r in ctx.stage.rings if r.name == ring for i in r.items]
