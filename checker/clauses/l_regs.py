"""L-REGS: the register groups' budgets do not fit the registers the CTA is launched with.

## What it checks
At check time, from the declared budgets. Register groups are warpgroups
(`setmaxnreg` acts per warpgroup); the roles are packed in declaration order,
`warpgroup` roles aligned to a warp index divisible by 4 with idle padding before
them, and the block has W warps, T = 32 × W threads, padding included (the linker
launches exactly these warps; a block that is not whole warpgroups is not padded to
them). A group's budget is the largest `regs` of the roles with a warp in it; a role
without `regs` counts as the setmaxnreg minimum (24). The CTA is launched with E
registers per thread: the largest multiple of the allocation unit of 8, at most
`max_regs_per_thread`, with which `blocks_per_sm` blocks (1 when unstated) fit the
SM's register file — warps take 256-register units of the 4 sub-partitions' files,
and a block's warps count as a multiple of 4 (specs/hardware.md §3.1): T = 384 gives
E = 168, 13 warps give 128, 384 threads at `blocks_per_sm 2` give 80. The clause
rejects when

    Σ over warpgroups of budget × threads of the group  >  E × T   (the CTA's register pool)

When no `launch` line states `threads`, placement may pad the block with idle warps
(at the setmaxnreg minimum) to grow the pool; the clause then rejects only when no
padded block up to the target's limit fits either. Placement uses the same formulas
(`hardware/residency.py`), so a block this clause accepts can always be given its
budgets. It runs only when some role declares
`regs`, every budget is a valid setmaxnreg operand (else L-REGRANGE reports) and the
block fits (else L-WARPS reports).

After the device link the linker checks the same sum against the linked kernel's
real entry register count R read from the cubin (`EIATTR_REGCOUNT`; ptxas derives
it from `__launch_bounds__(T, blocks_per_sm)`, so `blocks_per_sm 2` halves it):
the pool is ⌊R/8⌋·8 × T. When the groups do not fit it, the linker re-solves the
placement once with R as the entry count and links again; budgets that still do
not fit, or a second link whose count differs again, fail with this code
(`linker/link.py` documents the rule).

## Why it matters
`setmaxnreg.inc` takes registers from the CTA's pool, which holds what the kernel
was launched with; `.dec` gives them back. The budgets together can never exceed
the pool: an increase that cannot be satisfied blocks forever. On an H200 with 384
threads (E = 168, pool 64 512), budgets 40 / 232 / 232 complete and 40 / 240 / 240
hang (specs/hardware.md §3.2). No compiler or driver reports it.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 4 warpgroup regs 40
    role mma entry mma_main warps 8 warpgroup regs 240
}
```

## Fix
Lower the budgets until they sum, over the warpgroups, to at most E × T / 128
(504 at 384 threads: 40 / 232 / 232), or shrink the block so E grows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition
from checker.report import plural
from checker.residency import launch_blocks, residency_finding
from checker.warps import BlockLayout, PlacedRole, RegisterGroup, block_layout, register_groups
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware import residency
from hardware.targets import TargetSpec

CODE = Code.L_REGS


@dataclass(frozen=True)
class PoolOverflow:
    """Register groups whose budgets exceed the CTA's pool, wherever that was decided.

    The check decides it from the declared budgets, placement from the roles it lays
    out, the linker from the entry count ptxas gave the linked kernel: one finding,
    one message shape. ``labels`` are (span, text) with the first as the primary.
    """

    demand: int
    entry: int
    threads: int
    labels: tuple[tuple[Span, str], ...]
    notes: tuple[str, ...] = ()
    helps: tuple[str, ...] = ("lower the roles' `regs`, or the block's `blocks_per_sm`",)
    data: tuple[tuple[str, str], ...] = ()

    @property
    def pool(self) -> int:
        return self.entry * self.threads


def pool_overflow(found: PoolOverflow) -> Diagnostic:
    """The one shape of an L-REGS pool overflow: need, pool, and the pool's two factors."""
    labels = tuple(Label(span, text, k == 0) for k, (span, text) in enumerate(found.labels))
    data = {
        "need": str(found.demand),
        "pool": str(found.pool),
        "entry_regs": str(found.entry),
        "threads": str(found.threads),
        **dict(found.data),
    }
    return Diagnostic(
        CODE,
        f"register groups need {_n(found.demand)} registers, the CTA pool holds {_n(found.pool)} "
        f"({found.entry} per thread × {found.threads} threads)",
        Severity.ERROR,
        labels,
        found.notes,
        found.helps,
        tuple(sorted(data.items())),
    )


def entry_below_minimum(
    kernel: str, entry: int, least: int, threads: int, labels: Sequence[tuple[Span, str]]
) -> Diagnostic:
    """The linked kernel starts with fewer registers than any `setmaxnreg` budget: no group can be placed."""
    return Diagnostic(
        CODE,
        f"the linked kernel `{kernel}` starts with {entry} registers per thread, fewer than the smallest "
        f"`setmaxnreg` budget ({least}): the roles' `regs` cannot be applied",
        Severity.ERROR,
        tuple(Label(span, text, k == 0) for k, (span, text) in enumerate(labels)),
        (
            f"the register pool is the entry count × the block's {threads} threads; "
            "`setmaxnreg` hands out whole steps of it",
        ),
        ("drop the roles' `regs` (the kernel needs few registers), or lower the block's `blocks_per_sm`",),
        (("entry", str(entry)), ("setmaxnreg_min", str(least))),
    )


def setmaxnreg_ignored(kernel: str, ptxas_lines: Sequence[str]) -> Diagnostic:
    """ptxas dropped the `setmaxnreg` instructions of the linked kernel: the groups would not apply."""
    return Diagnostic(
        CODE,
        f"ptxas ignored `setmaxnreg` in `{kernel}`: the register groups would not be applied",
        notes=tuple(line.strip() for line in ptxas_lines),
        helps=(
            "report it with the inputs: the dispatch kernel is generated with launch bounds that cap its "
            "entry registers",
        ),
    )


def resolve_moves_routes(entry: int, span: Span, moved: Sequence[str]) -> Diagnostic:
    """Re-solving the groups for the linked kernel's entry count would move roles a tensor route runs on."""
    return Diagnostic(
        CODE,
        f"re-solving the register groups for {entry} entry registers moves roles that tensor routes run on",
        labels=(Label(span, "in this composition"),),
        notes=tuple(moved),
        helps=("lower the roles' `regs`, or the block's `blocks_per_sm`",),
    )


class RegsClause(Clause):
    code = CODE
    name = "register-pool"
    summary = "the register groups cannot fit the register file"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None or not any(info.role.regs is not None for info in comp.roles.values()):
            return
        if any(not _valid(info.role.regs, target) for info in comp.roles.values()):
            return
        layout = block_layout(comp, target)
        if not 0 < layout.warps <= target.max_warps_per_block:
            return
        if residency_finding(comp, target) is not None:
            return  # the blocks per SM cannot be resident at all: L-LAUNCH reports the resource
        stated = {launch.threads for launch in comp.launches if launch.threads}
        if stated and stated != {layout.warps * target.warp_size}:
            return  # the block itself is wrong: L-WARPS / L-LAUNCH report it
        # one formula with placement (hardware/residency.py): the pool of W warps for B blocks per SM
        blocks = launch_blocks(comp)
        threads = layout.warps * target.warp_size
        entry = residency.entry_registers(target, layout.warps, blocks)
        pool = entry * threads
        groups = register_groups(layout, target)
        need = sum(g.registers(target, layout.warps) for g in groups)
        if need <= pool:
            return
        if not stated and any(
            _fits_padded(target, groups, w, blocks) for w in range(layout.warps + 1, target.max_warps_per_block + 1)
        ):
            return  # placement pads the block with idle warps at the setmaxnreg minimum
        yield self._report(layout, groups, target, need, entry, threads, blocks)

    def _report(
        self,
        layout: BlockLayout,
        groups: tuple[RegisterGroup, ...],
        target: TargetSpec,
        need: int,
        entry: int,
        threads: int,
        blocks: int,
    ) -> Diagnostic:
        pool = entry * threads
        group_threads = target.warpgroup_warps * target.warp_size
        running, overflow = 0, groups[-1]
        for group in groups:
            running += group.registers(target, layout.warps)
            if running > pool:
                overflow = group
                break
        primary = overflow.decided_by or layout.roles[0]
        labels = {p.name: _label(p, groups, target, layout.warps) for p in layout.roles if p.warps > 0}
        unit = residency.reg_unit(target)
        partial = (layout.warps % target.warpgroup_warps) * target.warp_size
        budgets = " + ".join(str(g.budget) for g in groups)
        defaulted = [p for p in layout.roles if p.warps > 0 and p.info.role.regs is None]
        ordered = [(primary.info.role.span, labels.pop(primary.name))]
        ordered += [(p.info.role.span, labels[p.name]) for p in layout.roles if p.name in labels]
        return pool_overflow(
            PoolOverflow(
                need,
                entry,
                threads,
                tuple(ordered),
                notes=(
                    f"the warpgroups' budgets sum to {budgets} = {sum(g.budget for g in groups)}, times "
                    f"{group_threads} threads each" + (f" (the last group holds {partial} threads)" if partial else ""),
                    f"{threads} threads enter with {entry} registers each: the largest multiple of {unit} "
                    f"(at most {target.max_regs_per_thread}) with which {plural(blocks, 'block')} of "
                    f"{layout.warps} warps {'fits' if blocks == 1 else 'fit'} the SM's {target.regs_per_sm} "
                    "registers (specs/hardware.md §3.1)",
                    "`setmaxnreg.inc` blocks until the pool can give what it asks; budgets above the pool hang the "
                    "kernel (on an H200 at 384 threads 40/232/232 completes, 40/240/240 hangs)",
                    *(
                        [f"a role without `regs` counts as the setmaxnreg minimum, {target.setmaxnreg_min}"]
                        if defaulted
                        else []
                    ),
                ),
                helps=(
                    f"lower the budgets so the {plural(len(groups), 'warpgroup')} sum to at most "
                    f"{pool // group_threads} (now {need // group_threads})"
                    + (f", or lower `blocks_per_sm {blocks}`" if blocks > 1 else "")
                    + _fitting(layout, groups, target, pool // group_threads),
                ),
                data=(("budgets", ",".join(str(g.budget) for g in groups)),),
            )
        )


def _fitting(layout: BlockLayout, groups: tuple[RegisterGroup, ...], target: TargetSpec, limit: int) -> str:
    """A set of budgets that fits: the highest ones capped at the largest level the pool allows."""
    budgets = [g.budget for g in groups]
    step, floor = target.setmaxnreg_step, target.setmaxnreg_min
    cap = max(budgets) // step * step
    while cap >= floor and sum(min(b, cap) for b in budgets) > limit:
        cap -= step
    if cap < floor:
        return f"; even {floor} per warpgroup does not fit: use fewer warps or fewer blocks per SM"
    stated = [(p.name, p.info.role.regs) for p in layout.roles if p.info.role.regs is not None]
    return ": e.g. " + ", ".join(f"`{name}` regs {min(regs, cap)}" for name, regs in stated)


def _fits_padded(target: TargetSpec, groups: tuple[RegisterGroup, ...], warps: int, blocks: int) -> bool:
    """Whether the groups fit the pool of a block padded to ``warps`` warps (idle warps take the minimum)."""
    width = target.warpgroup_warps
    budgets = [g.budget for g in groups]
    budgets += [target.setmaxnreg_min] * (-(-warps // width) - len(budgets))
    return residency.register_demand(target, warps, budgets, width) <= residency.register_pool(target, warps, blocks)


def _valid(regs: int | None, target: TargetSpec) -> bool:
    return regs is None or (
        target.setmaxnreg_min <= regs <= target.setmaxnreg_max and regs % target.setmaxnreg_step == 0
    )


def _label(placed: PlacedRole, groups: tuple[RegisterGroup, ...], target: TargetSpec, warps: int) -> str:
    decided = [g for g in groups if g.decided_by is placed]
    if not decided:
        shared = next(g for g in groups if placed in g.roles)
        decider = shared.decided_by.name if shared.decided_by is not None else "another role"
        return f"shares warpgroup {shared.index} with `{decider}` (budget {shared.budget})"
    budget = decided[0].budget
    threads = sum(g.registers(target, warps) for g in decided) // budget
    which = (
        f"warpgroup {decided[0].index}" if len(decided) == 1 else f"warpgroups {decided[0].index}–{decided[-1].index}"
    )
    stated = f"`regs {budget}`" if placed.info.role.regs is not None else f"no `regs`, counts as {budget}"
    return f"{stated} × {threads} threads ({which}) = {_n(budget * threads)}"


def _n(value: int) -> str:
    """An integer with its thousands separated by spaces, as in 64 512."""
    return f"{value:,}".replace(",", " ")
