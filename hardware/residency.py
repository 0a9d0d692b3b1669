"""Every formula over the hardware table: registers, shared memory, blocks per SM.

The residency model answers "how many blocks of this kernel can one SM hold at once"
as the minimum over each resource an SM divides between its blocks (specs/hardware.md §1,
§2, §3, §4, §6; the same structure as NVIDIA's ``cuda_occupancy.h``, HDR):

- threads and warps: ``max_threads_per_sm // threads``, ``max_warps_per_sm // warps``;
- registers: each warp takes ``round_up(R × 32, 256)`` registers of one of the 4
  sub-partitions' files (16 384 each), so ``4 × ⌊16384 / per_warp⌋ // warps`` blocks;
  a block whose ``per_warp × round_up(warps, 4)`` exceeds ``regs_per_block`` does not
  launch (the hardware check). R is the entry count: ``setmaxnreg`` only moves
  registers within the block's pool of R × threads, so the pool is what the SM holds;
- shared memory: ``smem_per_sm // round_up(bytes + reserved, 128)``;
- named barriers: ``named_barriers_per_sm // ids``, where ``ids`` is the highest ID
  used + 1 (ID 0, ``__syncthreads``, counts);
- tensor memory: ``tmem_columns // columns`` (``tcgen05.alloc`` blocks until the SM's
  columns are free, so blocks that cannot all hold their columns serialise);
- the per-target block limit ``max_ctas_per_sm``.

``blocks_per_sm B`` (``__launch_bounds__(T, B)``) is a demand on every resource: the
entry count ptxas gives is the largest R (a multiple of 8) with which B blocks fit the
register file (:func:`entry_registers`), and each block may use only its share of
shared memory (:func:`smem_per_block`) and tensor memory (:func:`tmem_per_block`).

Every function reads only the table's fields through the protocols below, so the
checker's ``TargetSpec``, placement's ``Capacities`` and the generators' limits all
use the same formulas. The placement verifier (``placement/verify.py``) keeps
independent copies of the entry-register formula and the tensor-memory rounding on
purpose: it is an oracle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

RESOURCES: tuple[str, ...] = (
    "threads",
    "warps",
    "registers",
    "shared memory",
    "named barriers",
    "tensor memory",
    "blocks",
)
"""The resources an SM divides between its blocks, in the order they are reported."""


class RegisterFile(Protocol):
    """The register fields of a hardware-table entry."""

    @property
    def warp_size(self) -> int: ...
    @property
    def regs_per_sm(self) -> int: ...
    @property
    def regs_per_block(self) -> int: ...
    @property
    def max_regs_per_thread(self) -> int: ...
    @property
    def reg_alloc_unit_per_warp(self) -> int: ...
    @property
    def reg_warp_rounding(self) -> int: ...
    @property
    def sub_partitions(self) -> int: ...


class SharedMemory(Protocol):
    """The shared-memory fields of a hardware-table entry."""

    @property
    def smem_per_block_optin(self) -> int: ...
    @property
    def smem_per_sm(self) -> int: ...
    @property
    def smem_reserved_per_block(self) -> int: ...
    @property
    def smem_alloc_granularity(self) -> int: ...


class TensorMemory(Protocol):
    @property
    def tmem_columns(self) -> int: ...
    @property
    def tmem_min_alloc_columns(self) -> int: ...


class BlockLimits(Protocol):
    """The per-block fields that compositions are laid out against (warps, register steps, barriers)."""

    @property
    def mbarrier_size(self) -> int: ...
    @property
    def max_warps_per_block(self) -> int: ...
    @property
    def warpgroup_warps(self) -> int: ...
    @property
    def setmaxnreg_min(self) -> int: ...
    @property
    def setmaxnreg_max(self) -> int: ...
    @property
    def setmaxnreg_step(self) -> int: ...


class SmLimits(RegisterFile, SharedMemory, TensorMemory, Protocol):
    """Every field the residency model reads."""

    @property
    def name(self) -> str: ...
    @property
    def max_threads_per_block(self) -> int: ...
    @property
    def max_threads_per_sm(self) -> int: ...
    @property
    def max_warps_per_sm(self) -> int: ...
    @property
    def max_ctas_per_sm(self) -> int: ...
    @property
    def named_barriers_per_sm(self) -> int: ...
    @property
    def named_barriers_per_cta(self) -> int: ...


def round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


# ----------------------------------------------------------------- registers


def reg_unit(spec: RegisterFile) -> int:
    """Registers per thread in one allocation unit (256 per warp / 32 = 8)."""
    return spec.reg_alloc_unit_per_warp // spec.warp_size


def regs_per_warp(spec: RegisterFile, regs_per_thread: int) -> int:
    """Registers one warp takes (HDR ``regsAllocatedPerWarp``)."""
    return round_up(regs_per_thread * spec.warp_size, spec.reg_alloc_unit_per_warp)


def blocks_by_registers(spec: RegisterFile, regs_per_thread: int, warps: int) -> int:
    """Blocks of ``warps`` warps at ``regs_per_thread`` one SM's register file holds (HDR)."""
    if warps < 1:
        return 0
    per_warp = regs_per_warp(spec, regs_per_thread)
    if (
        regs_per_thread > spec.max_regs_per_thread
        or per_warp * round_up(warps, spec.reg_warp_rounding) > spec.regs_per_block
        or per_warp * warps > spec.regs_per_block
    ):
        return 0
    if per_warp == 0:
        return 1 << 30
    per_partition = spec.regs_per_sm // spec.sub_partitions // per_warp
    return per_partition * spec.sub_partitions // warps


def entry_registers(spec: RegisterFile, warps: int, blocks: int = 1) -> int:
    """Registers per thread at kernel entry for ``__launch_bounds__(32 × warps, blocks)``.

    The largest multiple of the allocation unit, at most ``max_regs_per_thread``, with
    which ``blocks`` blocks fit one SM's register file (0 when none does). For one block
    this is min(255, 65536 / (32 × round_up(warps, 4))) rounded down to 8: 12 warps → 168
    (specs/hardware.md §3.1, PTXAS, HW); ``blocks_per_sm 2`` at 12 warps → 80.
    """
    unit = reg_unit(spec)
    regs = spec.max_regs_per_thread // unit * unit
    while regs > 0 and blocks_by_registers(spec, regs, max(warps, 1)) < max(blocks, 1):
        regs -= unit
    return regs


def register_pool(spec: RegisterFile, warps: int, blocks: int = 1) -> int:
    """The block's register pool that ``setmaxnreg`` redistributes: entry × the block's threads."""
    return entry_registers(spec, warps, blocks) * warps * spec.warp_size


def register_demand(spec: RegisterFile, warps: int, budgets: tuple[int, ...] | list[int], width: int) -> int:
    """Registers warpgroups with these budgets hold at once: Σ budget × threads of each group.

    Group ``k`` holds warps ``[width·k, width·k + width)`` of a block of ``warps`` warps; the
    last group of a block that is not whole warpgroups holds only the warps it has.
    """
    return sum(b * spec.warp_size * max(0, min(width, warps - width * k)) for k, b in enumerate(budgets))


# ----------------------------------------------------------------- shared memory and TMEM


def smem_charge(spec: SharedMemory, smem_bytes: int) -> int:
    """Shared memory one block takes from its SM (HDR ``cudaOccMaxBlocksPerSMSmemLimit``)."""
    return round_up(smem_bytes + spec.smem_reserved_per_block, spec.smem_alloc_granularity)


def blocks_by_smem(spec: SharedMemory, smem_bytes: int) -> int:
    """Blocks using ``smem_bytes`` of shared memory each (static + dynamic) that one SM holds."""
    if smem_bytes > spec.smem_per_block_optin:
        return 0
    return spec.smem_per_sm // smem_charge(spec, smem_bytes)


def smem_per_block(spec: SharedMemory, blocks: int) -> int:
    """The most shared memory (static + dynamic) each of ``blocks`` resident blocks may use.

    One block: the opt-in maximum (232 448 on sm_90a). Two: 115 712 (specs/hardware.md §1.1,
    HW). 0 when not even the reserved bytes fit.
    """
    share = spec.smem_per_sm // max(blocks, 1) // spec.smem_alloc_granularity * spec.smem_alloc_granularity
    return max(0, min(spec.smem_per_block_optin, share - spec.smem_reserved_per_block))


def tmem_alloc_columns(spec: TensorMemory, columns: int) -> int:
    """Columns a ``tcgen05.alloc`` holding ``columns`` columns takes: the least power of two of at
    least the minimum allocation (PTX §9.7.16.7.1; 32 on sm_100a). It may exceed the capacity
    (:func:`tmem_allocation` says when it does): a claim of 544 columns takes 1024."""
    size = max(spec.tmem_min_alloc_columns, 1)
    while size < columns:
        size *= 2
    return size


def tmem_allocation(spec: TensorMemory, columns: int) -> int | None:
    """Columns a ``tcgen05.alloc`` of at least ``columns`` takes, or None if the target cannot allocate them."""
    if spec.tmem_columns == 0 or columns > spec.tmem_columns:
        return None
    return tmem_alloc_columns(spec, columns)


def tmem_per_block(spec: TensorMemory, blocks: int) -> int:
    """Tensor-memory columns each of ``blocks`` resident blocks may hold at once."""
    return spec.tmem_columns // max(blocks, 1)


def blocks_by_tmem(spec: TensorMemory, columns: int) -> int | None:
    """Blocks holding ``columns`` columns each that one SM's tensor memory holds (None: unlimited)."""
    if columns <= 0:
        return None
    return spec.tmem_columns // columns


# ----------------------------------------------------------------- blocks per SM


@dataclass(frozen=True)
class Demand:
    """What one block of a kernel takes from its SM.

    ``regs_per_thread`` is the entry count (None: the largest the launch bounds allow for
    ``blocks_per_sm``), ``barriers`` the named-barrier IDs charged (highest ID + 1, at
    least 1 for ``__syncthreads``), ``tmem_columns`` the columns held at once.
    """

    warps: int
    regs_per_thread: int
    smem_bytes: int = 0
    barriers: int = 1
    tmem_columns: int = 0


@dataclass(frozen=True)
class Limit:
    resource: str
    blocks: int
    detail: str


@dataclass(frozen=True)
class Residency:
    """Blocks per SM as each resource limits it; ``blocks`` is the minimum."""

    limits: tuple[Limit, ...]

    @property
    def blocks(self) -> int:
        return min(limit.blocks for limit in self.limits)

    @property
    def limiting(self) -> Limit:
        """The first resource (in :data:`RESOURCES` order) that allows only :attr:`blocks`."""
        return next(limit for limit in self.limits if limit.blocks == self.blocks)

    def limit(self, resource: str) -> Limit | None:
        return next((lim for lim in self.limits if lim.resource == resource), None)


def residency(spec: SmLimits, demand: Demand) -> Residency:
    """Blocks per SM of a kernel whose blocks each take ``demand`` (module docstring)."""
    threads = demand.warps * spec.warp_size
    warps_sm = spec.max_warps_per_sm
    per_warp = regs_per_warp(spec, demand.regs_per_thread)
    barriers = max(demand.barriers, 1)
    limits = [
        Limit(
            "threads",
            spec.max_threads_per_sm // threads if threads else 0,
            f"{threads} threads per block of {spec.max_threads_per_sm} per SM",
        ),
        Limit(
            "warps",
            warps_sm // demand.warps if demand.warps else 0,
            f"{demand.warps} warps per block of {warps_sm} per SM",
        ),
        Limit(
            "registers",
            blocks_by_registers(spec, demand.regs_per_thread, demand.warps),
            f"{demand.regs_per_thread} registers per thread ({per_warp} per warp) × {demand.warps} warps of "
            f"{spec.regs_per_sm} per SM",
        ),
        Limit(
            "shared memory",
            blocks_by_smem(spec, demand.smem_bytes),
            f"{demand.smem_bytes} B per block, charged {smem_charge(spec, demand.smem_bytes)} B, of "
            f"{spec.smem_per_sm} B per SM",
        ),
        Limit(
            "named barriers",
            spec.named_barriers_per_sm // barriers,
            f"{barriers} barrier IDs per block of {spec.named_barriers_per_sm} per SM",
        ),
    ]
    tmem = blocks_by_tmem(spec, demand.tmem_columns)
    if tmem is not None:
        limits.append(
            Limit("tensor memory", tmem, f"{demand.tmem_columns} columns per block of {spec.tmem_columns} per SM")
        )
    limits.append(Limit("blocks", spec.max_ctas_per_sm, f"at most {spec.max_ctas_per_sm} blocks per SM"))
    return Residency(tuple(limits))
