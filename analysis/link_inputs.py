"""What the link reads from an accepted composition, typed: the linker never walks the contract AST.

:func:`link_inputs` reads the composition once, for the plan (:attr:`analysis.plan.Plan.inputs`):
the stages with the handles their objects need, the roles and their entries, the rings a stage
initialises and their arrival counts (evaluated with the composition's role widths), the facts'
owners, the shared- and tensor-memory claims, the counters, the calls with the export serving
each, the host providers, the launch line and the cluster shape. Every record is frozen and holds
names, numbers and spans only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from analysis.ring_fed import RingFed, ring_fed
from checker.composition import Composition, Owned
from checker.handles import HandleSpec, resolve_handles
from checker.pins import pins
from checker.residency import launch_blocks
from checker.resolve import serving_exports
from contract_lang import ast as A
from contract_lang.printer import count_text
from diagnostics.span import Span
from hardware.targets import TargetSpec
from package.captured import Captured
from package.loader import StageEntry


@dataclass(frozen=True)
class LinkStage:
    """One stage: its name and version, where the pipeline names it, its package and what its object
    needs of the handles it binds (``handles``: symbol order)."""

    name: str
    version: str
    span: Span
    use_span: Span | None
    use_path: str | None
    package: str | None
    source: str  # where the stage's contract was read from
    captured: Captured | None
    handles: tuple[HandleSpec, ...]


@dataclass(frozen=True)
class LinkRole:
    stage: str
    name: str
    entry: str | None
    regs: int | None
    span: Span


@dataclass(frozen=True)
class RingInit:
    """A ring side whose ``init by`` names a role of its own stage."""

    ring: str
    stage: str
    role: str


@dataclass(frozen=True)
class RingCount:
    """A ring side's ``full init`` / ``empty init`` count: its value with the composition's role widths
    (None, with ``error``, when it names a role the composition lacks)."""

    ring: str
    stage: str
    which: str
    text: str
    span: Span
    value: int | None
    error: str = ""


@dataclass(frozen=True)
class FactOwner:
    """The first owner of a fact: ``kind`` ``exact`` fixes ``values[0]``; ``allowed`` its permitted values.

    ``pinned`` says why an owner of several values has one here: the assumers that pinned it
    (checker.pins), whose value is ``values[0]`` of an ``exact`` kind; empty otherwise."""

    fact: str
    stage: str
    kind: str
    values: tuple[int, ...]
    allowed: tuple[int, ...]
    pinned: str = ""


@dataclass(frozen=True)
class ParamsField:
    name: str
    type: str
    offset: int
    fact: str | None  # the field's fact: its own, or the stage's `uses fact`
    values: tuple[int, ...] = ()  # the values its contract states (`in {…}`; empty: any)


@dataclass(frozen=True)
class ParamsBlock:
    stage: str
    name: str
    size: int
    align: int
    fields: tuple[ParamsField, ...]


@dataclass(frozen=True)
class Claim:
    """A shared- or tensor-memory claim: its ``size`` (bytes or columns; 0 when unsized), the ring it is per
    slot of."""

    stage: str
    name: str
    size: int
    per_slot: str | None
    span: Span


@dataclass(frozen=True)
class CounterUse:
    """A ``counter`` endpoint (``claim`` False: ``role`` ``side``s it) or a ``claim counter``."""

    stage: str
    name: str
    claim: bool
    scope: str | None
    role: str | None
    side: str | None
    space: str | None
    domain: str | None
    span: Span


@dataclass(frozen=True)
class Callable:
    """An ``export callable`` of a stage."""

    stage: str
    name: str
    symbol: str
    span: Span
    captured: Captured | None


@dataclass(frozen=True)
class CallSite:
    """A ``call``: its signature, and the exports that serve it (one in an accepted composition)."""

    stage: str
    name: str
    symbol: str
    caller_kind: str
    caller: str
    params: tuple[str, ...]
    result: str
    span: Span
    captured: Captured | None
    exports: tuple[Callable, ...]


@dataclass(frozen=True)
class HostCall:
    """A ``host provider … fn NAME``: the launch helpers call it on the stage's params block."""

    stage: str
    package: str | None
    library: str
    function: str
    fills: tuple[str, ...]
    span: Span


@dataclass(frozen=True)
class NamedItem:
    stage: str
    name: str
    span: Span


@dataclass(frozen=True)
class Tensor:
    """An ``export tensor`` (``export`` None; ``ring`` the ring that feeds it, if any) or an ``import tensor``
    of ``export``."""

    stage: str
    name: str
    span: Span
    elem: str | None
    ring: str | None
    export: str | None


@dataclass(frozen=True)
class LaunchLines:
    """The launch lines: the first one's kind and ``blocks_per_sm``, the grid the first line that states
    one gives (``resident``: as many blocks as the SMs hold), any ``cooperative``, and the blocks per SM
    the launch asks for (1 when unstated)."""

    kind: str | None
    blocks_per_sm: int | None
    grid: int | None
    resident: bool
    cooperative: bool
    blocks: int


@dataclass(frozen=True)
class LinkInputs:
    pipeline: str
    span: Span
    target: TargetSpec | None
    target_name: str
    target_span: Span
    stages: tuple[LinkStage, ...]
    roles: Mapping[str, LinkRole]
    ring_inits: tuple[RingInit, ...]
    ring_counts: tuple[RingCount, ...]
    facts: Mapping[str, FactOwner]
    params: tuple[ParamsBlock, ...]
    smem: tuple[Claim, ...]
    tmem: tuple[Claim, ...]
    counters: tuple[CounterUse, ...]
    calls: tuple[CallSite, ...]
    callables: tuple[Callable, ...]
    providers: tuple[HostCall, ...]
    shared: tuple[NamedItem, ...]  # `buffer` and `domain` items (the role-entry ABI has none)
    tensor_exports: tuple[Tensor, ...]
    tensor_imports: tuple[Tensor, ...]  # in import order (pipeline order, then source order)
    launch: LaunchLines
    cluster: tuple[int, int, int] | None  # None: the stages accept several shapes and the pipeline names none
    ring_fed: RingFed  # the ring-fed exports: hand-offs generated and refused

    @property
    def has_tensors(self) -> bool:
        return bool(self.tensor_imports or self.tensor_exports)

    def ring_count(self, stage: str, ring: str, which: str) -> RingCount | None:
        return next((c for c in self.ring_counts if (c.stage, c.ring, c.which) == (stage, ring, which)), None)


def link_inputs(comp: Composition) -> LinkInputs:
    """What the link reads from ``comp`` (an accepted composition whose stages come from packages)."""
    return LinkInputs(
        comp.pipeline.name,
        comp.pipeline.span,
        comp.target,
        comp.target_name,
        comp.target_span,
        tuple(_stage(e) for e in comp.stages),
        {
            name: LinkRole(info.stage.name, name, info.role.entry, info.role.regs, info.role.span)
            for name, info in comp.roles.items()
        },
        tuple(_ring_inits(comp)),
        tuple(_ring_counts(comp)),
        _facts(comp),
        tuple(_params_blocks(comp)),
        tuple(
            Claim(o.stage_name, o.item.name, o.item.bytes or 0, o.item.per_slot, o.item.span)
            for o in comp.items(A.SmemClaim)
        ),
        tuple(
            Claim(o.stage_name, o.item.name, o.item.columns or 0, None, o.item.span) for o in comp.items(A.TmemClaim)
        ),
        tuple(_counters(comp)),
        tuple(_calls(comp)),
        tuple(_callable(o) for o in comp.items(A.ExportCallable)),
        tuple(_providers(comp)),
        tuple(_shared(comp)),
        tuple(
            Tensor(o.stage_name, o.item.name, o.item.span, o.item.elem, o.item.ring, None)
            for o in comp.items(A.ExportTensor)
        ),
        tuple(
            Tensor(o.stage_name, o.item.name, o.item.span, o.item.elem, o.item.ring, o.item.export)
            for o in comp.tensor_imports
        ),
        _launch(comp),
        _cluster(comp),
        ring_fed(comp),
    )


def _stage(entry: StageEntry) -> LinkStage:
    needed = entry.captured.needed_symbols if entry.captured is not None else frozenset()
    use = entry.use
    return LinkStage(
        entry.name,
        entry.stage.version,
        entry.stage.span,
        use.span if use is not None else None,
        use.path if use is not None else None,
        entry.package,
        entry.source,
        entry.captured,
        tuple(resolve_handles(entry.stage, needed).values()),
    )


def _shared(comp: Composition) -> Iterator[NamedItem]:
    for b in comp.items(A.Buffer):
        yield NamedItem(b.stage_name, b.item.name, b.item.span)
    for d in comp.items(A.Domain):
        yield NamedItem(d.stage_name, d.item.name, d.item.span)


def _ring_inits(comp: Composition) -> Iterator[RingInit]:
    """Each ring side whose `init by` names a role of its own stage, in stage then source order."""
    for owned in comp.items(A.Ring):
        init = owned.item.first(A.RingInitBy)
        if isinstance(init, A.RingInitBy) and any(r.name == init.role for r in owned.stage.stage.roles):
            yield RingInit(owned.item.name, owned.stage_name, init.role)


def _ring_counts(comp: Composition) -> Iterator[RingCount]:
    for ring, sides in comp.rings.items():
        for owned in sides:
            for part in owned.item.items:
                if isinstance(part, A.RingBarrierInit):
                    value, error = _count(comp, part.count)
                    text = count_text(part.count)
                    yield RingCount(ring, owned.stage_name, part.barrier, text, part.span, value, error)


def _count(comp: Composition, count: A.Count) -> tuple[int | None, str]:
    """An arrival count with the composition's role widths."""
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        info = comp.roles.get(term.role or "")
        if info is None:
            return None, f"count names role `{term.role}`, which the composition lacks"
        per = {"per_warp": info.warps, "per_thread": info.threads, "per_warpgroup": info.warps // 4}[term.unit]
        total += term.coef * per
    return total, ""


def _facts(comp: Composition) -> dict[str, FactOwner]:
    pinned = pins(comp)
    out = {}
    for name, owners in comp.owners.items():
        if owners:
            pin = pinned.get(name)
            if pin is not None:
                out[name] = FactOwner(name, owners[0].stage_name, "exact", (pin.value,), (pin.value,), pin.why)
                continue
            value = owners[0].item.value
            out[name] = FactOwner(name, owners[0].stage_name, value.kind, value.values, value.candidates() or ())
    return out


def _params_blocks(comp: Composition) -> Iterator[ParamsBlock]:
    for entry in comp.stages:
        uses = {u.param: u.name for u in entry.stage.items if isinstance(u, A.UsesFact)}
        for block in (it for it in entry.stage.items if isinstance(it, A.Params)):
            fields = tuple(
                ParamsField(f.name, f.type, f.offset, f.fact or uses.get(f.name), f.values) for f in block.fields
            )
            yield ParamsBlock(entry.name, block.name, block.size, block.align, fields)


def _counters(comp: Composition) -> Iterator[CounterUse]:
    """Every ``claim counter`` then every ``counter`` endpoint, each in stage then source order."""
    for o in comp.items(A.CounterClaim):
        yield CounterUse(o.stage_name, o.item.name, True, o.item.scope, None, None, None, None, o.item.span)
    for e in comp.items(A.Counter):
        c = e.item
        yield CounterUse(e.stage_name, c.name, False, c.scope, c.role, c.side, c.space, c.domain, c.span)


def _callable(o: Owned[A.ExportCallable]) -> Callable:
    return Callable(o.stage_name, o.item.name, o.item.symbol, o.item.span, o.stage.captured)


def _calls(comp: Composition) -> Iterator[CallSite]:
    for call in comp.calls:
        c, sig = call.item, call.item.signature
        exports = tuple(_callable(e) for e in serving_exports(comp, call))
        yield CallSite(
            call.stage_name,
            c.name,
            c.symbol,
            c.caller_kind,
            c.caller,
            sig.params,
            sig.result,
            c.span,
            call.stage.captured,
            exports,
        )


def _providers(comp: Composition) -> Iterator[HostCall]:
    for entry in comp.stages:
        for p in entry.stage.items:
            if isinstance(p, A.HostProvider) and p.function is not None:
                yield HostCall(entry.name, entry.package, p.library, p.function, p.fills, p.span)


def _cluster(comp: Composition) -> tuple[int, int, int] | None:
    """The cluster shape the kernel launches with: the pipeline's `cluster` line, else 1x1x1 when
    every stage accepts it, else the one shape all stages accept; None when that is ambiguous."""
    for item in comp.pipeline.items:
        if isinstance(item, A.PipelineCluster):
            return (item.shape.x, item.shape.y, item.shape.z)
    common: set[tuple[int, int, int]] | None = None
    for entry in comp.stages:
        lines = [it for it in entry.stage.items if isinstance(it, A.Cluster)]
        shapes = {(s.x, s.y, s.z) for line in lines for s in line.shapes} if lines else {(1, 1, 1)}
        common = shapes if common is None else common & shapes
    if not common or (1, 1, 1) in common:
        return (1, 1, 1)
    return next(iter(common)) if len(common) == 1 else None


def _launch(comp: Composition) -> LaunchLines:
    lines = comp.launches
    first = next(iter(lines), None)
    stated = next((line for line in lines if line.grid_text is not None), None)
    return LaunchLines(
        first.kind if first is not None else None,
        first.blocks_per_sm if first is not None else None,
        stated.grid if stated is not None and not stated.resident else None,
        stated is not None and stated.resident,
        any(line.cooperative for line in lines),
        launch_blocks(comp),
    )
