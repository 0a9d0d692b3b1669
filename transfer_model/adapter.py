"""From a placed composition to its tensor seams, and the route of each.

Runs after placement (a role's threads depend on its warp offset): for every
`import tensor` the export it names, both maps (library maps expanded), the roles'
thread ranges, and what the consumer lends become a seam; :func:`route_composition`
checks each seam's maps (L-MAP) and picks its route (L-ROUTE, L-SCRATCH).
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.clauses import l_map
from checker.composition import Composition, Owned
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from placement.adapter import Placed
from transfer_model.library import LibraryError, library_map
from transfer_model.maps import Chunk, LayoutMap
from transfer_model.routes import Route, check_maps, select_route
from transfer_model.tensors import Lends, RoleThreads, TensorExport, TensorImport


@dataclass(frozen=True)
class Seam:
    """One tensor connection on the placed roles; ``lent_claims`` are the consumer's lent smem claims.

    ``export_stage`` / ``import_stage`` name the stages that declare each side.
    """

    export: TensorExport
    imp: TensorImport
    lends: Lends
    lent_claims: tuple[str, ...]
    export_stage: str = ""
    import_stage: str = ""


@dataclass(frozen=True)
class RoutedSeam:
    seam: Seam
    route: Route


def layout_map(spec: A.MapSpec) -> LayoutMap:
    """A contract's map as a transfer-model map (library maps expanded)."""
    if isinstance(spec, A.LibraryMap):
        expanded = library_map(spec.name, dict(spec.args))
        return LayoutMap(expanded.kind, expanded.params, expanded.outputs, expanded.exprs, span=spec.span)
    params = tuple((p.name, p.extent if p.extent is not None else 0) for p in spec.params)
    exprs = tuple(a.expr for a in spec.assigns)
    return LayoutMap(spec.kind, params, tuple(a.name for a in spec.assigns), exprs, span=spec.span)


def _threads(placed: Placed, stage: str, role: str) -> RoleThreads | None:
    """The placed threads of ``stage``'s role ``role``; None when the stage has no such role (L-ROLE's)."""
    found = next((r for r in placed.placement.roles if r.owner == stage and r.name == role), None)
    return RoleThreads(found.first_warp * 32, found.warps * 32) if found is not None else None


def _lends(comp: Composition, imp: Owned[A.ImportTensor]) -> tuple[Lends, tuple[str, ...]]:
    claims = {o.item.name: o.item for o in comp.items(A.SmemClaim) if o.stage is imp.stage}
    smem = [claims[lend.claim] for lend in imp.item.lends if lend.kind == "smem" and lend.claim in claims]
    regs = sum(lend.regs or 0 for lend in imp.item.lends if lend.kind == "regs")
    smem_bytes = sum(c.bytes or 0 for c in smem) if smem else None
    return Lends(smem_bytes, regs), tuple(c.name for c in smem)


def seams(comp: Composition, placed: Placed) -> tuple[list[Seam], list[Diagnostic]]:
    """Every tensor connection as a seam, or a diagnostic when a map cannot be built."""
    out: list[Seam] = []
    problems: list[Diagnostic] = []
    for imp in comp.tensor_imports:
        exports = comp.tensor_exports.get(imp.item.export, ())
        if not exports or exports[0].item.placement is None or imp.item.demand is None:
            continue  # L-TENSOR / L-MAP's structural part report these
        exp = exports[0]
        exp_threads = _threads(placed, exp.stage_name, exp.item.role)
        imp_threads = _threads(placed, imp.stage_name, imp.item.role)
        if exp_threads is None or imp_threads is None:
            continue  # a side on another stage's role (or none): L-ROLE reports it
        try:
            placement, demand = layout_map(exp.item.placement), layout_map(imp.item.demand)  # type: ignore[arg-type]
        except (LibraryError, ValueError) as err:
            spec = exp.item.placement if isinstance(exp.item.placement, A.LibraryMap) else imp.item.demand
            problems.append(l_map.unreadable(str(err).rstrip("."), spec.span))
            continue
        tile = tuple((d.name, d.extent) for d in exp.item.tile)
        chunk = Chunk(imp.item.chunk[0].name, imp.item.chunk[0].extent) if imp.item.chunk else None
        lends, lent = _lends(comp, imp)
        export = TensorExport(
            exp.item.name,
            exp.item.role,
            exp.item.elem or "f32",
            tile,
            placement,
            exp_threads,
            exp.item.generation or "once",
            str(exp.item.ready or ""),
            span=exp.item.span,
            group_barriers=_group_barriers(comp, exp.item.ring, "produce", exp.item.role, exp_threads),
        )
        tensor_import = TensorImport(
            imp.item.name,
            imp.item.export,
            imp.item.role,
            imp.item.elem or export.elem,
            tile,
            demand,
            imp_threads,
            chunk,
            imp.item.generation,
            str(imp.item.done or ""),
            span=imp.item.span,
            group_barriers=_group_barriers(comp, exp.item.ring, "consume", imp.item.role, imp_threads),
        )
        out.append(Seam(export, tensor_import, lends, lent, exp.stage_name, imp.stage_name))
    return out, problems


def _group_barriers(comp: Composition, ring: str | None, side: str, role: str, threads: RoleThreads) -> int:
    """For a ring-fed connection whose ``side`` of ``ring`` (by ``role``) arrives ``per_warpgroup(role)``:
    the role's warpgroups, each synchronising its threads before one of them arrives; else 0."""
    for owned in comp.rings.get(ring or "", ()):
        if (owned.item.side, owned.item.role) != (side, role):
            continue
        arrives = [s for s in owned.item.steps if isinstance(s, A.RingArrive)]
        if len(arrives) == 1 and [(t.coef, t.unit, t.role) for t in arrives[0].count.terms] == [
            (1, "per_warpgroup", role)
        ]:
            return threads.count // 128
    return 0


def route_composition(comp: Composition, placed: Placed) -> tuple[list[RoutedSeam], list[Diagnostic]]:
    """Check every seam's maps and choose its route; diagnostics for every failure."""
    target = comp.target
    has_tmem = bool(target is not None and target.tmem_columns)
    found, diags = seams(comp, placed)
    routed: list[RoutedSeam] = []
    for seam in found:
        wrong = _warpgroups(comp, seam)
        if wrong is not None:
            diags.append(wrong)
            continue
        map_problems = check_maps(seam.export, seam.imp)
        if map_problems:
            diags.extend(map_problems)
            continue
        result = select_route(seam.export, seam.imp, seam.lends, target_has_tmem=has_tmem)
        diags.extend(result.diagnostics)
        if result.route is not None:
            routed.append(RoutedSeam(seam, result.route))
    return routed, diags


def _warpgroups(comp: Composition, seam: Seam) -> Diagnostic | None:
    """L-MAP for a library placement whose `warpgroups:` disagrees with its role: the role line and the value."""
    exp = next((e for e in comp.tensor_exports.get(seam.export.name, ()) if e.stage_name == seam.export_stage), None)
    spec = exp.item.placement if exp is not None else None
    if not isinstance(spec, A.LibraryMap):
        return None
    args = dict(spec.args)
    info = comp.roles.get(seam.export.role)
    if "warpgroups" not in args or info is None:
        return None
    width = 128  # threads of a warpgroup
    given, threads = args["warpgroups"], seam.export.threads.count
    if given * width == threads or threads % width:
        return None
    return l_map.warpgroups_mismatch(
        seam.export.name,
        seam.export.role,
        given,
        threads,
        (spec.span, spec.name),
        (info.role.span, info.name, info.warps),
    )
