"""The mutation catalogue: every realistic one-line edit of a composition, by kind.

Every edit is an AST replacement, so a mutant prints to text that parses back."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from contract_lang import ast as A
from contract_lang.expr import BinOp, Expr, Int, Not
from contract_lang.printer import print_node
from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.edit import Edit
from fuzzing.compositions.generate import COUNT_UNITS

MUTATION_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "target": "retarget a stage or the pipeline to another architecture",
        "feature": "require a feature the stage did not, or drop one it did",
        "version": "bump a stage's major version or a use line's requirement",
        "role-warps": "widen or narrow a role by a warp, double or halve it, or zero it",
        "role-regs": "change a register budget by a step, off the step, out of range, or add/drop it",
        "role-warpgroup": "mark a role as a warpgroup role or unmark it",
        "role-name": "rename a role where it is declared (its users keep the old name)",
        "launch": "change the launched threads by a warp, the grid kind, or blocks per SM",
        "params": "move a params field, change its type, or shrink the struct",
        "smem-bytes": "change a shared-memory claim's size (halve, double, +16, +1)",
        "smem-align": "change a shared-memory alignment (halve, double, not a power of two)",
        "smem-use": "add a use with a stricter alignment (swizzle128, tma) or drop the uses",
        "lifetime": "change a claim's lifetime (kernel ↔ an event interval, swap events, a phase)",
        "per-slot": "detach a claim from its ring or attach it to another name",
        "tmem-columns": "change a tensor-memory claim's columns",
        "barrier": "change a named barrier's thread count or drop a participant",
        "counter-slots": "change a counter claim's slots",
        "ring-depth": "change a ring's depth range (shift, widen, empty, start at 0) or add one to a side",
        "expect-tx": "change or drop a barrier's expected transaction bytes",
        "tx-bytes": "change or drop the bytes an arrive.expect_tx announces",
        "copy-bytes": "change the bytes an async copy completes, or drop the copy",
        "arrival-count": "change an init or arrive count: constant ±1, ×2, another unit or role",
        "parity": "state or flip a wait's first parity",
        "drop-init": "drop a ring's `init by` line",
        "drop-fence": "drop a `fence proxy_async` line or the `fenced` of an `init by`",
        "drop-wait": "drop a ring or counter wait",
        "drop-arrive": "drop a ring arrive",
        "proxy": "switch a ring side between the generic and the async proxy",
        "init-role": "initialize a ring's barriers from another role",
        "scope": "change or add a ring, counter or counter-claim scope",
        "counter-space": "change a counter's memory space or domain",
        "rename-endpoint": "rename one endpoint of a ring, counter or rendezvous",
        "endpoint-side": "turn a consumer endpoint into a producer or back",
        "endpoint-role": "move a ring or counter endpoint to another role",
        "signature": "change a parameter or result type of a call or export",
        "guarantee": "drop a call-site guarantee, or require one more of the callers",
        "rename-callable": "rename a call or an export",
        "elem-type": "swap a tensor's element type",
        "tile-extent": "change a tensor tile or chunk extent",
        "generation": "change a tensor's generation or ready/done event",
        "fact-value": "change a fact's owned value, compiled-in assumption, or a constraint's constant",
        "fact-type": "change a fact's declared type on one side",
        "fact-name": "rename a fact on one side",
        "phases": "change an interpreter's phase mode or drop a phase",
        "cluster-shape": "change an accepted or launched cluster shape",
        "views": "drop or change a communication domain's views",
        "buffer-bytes": "change a buffer's or a caller-provided buffer's size",
    }
)
"""Every mutation kind, by the name the campaign report uses."""

_TARGETS = ("sm_90", "sm_90a", "sm_100a", "sm_120a")
_SCALARS = ("u32", "i32", "u64", "u16", "f32")


def _nums(value: int, *, zero: bool = False) -> list[int]:
    """Realistic neighbours of a size: halve, double, +16, −16, +1 (positive, distinct, ≠ value)."""
    out: list[int] = []
    for v in (value // 2, value * 2, value + 16, value - 16, value + 1):
        if (v > 0 or (zero and v == 0)) and v != value and v not in out:
            out.append(v)
    return out


def _counts(count: A.Count, roles: Sequence[str]) -> list[A.Count]:
    out: list[A.Count] = []
    for i, term in enumerate(count.terms):
        repl: list[A.CountTerm] = []
        if term.unit == "one":
            repl += [
                A.CountTerm(v, "one")
                for v in (term.coef + 1, term.coef - 1, term.coef * 2)
                if v >= 0 and v != term.coef
            ]
        else:
            repl.append(A.CountTerm(term.coef * 2, term.unit, term.role))
            repl += [A.CountTerm(term.coef, u, term.role) for u in COUNT_UNITS.values() if u != term.unit]
            repl += [A.CountTerm(term.coef, term.unit, r) for r in roles if r != term.role][:2]
            repl.append(A.CountTerm(1, "one"))
        out += [A.Count((*count.terms[:i], t, *count.terms[i + 1 :])) for t in repl]
    return out


def _line(item: A.Node) -> str:
    """One-line text of an item (the header line of a block item)."""
    if isinstance(item, A.Stage):
        return print_node(A.Stage(item.name, item.version)).splitlines()[0].removesuffix(" {}")
    if isinstance(item, A.Pipeline):
        return print_node(A.Pipeline(item.name)).splitlines()[0].removesuffix(" {}")
    text = print_node(A.Stage("_", "_", (item,)))  # type: ignore[arg-type]
    return text.splitlines()[1].strip().removesuffix(" {")


def _ring_line(item: A.RingItem) -> str:
    from contract_lang.printer import ring_item_line

    return ring_item_line(item)


class _Sites:
    """Collects the edits of one bundle, in a deterministic order."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.found: list[Edit] = []
        self.roles = tuple(r.name for s in bundle.stages for r in s.roles)

    def add(self, kind: str, unit: int, index: int, old: A.Node, new: A.Node | None) -> None:
        if new == old:
            return
        self.found.append(Edit(kind, unit, index, new, _line(old), "" if new is None else _line(new)))

    def inner(self, kind: str, unit: int, index: int, new_item: A.Node, where: str, before: str, after: str) -> None:
        """An edit of one line inside a block item (a ring step, a params field)."""
        self.found.append(Edit(kind, unit, index, new_item, before, after, where))

    def ring_item(self, kind: str, unit: int, index: int, ring: A.Ring, j: int, new: A.RingItem | None) -> None:
        old = ring.items[j]
        if new == old:
            return
        items = ring.items[:j] + ((new,) if new is not None else ()) + ring.items[j + 1 :]
        self.inner(
            kind,
            unit,
            index,
            dataclasses.replace(ring, items=items),
            _ring_head(ring),
            _ring_line(old),
            "" if new is None else _ring_line(new),
        )


def _ring_head(ring: A.Ring) -> str:
    return f"ring {ring.name} {ring.side} by {ring.role}"


def edits(bundle: Bundle) -> tuple[Edit, ...]:
    """Every single edit the catalogue offers for this composition, in a fixed order."""
    sites = _Sites(bundle)
    for u, unit in enumerate(bundle.units):
        if isinstance(unit, A.Stage):
            major = unit.version.split(".")[0]
            if major.isdigit():
                bumped = f"{int(major) + 1}.0.0"
                sites.add("version", u, -1, unit, dataclasses.replace(unit, version=bumped))
        for i, item in enumerate(unit.items):
            _item_edits(sites, u, i, item)
    return tuple(sites.found)


def _item_edits(s: _Sites, u: int, i: int, item: A.Node) -> None:
    ITEM_EDITS[type(item)](s, u, i, item)


def _target_edits(s: _Sites, u: int, i: int, item: A.Target) -> None:
    for name in _TARGETS:
        s.add("target", u, i, item, A.Target(name))


def _feature_edits(s: _Sites, u: int, i: int, item: A.Features) -> None:
    extra = next(f for f in ("tcgen05", "wgmma", "multimem") if f not in item.names)
    s.add("feature", u, i, item, A.Features((*item.names, extra)))
    if len(item.names) > 1:
        s.add("feature", u, i, item, A.Features(item.names[1:]))


def _launch_edits(s: _Sites, u: int, i: int, item: A.Launch) -> None:
    rep = dataclasses.replace
    if item.threads is not None:
        for t in (item.threads + 32, item.threads - 32, item.threads * 2, item.threads + 16):
            if t > 0:
                s.add("launch", u, i, item, rep(item, threads=t))
    s.add("launch", u, i, item, rep(item, kind="persistent" if item.kind == "fixed" else "fixed"))
    s.add("launch", u, i, item, rep(item, blocks_per_sm=(item.blocks_per_sm or 1) + 1))


def _tmem_edits(s: _Sites, u: int, i: int, item: A.TmemClaim) -> None:
    if item.columns is not None:
        for c in (*_nums(item.columns), 48, 1024):
            s.add("tmem-columns", u, i, item, dataclasses.replace(item, columns=c))


def _barrier_edits(s: _Sites, u: int, i: int, item: A.BarrierClaim) -> None:
    threads = item.threads or 128
    for t in (threads + 32, threads - 32, threads + 16):
        if t > 0:
            s.add("barrier", u, i, item, dataclasses.replace(item, threads=t))
    if len(item.participants) > 1:
        s.add("barrier", u, i, item, dataclasses.replace(item, participants=item.participants[1:]))


def _counter_claim_edits(s: _Sites, u: int, i: int, item: A.CounterClaim) -> None:
    if item.slots is not None:
        for v in (item.slots + 1, item.slots * 2, item.slots * 1024):
            s.add("counter-slots", u, i, item, dataclasses.replace(item, slots=v))
    for scope in A.SCOPES:
        s.add("scope", u, i, item, dataclasses.replace(item, scope=scope))


def _rendezvous_edits(s: _Sites, u: int, i: int, item: A.Rendezvous) -> None:
    s.add("rename-endpoint", u, i, item, dataclasses.replace(item, name=item.name + "_x"))
    s.add("barrier", u, i, item, dataclasses.replace(item, threads=(item.threads or 128) + 32))


def _phases_edits(s: _Sites, u: int, i: int, item: A.Phases) -> None:
    s.add(
        "phases", u, i, item, dataclasses.replace(item, mode="concurrent" if item.mode == "exclusive" else "exclusive")
    )
    if len(item.names) > 1:
        s.add("phases", u, i, item, dataclasses.replace(item, names=item.names[:-1]))


def _assumed_phases_edits(s: _Sites, u: int, i: int, item: A.AssumesPhases) -> None:
    s.add("phases", u, i, item, A.AssumesPhases((*item.names, "combine_x")))


def _launched_cluster_edits(s: _Sites, u: int, i: int, item: A.PipelineCluster) -> None:
    for shape in _shapes(item.shape):
        s.add("cluster-shape", u, i, item, A.PipelineCluster(shape))


def _domain_edits(s: _Sites, u: int, i: int, item: A.Domain | A.ProvidesDomain) -> None:
    other = tuple(v for v in A.VIEWS if v not in item.views)
    if other:
        s.add("views", u, i, item, dataclasses.replace(item, views=(*item.views, other[0])))
    if len(item.views) > 1:
        s.add("views", u, i, item, dataclasses.replace(item, views=item.views[1:]))
    s.add("views", u, i, item, dataclasses.replace(item, name=item.name + "_x"))


def _buffer_edits(s: _Sites, u: int, i: int, item: A.Buffer | A.ProvidesBuffer) -> None:
    for v in (item.bytes // 2, item.bytes * 2, item.bytes + 1):
        if v > 0:
            s.add("buffer-bytes", u, i, item, dataclasses.replace(item, bytes=v))
    if isinstance(item, A.Buffer) and item.views:
        s.add("views", u, i, item, dataclasses.replace(item, views=("multicast",)))


def _use_edits(s: _Sites, u: int, i: int, item: A.Use) -> None:
    for req in _bumped_requirements(item.requirement):
        s.add("version", u, i, item, dataclasses.replace(item, requirement=req))


def _no_edits(s: _Sites, u: int, i: int, item: A.Node) -> None:
    """A kind the catalogue leaves alone (a host provider's files, a resolve line's choice)."""


def _role_edits(s: _Sites, u: int, i: int, item: A.Role) -> None:
    rep = dataclasses.replace
    if item.warps is not None:
        for w in (item.warps + 1, item.warps - 1, item.warps * 2, item.warps // 2, 0):
            if w >= 0:
                s.add("role-warps", u, i, item, rep(item, warps=w))
    if item.regs is not None:
        for r in (item.regs + 8, item.regs - 8, item.regs + 4, item.regs * 2):
            if r > 0:
                s.add("role-regs", u, i, item, rep(item, regs=r))
        s.add("role-regs", u, i, item, rep(item, regs=None))
    else:
        s.add("role-regs", u, i, item, rep(item, regs=240))
    s.add("role-warpgroup", u, i, item, rep(item, warpgroup=not item.warpgroup))
    s.add("role-name", u, i, item, rep(item, name=item.name + "_x"))


def _params_edits(s: _Sites, u: int, i: int, item: A.Params) -> None:
    rep = dataclasses.replace
    where = f"params {item.name}"
    for j, fld in enumerate(item.fields):
        for new in (rep(fld, offset=fld.offset + 4), _retyped(fld)):
            if new is None:
                continue
            fields = (*item.fields[:j], new, *item.fields[j + 1 :])
            s.inner("params", u, i, rep(item, fields=fields), where, _field_line(fld), _field_line(new))
    if item.size > item.align:
        s.add("params", u, i, item, rep(item, size=item.size - item.align))


def _retyped(fld: A.ParamField) -> A.ParamField | None:
    """The field with another type the language allows it: a tensor map's box rides only a `ptr` or
    `tensormap` field (a `tensormap` held by value becomes a pointer to one; a `ptr` with a box has no other
    type to take); u32 and u64 both carry a value set."""
    if fld.box is not None:
        return dataclasses.replace(fld, type="ptr") if fld.type == "tensormap" else None
    return dataclasses.replace(fld, type="u64" if fld.type != "u64" else "u32")


def _field_line(fld: A.ParamField) -> str:
    return f"{fld.name}: {fld.type} @ {fld.offset}" + (f" = fact {fld.fact}" if fld.fact else "")


def _smem_edits(s: _Sites, u: int, i: int, item: A.SmemClaim) -> None:
    rep = dataclasses.replace
    if item.bytes is not None:
        for b in _nums(item.bytes):
            s.add("smem-bytes", u, i, item, rep(item, bytes=b))
    align = item.align or 16
    for a in (align // 2, align * 2, align + align // 2):
        if a > 0:
            s.add("smem-align", u, i, item, rep(item, align=a))
    for use in ("swizzle128", "tma"):
        if use not in item.uses:
            s.add("smem-use", u, i, item, rep(item, uses=(*item.uses, use)))
    if item.uses:
        s.add("smem-use", u, i, item, rep(item, uses=()))
    life = item.lifetime
    if life.kind == "between" and life.start is not None and life.end is not None:
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("between", start=life.end, end=life.start)))
        s.add("lifetime", u, i, item, rep(item, lifetime=A.KERNEL_LIFETIME))
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("until", end=life.end)))
    elif life.kind == "kernel":
        events = [str(e) for e in _events(s.bundle)]
        if events:
            conn, _, _ = events[0].partition(".")
            s.add(
                "lifetime",
                u,
                i,
                item,
                rep(
                    item, lifetime=A.Lifetime("between", start=A.EventRef(conn, "ready"), end=A.EventRef(conn, "done"))
                ),
            )
        s.add("lifetime", u, i, item, rep(item, lifetime=A.Lifetime("phase", phase="main")))
    else:
        s.add("lifetime", u, i, item, rep(item, lifetime=A.KERNEL_LIFETIME))
    if item.per_slot is not None:
        s.add("per-slot", u, i, item, rep(item, per_slot=None))
        s.add("per-slot", u, i, item, rep(item, per_slot=item.per_slot + "_x"))


def _events(bundle: Bundle) -> list[A.EventRef]:
    found = []
    for stage in bundle.stages:
        for item in stage.items:
            if isinstance(item, A.ExportTensor) and item.ready is not None:
                found.append(item.ready)
    return found


def _ring_edits(s: _Sites, u: int, i: int, ring: A.Ring) -> None:
    rep = dataclasses.replace
    s.add("rename-endpoint", u, i, ring, rep(ring, name=ring.name + "_x"))
    s.add("endpoint-side", u, i, ring, rep(ring, side="consume" if ring.side == "produce" else "produce"))
    for other in s.roles:
        if other != ring.role:
            s.add("endpoint-role", u, i, ring, rep(ring, role=other))
            break
    if ring.depth is None:
        hi = next(
            (
                d.hi
                for st_ in s.bundle.stages
                for r in st_.rings
                if r.name == ring.name and r.depth is not None
                for d in (r.depth,)
            ),
            1,
        )
        s.inner(
            "ring-depth",
            u,
            i,
            rep(ring, items=(A.RingDepth(hi + 1, hi + 1), *ring.items)),
            "",
            _ring_head(ring),
            f"{_ring_head(ring)} {{ depth {hi + 1} … }}",
        )
    if ring.scope is None:
        s.inner(
            "scope",
            u,
            i,
            rep(ring, items=(*ring.items, A.RingScope("cluster"))),
            "",
            _ring_head(ring),
            f"{_ring_head(ring)} {{ … scope cluster }}",
        )
    for j, it in enumerate(ring.items):
        ri = s.ring_item
        if isinstance(it, A.RingDepth):
            for lo, hi in (
                (it.lo + 1, it.hi),
                (it.lo, it.hi + 2),
                (it.hi + 1, it.hi + 1),
                (0, it.hi),
                (it.hi, it.lo),
                (1, 1),
                (it.lo * 8, it.hi * 8),
            ):
                ri("ring-depth", u, i, ring, j, A.RingDepth(lo, hi))
        elif isinstance(it, A.RingBarrierInit):
            for count in _counts(it.count, s.roles):
                ri("arrival-count", u, i, ring, j, rep(it, count=count))
            if it.expect_tx is not None:
                for v in _nums(it.expect_tx):
                    ri("expect-tx", u, i, ring, j, rep(it, expect_tx=v))
                ri("expect-tx", u, i, ring, j, rep(it, expect_tx=None))
        elif isinstance(it, A.RingWait):
            for parity in (0, 1):
                ri("parity", u, i, ring, j, rep(it, parity=parity))
            ri("drop-wait", u, i, ring, j, None)
        elif isinstance(it, A.RingArrive):
            for count in _counts(it.count, s.roles):
                ri("arrival-count", u, i, ring, j, rep(it, count=count))
            if it.tx is not None:
                for v in _nums(it.tx):
                    ri("tx-bytes", u, i, ring, j, rep(it, tx=v))
                ri("tx-bytes", u, i, ring, j, rep(it, tx=None))
            ri("drop-arrive", u, i, ring, j, None)
        elif isinstance(it, A.RingCopy):
            for v in _nums(it.bytes):
                ri("copy-bytes", u, i, ring, j, rep(it, bytes=v))
            ri("copy-bytes", u, i, ring, j, None)
        elif isinstance(it, A.RingInitBy):
            ri("drop-init", u, i, ring, j, None)
            if it.fenced:
                ri("drop-fence", u, i, ring, j, rep(it, fenced=False))
            for other in s.roles:
                if other != it.role:
                    ri("init-role", u, i, ring, j, rep(it, role=other))
                    break
        elif isinstance(it, A.RingScope):
            for scope in A.SCOPES:
                ri("scope", u, i, ring, j, A.RingScope(scope))
        elif isinstance(it, A.RingProxy):
            ri("proxy", u, i, ring, j, rep(it, proxy="generic" if it.proxy == "async" else "async"))
        elif isinstance(it, A.RingFence):
            ri("drop-fence", u, i, ring, j, None)


def _counter_edits(s: _Sites, u: int, i: int, item: A.Counter) -> None:
    rep = dataclasses.replace
    s.add("rename-endpoint", u, i, item, rep(item, name=item.name + "_x"))
    s.add("endpoint-side", u, i, item, rep(item, side="consume" if item.side == "produce" else "produce"))
    for other in s.roles:
        if other != item.role:
            s.add("endpoint-role", u, i, item, rep(item, role=other))
            break
    for scope in A.SCOPES:
        s.add("scope", u, i, item, rep(item, scope=scope))
    for space in A.COUNTER_SPACES:
        s.add("counter-space", u, i, item, rep(item, space=space))
    if item.domain is not None:
        s.add("counter-space", u, i, item, rep(item, domain=None))
    for j, step in enumerate(item.steps):
        if step.op == "wait_ge":
            s.add("drop-wait", u, i, item, rep(item, steps=item.steps[:j] + item.steps[j + 1 :]))


def _callable_edits(s: _Sites, u: int, i: int, item: A.ExportCallable | A.Call) -> None:
    rep = dataclasses.replace
    sig = item.signature
    for j, p in enumerate(sig.params):
        for t in _SCALARS:
            if t != p:
                s.add(
                    "signature",
                    u,
                    i,
                    item,
                    rep(item, signature=A.Signature((*sig.params[:j], t, *sig.params[j + 1 :]), sig.result)),
                )
                break
    s.add("signature", u, i, item, rep(item, signature=A.Signature((*sig.params, "u32"), sig.result)))
    s.add(
        "signature", u, i, item, rep(item, signature=A.Signature(sig.params, "f64" if sig.result != "f64" else "f32"))
    )
    s.add("rename-callable", u, i, item, rep(item, name=item.name + "_x"))
    if isinstance(item, A.Call):
        for j in range(len(item.guarantees)):
            s.add("guarantee", u, i, item, rep(item, guarantees=item.guarantees[:j] + item.guarantees[j + 1 :]))
    else:
        for g in A.GUARANTEES:
            if g not in item.requires:
                s.add("guarantee", u, i, item, rep(item, requires=(*item.requires, g)))
                break


def _shape_edits(s: _Sites, u: int, i: int, item: A.ExportTensor | A.ImportTensor | A.Fragment) -> None:
    """A tensor's or a fragment's element type and tile extents."""
    rep = dataclasses.replace
    if item.elem is not None:
        for e in ("bf16", "f16", "f32"):
            if e != item.elem:
                s.add("elem-type", u, i, item, rep(item, elem=e))
                break
    for j, dim in enumerate(item.tile):
        for v in (dim.extent * 2, dim.extent // 2):
            if v > 0:
                tile = (*item.tile[:j], rep(dim, extent=v), *item.tile[j + 1 :])
                s.add("tile-extent", u, i, item, rep(item, tile=tile))


def _tensor_edits(s: _Sites, u: int, i: int, item: A.ExportTensor | A.ImportTensor) -> None:
    rep = dataclasses.replace
    _shape_edits(s, u, i, item)
    if isinstance(item, A.ImportTensor):
        for j, dim in enumerate(item.chunk):
            chunk = (*item.chunk[:j], rep(dim, extent=dim.extent * 2), *item.chunk[j + 1 :])
            s.add("tile-extent", u, i, item, rep(item, chunk=chunk))
        if item.done is not None:
            s.add("generation", u, i, item, rep(item, done=A.EventRef(item.done.connection, "ready")))
    else:
        s.add("generation", u, i, item, rep(item, generation="persistent" if item.generation == "once" else "once"))
        if item.ready is not None:
            s.add("generation", u, i, item, rep(item, ready=A.EventRef(item.ready.connection + "_x", item.ready.event)))


def _fact_edits(s: _Sites, u: int, i: int, item: A.OwnsFact | A.UsesFact | A.AssumesFact | A.RequiresFact) -> None:
    rep = dataclasses.replace
    if isinstance(item, A.RequiresFact):
        for expr in _expr_variants(item.expr):
            s.add("fact-value", u, i, item, A.RequiresFact(expr))
        return
    for t in _SCALARS:
        if t != item.type:
            s.add("fact-type", u, i, item, rep(item, type=t))
            break
    if isinstance(item, A.OwnsFact):
        values = item.value.values
        top = max(values)
        for v in (top + 1, top * 2, top // 2):
            if v > 0:
                s.add("fact-value", u, i, item, rep(item, value=A.FactValue("exact", (v,))))
        s.add("fact-value", u, i, item, rep(item, value=A.FactValue("range", (min(values) // 2, top * 2))))
        s.add("fact-value", u, i, item, rep(item, value=A.FactValue("set", (*values, top + 8))))
    elif isinstance(item, A.AssumesFact):
        for v in (item.value + 1, item.value * 2, item.value // 2):
            s.add("fact-value", u, i, item, rep(item, value=v))
    if not isinstance(item, A.OwnsFact):
        s.add("fact-name", u, i, item, rep(item, name=item.name + "_x"))


def _expr_variants(expr: Expr) -> Iterator[Expr]:
    """The expression with one integer literal changed (+1, ×2, ÷2), leaves in order."""
    if isinstance(expr, Int):
        for v in (expr.value + 1, expr.value * 2, expr.value // 2):
            if v != expr.value:
                yield Int(v)
    elif isinstance(expr, BinOp):
        for left in _expr_variants(expr.left):
            yield BinOp(expr.op, left, expr.right)
        for right in _expr_variants(expr.right):
            yield BinOp(expr.op, expr.left, right)
    elif isinstance(expr, Not):
        for inner in _expr_variants(expr.operand):
            yield Not(inner)


def _shapes(shape: A.ClusterShape) -> list[A.ClusterShape]:
    return [
        s
        for s in (
            A.ClusterShape(shape.x * 2, shape.y, shape.z),
            A.ClusterShape(shape.x, shape.y * 2, shape.z),
            A.ClusterShape(4, 4, 2),
            A.ClusterShape(1, 1, 1),
        )
        if s != shape
    ]


def _cluster_edits(s: _Sites, u: int, i: int, item: A.Cluster) -> None:
    for j, shape in enumerate(item.shapes):
        for new in _shapes(shape)[:2]:
            s.add("cluster-shape", u, i, item, A.Cluster((*item.shapes[:j], new, *item.shapes[j + 1 :])))
    if len(item.shapes) > 1:
        s.add("cluster-shape", u, i, item, A.Cluster(item.shapes[:-1]))


def _bumped_requirements(req: str) -> list[str]:
    op = req[: len(req) - len(req.lstrip("^~=<>"))]
    version = req[len(op) :]
    parts = version.split(".")
    if not parts or not parts[0].isdigit():
        return []
    major = int(parts[0])
    return [f"{op}{major + 1}.0", f"{op}{major}.99", f">{version}" if op != ">" else f"<{version}"]


ITEM_EDITS: Mapping[type[A.Node], Callable[[_Sites, int, int, Any], None]] = MappingProxyType(
    {
        A.Target: _target_edits,
        A.Features: _feature_edits,
        A.Role: _role_edits,
        A.Launch: _launch_edits,
        A.Params: _params_edits,
        A.SmemClaim: _smem_edits,
        A.TmemClaim: _tmem_edits,
        A.BarrierClaim: _barrier_edits,
        A.CounterClaim: _counter_claim_edits,
        A.Ring: _ring_edits,
        A.Counter: _counter_edits,
        A.Rendezvous: _rendezvous_edits,
        A.ExportCallable: _callable_edits,
        A.Call: _callable_edits,
        A.ExportTensor: _tensor_edits,
        A.ImportTensor: _tensor_edits,
        A.Fragment: _shape_edits,
        A.OwnsFact: _fact_edits,
        A.UsesFact: _fact_edits,
        A.AssumesFact: _fact_edits,
        A.RequiresFact: _fact_edits,
        A.Phases: _phases_edits,
        A.AssumesPhases: _assumed_phases_edits,
        A.Cluster: _cluster_edits,
        A.Domain: _domain_edits,
        A.Buffer: _buffer_edits,
        A.HostProvider: _no_edits,
        A.Use: _use_edits,
        A.PipelineCluster: _launched_cluster_edits,
        A.ProvidesDomain: _domain_edits,
        A.ProvidesBuffer: _buffer_edits,
        A.Resolve: _no_edits,
    }
)
"""The edits of each kind of item (:data:`contract_lang.ast.ITEM_KINDS`), in the catalogue's order."""
