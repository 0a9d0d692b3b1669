"""The block's warp layout and register groups, as the check-time clauses compute them.

Semantics (shared by L-WARPS, L-WARPGROUP and L-REGS; the placement solver keeps them):

- Roles are one composition-wide namespace, packed in declaration order (the
  pipeline's stage order, then source order). A role of ``warps w`` takes ``w``
  consecutive warps; a ``warpgroup`` role starts at the next warp index divisible
  by the warpgroup width (4, PTX §9.7.15.1) and the warps skipped are idle padding
  the linker fills. The block's warps are the packed total, padding included;
  its threads T = warp size × block warps (placement may add idle warps after the
  last role when no `launch` states `threads`).
- A register group is a warpgroup: ``setmaxnreg`` acts on whole warpgroups, so the
  roles with a warp in one share its budget, the largest of their ``regs``. A role
  without ``regs`` counts as the target's ``setmaxnreg`` minimum. The block is *not*
  padded to whole warpgroups: the linker launches exactly the packed warps (as
  placement does), so a last, partial group holds only the warps it has.
- The CTA's register pool and the groups' demand are :mod:`hardware.residency`'s
  ``register_pool`` (E × T, E the entry count for ``blocks_per_sm`` resident blocks:
  T = 384 gives E = 168 and a pool of 64 512) and ``register_demand`` (Σ budget ×
  threads of each group), the formulas placement uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.composition import Composition, RoleInfo
from hardware.residency import round_up
from hardware.targets import TargetSpec


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

    def registers(self, target: TargetSpec, block_warps: int) -> int:
        """Registers the group holds: its budget × the threads of the block's warps in it."""
        width = target.warpgroup_warps
        return self.budget * target.warp_size * max(0, min(width, block_warps - width * self.index))


def block_layout(comp: Composition, target: TargetSpec) -> BlockLayout:
    """Pack the composition's roles in declaration order, aligning warpgroup roles."""
    group = target.warpgroup_warps
    cursor = 0
    placed: list[PlacedRole] = []
    for info in comp.roles.values():
        start = round_up(cursor, group) if info.role.warpgroup else cursor
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
    for index in range(round_up(layout.warps, width) // width):
        lo, hi = index * width, (index + 1) * width
        members = tuple(p for p in layout.roles if p.warps > 0 and p.start < hi and p.end > lo)
        budgets = [role_budget(p, target) for p in members]
        budget = max(budgets, default=target.setmaxnreg_min)
        decider = members[budgets.index(budget)] if members else None
        groups.append(RegisterGroup(index, members, budget, decider))
    return tuple(groups)
