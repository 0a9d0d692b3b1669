"""Resolve a pipeline against candidate stages into a :class:`Composition`.

Resolution never raises on bad input: a `use` that no stage satisfies is recorded
(L-STAGE / L-VERSION report it), colliding names keep their first declaration (the
clauses that own each rule report the collision), and everything else is indexed
for the clauses: endpoints by channel name, the call and channel graphs, the fact
table and the lifetime events of tensor connections.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from checker.composition import CallGraph, ChannelEdge, ChannelGraph, Composition, N, Owned, RoleInfo, UnresolvedUse
from checker.versions import Requirement, Version
from contract_lang import ast as A
from diagnostics.span import UNKNOWN_SPAN
from hardware.targets import target as lookup_target
from package.loader import StageEntry


def select_stages(
    pipeline: A.Pipeline, candidates: Sequence[StageEntry], unparsable: Mapping[str, str] | None = None
) -> tuple[list[StageEntry], list[UnresolvedUse]]:
    """Pick, for every `use`, the highest candidate version meeting its requirement.

    ``unparsable`` maps stage names to the file that declares them but did not parse: a
    `use` of such a stage is unresolved because of that file's syntax error, not missing.
    """
    by_name: dict[str, list[StageEntry]] = defaultdict(list)
    for cand in candidates:
        by_name[cand.name].append(cand)
    chosen: list[StageEntry] = []
    problems: list[UnresolvedUse] = []
    for use in pipeline.uses:
        pool = by_name.get(use.stage, [])
        if use.path is not None:
            packaged = [c for c in pool if c.package is not None and _same_path(c.package, use.path)]
            pool = packaged or pool
        req = Requirement.parse(use.requirement)
        if not pool:
            broken = (unparsable or {}).get(use.stage)
            problems.append(
                UnresolvedUse(use, "unparsable", file=broken) if broken is not None else UnresolvedUse(use, "missing")
            )
            continue
        if req is None:
            problems.append(UnresolvedUse(use, "bad-requirement", tuple(pool)))
            continue
        fitting = [c for c in pool if (v := Version.parse(c.stage.version)) is not None and req.matches(v)]
        if not fitting:
            problems.append(UnresolvedUse(use, "version", tuple(pool)))
            continue
        best = max(Version.parse(c.stage.version) or Version(0) for c in fitting)
        top = [c for c in fitting if Version.parse(c.stage.version) == best]
        if len(top) > 1:
            problems.append(UnresolvedUse(use, "duplicate", tuple(top)))
        chosen.append(_with_use(top[0], use))
    return chosen, problems


def _same_path(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b.lstrip("./")) or b.endswith("/" + a.lstrip("./"))


def _with_use(entry: StageEntry, use: A.Use) -> StageEntry:
    return StageEntry(entry.stage, entry.source, use, entry.package, entry.captured)


def resolve(
    pipeline: A.Pipeline,
    pipeline_source: str,
    candidates: Sequence[StageEntry],
    target_override: str | None = None,
    unparsable: Mapping[str, str] | None = None,
) -> Composition:
    """Build the composition the clauses read; never raises on bad input."""
    stages, unresolved = select_stages(pipeline, candidates, unparsable)
    used = {use.stage for use in pipeline.uses}
    unused = tuple(c for c in candidates if c.name not in used)
    target_item = pipeline.target
    if target_override is not None:
        target_name, target_span = target_override, UNKNOWN_SPAN
    elif target_item is not None:
        target_name, target_span = target_item.name, target_item.span
    else:
        first = next((s.stage.target for s in stages if s.stage.target is not None), None)
        target_name = first.name if first is not None else "sm_90a"
        target_span = first.span if first is not None else pipeline.span
    shell = Composition(
        pipeline=pipeline,
        pipeline_source=pipeline_source,
        stages=tuple(stages),
        target_name=target_name,
        target=lookup_target(target_name),
        target_span=target_span,
        unresolved=tuple(unresolved),
        unused=unused,
    )
    comp = _indexed(shell)
    _call_graph(comp)
    _channel_graph(comp)
    return comp


def _group(items: Iterable[Owned[N]]) -> dict[str, tuple[Owned[N], ...]]:
    groups: dict[str, list[Owned[N]]] = defaultdict(list)
    for owned in items:
        groups[owned.item.name].append(owned)  # type: ignore[attr-defined]
    return {k: tuple(v) for k, v in groups.items()}


def _indexed(comp: Composition) -> Composition:
    roles: dict[str, RoleInfo] = {}
    for owned in comp.items(A.Role):
        roles.setdefault(owned.item.name, RoleInfo(owned.stage, owned.item))
    events: dict[str, Owned[A.Node]] = {}
    for exp in comp.items(A.ExportTensor):
        if exp.item.ready is not None:
            events.setdefault(str(exp.item.ready), Owned(exp.stage, exp.item))
    imports = tuple(comp.items(A.ImportTensor))
    for imp in imports:
        if imp.item.done is not None:
            events.setdefault(str(imp.item.done), Owned(imp.stage, imp.item))
    return replace(
        comp,
        roles=roles,
        rings=_group(comp.items(A.Ring)),
        counters=_group(comp.items(A.Counter)),
        rendezvous=_group(comp.items(A.Rendezvous)),
        exports=_group(comp.items(A.ExportCallable)),
        tensor_exports=_group(comp.items(A.ExportTensor)),
        owners=_group(comp.items(A.OwnsFact)),
        calls=tuple(comp.items(A.Call)),
        tensor_imports=imports,
        events=events,
        call_graph=CallGraph(),
        channel_graph=ChannelGraph(),
    )


def serving_exports(comp: Composition, call: Owned[A.Call]) -> tuple[Owned[A.ExportCallable], ...]:
    """The exports that could serve a call, narrowed by the pipeline's `resolve` lines."""
    found = comp.exports.get(call.item.name, ())
    for item in comp.pipeline.items:
        if isinstance(item, A.Resolve) and item.call == call.item.name:
            return tuple(e for e in found if e.stage_name == item.stage)
    return found


def _call_graph(comp: Composition) -> None:
    graph = comp.call_graph
    for name, exports in comp.exports.items():
        for exp in exports:
            graph.add_node(("callable", exp.stage_name, name))
    for call in comp.calls:
        if call.item.caller_kind == "role":
            src = ("role", call.stage_name, call.item.caller)
        else:
            src = ("callable", call.stage_name, call.item.caller)
        graph.add_node(src)
        for exp in serving_exports(comp, call):
            graph.add_edge(src, ("callable", exp.stage_name, exp.item.name), call)


def _channel_graph(comp: Composition) -> None:
    graph = comp.channel_graph
    for info in comp.roles.values():
        graph.add_role(info.name)
    tables: tuple[tuple[str, Mapping[str, tuple[Owned[A.Ring] | Owned[A.Counter], ...]]], ...] = (
        ("ring", comp.rings),
        ("counter", comp.counters),
    )
    for kind, table in tables:
        for name, ends in table.items():
            producers = [e for e in ends if getattr(e.item, "side", None) == "produce"]
            consumers = [e for e in ends if getattr(e.item, "side", None) == "consume"]
            for p in producers:
                for c in consumers:
                    graph.add_edge(ChannelEdge(p.item.role, c.item.role, kind, name))
    for name, rdv in comp.rendezvous.items():
        arrivers = [e for e in rdv if e.item.mode == "arrive"]
        syncers = [e for e in rdv if e.item.mode == "sync"]
        for a in arrivers:
            for s in syncers:
                graph.add_edge(ChannelEdge(a.item.role, s.item.role, "rendezvous", name))
