"""A contract's values, keyed, and how a draft's compare with a hand-written contract's.

:func:`values` flattens a stage into ``key -> value`` (every attribute a contract states,
defaults left out); :func:`tally` sorts each value the hand-written contract states into
*agreed* (the draft states the same), *disagreed* (the draft states another) or
*undecided* (the draft leaves it undecided, or has no such item). A value only the
draft states is *extra*: the conformance check of the draft against its own code, not
this tally, shows it does not contradict the code.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from analysis.draft.model import Draft, Key
from contract_lang import ast as A
from contract_lang.expr import to_text
from contract_lang.printer import count_text, lifetime_text, print_node, size


def values(stage: A.Stage) -> dict[Key, str]:
    """Every value ``stage`` states, by key (a list-valued attribute is one value per element)."""
    out: dict[Key, str] = {("stage", "name"): stage.name, ("stage", "version"): stage.version}
    for item in stage.items:
        for key, value in _item(item):
            out[key] = value
    return out


def _item(item: A.StageItem) -> Iterator[tuple[Key, str]]:
    if isinstance(item, A.Target):
        yield ("target",), item.name
    elif isinstance(item, A.Features):
        for name in item.names:
            yield ("feature", name), "yes"
    elif isinstance(item, A.Role):
        k = ("role", item.name)
        yield from _some(k, entry=item.entry, warps=item.warps, regs=item.regs)
        if item.warpgroup:
            yield (*k, "warpgroup"), "yes"
    elif isinstance(item, A.Launch):
        yield ("launch", "kind"), item.kind
        yield from _some(("launch",), threads=item.threads, blocks_per_sm=item.blocks_per_sm, grid=item.grid_text)
        if item.cooperative:
            yield ("launch", "cooperative"), "yes"
    elif isinstance(item, A.Params):
        k = ("params", item.name)
        yield (*k, "size"), str(item.size)
        yield (*k, "align"), str(item.align)
        for f in item.fields:
            yield (*k, f.name, "type"), f.type
            yield (*k, f.name, "offset"), str(f.offset)
            if f.fact:
                yield (*k, f.name, "fact"), f.fact
    elif isinstance(item, A.SmemClaim):
        k = ("claim smem", item.name)
        yield from _some(k, bytes=item.bytes, align=item.align, per_slot=item.per_slot, handle=item.handle)
        if item.lifetime != A.KERNEL_LIFETIME:
            yield (*k, "lifetime"), lifetime_text(item.lifetime)
        for use in item.uses:
            yield (*k, "use", use), "yes"
    elif isinstance(item, A.TmemClaim):
        k = ("claim tmem", item.name)
        yield from _some(k, columns=item.columns, handle=item.handle)
        if item.lifetime != A.KERNEL_LIFETIME:
            yield (*k, "lifetime"), lifetime_text(item.lifetime)
        for read in item.reads:
            yield (*k, "read", read.role), f"{read.lane_lo}..{read.lane_hi}"
    elif isinstance(item, A.BarrierClaim):
        k = ("claim barrier", item.name)
        yield from _some(k, threads=item.threads, handle=item.handle)
        for role in item.participants:
            yield (*k, "participant", role), "yes"
    elif isinstance(item, A.CounterClaim):
        yield from _some(("claim counter", item.name), slots=item.slots, scope=item.scope, handle=item.handle)
    elif isinstance(item, A.Ring):
        yield from _ring(item)
    elif isinstance(item, A.Counter):
        c: Key = ("counter", item.name, item.side)
        yield (*c, "role"), item.role
        yield from _some(c, scope=item.scope, domain=item.domain, space=item.space)
        for i, step in enumerate(item.steps):
            yield (*c, "step", str(i)), f"{step.op} {step.amount}"
    elif isinstance(item, A.Rendezvous):
        k = ("rendezvous", item.name)
        yield (*k, "mode"), item.mode
        yield (*k, "role"), item.role
        yield from _some(k, threads=item.threads)
    elif isinstance(item, A.ExportCallable):
        k = ("export callable", item.name)
        yield (*k, "signature"), str(item.signature)
        yield (*k, "symbol"), item.symbol
        for req in item.requires:
            yield (*k, "requires", req), "yes"
    elif isinstance(item, A.Call):
        k = ("call", item.name)
        yield (*k, "signature"), str(item.signature)
        yield (*k, "symbol"), item.symbol
        yield (*k, "caller"), f"{item.caller_kind} {item.caller}"
        for g in item.guarantees:
            yield (*k, "guarantees", g), "yes"
    elif isinstance(item, (A.ExportTensor, A.ImportTensor)):
        yield from _tensor(item)
    elif isinstance(item, A.OwnsFact):
        yield ("fact", item.name, "type"), item.type
        yield ("fact", item.name, "owns"), print_line(item)
    elif isinstance(item, A.UsesFact):
        yield ("fact", item.name, "type"), item.type
        yield ("fact", item.name, "uses"), item.param
    elif isinstance(item, A.AssumesFact):
        yield ("fact", item.name, "type"), item.type
        yield ("fact", item.name, "assumes"), str(item.value)
    elif isinstance(item, A.RequiresFact):
        yield ("requires fact", to_text(item.expr)), "yes"
    else:  # phases, clusters, domains, buffers, host providers: the whole line is one value
        yield (type(item).__name__.lower(), print_line(item)), "yes"


def _some(key: Key, **attrs: object) -> Iterator[tuple[Key, str]]:
    for name, value in attrs.items():
        if value is not None:
            yield (*key, name), str(value)


def _ring(ring: A.Ring) -> Iterator[tuple[Key, str]]:
    k = ("ring", ring.name, ring.side)
    yield (*k, "role"), ring.role
    copies: dict[str, list[int]] = {}
    for it in ring.items:
        if isinstance(it, A.RingDepth):
            yield (*k, "depth"), f"{it.lo}..{it.hi}"
        elif isinstance(it, A.RingBarrierInit):
            yield (*k, f"{it.barrier} init", "count"), count_text(it.count)
            if it.expect_tx is not None:
                yield (*k, f"{it.barrier} init", "expect_tx"), size(it.expect_tx)
        elif isinstance(it, A.RingWait):
            yield (*k, f"{it.barrier} wait"), "yes" if it.parity is None else f"parity {it.parity}"
        elif isinstance(it, A.RingArrive):
            a = (*k, f"{it.barrier} arrive")
            yield (*a, "count"), count_text(it.count)
            yield from _some(a, tx=None if it.tx is None else size(it.tx), lag=it.lag)
            for flag in ("prearm", "remote"):
                if getattr(it, flag):
                    yield (*a, flag), "yes"
        elif isinstance(it, A.RingCopy):
            copies.setdefault(it.barrier, []).append(it.bytes)
        elif isinstance(it, A.RingInitBy):
            yield (*k, "init by"), it.role
            if it.fenced:
                yield (*k, "init fenced"), "yes"
        elif isinstance(it, A.RingScope):
            yield (*k, "scope"), it.scope
        elif isinstance(it, A.RingProxy):
            yield (*k, it.access), it.proxy
        elif isinstance(it, A.RingRead):
            yield (*k, "read"), "async" if it.asynchronous else "generic"
        elif isinstance(it, A.RingReadWait):
            yield (*k, "read wait"), f"lag {it.lag}" if it.lag is not None else "yes"
        elif isinstance(it, A.RingRestart):
            yield (*k, "restart"), str(it.every)
        elif isinstance(it, A.RingLag):
            yield (*k, "lag"), str(it.count)
        elif isinstance(it, A.RingOnce):
            yield (*k, "once"), "yes"
        elif isinstance(it, A.RingLoops):
            yield (*k, "loops"), str(it.count)
        else:
            yield (*k, "fence"), it.kind
    for barrier, sizes in sorted(copies.items()):
        yield (*k, f"{barrier} copy"), ", ".join(size(b) for b in sorted(sizes))


def _tensor(item: A.ExportTensor | A.ImportTensor) -> Iterator[tuple[Key, str]]:
    export = isinstance(item, A.ExportTensor)
    k = ("export tensor" if export else "import tensor", item.name)
    yield (*k, "role"), item.role
    if isinstance(item, A.ImportTensor):
        yield (*k, "from"), item.export
        if item.chunk:
            yield (*k, "chunk"), " ".join(f"{d.name} {d.extent}" for d in item.chunk)
        for lend in item.lends:
            yield (*k, "lends", lend.kind), str(lend.claim if lend.kind == "smem" else lend.regs)
        if item.demand is not None:
            yield (*k, "demand"), _map_text(item.demand)
        if item.done is not None:
            yield (*k, "done"), str(item.done)
    else:
        if item.placement is not None:
            yield (*k, "placement"), _map_text(item.placement)
        if item.ready is not None:
            yield (*k, "ready"), str(item.ready)
    yield from _some(k, elem=item.elem, generation=item.generation)
    if item.tile:
        yield (*k, "tile"), " ".join(f"{d.name} {d.extent}" for d in item.tile)


def _map_text(spec: A.MapSpec) -> str:
    if isinstance(spec, A.LibraryMap):
        return f"library {spec.name}(" + ", ".join(f"{k}: {v}" for k, v in spec.args) + ")"
    params = ", ".join(p.name if p.extent is None else f"{p.name}: {p.extent}" for p in spec.params)
    body = "; ".join(f"{a.name} = {to_text(a.expr)}" for a in spec.assigns)
    return f"{spec.kind}({params}) -> ({', '.join(spec.outputs)}) {{ {body} }}"


def print_line(item: A.StageItem) -> str:
    """The canonical text of a one-line item (as it prints inside a stage)."""
    text = print_node(A.Stage("s", "0", (item,)))
    return text.split("\n")[1].strip()


@dataclass(frozen=True)
class Tally:
    """How one draft compares with one hand-written contract."""

    stated: int
    agreed: tuple[Key, ...]
    disagreed: tuple[tuple[Key, str, str], ...]  # (key, hand-written, drafted)
    undecided: tuple[Key, ...]
    extra: int  # values only the draft states

    @property
    def agreement(self) -> float:
        return len(self.agreed) / self.stated if self.stated else 1.0


def tally(stated: A.Stage, draft: Draft) -> Tally:
    """Each value ``stated`` holds: agreed, disagreed or undecided by ``draft`` (module docstring)."""
    hand = values(stated)
    drafted = values(draft.stage)
    open_keys = draft.undecided_keys()
    agreed: list[Key] = []
    disagreed: list[tuple[Key, str, str]] = []
    undecided: list[Key] = []
    for key, value in sorted(hand.items()):
        if key in open_keys or key not in drafted:
            undecided.append(key)
        elif drafted[key] == value:
            agreed.append(key)
        else:
            disagreed.append((key, value, drafted[key]))
    extra = sum(1 for k in drafted if k not in hand and k not in open_keys)
    return Tally(len(hand), tuple(agreed), tuple(disagreed), tuple(undecided), extra)
