"""What L-LAUNCH decides about residency at check time, from the contracts alone.

The formulas are :mod:`hardware.residency`'s; this module collects a composition's
demand on each resource (the block's warps, the entry registers ``blocks_per_sm``
allows, a lower bound of its named-barrier IDs and tensor-memory columns) and finds
the first resource that cannot give ``blocks_per_sm`` blocks. Shared memory is
placement's: it gives each block its share and rejects claims that do not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.composition import Composition
from checker.warps import block_layout
from contract_lang import ast as A
from diagnostics.span import Span
from hardware import residency as R
from hardware.targets import TargetSpec


@dataclass(frozen=True)
class ResidencyFinding:
    """``blocks`` blocks per SM were asked for at ``span``; ``limit`` allows fewer."""

    blocks: int
    limit: R.Limit
    span: Span
    notes: tuple[str, ...] = ()


def blocks_line(comp: Composition) -> A.Launch | None:
    """The launch line whose `blocks_per_sm` is the reference (the first stating one)."""
    return next((launch for launch in comp.launches if launch.blocks_per_sm is not None), None)


def launch_blocks(comp: Composition) -> int:
    """The `blocks_per_sm` the launch asks for, 1 when unstated."""
    line = blocks_line(comp)
    return line.blocks_per_sm if line is not None and line.blocks_per_sm is not None and line.blocks_per_sm > 0 else 1


def block_warps(comp: Composition, target: TargetSpec) -> int:
    """The block's warps: the stated `threads` when whole warps, else the packed roles."""
    stated = next((launch.threads for launch in comp.launches if launch.threads), None)
    if stated is not None and stated % target.warp_size == 0:
        return stated // target.warp_size
    return block_layout(comp, target).warps


def residency_finding(comp: Composition, target: TargetSpec) -> ResidencyFinding | None:
    """The first resource that cannot give the stated `blocks_per_sm` blocks, or None."""
    line = blocks_line(comp)
    if line is None or line.blocks_per_sm is None or line.blocks_per_sm < 1:
        return None
    blocks = line.blocks_per_sm
    warps = block_warps(comp, target)
    if not 0 < warps <= target.max_warps_per_block:
        return None  # L-WARPS
    entry = R.entry_registers(target, warps, blocks)
    barriers = 1 + (1 if any(True for _ in comp.items(A.BarrierClaim)) or comp.rendezvous else 0)
    tmem = max(
        (R.tmem_allocation(target, c.item.columns) or 0 for c in comp.items(A.TmemClaim) if c.item.columns), default=0
    )
    demand = R.Demand(warps, entry or R.reg_unit(target), 0, barriers, tmem)
    res = R.residency(target, demand)
    short = [lim for lim in res.limits if lim.blocks < blocks]
    if not short:
        return None
    notes: list[str] = []
    if short[0].resource == "registers" and entry == 0:
        notes.append(
            f"even {R.reg_unit(target)} registers per thread allow only {short[0].blocks} blocks of {warps} warps"
        )
    if short[0].resource == "named barriers":
        notes.append("the count is a lower bound: ID 0 (`__syncthreads`) and at least one claimed barrier")
    return ResidencyFinding(blocks, short[0], line.span, tuple(n for n in notes if n))


def grid_waits(comp: Composition) -> list[tuple[Span, str]]:
    """Where a role waits on a counter other blocks of the grid raise (`scope gpu` with a `wait`)."""
    found = []
    raised = {o.item.name for o in comp.items(A.Counter) if o.item.side == "produce" and o.item.scope == "gpu"}
    for owned in comp.items(A.Counter):
        side = owned.item  # both sides `scope gpu`: a scope mismatch is L-PAIR's, not a grid question
        if (
            side.side == "consume"
            and side.scope == "gpu"
            and side.name in raised
            and any(step.op == "wait_ge" for step in side.steps)
        ):
            found.append((side.span, f"`{side.role}` waits on `{side.name}`, raised by other blocks"))
    return found
