"""The typed, immutable model of contracts (``.kc``) and pipelines (``.kp``).

Every node is a frozen dataclass carrying the source span it was parsed from.
Spans never take part in equality, so ``parse(print(x)) == x`` compares meaning,
not layout. Optional attributes are ``None`` when the source omits them; the
checker's clauses, not the parser, decide whether an omission is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from contract_lang.expr import Expr
from diagnostics.span import UNKNOWN_SPAN, Span

# Closed vocabularies. The parser rejects anything else with a "did you mean".
SCALAR_TYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "ptr")
#: A params field's type: a scalar, or ``tensormap`` (a ``CUtensorMap`` held in the block by value).
FIELD_TYPES = (*SCALAR_TYPES, "tensormap")
ELEM_TYPES = ("f32", "f16", "bf16", "e4m3", "e5m2", "i32", "u32", "i8", "u8", "f64")
ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1, "i32": 4, "u32": 4, "i8": 1, "u8": 1, "f64": 8}
# Every feature of the hardware table (hardware/targets.py FEATURE_SOURCES; a test keeps them equal).
FEATURES = (
    "tma",
    "tma_multicast",
    "mbarrier",
    "wgmma",
    "setmaxnreg",
    "tmem",
    "tcgen05",
    "clusters",
    "dsmem",
    "multimem",
    "mma_sync",
    "ldmatrix",
    "stmatrix",
    "cp_async_bulk",
    "named_barriers",
)
SCOPES = ("cta", "cluster", "gpu", "sys")
GUARANTEES = ("converged", "full_warps", "enter_once", "no_early_return")
VIEWS = ("peer", "multicast")
SMEM_USES = ("generic", "tma", "wgmma", "ldmatrix", "swizzle32", "swizzle64", "swizzle128", "mbarrier", "bulk_copy")
GENERATIONS = ("once", "persistent", "ring")
COUNTER_SPACES = ("global", "peer", "host")
# Which CTAs run a step (`on leader`): cluster rank 0 or the others; the first split of a
# tile's group or the others.
PARTS = ("leader", "peer", "first", "rest")
# What a counter wait waits for besides a number: the adds of the splits before it, of the
# other splits, of every split of its tile.
THRESHOLDS = ("split", "others", "all")


@dataclass(frozen=True)
class Node:
    span: Span = field(default=UNKNOWN_SPAN, compare=False, repr=False, kw_only=True)


# ----------------------------------------------------------------- common pieces


@dataclass(frozen=True)
class EventRef(Node):
    """``acc.ready``: event ``ready`` of tensor connection ``acc``."""

    connection: str
    event: str

    def __str__(self) -> str:
        return f"{self.connection}.{self.event}"


@dataclass(frozen=True)
class Lifetime(Node):
    """When a claim is live: the whole kernel, one phase, or an event interval."""

    kind: Literal["kernel", "phase", "between", "until", "from"]
    phase: str | None = None
    start: EventRef | None = None
    end: EventRef | None = None

    def __post_init__(self) -> None:
        needs = {
            "kernel": (False, False, False),
            "phase": (True, False, False),
            "between": (False, True, True),
            "until": (False, False, True),
            "from": (False, True, False),
        }[self.kind]
        have = (self.phase is not None, self.start is not None, self.end is not None)
        if needs != have:
            raise ValueError(f"malformed `{self.kind}` lifetime")


KERNEL_LIFETIME = Lifetime("kernel")


# ----------------------------------------------------------------- stage items


@dataclass(frozen=True)
class Target(Node):
    name: str


@dataclass(frozen=True)
class Features(Node):
    names: tuple[str, ...]


@dataclass(frozen=True)
class Role(Node):
    """A role; ``turn T of N``: its loop takes the units ``T, T + N, …`` (ping-pong warpgroups)."""

    name: str
    entry: str | None = None
    warps: int | None = None
    regs: int | None = None
    warpgroup: bool = False
    turn: int | None = None
    turns: int | None = None


@dataclass(frozen=True)
class Launch(Node):
    """``launch KIND [threads N] [blocks_per_sm B] [grid G | grid resident] [cooperative]``.

    ``grid`` is the number of blocks launched (``resident``: as many as the SMs hold at
    once, blocks_per_sm × SMs); ``cooperative`` launches with
    ``cudaLaunchCooperativeKernel``, which refuses a grid that cannot be resident.
    """

    kind: Literal["persistent", "fixed"]
    threads: int | None = None
    blocks_per_sm: int | None = None
    grid: int | None = None
    resident: bool = False
    cooperative: bool = False

    @property
    def grid_text(self) -> str | None:
        """The grid as written (``resident`` or a count), None when unstated."""
        return "resident" if self.resident else (None if self.grid is None else str(self.grid))


@dataclass(frozen=True)
class TmaBox(Node):
    """``box 64, 128 elem bf16``: the box of the tensor map a ``ptr`` field points to (innermost
    dimension first), so a TMA copy through it completes ``product(dims) * sizeof(elem)`` bytes.
    A dimension may name a ``u32`` field of the same params block (``box 64, a_box_rows elem bf16``):
    the host sizes the box at run time and writes its size there."""

    dims: tuple[int | str, ...]
    elem: str

    @property
    def bytes(self) -> int | None:
        """The bytes of one box; None when a dimension is a params field's run-time value."""
        size = ELEM_BYTES[self.elem]
        for d in self.dims:
            if isinstance(d, str):
                return None
            size *= d
        return size

    @property
    def fields(self) -> tuple[str, ...]:
        """The params fields that size a dimension."""
        return tuple(d for d in self.dims if isinstance(d, str))


@dataclass(frozen=True)
class ParamField(Node):
    name: str
    type: str
    offset: int
    fact: str | None = None
    box: TmaBox | None = None
    #: ``in {16, 32, 64}``: the only values the host may write to this integer field (empty: any);
    #: conformance decides the code for each of them (a box sized by the field, a copy count).
    values: tuple[int, ...] = ()


@dataclass(frozen=True)
class Params(Node):
    name: str
    size: int
    align: int
    fields: tuple[ParamField, ...] = ()


@dataclass(frozen=True)
class TmemRead(Node):
    """``read by epilogue lanes 0..127``: a role reads these tensor-memory lanes."""

    role: str
    lane_lo: int
    lane_hi: int


#: How a private mbarrier's arrival is made: ``commit`` is a ``tcgen05.commit …
#: mbarrier::arrive::one`` (the arrival lands once the role's earlier tcgen05 operations complete).
SIGNAL_ARRIVES = ("commit",)


@dataclass(frozen=True)
class Signal(Node):
    """``signal by ROLE init N arrive KIND wait parity P``: the protocol of the mbarrier in a stage's own
    claim (``use mbarrier``). ``role`` initialises it to ``init`` arrivals and fences the init, arrives on it
    by ``arrive``, then waits on the phase of parity ``parity``: one phase per run of the role."""

    role: str
    init: int
    arrive: str
    parity: int


@dataclass(frozen=True)
class SmemClaim(Node):
    name: str
    bytes: int | None = None
    align: int | None = None
    per_slot: str | None = None
    lifetime: Lifetime = KERNEL_LIFETIME
    handle: str | None = None
    uses: tuple[str, ...] = ()
    signal: Signal | None = None
    #: the size as written when it is an expression of the stage's facts (``x_rows * 128``); the
    #: int beside it is its value (§7). How it was written, as a span is: not compared.
    bytes_expr: Expr | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TmemClaim(Node):
    name: str
    columns: int | None = None
    lifetime: Lifetime = KERNEL_LIFETIME
    handle: str | None = None
    reads: tuple[TmemRead, ...] = ()


@dataclass(frozen=True)
class BarrierClaim(Node):
    """A named (``bar.sync``) barrier local to the stage."""

    name: str
    participants: tuple[str, ...] = ()
    threads: int | None = None
    handle: str | None = None
    orders: tuple[str, ...] = ()
    """``orders C``: the shared-memory claims whose accesses by different threads of the participants
    the barrier orders (a write and a later access, a read and a later write, in the loop around both)."""


@dataclass(frozen=True)
class CounterClaim(Node):
    name: str
    slots: int | None = None
    scope: str | None = None
    handle: str | None = None


Claim = SmemClaim | TmemClaim | BarrierClaim | CounterClaim


@dataclass(frozen=True)
class CountTerm(Node):
    """One term of an arrival count: ``coef * unit(role)``, or a constant when ``unit == "one"``."""

    coef: int
    unit: Literal["one", "per_warp", "per_thread", "per_warpgroup"]
    role: str | None = None

    def __post_init__(self) -> None:
        if (self.unit == "one") != (self.role is None):
            raise ValueError("a constant count term has no role; a per-unit term needs one")


@dataclass(frozen=True)
class Count(Node):
    terms: tuple[CountTerm, ...]

    def __post_init__(self) -> None:
        if not self.terms:
            raise ValueError("a count needs at least one term")


BarrierKind = Literal["full", "empty"]


@dataclass(frozen=True)
class RingDepth(Node):
    lo: int
    hi: int


@dataclass(frozen=True)
class RingBarrierInit(Node):
    """``full init 1 expect_tx 16KiB``: the barrier's per-phase arrival count and bytes."""

    barrier: BarrierKind
    count: Count
    expect_tx: int | None = None
    #: the size as written when it is an expression of the stage's facts (``x_rows * 128``); the
    #: int beside it is its value (§7). How it was written, as a span is: not compared.
    expect_tx_expr: Expr | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RingWait(Node):
    """``full wait [parity P] [on PART]``; ``on``: only those CTAs wait (:data:`PARTS`)."""

    barrier: BarrierKind
    parity: int | None = None
    on: str | None = None


@dataclass(frozen=True)
class RingArrive(Node):
    """``empty arrive COUNT [tx B] [lag L] [prearm] [remote] [multicast] [on PART]``.

    ``remote``: on the cluster peer's barrier; ``multicast``: on the barrier of every CTA of
    the cluster; ``on``: only those CTAs arrive.
    """

    barrier: BarrierKind
    count: Count
    tx: int | None = None
    lag: int | None = None
    prearm: bool = False
    remote: bool = False
    multicast: bool = False
    on: str | None = None
    #: the size as written when it is an expression of the stage's facts (``x_rows * 128``); the
    #: int beside it is its value (§7). How it was written, as a span is: not compared.
    tx_expr: Expr | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RingCopy(Node):
    """An asynchronous copy completing ``bytes`` on the barrier per phase, into the
    per-slot claim ``into`` when stated (``full copy 16KiB into a_tiles``).

    ``multicast``: it lands in the slot of every CTA of the cluster and completes on each
    one's barrier; ``remote``: it lands in this CTA's slot and completes on the cluster
    peer's barrier (a 2-CTA pair's copy); ``on``: only those CTAs issue it.
    """

    barrier: BarrierKind
    bytes: int
    into: str | None = None
    multicast: bool = False
    remote: bool = False
    on: str | None = None
    #: the size as written when it is an expression of the stage's facts (``x_rows * 128``); the
    #: int beside it is its value (§7). How it was written, as a span is: not compared.
    bytes_expr: Expr | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RingRead(Node):
    """``read [async] [multicast] [on PART]``: this side reads the slot here (instead of right after
    its `full wait`); ``async``: the reads complete only at a later ``read wait`` (a TMA store
    from shared memory, ``tcgen05.ld``); ``multicast``: it reads the slot of every CTA of the
    cluster (a 2-CTA MMA)."""

    asynchronous: bool = False
    multicast: bool = False
    on: str | None = None


@dataclass(frozen=True)
class RingReadWait(Node):
    """``read wait [lag L] [on PART]``: wait until this side's asynchronous reads of the data
    iterations up to ``L`` back are done (``cp.async.bulk.wait_group.read``, ``tcgen05.wait::ld``)."""

    lag: int | None = None
    on: str | None = None


@dataclass(frozen=True)
class RingRestart(Node):
    """``restart N``: the slot index restarts every ``N`` iterations (a staging index per tile)."""

    every: int


@dataclass(frozen=True)
class RingLag(Node):
    """``lag N``: the side runs ``N`` iterations behind its role's loop, peeled: at iteration ``i`` its
    steps act on data iteration ``i - N`` (the first ``N`` iterations run none of them), and after
    the loop they run ``N`` more times, for the last ``N`` data iterations (software pipelining)."""

    count: int


@dataclass(frozen=True)
class RingOnce(Node):
    """``once``: the side acts on one data iteration per CTA, outside its role's loop: its steps up to
    its first release run once before the loop, its releases (and what follows them) once after it
    (a Q tile filled once, waited for before the loop and released after it)."""


@dataclass(frozen=True)
class RingLoops(Node):
    """``loops N``: the role's code runs the side's steps in ``N`` loops, alternatives chosen at run time,
    one of them per unit of work (a k-loop instantiated per tile shape: ``if (m <= 16) mainloop<16>(…)
    else mainloop<32>(…)``), each moving the one ring position the others carry on (specs/language.md §8.8)."""

    count: int


@dataclass(frozen=True)
class RingInitBy(Node):
    role: str
    fenced: bool = False


@dataclass(frozen=True)
class RingScope(Node):
    scope: str


@dataclass(frozen=True)
class RingProxy(Node):
    """``writes async`` / ``reads generic``: the memory proxy this side uses on the slots."""

    access: Literal["writes", "reads"]
    proxy: Literal["generic", "async"]


@dataclass(frozen=True)
class RingFence(Node):
    kind: Literal["proxy_async"] = "proxy_async"


RingItem = (
    RingDepth
    | RingBarrierInit
    | RingWait
    | RingArrive
    | RingCopy
    | RingRead
    | RingReadWait
    | RingRestart
    | RingLag
    | RingOnce
    | RingLoops
    | RingInitBy
    | RingScope
    | RingProxy
    | RingFence
)
RING_STEP_TYPES = (RingWait, RingArrive, RingCopy, RingRead, RingReadWait)


@dataclass(frozen=True)
class Ring(Node):
    """One side of an mbarrier ring; steps run in the order written, once per iteration."""

    name: str
    side: Literal["produce", "consume"]
    role: str
    items: tuple[RingItem, ...] = ()

    def first(self, kind: type[RingItem]) -> RingItem | None:
        return next((it for it in self.items if isinstance(it, kind)), None)

    @property
    def depth(self) -> RingDepth | None:
        item = self.first(RingDepth)
        return item if isinstance(item, RingDepth) else None

    @property
    def scope(self) -> str | None:
        item = self.first(RingScope)
        return item.scope if isinstance(item, RingScope) else None

    @property
    def steps(self) -> tuple[RingWait | RingArrive | RingCopy, ...]:
        return tuple(it for it in self.items if isinstance(it, (RingWait, RingArrive, RingCopy)))

    @property
    def restart(self) -> int | None:
        item = self.first(RingRestart)
        return item.every if isinstance(item, RingRestart) else None

    @property
    def once(self) -> bool:
        """Whether the side runs once per CTA, outside its role's loop (``once``)."""
        return self.first(RingOnce) is not None

    @property
    def loops(self) -> int:
        """The alternative loops the role's code runs the side's steps in (``loops N``; 1 when not stated)."""
        item = self.first(RingLoops)
        return item.count if isinstance(item, RingLoops) else 1

    @property
    def lag(self) -> int:
        """The iterations the side runs behind its role's loop (``lag N``; 0 when not stated)."""
        item = self.first(RingLag)
        return item.count if isinstance(item, RingLag) else 0


@dataclass(frozen=True)
class CounterStep(Node):
    """``add N [on PART]`` or ``wait ge N|split|others|all [on PART]`` (``threshold``: the word, if not a number)."""

    op: Literal["add", "wait_ge"]
    amount: int
    threshold: str | None = None
    on: str | None = None


@dataclass(frozen=True)
class Counter(Node):
    """One endpoint of a readiness counter (across CTAs or GPUs)."""

    name: str
    side: Literal["produce", "consume"]
    role: str
    scope: str | None = None
    domain: str | None = None
    space: str | None = None
    steps: tuple[CounterStep, ...] = ()


@dataclass(frozen=True)
class Rendezvous(Node):
    """One side of a named-barrier hand-off between stages (``bar.arrive`` / ``bar.sync``)."""

    name: str
    mode: Literal["arrive", "sync"]
    role: str
    threads: int | None = None
    prearm: bool = False
    """Once before the loop, not in it (a ping-pong warpgroup letting the other one start)."""
    lag: int | None = None
    """``lag N``: the side runs ``N`` iterations late (not in the role's first ``N``) and ``N`` more
    times after the loop, as a ring side's ``lag`` (a warpgroup that takes its first turn unsynced)."""
    peeled: bool = False
    """``peeled``: the side also runs in its role's peeled phases after the loop (§8.3)."""


@dataclass(frozen=True)
class Signature(Node):
    params: tuple[str, ...]
    result: str

    def __str__(self) -> str:
        return f"({', '.join(self.params)}) -> {self.result}"


@dataclass(frozen=True)
class ExportCallable(Node):
    name: str
    signature: Signature
    symbol: str
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call(Node):
    """A call site: made by a role's code, or inside one of the stage's exported callables."""

    name: str
    signature: Signature
    symbol: str
    caller: str
    caller_kind: Literal["role", "callable"] = "role"
    guarantees: tuple[str, ...] = ()


@dataclass(frozen=True)
class MapParam(Node):
    name: str
    extent: int | None = None


@dataclass(frozen=True)
class MapAssign(Node):
    name: str
    expr: Expr


@dataclass(frozen=True)
class LayoutMap(Node):
    """``regs(t: 256, r: 128) -> (m, n) { m = …  n = … }``: a closed-form map."""

    kind: Literal["regs", "tmem", "smem"]
    params: tuple[MapParam, ...]
    outputs: tuple[str, ...]
    assigns: tuple[MapAssign, ...] = ()


@dataclass(frozen=True)
class LibraryMap(Node):
    """``library wgmma_m64nNk16_f32(n: 256, warpgroups: 2)``: a map from transfer_model's library."""

    name: str
    args: tuple[tuple[str, int], ...] = ()


MapSpec = LayoutMap | LibraryMap


@dataclass(frozen=True)
class Dim(Node):
    name: str
    extent: int


@dataclass(frozen=True)
class Lend(Node):
    kind: Literal["smem", "regs"]
    claim: str | None = None
    regs: int | None = None


@dataclass(frozen=True)
class ExportTensor(Node):
    name: str
    role: str
    elem: str | None = None
    tile: tuple[Dim, ...] = ()
    generation: str | None = None
    ring: str | None = None
    """``generation ring R``: one generation per tile, each in a slot of ring ``R``."""
    placement: MapSpec | None = None
    ready: EventRef | None = None
    # Where each attribute line (`elem`, `tile`, …) was written, for precise diagnostics.
    attr_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)

    def attr_span(self, key: str) -> Span:
        """The span of attribute line ``key``, or of the whole declaration when it is absent."""
        return dict(self.attr_spans).get(key, self.span)


@dataclass(frozen=True)
class ImportTensor(Node):
    name: str
    export: str
    role: str
    elem: str | None = None
    tile: tuple[Dim, ...] = ()
    chunk: tuple[Dim, ...] = ()
    generation: str | None = None
    ring: str | None = None
    demand: MapSpec | None = None
    lends: tuple[Lend, ...] = ()
    done: EventRef | None = None
    attr_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)

    def attr_span(self, key: str) -> Span:
        """The span of attribute line ``key``, or of the whole declaration when it is absent."""
        return dict(self.attr_spans).get(key, self.span)


@dataclass(frozen=True)
class Fragment(Node):
    """A register fragment handed to an exported callable (specs/language.md §10.1).

    ``import tensor NAME into callable C { elem, tile, demand }``: callable ``C`` of this stage takes
    its argument ``NAME`` as the caller's registers, register ``p`` of thread ``t`` (of its group)
    holding element ``demand(t, p)``. ``export tensor NAME into call C { elem, tile, placement }``:
    this stage's call of ``C`` passes its registers so, register ``r`` of thread ``t`` holding
    ``placement(t, r)``.
    """

    name: str
    callable: str
    side: Literal["import", "export"]
    elem: str | None = None
    tile: tuple[Dim, ...] = ()
    map: MapSpec | None = None
    attr_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)

    def attr_span(self, key: str) -> Span:
        """The span of attribute line ``key``, or of the whole declaration when it is absent."""
        return dict(self.attr_spans).get(key, self.span)


@dataclass(frozen=True)
class FactValue(Node):
    """An owner's value: exact, an inclusive range, or a set of values."""

    kind: Literal["exact", "range", "set"]
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        expected = {"exact": 1, "range": 2}.get(self.kind)
        if (expected is not None and len(self.values) != expected) or not self.values:
            raise ValueError(f"malformed `{self.kind}` fact value")

    def candidates(self, limit: int = 1 << 16) -> tuple[int, ...] | None:
        """Every value the fact can take, or None when a range is too wide to list."""
        if self.kind == "range":
            lo, hi = self.values
            return tuple(range(lo, hi + 1)) if hi - lo < limit else None
        return tuple(sorted(set(self.values)))


@dataclass(frozen=True)
class OwnsFact(Node):
    name: str
    type: str
    value: FactValue


@dataclass(frozen=True)
class UsesFact(Node):
    name: str
    type: str
    param: str


@dataclass(frozen=True)
class AssumesFact(Node):
    name: str
    type: str
    value: int


@dataclass(frozen=True)
class RequiresFact(Node):
    expr: Expr


@dataclass(frozen=True)
class Phases(Node):
    """An interpreter's phases: mutually exclusive, or run concurrently."""

    mode: Literal["exclusive", "concurrent"]
    names: tuple[str, ...]


@dataclass(frozen=True)
class AssumesPhases(Node):
    """A stage relies on these phases never running together."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class ClusterShape(Node):
    x: int
    y: int
    z: int

    def __str__(self) -> str:
        return f"{self.x}x{self.y}x{self.z}"

    @property
    def size(self) -> int:
        return self.x * self.y * self.z


@dataclass(frozen=True)
class Cluster(Node):
    shapes: tuple[ClusterShape, ...]


@dataclass(frozen=True)
class Domain(Node):
    name: str
    views: tuple[str, ...]


@dataclass(frozen=True)
class Buffer(Node):
    name: str
    bytes: int
    symmetric: bool = False
    domain: str | None = None
    views: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostProvider(Node):
    """``host provider "SOURCE" [fn NAME] [fills f, …] [header "H"]``: a stage's host-side setup code.

    With ``fn`` it is called by the launch helpers (``kernel.h``, ``kernlink.Session``) as
    ``CUresult NAME(void* params, CUstream stream)`` on the stage's params block, before the
    launch, and writes the ``fills`` fields; ``library`` is then its C source, beside the contract.
    """

    library: str
    header: str | None = None
    function: str | None = None
    fills: tuple[str, ...] = ()


N = TypeVar("N", bound=Node)

StageItem = (
    Target
    | Features
    | Role
    | Launch
    | Params
    | SmemClaim
    | TmemClaim
    | BarrierClaim
    | CounterClaim
    | Ring
    | Counter
    | Rendezvous
    | ExportCallable
    | Call
    | ExportTensor
    | ImportTensor
    | Fragment
    | OwnsFact
    | UsesFact
    | AssumesFact
    | RequiresFact
    | Phases
    | AssumesPhases
    | Cluster
    | Domain
    | Buffer
    | HostProvider
)


@dataclass(frozen=True)
class Stage(Node):
    name: str
    version: str
    items: tuple[StageItem, ...] = ()

    def of(self, kind: type[N]) -> tuple[N, ...]:
        return tuple(it for it in self.items if isinstance(it, kind))

    @property
    def target(self) -> Target | None:
        return next(iter(self.of(Target)), None)

    @property
    def roles(self) -> tuple[Role, ...]:
        return tuple(it for it in self.items if isinstance(it, Role))

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(it for it in self.items if isinstance(it, Claim))

    @property
    def rings(self) -> tuple[Ring, ...]:
        return tuple(it for it in self.items if isinstance(it, Ring))

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(name for it in self.items if isinstance(it, Features) for name in it.names)


# ----------------------------------------------------------------- pipelines


@dataclass(frozen=True)
class Use(Node):
    stage: str
    requirement: str
    path: str | None = None


@dataclass(frozen=True)
class PipelineCluster(Node):
    shape: ClusterShape


@dataclass(frozen=True)
class ProvidesDomain(Node):
    name: str
    views: tuple[str, ...]


@dataclass(frozen=True)
class ProvidesBuffer(Node):
    name: str
    bytes: int


@dataclass(frozen=True)
class Resolve(Node):
    """``resolve call mask to "attn.mask"``: the pipeline picks the export serving a call."""

    call: str
    stage: str


PipelineItem = Target | Use | PipelineCluster | ProvidesDomain | ProvidesBuffer | Resolve | Launch


@dataclass(frozen=True)
class Pipeline(Node):
    name: str
    items: tuple[PipelineItem, ...] = ()

    @property
    def target(self) -> Target | None:
        return next((it for it in self.items if isinstance(it, Target)), None)

    @property
    def uses(self) -> tuple[Use, ...]:
        return tuple(it for it in self.items if isinstance(it, Use))


@dataclass(frozen=True)
class SourceFile(Node):
    """One parsed file: its stages and/or pipelines, in source order."""

    path: str = field(compare=False)
    items: tuple[Stage | Pipeline, ...] = ()

    @property
    def stages(self) -> tuple[Stage, ...]:
        return tuple(it for it in self.items if isinstance(it, Stage))

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        return tuple(it for it in self.items if isinstance(it, Pipeline))


# ----------------------------------------------------------------- item kinds

Block = Literal["stage", "pipeline"]


@dataclass(frozen=True)
class ItemKind:
    """One kind of item: its AST class, how a message names one, and the blocks it may stand in."""

    node: type[Node]
    noun: str
    blocks: tuple[Block, ...] = ("stage",)


ITEM_KINDS: tuple[ItemKind, ...] = (
    ItemKind(Target, "a target line", ("stage", "pipeline")),
    ItemKind(Features, "a feature requirement"),
    ItemKind(Role, "a role"),
    ItemKind(Launch, "a launch line", ("stage", "pipeline")),
    ItemKind(Params, "a params block"),
    ItemKind(SmemClaim, "a shared-memory claim"),
    ItemKind(TmemClaim, "a tensor-memory claim"),
    ItemKind(BarrierClaim, "a named-barrier claim"),
    ItemKind(CounterClaim, "a counter"),
    ItemKind(Ring, "a ring"),
    ItemKind(Counter, "a counter"),
    ItemKind(Rendezvous, "a rendezvous"),
    ItemKind(ExportCallable, "a callable export"),
    ItemKind(Call, "a call"),
    ItemKind(ExportTensor, "a tensor export"),
    ItemKind(ImportTensor, "a tensor import"),
    ItemKind(Fragment, "a register fragment"),
    ItemKind(OwnsFact, "an owned fact"),
    ItemKind(UsesFact, "a used fact"),
    ItemKind(AssumesFact, "an assumed fact"),
    ItemKind(RequiresFact, "a fact constraint"),
    ItemKind(Phases, "a phase declaration"),
    ItemKind(AssumesPhases, "a phase assumption"),
    ItemKind(Cluster, "a cluster line"),
    ItemKind(Domain, "a communication domain"),
    ItemKind(Buffer, "a buffer"),
    ItemKind(HostProvider, "a host provider"),
    ItemKind(Use, "a use line", ("pipeline",)),
    ItemKind(PipelineCluster, "a cluster line", ("pipeline",)),
    ItemKind(ProvidesDomain, "a caller-provided domain", ("pipeline",)),
    ItemKind(ProvidesBuffer, "a caller-provided buffer", ("pipeline",)),
    ItemKind(Resolve, "a resolve line", ("pipeline",)),
)
"""Every kind of item a stage or a pipeline holds. Its stage kinds are :data:`StageItem`, its
pipeline kinds :data:`PipelineItem`, and everything that handles each kind in turn (the printer,
the strategies and the mutation catalogue of :mod:`fuzzing`) is keyed by it: a new kind
fails ``tests/contract_lang/test_item_kinds.py`` until each one knows it."""

_KINDS: dict[type[Node], ItemKind] = {kind.node: kind for kind in ITEM_KINDS}


def item_kind(item: Node) -> ItemKind:
    """The kind of a stage or pipeline item (KeyError for any other node)."""
    return _KINDS[type(item)]
