"""The placement problem: capacities, claims, rings and roles, with their invariants.

Placement does not read contracts: an adapter turns a checked composition into a
:class:`Problem`. Everything here is a frozen dataclass whose invariants are
checked when it is built, so a malformed problem never reaches the solver. Every
item carries its ``owner`` (the stage or component), its ``name`` and the
:class:`~diagnostics.span.Span` of its declaration for diagnostics.

Domains and units:

- ``smem``: shared-memory bytes at absolute shared addresses. The system reserves
  ``[0, smem_reserved_per_block)``; user claims live in
  ``[smem_user_base, smem_user_base + smem_per_block_optin)``.
- ``tmem``: tensor-memory columns in ``[0, tmem_columns)``. A claim of ``c`` columns
  takes a power-of-two allocation of at least ``tmem_min_alloc_columns``, aligned
  to its size.
- ``barrier``: named-barrier IDs; ID ``syncthreads_barrier_id`` (0) is the block-wide
  barrier, so claims get IDs in ``[1, named_barriers_per_cta)``.
- ``counter``: slots of the kernel's counter array, ``[0, counter_slots)``.

A :class:`Ring` of depth ``d`` adds ``d`` slots to each of its per-slot claims (a
per-slot claim of ``b`` bytes aligned to ``a`` takes ``round_up(b, a) × d`` bytes,
so every slot is aligned) and ``barriers_per_slot × d`` mbarrier objects.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from diagnostics.span import UNKNOWN_SPAN, Span
from hardware import residency
from placement.lifetime import KERNEL, Lifetime, Timeline


class Domain(enum.Enum):
    """A storage domain: one address space that claims are packed into."""

    SMEM = "smem"
    TMEM = "tmem"
    BARRIER = "barrier"
    COUNTER = "counter"

    @property
    def unit(self) -> str:
        return {"smem": "B", "tmem": "columns", "barrier": "IDs", "counter": "slots"}[self.value]

    @property
    def title(self) -> str:
        return {
            "smem": "shared memory",
            "tmem": "tensor memory",
            "barrier": "named barriers",
            "counter": "counter slots",
        }[self.value]


DOMAINS: tuple[Domain, ...] = (Domain.SMEM, Domain.TMEM, Domain.BARRIER, Domain.COUNTER)


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


class TargetLike(residency.SmLimits, residency.BlockLimits, Protocol):
    """The fields of a hardware-table entry that placement reads (``hardware.targets.TargetSpec``)."""

    @property
    def smem_user_base(self) -> int: ...
    @property
    def mbarrier_align(self) -> int: ...
    @property
    def syncthreads_barrier_id(self) -> int: ...


@dataclass(frozen=True)
class Capacities:
    """Every capacity, range and alignment placement obeys, as plain numbers.

    Field names follow the hardware table (``hardware/targets.py``); build one with
    :meth:`from_target`. ``counter_slots`` is the size of the kernel's counter array,
    which the linker chooses. ``blocks_per_sm`` is the residency the launch asks for
    (``__launch_bounds__(T, blocks_per_sm)``): :meth:`from_target` then gives each block
    its share of the SM's shared memory and tensor memory (``smem_per_block_optin`` and
    ``tmem_columns`` hold the share), and the entry registers are those with which
    ``blocks_per_sm`` blocks fit the register file (:mod:`hardware.residency`).
    """

    target: str
    smem_per_block_optin: int
    smem_reserved_per_block: int
    smem_user_base: int
    smem_alloc_granularity: int
    mbarrier_size: int
    mbarrier_align: int
    named_barriers_per_cta: int
    syncthreads_barrier_id: int
    tmem_columns: int
    tmem_min_alloc_columns: int
    counter_slots: int
    warp_size: int
    max_warps_per_block: int
    warpgroup_warps: int
    regs_per_sm: int
    regs_per_block: int
    sub_partitions: int
    max_regs_per_thread: int
    reg_alloc_unit_per_warp: int
    reg_warp_rounding: int
    setmaxnreg_min: int
    setmaxnreg_max: int
    setmaxnreg_step: int
    blocks_per_sm: int = 1

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if name != "target" and (not isinstance(value, int) or value < 0):
                raise ValueError(f"capacity `{name}` must be a non-negative integer, not {value!r}")
        if self.smem_user_base < self.smem_reserved_per_block:
            raise ValueError("user shared memory starts inside the reserved bytes")
        if self.syncthreads_barrier_id != 0:
            raise ValueError("the block-wide barrier must be ID 0")
        if self.named_barriers_per_cta < 1:
            raise ValueError("a block has at least the block-wide barrier")
        if not is_power_of_two(self.mbarrier_align):
            raise ValueError("the mbarrier alignment must be a power of two")
        if self.tmem_columns and not is_power_of_two(self.tmem_min_alloc_columns):
            raise ValueError("the minimum tensor-memory allocation must be a power of two")
        positive = (
            "warp_size",
            "max_warps_per_block",
            "warpgroup_warps",
            "regs_per_block",
            "regs_per_sm",
            "sub_partitions",
            "blocks_per_sm",
            "max_regs_per_thread",
            "reg_alloc_unit_per_warp",
            "reg_warp_rounding",
            "setmaxnreg_step",
            "smem_alloc_granularity",
            "mbarrier_size",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"capacity `{name}` must be positive")
        if self.reg_alloc_unit_per_warp % self.warp_size:
            raise ValueError("the register allocation unit must be whole registers per thread")
        lo, hi, step = self.setmaxnreg_min, self.setmaxnreg_max, self.setmaxnreg_step
        if not (0 < lo <= hi) or lo % step or hi % step:
            raise ValueError("the setmaxnreg range must be non-empty and on its step")

    @classmethod
    def from_target(cls, spec: TargetLike, *, counter_slots: int, blocks_per_sm: int = 1) -> Capacities:
        """Copy the fields placement reads from a hardware-table entry, for ``blocks_per_sm``
        resident blocks (each gets its share of shared memory and tensor memory)."""
        names = [f for f in cls.__dataclass_fields__ if f not in ("target", "counter_slots", "blocks_per_sm")]
        values = {n: int(getattr(spec, n)) for n in names}
        blocks = max(blocks_per_sm, 1)
        values["smem_per_block_optin"] = residency.smem_per_block(spec, blocks)
        values["tmem_columns"] = residency.tmem_per_block(spec, blocks)
        return cls(target=spec.name, counter_slots=counter_slots, blocks_per_sm=blocks, **values)

    @property
    def smem_limit(self) -> int:
        """One past the highest user shared-memory address."""
        return self.smem_user_base + self.smem_per_block_optin

    @property
    def first_barrier_id(self) -> int:
        return self.syncthreads_barrier_id + 1

    def bounds(self, domain: Domain) -> tuple[int, int]:
        """The half-open address range claims of a domain are placed in."""
        if domain is Domain.SMEM:
            return self.smem_user_base, self.smem_limit
        if domain is Domain.TMEM:
            return 0, self.tmem_columns
        if domain is Domain.BARRIER:
            return self.first_barrier_id, max(self.first_barrier_id, self.named_barriers_per_cta)
        return 0, self.counter_slots

    def entry_regs(self, warps: int) -> int:
        """Registers per thread at kernel entry for a block of ``warps`` warps, ``blocks_per_sm``
        of them resident (:func:`hardware.residency.entry_registers`; 12 warps → 168)."""
        return residency.entry_registers(self, warps, self.blocks_per_sm)

    def register_pool(self, warps: int) -> int:
        """The block's register pool that setmaxnreg redistributes: entry × threads."""
        return residency.register_pool(self, warps, self.blocks_per_sm)

    def budgets(self) -> range:
        """Every legal setmaxnreg budget."""
        return range(self.setmaxnreg_min, self.setmaxnreg_max + 1, self.setmaxnreg_step)


def _check_item(kind: str, owner: str, name: str, amounts: Iterable[tuple[str, int]]) -> None:
    if not owner or not name:
        raise ValueError(f"a {kind} needs an owner and a name")
    for what, value in amounts:
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{kind} `{owner}.{name}`: {what} must be a positive integer")


@dataclass(frozen=True)
class SmemClaim:
    """Shared memory: ``bytes`` aligned to ``align`` (a power of two), live during ``lifetime``.

    With ``per_slot_ring`` the claim is one slot of that ring's storage and takes
    ``round_up(bytes, align) × depth`` bytes.
    """

    owner: str
    name: str
    bytes: int
    align: int = 1
    lifetime: Lifetime = KERNEL
    per_slot_ring: str | None = None
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item("shared-memory claim", self.owner, self.name, (("bytes", self.bytes), ("align", self.align)))
        if not is_power_of_two(self.align):
            raise ValueError(f"`{self.owner}.{self.name}`: alignment {self.align} is not a power of two")

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class Ring:
    """An mbarrier ring whose depth the linker chooses in ``[depth_min, depth_max]``.

    ``name`` is the ring's composition-wide name (per-slot claims refer to it). Each slot
    has ``barriers_per_slot`` mbarriers (full and empty), placed as one shared-memory
    array that lives for ``lifetime``. ``depth_max=None`` (no side bounds the depth)
    becomes, in the :class:`Problem`, the most slots shared memory could ever hold.
    """

    owner: str
    name: str
    depth_min: int
    depth_max: int | None
    lifetime: Lifetime = KERNEL
    barriers_per_slot: int = 2
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item(
            "ring",
            self.owner,
            self.name,
            (
                ("depth_min", self.depth_min),
                ("depth_max", self.depth_max or 1),
                ("barriers_per_slot", self.barriers_per_slot),
            ),
        )
        if self.depth_max is not None and self.depth_min > self.depth_max:
            raise ValueError(f"ring `{self.name}`: empty depth range {self.depth_min}..{self.depth_max}")

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"

    @property
    def barrier_claim_name(self) -> str:
        """The name of the ring's mbarrier array in the owner's namespace."""
        return f"{self.name}.mbarriers"


@dataclass(frozen=True)
class TmemClaim:
    """Tensor memory: ``columns`` columns (allocated as a power of two), live during ``lifetime``."""

    owner: str
    name: str
    columns: int
    lifetime: Lifetime = KERNEL
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item("tensor-memory claim", self.owner, self.name, (("columns", self.columns),))

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class BarrierClaim:
    """One named-barrier ID for ``threads`` participating threads, live during ``lifetime``."""

    owner: str
    name: str
    threads: int
    lifetime: Lifetime = KERNEL
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item("named-barrier claim", self.owner, self.name, (("threads", self.threads),))

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class CounterClaim:
    """``slots`` consecutive slots of the counter array, live during ``lifetime``."""

    owner: str
    name: str
    slots: int
    lifetime: Lifetime = KERNEL
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item("counter claim", self.owner, self.name, (("slots", self.slots),))

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class Role:
    """A role of ``warps`` consecutive warps; ``regs`` is its minimum setmaxnreg budget.

    A ``warpgroup`` role's width is a multiple of the warpgroup width and it starts at a
    warp index divisible by it. A role without ``regs`` needs only the setmaxnreg minimum.
    """

    owner: str
    name: str
    warps: int
    warpgroup: bool = False
    regs: int | None = None
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        _check_item("role", self.owner, self.name, (("warps", self.warps),))
        if self.regs is not None and (not isinstance(self.regs, int) or self.regs < 1):
            raise ValueError(f"role `{self.display}`: regs must be a positive integer")

    @property
    def display(self) -> str:
        return f"{self.owner}.{self.name}"


Claim = SmemClaim | TmemClaim | BarrierClaim | CounterClaim


def _sorted(items: Iterable[Claim]) -> tuple[Claim, ...]:
    return tuple(sorted(items, key=lambda c: (c.owner, c.name)))


@dataclass(frozen=True)
class Problem:
    """One placement problem. Claim tuples are kept sorted by (owner, name): the canonical order.
    Roles keep the order they are given in, the composition's declaration order (stage
    order, then source order): the layout breaks ties by it, so renaming a role never
    moves it.

    Invariants: (owner, name) unique within each domain (a ring's mbarrier array takes
    the name ``<ring>.mbarriers`` in its owner's shared-memory namespace); ring names
    unique; every per-slot claim names a declared ring; every lifetime is valid on the
    timeline; roles have unique (owner, name), warpgroup roles a width that is a
    multiple of the warpgroup width, and declared ``regs`` within the setmaxnreg
    maximum; ``block_warps`` (the launch geometry's warps, None to let placement
    choose) is within the block limit. After construction every ring has a
    ``depth_max``.
    """

    capacities: Capacities
    smem: tuple[SmemClaim, ...] = ()
    rings: tuple[Ring, ...] = ()
    tmem: tuple[TmemClaim, ...] = ()
    barriers: tuple[BarrierClaim, ...] = ()
    counters: tuple[CounterClaim, ...] = ()
    roles: tuple[Role, ...] = ()
    timeline: Timeline = field(default_factory=Timeline)
    block_warps: int | None = None
    allow_idle_warps: bool = True

    def __post_init__(self) -> None:
        caps = self.capacities
        object.__setattr__(self, "smem", _sorted(self.smem))
        object.__setattr__(self, "tmem", _sorted(self.tmem))
        object.__setattr__(self, "barriers", _sorted(self.barriers))
        object.__setattr__(self, "counters", _sorted(self.counters))
        object.__setattr__(self, "rings", tuple(sorted(self.rings, key=lambda r: r.name)))
        object.__setattr__(self, "roles", tuple(self.roles))  # declaration order: the layout's order
        object.__setattr__(self, "rings", tuple(self._bounded(r) for r in self.rings))
        ring_names = [r.name for r in self.rings]
        if len(set(ring_names)) != len(ring_names):
            raise ValueError("a ring is declared twice")
        smem_keys = [(c.owner, c.name) for c in self.smem]
        smem_keys += [(r.owner, r.barrier_claim_name) for r in self.rings]
        groups: list[tuple[str, list[tuple[str, str]]]] = [
            ("shared-memory claim", smem_keys),
            ("tensor-memory claim", [(c.owner, c.name) for c in self.tmem]),
            ("named-barrier claim", [(c.owner, c.name) for c in self.barriers]),
            ("counter claim", [(c.owner, c.name) for c in self.counters]),
            ("role", [(r.owner, r.name) for r in self.roles]),
        ]
        for kind, keys in groups:
            if len(set(keys)) != len(keys):
                dup = next(k for k in keys if keys.count(k) > 1)
                raise ValueError(f"{kind} `{dup[0]}.{dup[1]}` is declared twice")
        for claim in self.smem:
            if claim.per_slot_ring is not None and claim.per_slot_ring not in ring_names:
                raise ValueError(f"`{claim.display}` is per-slot storage of undeclared ring `{claim.per_slot_ring}`")
        lifetimes: list[Lifetime] = [r.lifetime for r in self.rings]
        lifetimes += [c.lifetime for c in self.claims()]
        for life in lifetimes:
            self.timeline.validate(life)
        for role in self.roles:
            if role.warpgroup and role.warps % caps.warpgroup_warps:
                raise ValueError(
                    f"warpgroup role `{role.display}` has {role.warps} warps, not a multiple of {caps.warpgroup_warps}"
                )
            if role.regs is not None and role.regs > caps.setmaxnreg_max:
                raise ValueError(
                    f"role `{role.display}` asks for {role.regs} registers, above "
                    f"the setmaxnreg maximum {caps.setmaxnreg_max}"
                )
        if self.block_warps is not None and not 1 <= self.block_warps <= caps.max_warps_per_block:
            raise ValueError(f"a block of {self.block_warps} warps is outside 1..{caps.max_warps_per_block}")

    def _bounded(self, ring: Ring) -> Ring:
        """The ring with an unbounded depth capped at what shared memory could hold."""
        if ring.depth_max is not None:
            return ring
        slot = self.ring_barrier_bytes(ring, 1)
        slot += sum(self.slot_stride(c) for c in self.smem if c.per_slot_ring == ring.name)
        top = max(ring.depth_min, self.capacities.smem_per_block_optin // slot)
        return dataclasses.replace(ring, depth_max=top)

    def claims(self) -> tuple[Claim, ...]:
        """Every claim of every domain."""
        return (*self.smem, *self.tmem, *self.barriers, *self.counters)

    def ring(self, name: str) -> Ring:
        return next(r for r in self.rings if r.name == name)

    def depth_range(self, ring: Ring) -> tuple[int, int]:
        """The ring's depth range (bounded: see :meth:`_bounded`)."""
        return ring.depth_min, ring.depth_max if ring.depth_max is not None else ring.depth_min

    def slot_stride(self, claim: SmemClaim) -> int:
        """Bytes one ring slot of a per-slot claim takes (its size rounded up to its alignment)."""
        return round_up(claim.bytes, claim.align)

    def smem_size(self, claim: SmemClaim, depths: dict[str, int]) -> int:
        """A shared-memory claim's size, given the ring depths."""
        if claim.per_slot_ring is None:
            return claim.bytes
        return self.slot_stride(claim) * depths[claim.per_slot_ring]

    def ring_barrier_bytes(self, ring: Ring, depth: int) -> int:
        """Bytes of a ring's mbarrier array at a depth."""
        return ring.barriers_per_slot * self.capacities.mbarrier_size * depth

    def role_regs(self, role: Role) -> int:
        """The smallest legal budget covering the role's declared minimum."""
        caps = self.capacities
        need = caps.setmaxnreg_min if role.regs is None else max(role.regs, caps.setmaxnreg_min)
        return round_up(need, caps.setmaxnreg_step)

    @property
    def handle_count(self) -> int:
        """Handles the linker emits: one per claim, ring depth, ring mbarrier array, role offset
        and role register budget."""
        claims = len(self.smem) + len(self.tmem) + len(self.barriers) + len(self.counters)
        return claims + 2 * len(self.rings) + 2 * len(self.roles)
