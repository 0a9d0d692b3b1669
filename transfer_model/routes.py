"""The route ladder: choose the cheapest primitive that provably delivers a tensor.

``select_route`` checks the import against the export (L-TENSOR, L-DTYPE), both maps
(L-MAP), then tries the rungs cheapest first — tensor-memory load, direct register
copy, warp shuffle, shared-memory staging (``transfer_model.primitives``) — and takes
the first that passes every check. When none does it reports L-SCRATCH (staging would
work but needs more shared memory than the consumer lends) or L-ROUTE, with every
rung's failing check and witness as notes and data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from checker.clauses import l_map, l_route, l_scratch
from diagnostics.model import Diagnostic, Label
from diagnostics.span import UNKNOWN_SPAN, Span
from transfer_model.maps import REGS, TMEM, check_map
from transfer_model.primitives import (
    LADDER,
    REGISTER_COPY,
    SMEM_STAGING,
    TMEM_LOAD,
    RungResult,
    Seam,
    StagingPlan,
    TmemPlan,
    barrier_threads,
    register_copy,
    smem_staging,
    tmem_load,
    warp_shuffle,
)
from transfer_model.smt import DEFAULT_RLIMIT, session
from transfer_model.tensors import ELEM_BYTES, Lends, TensorExport, TensorImport, check_identity

if TYPE_CHECKING:
    from transfer_model.program import Program

TMEM_LANES = 128
TMEM_COLUMNS = 512
"""Tensor memory per CTA on sm_100a/sm_103a (specs/hardware.md §6)."""


@dataclass(frozen=True)
class Route:
    """The chosen rung with its proven plan; ``program`` gives its moves (built on first use)."""

    result: RungResult
    seam: Seam = field(compare=False, repr=False)

    @property
    def rung(self) -> str:
        return self.result.rung

    @property
    def smem_bytes(self) -> int:
        """Shared-memory scratch the route needs from the consumer's lent claim."""
        plan = self.result.plan
        return plan.smem_bytes if isinstance(plan, StagingPlan) and plan.mode != "buffer" else 0

    @property
    def barriers(self) -> int:
        """Named barrier IDs the linker must assign (a tensor-memory route orders its loads with one; a
        ring-fed route one per warpgroup that arrives on its ring for the group, linker/ring_fed.py: the
        ring's mbarriers order each generation)."""
        plan = self.result.plan
        if self.seam.export.generation == "ring":
            return self.seam.export.group_barriers + self.seam.imp.group_barriers
        if isinstance(plan, TmemPlan):
            return 1
        return plan.barriers if isinstance(plan, StagingPlan) else 0

    @property
    def barrier_threads(self) -> int:
        """Threads each of the route's named barriers counts (0: it has none; a ring-fed route's: a warpgroup)."""
        if self.seam.export.generation == "ring":
            return 128 if self.barriers else 0
        return barrier_threads(self.seam, self.result)

    @property
    def needs_tmem_address(self) -> bool:
        return self.rung == TMEM_LOAD

    @property
    def needs_smem_address(self) -> bool:
        return isinstance(self.result.plan, StagingPlan)

    @cached_property
    def program(self) -> Program:
        from transfer_model.program import build_program  # the moves: read when a route is lowered, not checked

        return build_program(self.seam, self.result)


@dataclass(frozen=True)
class RouteResult:
    route: Route | None
    rungs: tuple[RungResult, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return self.route is not None


def _known(span: Span) -> bool:
    return span != UNKNOWN_SPAN


def seam_labels(export: TensorExport, imp: TensorImport) -> tuple[Label, ...]:
    demand = imp.demand.span if _known(imp.demand.span) else imp.span
    placement = export.placement.span if _known(export.placement.span) else export.span
    out = []
    if _known(demand):
        out.append(Label(demand, "demanded here", True))
    if _known(placement):
        out.append(Label(placement, "placed here", False))
    return tuple(out)


def check_maps(export: TensorExport, imp: TensorImport, rlimit: int = DEFAULT_RLIMIT) -> list[Diagnostic]:
    """L-MAP for both sides: exact maps whose thread variables match their roles."""
    placement, demand = export.placement, imp.demand
    p_what, d_what = f"placement of `{export.name}`", f"demand of `{imp.name}`"
    out: list[Diagnostic] = []

    p_span = placement.span if _known(placement.span) else None
    d_span = demand.span if _known(demand.span) else None
    if placement.kind == REGS and placement.thread[1] != export.threads.count:
        out.append(l_map.threads_mismatch(p_what, placement.thread[1], export.role, export.threads.count, p_span))
    if placement.kind == TMEM and len(placement.params) == 2:
        (lane, lanes), (col, cols) = placement.params
        if lanes > TMEM_LANES or cols > TMEM_COLUMNS:
            out.append(l_map.tmem_too_large(p_what, lane, lanes, col, cols, p_span, (TMEM_LANES, TMEM_COLUMNS)))
    if demand.kind != REGS:
        out.append(l_map.demand_not_registers(d_what, demand.kind, d_span))
    elif demand.thread[1] != imp.threads.count:
        out.append(l_map.threads_mismatch(d_what, demand.thread[1], imp.role, imp.threads.count, d_span))
    if out:
        return out
    elem_bytes = ELEM_BYTES.get(export.elem)
    out += check_map(placement, export.tile, what=p_what, elem_bytes=elem_bytes, rlimit=rlimit)
    out += check_map(demand, imp.tile, what=d_what, chunk=imp.chunk, rlimit=rlimit)
    return out


def select_route(
    export: TensorExport,
    imp: TensorImport,
    lends: Lends,
    *,
    target_has_tmem: bool,
    rlimit: int = DEFAULT_RLIMIT,
) -> RouteResult:
    """Check the seam and pick the first rung of the ladder that delivers every element exactly."""
    with session():
        return _select(export, imp, lends, target_has_tmem, rlimit)


def _select(
    export: TensorExport,
    imp: TensorImport,
    lends: Lends,
    target_has_tmem: bool,
    rlimit: int,
) -> RouteResult:
    diags = check_identity(export, imp)
    if diags:
        return RouteResult(None, (), tuple(diags))
    diags = check_maps(export, imp, rlimit)
    if diags:
        return RouteResult(None, (), tuple(diags))
    seam = Seam(export, imp, rlimit)
    results: list[RungResult] = []
    for rung in LADDER:
        if seam.elem_bytes == 0:
            supported = ", ".join(f"`{e}`" for e in ELEM_BYTES)
            result = RungResult(rung, False, "element", f"generated transfers move {supported}, not `{export.elem}`")
        elif rung == TMEM_LOAD:
            result = tmem_load(seam, target_has_tmem)
        elif rung == SMEM_STAGING:
            result = smem_staging(seam, lends)
        elif rung == REGISTER_COPY:
            result = register_copy(seam)
        else:
            result = warp_shuffle(seam)
        results.append(result)
        if result.passed:
            return RouteResult(Route(result, seam), tuple(results), ())
    return RouteResult(None, tuple(results), (_failure(seam, tuple(results)),))


def _rung_note(result: RungResult) -> str:
    return f"{result.title}: fails the `{result.check}` check: {result.reason}"


def _rung_data(results: tuple[RungResult, ...]) -> tuple[tuple[str, str], ...]:
    data: list[tuple[str, str]] = []
    for r in results:
        data.append((f"{r.rung}.check", r.check))
        data.append((f"{r.rung}.reason", r.reason))
        if r.witness is not None:
            data.append((f"{r.rung}.witness", r.witness.text()))
    return tuple(data)


def _failure(seam: Seam, results: tuple[RungResult, ...]) -> Diagnostic:
    export, imp = seam.export, seam.imp
    labels = seam_labels(export, imp)
    staging = results[-1]
    if staging.check == "scratch-size":
        others = tuple(_rung_note(r) for r in results[:-1])
        message, help_ = l_scratch.shortfall(export.name, imp.name, imp.role, staging.needed, staging.lent)
        return Diagnostic(
            l_scratch.CODE,
            message,
            labels=labels,
            notes=others,
            helps=(help_,),
            data=(("needed", str(staging.needed)), ("lent", str(staging.lent)), *_rung_data(results)),
        )
    return Diagnostic(
        l_route.CODE,
        l_route.no_route(export.name, export.role, imp.name, imp.role),
        labels=labels,
        notes=tuple(_rung_note(r) for r in results),
        helps=(_route_help(seam, staging),),
        data=_rung_data(results),
    )


def _route_help(seam: Seam, staging: RungResult) -> str:
    imp = seam.imp
    if staging.check == "scratch":
        return f"lend shared memory to `{imp.role}` (`lends smem <claim>`) so the tile can be staged"
    if staging.check == "threads":
        return "import into the producer's own role, or into a role of its own"
    if staging.check == "element":
        return "export and import a 2- or 4-byte element type"
    if seam.placement.kind == TMEM:
        return (
            "demand the tile as `tcgen05.ld` delivers it (e.g. one lane per thread, consecutive "
            "columns in consecutive registers) from warps whose lane quadrant holds those lanes"
        )
    return "demand the elements in a layout one of the primitives can deliver"
