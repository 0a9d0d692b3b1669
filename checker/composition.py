"""The resolved composition every clause reads.

Resolution (checker/resolve.py) turns a pipeline and the stages it uses into this
model: stages by name and version, endpoints paired by channel name, the callable
and channel graphs, the fact table, phases and lifetime events, and the target's
hardware table. It is read-only: clauses are pure functions of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from contract_lang import ast as A
from diagnostics.span import Span
from hardware.targets import TargetSpec
from package.loader import StageEntry

N = TypeVar("N", bound=A.Node)


@dataclass(frozen=True)
class Owned(Generic[N]):
    """An AST item together with the stage that declares it."""

    stage: StageEntry
    item: N

    @property
    def span(self) -> Span:
        return self.item.span

    @property
    def stage_name(self) -> str:
        return self.stage.name


@dataclass(frozen=True)
class UnresolvedUse:
    """A `use` line no stage satisfies: none by that name, several equal ones, or a version miss."""

    use: A.Use
    reason: str  # "missing" | "duplicate" | "version" | "bad-requirement" | "unparsable"
    candidates: tuple[StageEntry, ...] = ()
    # for "unparsable": the file that hides the stage, a contract's syntax error (E-SYNTAX/E-NAME) or a
    # refused package (L-INTEGRITY report it)
    file: str | None = None


@dataclass(frozen=True)
class RoleInfo:
    stage: StageEntry
    role: A.Role

    @property
    def name(self) -> str:
        return self.role.name

    @property
    def warps(self) -> int:
        return self.role.warps or 0

    @property
    def threads(self) -> int:
        return self.warps * 32


CallNode = tuple[str, str, str]  # (kind: "role" | "callable", stage, name)


@dataclass
class CallGraph:
    """Callers and the exports serving their calls: a node per role and per exported callable.

    Nodes and, per node, successors are kept in first-insertion order (the order
    networkx's DiGraph gave, which L-CYCLE's path search depends on); a second edge
    between the same two nodes replaces the first one's call, as ``add_edge`` did.
    """

    succ: dict[CallNode, dict[CallNode, Owned[A.Call]]] = field(default_factory=dict)

    def add_node(self, node: CallNode) -> None:
        self.succ.setdefault(node, {})

    def add_edge(self, src: CallNode, dst: CallNode, call: Owned[A.Call]) -> None:
        self.add_node(src)
        self.add_node(dst)
        self.succ[src][dst] = call

    def edges(self) -> Iterator[tuple[CallNode, CallNode, Owned[A.Call]]]:
        """Every edge with its call: by source in node order, then by target in insertion order."""
        for src, targets in self.succ.items():
            for dst, call in targets.items():
                yield src, dst, call


@dataclass(frozen=True)
class ChannelEdge:
    """A producer role to a consumer role over one ring, counter or rendezvous."""

    src: str
    dst: str
    kind: str  # "ring" | "counter" | "rendezvous"
    name: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class ChannelGraph:
    """Roles and the channels between them, in insertion order; an edge is unique per ends and key."""

    roles: dict[str, None] = field(default_factory=dict)
    channels: dict[tuple[str, str, str], ChannelEdge] = field(default_factory=dict)

    def add_role(self, role: str) -> None:
        self.roles.setdefault(role, None)

    def add_edge(self, edge: ChannelEdge) -> None:
        self.add_role(edge.src)
        self.add_role(edge.dst)
        self.channels[edge.src, edge.dst, edge.key] = edge


@dataclass(frozen=True)
class Composition:
    """A pipeline resolved against its stages, for one target."""

    pipeline: A.Pipeline
    pipeline_source: str
    stages: tuple[StageEntry, ...]
    target_name: str
    target: TargetSpec | None
    target_span: Span
    roles: dict[str, RoleInfo] = field(default_factory=dict)
    rings: dict[str, tuple[Owned[A.Ring], ...]] = field(default_factory=dict)
    counters: dict[str, tuple[Owned[A.Counter], ...]] = field(default_factory=dict)
    rendezvous: dict[str, tuple[Owned[A.Rendezvous], ...]] = field(default_factory=dict)
    exports: dict[str, tuple[Owned[A.ExportCallable], ...]] = field(default_factory=dict)
    calls: tuple[Owned[A.Call], ...] = ()
    tensor_exports: dict[str, tuple[Owned[A.ExportTensor], ...]] = field(default_factory=dict)
    tensor_imports: tuple[Owned[A.ImportTensor], ...] = ()
    owners: dict[str, tuple[Owned[A.OwnsFact], ...]] = field(default_factory=dict)
    events: dict[str, Owned[A.Node]] = field(default_factory=dict)
    unresolved: tuple[UnresolvedUse, ...] = ()
    # candidate stages (beside the pipeline, named, or packaged) that no `use` selects
    unused: tuple[StageEntry, ...] = ()
    call_graph: CallGraph = field(default_factory=CallGraph)
    channel_graph: ChannelGraph = field(default_factory=ChannelGraph)
    _by_kind: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def items(self, kind: type[N]) -> Iterator[Owned[N]]:
        """Every item of one AST type across the stages, in stage then source order.

        Indexed once per type (the stages are immutable): clauses ask for the same
        kinds many times, and a scan of every item per question made checks quadratic.
        """
        found = self._by_kind.get(kind)
        if found is None:
            found = tuple(
                Owned(entry, item) for entry in self.stages for item in entry.stage.items if isinstance(item, kind)
            )
            self._by_kind[kind] = found
        return iter(found)

    def item_index(self, stage: A.Stage, item: A.Node) -> int:
        """An item's index in its stage, by identity (0 when it is not one of the stage's items)."""
        key = ("positions", id(stage))
        found = self._by_kind.get(key)
        if found is None or found[0] is not stage:
            found = self._by_kind[key] = (stage, {id(it): i for i, it in enumerate(stage.items)})
        return found[1].get(id(item), 0)

    @property
    def launch_lines(self) -> tuple[tuple[A.Launch, StageEntry | None], ...]:
        """Every `launch` line with the stage stating it: the pipeline's first (stage None), then the stages'."""
        found = self._by_kind.get("launch_lines")
        if found is None:
            found = self._by_kind["launch_lines"] = (
                *((item, None) for item in self.pipeline.items if isinstance(item, A.Launch)),
                *((owned.item, owned.stage) for owned in self.items(A.Launch)),
            )
        return found

    @property
    def launches(self) -> tuple[A.Launch, ...]:
        """Every `launch` line: the pipeline's first, then the stages' in order (the first one rules)."""
        return tuple(launch for launch, _ in self.launch_lines)

    def stage(self, name: str) -> StageEntry | None:
        return next((s for s in self.stages if s.name == name), None)

    def role(self, name: str) -> RoleInfo | None:
        return self.roles.get(name)

    @property
    def total_warps(self) -> int:
        return sum(info.warps for info in self.roles.values())

    @property
    def interpreter_phases(self) -> dict[str, Owned[A.Phases]]:
        """Phase name → the declaration by the interpreter stage that runs it (shared: do not modify)."""
        found = self._by_kind.get("interpreter_phases")
        if found is None:
            found = {}
            for decl in self.items(A.Phases):
                for name in decl.item.names:
                    found.setdefault(name, decl)
            self._by_kind["interpreter_phases"] = found
        return found

    def phase_exclusive(self, a: str, b: str) -> bool:
        """Whether the interpreter declares phases ``a`` and ``b`` mutually exclusive."""
        if a == b:
            return False
        for decl in self.items(A.Phases):
            if decl.item.mode == "exclusive" and a in decl.item.names and b in decl.item.names:
                return True
        return False
