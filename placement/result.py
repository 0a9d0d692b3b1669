"""A placement: where every claim, ring depth, role and register budget went, and why.

Every record carries the reason that decided it (``why``), for the link map. Tuples
are in a fixed order (domains in :data:`~placement.problem.DOMAINS` order, then
address, then owner and name), so equal placements compare and print equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnostics.model import Diagnostic
from diagnostics.span import UNKNOWN_SPAN, Span
from placement.lifetime import Lifetime
from placement.problem import Domain


@dataclass(frozen=True)
class Slot:
    """One storage item at its place: ``[offset, offset + size)`` in its domain's units.

    ``kind`` is ``claim``, ``slots`` (the slot storage of a per-slot claim of ``ring``) or
    ``mbarriers`` (the mbarrier array of ``ring``); ``demand`` is the declared amount
    (bytes, columns, threads of a named barrier, counter slots).
    """

    domain: Domain
    owner: str
    name: str
    offset: int
    size: int
    align: int
    lifetime: Lifetime
    kind: str
    ring: str | None
    demand: int
    why: str
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        if self.size < 1 or self.align < 1 or self.offset % self.align:
            raise ValueError(f"slot `{self.display}` is empty or misaligned")

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class RingDepth:
    """A ring's chosen depth within its range; ``slot_bytes`` is one slot's shared memory."""

    owner: str
    name: str
    depth: int
    depth_min: int
    depth_max: int
    slot_bytes: int
    why: str
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        if not self.depth_min <= self.depth <= self.depth_max:
            raise ValueError(f"ring `{self.name}` depth {self.depth} outside its range")


@dataclass(frozen=True)
class RolePlacement:
    """A role at warps ``[first_warp, first_warp + warps)`` with register budget ``budget``.

    ``minimum`` is the smallest budget it accepts; ``groups`` the register groups it touches.
    """

    owner: str
    name: str
    first_warp: int
    warps: int
    warpgroup: bool
    minimum: int
    budget: int
    groups: tuple[int, ...]
    why: str
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        if self.first_warp < 0 or self.warps < 1 or self.budget < self.minimum:
            raise ValueError(f"role `{self.owner}.{self.name}` is misplaced")

    @property
    def end(self) -> int:
        return self.first_warp + self.warps

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class RegisterGroup:
    """A warpgroup of the block: its warps, setmaxnreg budget, roles and idle warps."""

    index: int
    first_warp: int
    warps: int
    budget: int
    roles: tuple[str, ...]
    idle_warps: tuple[int, ...]
    why: str


@dataclass(frozen=True)
class DomainUse:
    """How much of a domain the placement uses: ``[start, end)`` out of ``[start, limit)``.

    ``lower_bound`` is the clique bound on the end; ``proven`` whether ``end`` is proven minimal.
    """

    domain: Domain
    start: int
    end: int
    limit: int
    lower_bound: int
    proven: bool

    @property
    def used(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Objective:
    """The objective values, in priority order (see :mod:`placement.solve`)."""

    ring_depths: int
    role_registers: int
    register_headroom: int
    smem_bytes: int
    tmem_columns: int
    barrier_ids: int
    counter_slots: int
    block_warps: int

    def key(self) -> tuple[int, ...]:
        """A tuple that sorts better placements first."""
        return (
            -self.ring_depths,
            -self.role_registers,
            -self.register_headroom,
            self.smem_bytes + self.tmem_columns + self.barrier_ids + self.counter_slots,
            self.block_warps,
        )


@dataclass(frozen=True)
class Placement:
    """A complete placement of one problem.

    ``optimal``: every objective level was proven optimal within the budget.
    ``canonical``: every tie-break was proven (the placement is the unique canonical one).
    ``notes``: informational diagnostics (``I-DEPTH-MIN``, ``I-PLACE-BUDGET``).
    ``method``: ``solver`` or the greedy order that produced it.
    """

    target: str
    slots: tuple[Slot, ...]
    rings: tuple[RingDepth, ...]
    roles: tuple[RolePlacement, ...]
    groups: tuple[RegisterGroup, ...]
    block_warps: int
    idle_warps: tuple[int, ...]
    entry_regs: int
    register_pool: int
    uses: tuple[DomainUse, ...]
    objective: Objective
    optimal: bool
    canonical: bool
    method: str
    notes: tuple[Diagnostic, ...] = ()
    rlimit_used: int = field(default=0, compare=False)
    checks: int = field(default=0, compare=False)

    def slot(self, owner: str, name: str, domain: Domain | None = None) -> Slot:
        return next(s for s in self.slots if s.owner == owner and s.name == name and domain in (None, s.domain))

    def depth(self, ring: str) -> int:
        return next(r.depth for r in self.rings if r.name == ring)

    def role(self, owner: str, name: str) -> RolePlacement:
        return next(r for r in self.roles if r.owner == owner and r.name == name)

    def use(self, domain: Domain) -> DomainUse:
        return next(u for u in self.uses if u.domain is domain)

    def in_domain(self, domain: Domain) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.domain is domain)
