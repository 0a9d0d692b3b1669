"""From a checked composition to a placement problem, and the placement check itself.

Placement consumes verified contracts: :func:`place` is called only on compositions the
clauses accepted. Every claim, ring, role and lifetime of the composition becomes an
item of :class:`~placement.problem.Problem`, owned by its stage and carrying its span,
so a rejection (L-OVERLAP, L-WARPS, L-REGS, L-BARRIER, L-DEPTH) points at the contracts.
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.clauses.l_launch import residency_diagnostic
from checker.composition import Composition, Owned
from checker.memo import Memo
from checker.protocol.depths import placement_depths
from checker.residency import ResidencyFinding, blocks_line, launch_blocks
from checker.storage import needed_alignment
from contract_lang import ast as A
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware import residency as R
from hardware.targets import TargetSpec
from placement.lifetime import KERNEL, Connection, Interval, Lifetime, Phase, Timeline
from placement.problem import (
    BarrierClaim,
    Capacities,
    CounterClaim,
    Domain,
    Problem,
    Ring,
    Role,
    SmemClaim,
    TmemClaim,
)
from placement.result import Placement
from placement.solve import solve
from placement.verify import verify

# The events of a tensor connection, in the order they happen.
CONNECTION_EVENTS = ("ready", "done")


def lifetime(life: A.Lifetime) -> Lifetime:
    """The placement lifetime of a contract lifetime."""
    if life.kind == "phase" and life.phase is not None:
        return Phase(life.phase)
    if life.kind == "between" and life.start is not None and life.end is not None:
        return Interval(life.start.connection, life.start.event, life.end.event)
    if life.kind == "until" and life.end is not None:
        return Interval(life.end.connection, None, life.end.event)
    if life.kind == "from" and life.start is not None:
        return Interval(life.start.connection, life.start.event, None)
    return KERNEL


def timeline(comp: Composition) -> Timeline:
    phases: list[str] = []
    exclusive: list[tuple[str, ...]] = []
    for decl in comp.items(A.Phases):
        phases.extend(p for p in decl.item.names if p not in phases)
        if decl.item.mode == "exclusive" and len(set(decl.item.names)) > 1:
            exclusive.append(tuple(dict.fromkeys(decl.item.names)))
    connections = [Connection(imp.item.name, CONNECTION_EVENTS, span=imp.span) for imp in comp.tensor_imports]
    unique = {c.name: c for c in connections}
    return Timeline(tuple(phases), tuple(exclusive), tuple(unique.values()))


def _smem(comp: Composition, owned: Owned[A.SmemClaim]) -> SmemClaim:
    claim = owned.item
    assert comp.target is not None and claim.bytes is not None
    align = claim.align or needed_alignment(comp.target, claim.uses)[0]
    return SmemClaim(
        owned.stage_name,
        claim.name,
        claim.bytes,
        max(align, 1),
        lifetime(claim.lifetime),
        claim.per_slot,
        span=claim.span,
    )


def _rings(comp: Composition, memo: Memo | None) -> list[Ring]:
    """The rings at the depths the protocol model decides (an open range: all of them when the
    parametric argument covers it, then shared memory caps it; checker/protocol/depths.py)."""
    rings = []
    allowed = placement_depths(comp, memo)
    for name, sides in sorted(comp.rings.items()):
        producer = next((s for s in sides if s.item.side == "produce"), sides[0])
        lo, hi = allowed.get(name, (1, 1))
        rings.append(Ring(producer.stage_name, name, lo, hi, span=producer.span))
    return rings


def _barriers(comp: Composition) -> list[BarrierClaim]:
    out = []
    for owned in comp.items(A.BarrierClaim):
        claim = owned.item
        threads = claim.threads or sum(comp.roles[p].threads for p in claim.participants if p in comp.roles)
        out.append(BarrierClaim(owned.stage_name, claim.name, max(threads, 1), span=claim.span))
    for name, sides in sorted(comp.rendezvous.items()):
        stated = next((s.item.threads for s in sides if s.item.threads), None)
        count = (
            stated
            if stated is not None
            else sum(comp.roles[s.item.role].threads for s in sides if s.item.role in comp.roles)
        )
        out.append(BarrierClaim(sides[0].stage_name, f"rendezvous.{name}", max(count, 1), span=sides[0].span))
    return out


def _block_warps(comp: Composition) -> int | None:
    for launch in comp.launches:
        limit = comp.target.max_warps_per_block if comp.target is not None else 0
        if launch.threads and launch.threads % 32 == 0 and launch.threads // 32 <= limit:
            return launch.threads // 32  # a partial warp or an oversized block is L-WARPS's
    return None


def problem_from(comp: Composition, memo: Memo | None = None) -> Problem:
    """The placement problem of an accepted composition (``memo``: the check's, which holds the
    protocol's parametric result)."""
    if comp.target is None:
        raise ValueError("placement needs a known target")
    counters = [
        CounterClaim(o.stage_name, o.item.name, o.item.slots or 1, span=o.item.span) for o in comp.items(A.CounterClaim)
    ]
    caps = Capacities.from_target(
        comp.target, counter_slots=sum(c.slots for c in counters), blocks_per_sm=launch_blocks(comp)
    )
    return Problem(
        capacities=caps,
        smem=tuple(_smem(comp, o) for o in comp.items(A.SmemClaim) if o.item.bytes),
        rings=tuple(_rings(comp, memo)),
        tmem=tuple(
            TmemClaim(o.stage_name, o.item.name, o.item.columns, lifetime(o.item.lifetime), span=o.item.span)
            for o in comp.items(A.TmemClaim)
            if o.item.columns
        ),
        barriers=tuple(_barriers(comp)),
        counters=tuple(counters),
        roles=tuple(
            Role(info.stage.name, info.name, info.warps, info.role.warpgroup, info.role.regs, span=info.role.span)
            for info in comp.roles.values()
        ),
        timeline=timeline(comp),
        block_warps=_block_warps(comp),
    )


@dataclass(frozen=True)
class Placed:
    problem: Problem
    placement: Placement


def place(comp: Composition, memo: Memo | None = None) -> tuple[Placed | None, list[Diagnostic]]:
    """Solve the joint placement; a rejection or an unverifiable result is a diagnostic.
    ``memo``: results kept between the caller's checks (:class:`checker.memo.Memo`)."""
    try:
        problem = problem_from(comp, memo)
    except ValueError as err:  # an invariant the clauses should have caught first
        return None, [
            Diagnostic(
                Code.E_INTERNAL,
                f"the accepted composition does not form a placement problem: {err}",
                labels=(Label(_pipeline_span(comp), "in this composition"),),
                helps=("report it with the inputs: a clause should have rejected this",),
            )
        ]
    try:
        placement = solve(problem, memo=memo)
    except DiagnosticError as err:
        return None, list(err.diagnostics)
    problems = verify(problem, placement)
    if problems:
        return None, [
            Diagnostic(
                Code.E_INTERNAL,
                "the placement solver returned a placement its verifier rejects",
                labels=(Label(_pipeline_span(comp), "in this composition"),),
                notes=tuple(problems[:10]),
                helps=("report it with the inputs: this is a kernlink bug",),
            )
        ]
    found = residency_shortfall(comp, placement)
    if found is not None:
        return None, [residency_diagnostic(found, comp.target)] if comp.target is not None else []
    return Placed(problem, placement), []


def placed_residency(
    target: TargetSpec, placement: Placement, *, registers: int | None = None, barriers: int | None = None
) -> R.Residency:
    """Blocks per SM of the placed kernel: its warps, entry registers, shared memory, barrier IDs
    and tensor-memory columns, against the hardware table (not the per-block shares).

    After the device link, ``registers`` and ``barriers`` are the linked kernel's (ptxas').
    """
    smem = placement.use(Domain.SMEM)
    demand = R.Demand(
        warps=max(placement.block_warps, 1),
        regs_per_thread=registers or placement.entry_regs or R.reg_unit(target),
        smem_bytes=max(0, smem.end - target.smem_user_base),
        barriers=max(placement.use(Domain.BARRIER).end, barriers or 0, 1),
        tmem_columns=placement.use(Domain.TMEM).end,
    )
    return R.residency(target, demand)


def residency_shortfall(
    comp: Composition, placement: Placement, *, registers: int | None = None, barriers: int | None = None
) -> ResidencyFinding | None:
    """The resource that keeps the placed (or linked) kernel below its `blocks_per_sm`, or None."""
    line = blocks_line(comp)
    if comp.target is None or line is None or line.blocks_per_sm is None or line.blocks_per_sm < 1:
        return None
    res = placed_residency(comp.target, placement, registers=registers, barriers=barriers)
    short = [lim for lim in res.limits if lim.blocks < line.blocks_per_sm]
    if not short:
        return None
    what = (
        f"measured on the linked kernel: ptxas gave it {registers} registers per thread"
        if registers is not None
        else "measured on the placed kernel: its barrier IDs, shared memory, registers and tensor memory as placed"
    )
    return ResidencyFinding(line.blocks_per_sm, short[0], line.span, (what,))


def _pipeline_span(comp: Composition) -> Span:
    return comp.pipeline.span
