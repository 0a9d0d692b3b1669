"""The block's warp layout and register groups, as the check-time clauses compute them.

Semantics (shared by L-WARPS, L-WARPGROUP and L-REGS; the placement solver keeps them):

- Roles are one composition-wide namespace, packed in declaration order (the
  pipeline's stage order, then source order). A role of ``warps w`` takes ``w``
  consecutive warps; a ``warpgroup`` role starts at the next warp index divisible
  by the warpgroup width (4, PTX §9.7.15.1) and the warps skipped are idle padding
  the linker fills. The block's warps are the packed total, padding included;
  its threads T = warp size × block warps. When any role sets a register budget the
  block is padded to whole warpgroups (setmaxnreg acts on warpgroups, and the
  hardware allocates registers for warps in fours), so T is a multiple of 128.
- A register group is a warpgroup: ``setmaxnreg`` acts on whole warpgroups, so the
  roles with a warp in one share its budget, the largest of their ``regs``. A role
  without ``regs`` counts as the target's ``setmaxnreg`` minimum.
- The CTA's register pool is E × T, where E (the entry register count ptxas gives
  every thread) is min(max registers per thread, registers per block / T) rounded
  down to the allocation unit (8 registers per thread; HARDWARE.md §3.1: T = 384
  gives E = 168 and a pool of 64 512).
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.composition import Composition, RoleInfo
from checker.hardware import TargetSpec


@dataclass(frozen=True)
class PlacedRole:
    """A role at its packed position: warps [start, start + warps), after ``padding`` idle warps."""

    info: RoleInfo
    start: int
    padding: int

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def warps(self) -> int:
        return self.info.warps

    @property
    def end(self) -> int:
        return self.start + self.warps


@dataclass(frozen=True)
class BlockLayout:
    roles: tuple[PlacedRole, ...]
    warps: int


@dataclass(frozen=True)
class RegisterGroup:
    """One warpgroup of the block, the roles with a warp in it, and its setmaxnreg budget."""

    index: int
    roles: tuple[PlacedRole, ...]
    budget: int
    decided_by: PlacedRole | None

    def registers(self, target: TargetSpec) -> int:
        return self.budget * target.warpgroup_warps * target.warp_size


def block_layout(comp: Composition, target: TargetSpec) -> BlockLayout:
    """Pack the composition's roles in declaration order, aligning warpgroup roles."""
    group = target.warpgroup_warps
    cursor = 0
    placed: list[PlacedRole] = []
    for info in comp.roles.values():
        start = _round_up(cursor, group) if info.role.warpgroup else cursor
        placed.append(PlacedRole(info, start, start - cursor))
        cursor = start + info.warps
    return BlockLayout(tuple(placed), cursor)


def role_budget(placed: PlacedRole, target: TargetSpec) -> int:
    """The setmaxnreg budget a role asks for; a role without ``regs`` counts as the minimum."""
    regs = placed.info.role.regs
    return regs if regs is not None else target.setmaxnreg_min


def register_groups(layout: BlockLayout, target: TargetSpec) -> tuple[RegisterGroup, ...]:
    """Every warpgroup the block occupies, with the budget of its largest member."""
    width = target.warpgroup_warps
    groups = []
    for index in range(_round_up(layout.warps, width) // width):
        lo, hi = index * width, (index + 1) * width
        members = tuple(p for p in layout.roles if p.warps > 0 and p.start < hi and p.end > lo)
        budgets = [role_budget(p, target) for p in members]
        budget = max(budgets, default=target.setmaxnreg_min)
        decider = members[budgets.index(budget)] if members else None
        groups.append(RegisterGroup(index, members, budget, decider))
    return tuple(groups)


def entry_registers(target: TargetSpec, threads: int) -> int:
    """Registers per thread at kernel entry for a block of ``threads`` (HARDWARE.md §3.1)."""
    unit = target.reg_alloc_unit_per_warp // target.warp_size
    fit = min(target.max_regs_per_thread, target.regs_per_block // max(threads, 1))
    return fit // unit * unit


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit
