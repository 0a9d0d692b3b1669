"""The per-target hardware table: every capacity, limit and alignment kernlink checks against.

Every number comes from ``specs/hardware.md`` (the project's vetted
reference) and carries the evidence tag that reference gives it:

- ``PG-CC T<n>``: CUDA Programming Guide (CUDA 13) §5.1, Table n
- ``HTG`` / ``BTG``: Hopper / Blackwell Tuning Guide
- ``PTX §x``: PTX ISA 9.1, section x
- ``HDR``: CUDA 13.0.88 ``include/cuda_occupancy.h`` (NVIDIA's occupancy model)
- ``PTXAS``: what ``ptxas`` 13.0.88 accepted or rejected for that exact target
- ``HW``: measured on an H200 (sm_90 only)
- ``CUTLASS``, ``DOC``, ``PG-TMA``, ``PG-CLUSTER``, ``DRV-TMAP``: as listed in specs/hardware.md §0.2
- ``NVB-PARAMS``: NVIDIA technical blog "CUDA 12.1 Supports Large Kernel Parameters",
  https://developer.nvidia.com/blog/cuda-12-1-supports-large-kernel-parameters/
  (32764 bytes of kernel parameters on Volta and later from CUDA 12.1; 4096 before)
- ``CUBIN``: read here from cubins that nvJitLink 13.0.88 produced for that target
- ``UNCONFIRMED``: no primary source; the value is a conservative stand-in and the field
  is listed in :attr:`TargetSpec.unconfirmed`

No other kernlink module hard-codes a capacity: they all read :data:`TARGETS`, and
every formula over these numbers (register pool, entry registers, shared-memory
charge, blocks per SM) lives in :mod:`hardware.residency`.
A ``TargetSpec`` refuses to be built unless every numeric field has a source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

SOURCE_TAGS: tuple[str, ...] = (
    "PG-CC",
    "HTG",
    "BTG",
    "PTX §",
    "HDR",
    "PTXAS",
    "HW",
    "CUTLASS",
    "DOC",
    "PG-TMA",
    "PG-CLUSTER",
    "DRV-TMAP",
    "NVB-PARAMS",
    "CUBIN",
    "UNCONFIRMED",
)

FEATURE_SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "tma": "specs/hardware.md §11: cp.async.bulk.tensor accepted on all targets (PTXAS)",
        "tma_multicast": "specs/hardware.md §11 (PTXAS; advisory 'reduced performance' on sm_90, sm_120a)",
        "cp_async_bulk": "PTX §9.7.9.25 (sm_90+)",
        "mbarrier": "PTX §9.7.13.15 (try_wait, expect_tx, complete_tx: sm_90+)",
        "named_barriers": "PTX §9.7.13.1",
        "clusters": "PG-CC T29; specs/hardware.md §9 (PTXAS: barrier.cluster, mapa on all targets)",
        "dsmem": "PTX §9.7.9.23 (mapa); specs/hardware.md §9",
        "multimem": "PTXAS 13.0.88: multimem.ld_reduce/st/red accepted on sm_90/90a/100a/120a",
        "mma_sync": "specs/hardware.md §11 (PTXAS; HW on sm_90a)",
        "ldmatrix": "PTX §9.7.14.5.15 (sm_75+)",
        "stmatrix": "specs/hardware.md §11; PTX §9.7.14.5.16 (sm_90+)",
        "wgmma": "specs/hardware.md §11: sm_90a only (PTXAS)",
        "setmaxnreg": "specs/hardware.md §11 and §3.2: not on plain sm_90 (PTXAS)",
        "tcgen05": "specs/hardware.md §11: sm_100a/sm_103a only (PTXAS)",
        "tmem": "PTX §9.7.16.1; specs/hardware.md §6 (sm_100a/sm_103a only)",
    }
)

_COMMON_FEATURES = frozenset(
    {
        "tma",
        "tma_multicast",
        "cp_async_bulk",
        "mbarrier",
        "named_barriers",
        "clusters",
        "dsmem",
        "multimem",
        "mma_sync",
        "ldmatrix",
        "stmatrix",
    }
)


@dataclass(frozen=True)
class Sourced:
    """One number of the table together with its evidence."""

    value: int
    source: str
    confirmed: bool = True


@dataclass(frozen=True)
class TargetSpec:
    """Limits of one compilation target; all sizes in bytes unless the name says otherwise."""

    name: str
    features: frozenset[str]

    cc_major: int
    cc_minor: int

    # shared memory
    smem_per_block_optin: int
    smem_per_block_default: int
    smem_static_max: int
    smem_static_portable_max: int
    smem_per_sm: int
    smem_reserved_per_block: int
    smem_user_base: int
    smem_alloc_granularity: int
    smem_banks: int

    # threads, warps, CTAs
    warp_size: int
    max_threads_per_block: int
    max_warps_per_block: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_ctas_per_sm: int
    sm_count: int  # SMs of the target's reference device (H200, B200, RTX 5090): grids are proved for it
    sub_partitions: int
    warpgroup_warps: int

    # registers
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit_per_warp: int
    reg_warp_rounding: int
    setmaxnreg_min: int
    setmaxnreg_max: int
    setmaxnreg_step: int

    # named barriers
    named_barriers_per_cta: int
    syncthreads_barrier_id: int
    named_barriers_per_sm: int

    # mbarriers
    mbarrier_size: int
    mbarrier_align: int
    mbarrier_max_arrivals: int
    mbarrier_tx_min: int
    mbarrier_tx_max: int

    # alignments of async copies and operands
    tma_smem_align: int
    tma_size_multiple: int
    swizzle128_align: int
    swizzle64_align: int
    swizzle32_align: int
    wgmma_operand_align: int
    ldmatrix_align: int
    bulk_copy_align: int
    tensor_map_align: int

    # tensor memory (0 where the target has none)
    tmem_columns: int
    tmem_lanes: int
    tmem_min_alloc_columns: int

    # clusters
    cluster_portable_max: int
    cluster_nonportable_max: int

    # kernel parameters
    kernel_param_max_bytes: int
    kernel_param_legacy_max_bytes: int

    sources: Mapping[str, str] = field(hash=False)
    unconfirmed: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        names = numeric_fields()
        missing = [n for n in names if not self.sources.get(n)]
        if missing:
            raise ValueError(f"{self.name}: fields without a source: {', '.join(missing)}")
        untagged = [n for n in names if not any(t in self.sources[n] for t in SOURCE_TAGS)]
        if untagged:
            raise ValueError(f"{self.name}: sources without an evidence tag: {', '.join(untagged)}")
        stray = set(self.sources) - set(names)
        if stray:
            raise ValueError(f"{self.name}: sources for unknown fields: {', '.join(sorted(stray))}")
        unknown = self.features - set(FEATURE_SOURCES)
        if unknown:
            listed = ", ".join(sorted(unknown))
            raise ValueError(f"{self.name}: features without a source: {listed}")

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.cc_major, self.cc_minor)

    @property
    def sm(self) -> int:
        """The architecture number as it appears in ``sm_XX`` and in cubin headers."""
        return self.cc_major * 10 + self.cc_minor

    @property
    def lto_arch(self) -> str:
        """The nvcc ``-arch`` value that produces LTO IR for this target (``lto_90a``)."""
        return "lto_" + self.name.removeprefix("sm_")

    def has(self, feature: str) -> bool:
        return feature in self.features

    def fact(self, name: str) -> Sourced:
        """A numeric field with its source, for diagnostics that quote a limit."""
        if name not in numeric_fields():
            raise KeyError(name)
        value = getattr(self, name)
        return Sourced(value, self.sources[name], name not in self.unconfirmed)


def numeric_fields() -> tuple[str, ...]:
    """Names of the integer fields of :class:`TargetSpec` (each must have a source)."""
    return tuple(f.name for f in dataclasses.fields(TargetSpec) if f.type == "int")


_PORTABLE_CLUSTER = Sourced(8, "PG-CLUSTER; HTG; BTG")
_UNCONFIRMED_USER_BASE = Sourced(
    1024, "UNCONFIRMED at run time; CUBIN: .nv.shared.<kernel> holds 1024 reserved bytes first"
)

_COMMON: dict[str, Sourced] = {
    "smem_per_block_default": Sourced(49152, "PG-CC T31 footnote 3; BTG §1.4.2.3; HW (sm_90)"),
    "smem_static_portable_max": Sourced(
        49152, "BTG §1.4.2.3 (static allocations limited to 48 KB); specs/hardware.md §0.3 item 3"
    ),
    "smem_reserved_per_block": Sourced(1024, "BTG §1.4.2.3; HW: reservedSharedMemPerBlock=1024; HDR"),
    "smem_alloc_granularity": Sourced(
        128, "PTX §10.30 (%total_smem_size unit); HDR cudaOccSMemAllocationGranularity; HW"
    ),
    "smem_banks": Sourced(32, "PG-CC T31"),
    "warp_size": Sourced(32, "PG-CC T30; HW"),
    "max_threads_per_block": Sourced(1024, "PG-CC T30; HW: maxThreadsPerBlock=1024"),
    "max_warps_per_block": Sourced(32, "PG-CC T30 (1024 threads / 32)"),
    "sub_partitions": Sourced(4, "HDR cudaOccSubPartitionsPerMultiprocessor"),
    "warpgroup_warps": Sourced(4, "PTX §9.7.15.1"),
    "regs_per_sm": Sourced(65536, "PG-CC T31; HTG; BTG; HW"),
    "regs_per_block": Sourced(65536, "PG-CC T31; HW: regsPerBlock=65536"),
    "max_regs_per_thread": Sourced(255, "PG-CC T31; HTG; BTG; PTXAS"),
    "reg_alloc_unit_per_warp": Sourced(256, "HDR cudaOccRegAllocationGranularity"),
    "reg_warp_rounding": Sourced(4, "HDR cudaOccMaxBlocksPerSMRegsLimit (warps rounded to x4)"),
    "setmaxnreg_min": Sourced(24, "PTX §9.7.19.5; PTXAS: 16 rejected, range [24..256]"),
    "setmaxnreg_max": Sourced(256, "PTX §9.7.19.5; PTXAS: range [24..256]"),
    "setmaxnreg_step": Sourced(8, "PTX §9.7.19.5; PTXAS: 28 rejected, multiple of 8"),
    "named_barriers_per_cta": Sourced(16, "PTX §9.7.13.1; PTXAS: barrier 16 out of range [0..15]"),
    "syncthreads_barrier_id": Sourced(0, "nvcc 13.0 PTX output (bar.sync 0); CUTLASS barrier.h"),
    "mbarrier_size": Sourced(8, "PTX §9.7.13.15.1 (.b64 object)"),
    "mbarrier_align": Sourced(8, "PTX §9.7.13.15.1; PG-TMA"),
    "mbarrier_max_arrivals": Sourced(2**20 - 1, "PTX §9.7.13.15.2, §9.7.13.15.9; HW"),
    "mbarrier_tx_min": Sourced(-(2**20 - 1), "PTX §9.7.13.15.2"),
    "mbarrier_tx_max": Sourced(2**20 - 1, "PTX §9.7.13.15.2; CCCL barrier_arrive_tx; HW"),
    "tma_smem_align": Sourced(128, "PG-TMA; HW: +16/+32/+64 fault on sm_90"),
    "tma_size_multiple": Sourced(16, "PG-TMA; PTX §9.7.9.25"),
    "swizzle128_align": Sourced(1024, "PTX §5.5.7, §9.7.15.5.1.2.2; HW (pattern keyed to address)"),
    "swizzle64_align": Sourced(512, "PTX §5.5.7, §9.7.15.5.1.2.2 (the 64B pattern repeats every 512 B)"),
    "swizzle32_align": Sourced(256, "PTX §5.5.7, §9.7.15.5.1.2.2 (the 32B pattern repeats every 256 B)"),
    "wgmma_operand_align": Sourced(16, "PTX §9.7.15.5.1, §9.7.15.5.1.2.2 (descriptor holds addr >> 4)"),
    "ldmatrix_align": Sourced(16, "PTX §9.7.14.5.15-16 (each 16 B row naturally aligned)"),
    "bulk_copy_align": Sourced(16, "PTX §9.7.9.25"),
    "tensor_map_align": Sourced(64, "DRV-TMAP"),
    "tmem_columns": Sourced(0, "PTXAS: tcgen05 not supported on this target"),
    "tmem_lanes": Sourced(0, "PTXAS: tcgen05 not supported on this target"),
    "tmem_min_alloc_columns": Sourced(0, "PTXAS: tcgen05 not supported on this target"),
    "cluster_portable_max": _PORTABLE_CLUSTER,
    "kernel_param_max_bytes": Sourced(32764, "NVB-PARAMS (CUDA 12.1+, Volta and later)"),
    "kernel_param_legacy_max_bytes": Sourced(4096, "NVB-PARAMS (before CUDA 12.1)"),
}

_HOPPER: dict[str, Sourced] = {
    "cc_major": Sourced(9, "PG-CC T28; HW: cc 9.0"),
    "cc_minor": Sourced(0, "PG-CC T28; HW: cc 9.0"),
    "smem_per_block_optin": Sourced(
        232448, "PG-CC T31; HTG; CUTLASS sm90_common.inl; HW: sharedMemPerBlockOptin=232448"
    ),
    "smem_static_max": Sourced(232448, "PTXAS: 0x38c00 max static .shared on sm_90a"),
    "smem_per_sm": Sourced(233472, "PG-CC T31; HTG; HW: sharedMemPerMultiprocessor=233472"),
    "smem_user_base": Sourced(1024, "HW: first static variable at shared address 1024; CUBIN"),
    "max_threads_per_sm": Sourced(2048, "PG-CC T30; HTG; HW"),
    "max_warps_per_sm": Sourced(64, "PG-CC T30; HTG"),
    "max_ctas_per_sm": Sourced(32, "PG-CC T30; HDR; HW: maxBlocksPerMultiProcessor=32"),
    "sm_count": Sourced(132, "HW: H200 multiProcessorCount=132 (specs/hardware.md Appendix A)"),
    "named_barriers_per_sm": Sourced(64, "HDR cudaOccMaxBlocksPerSMBlockBarrierLimit; HW"),
    "cluster_nonportable_max": Sourced(16, "HTG §1.4.1.3; HW: 16 launches with the opt-in"),
}

_BLACKWELL_DC: dict[str, Sourced] = {
    "cc_major": Sourced(10, "PG-CC T28"),
    "cc_minor": Sourced(0, "PG-CC T28"),
    "smem_per_block_optin": Sourced(232448, "PG-CC T31; BTG; CUTLASS arch.h sm100_smem_capacity_bytes"),
    "smem_static_max": Sourced(232448, "PTXAS: 0x38c00 max static .shared on sm_100a"),
    "smem_per_sm": Sourced(233472, "PG-CC T31; BTG; HDR"),
    "smem_user_base": _UNCONFIRMED_USER_BASE,
    "max_threads_per_sm": Sourced(2048, "PG-CC T30; BTG §1.4.1.1"),
    "max_warps_per_sm": Sourced(64, "PG-CC T30; BTG §1.4.1.1"),
    "max_ctas_per_sm": Sourced(32, "PG-CC T30; HDR"),
    "sm_count": Sourced(148, "UNCONFIRMED: B200 (2 dies × 74 SMs) as NVIDIA's product pages state; not measured"),
    "named_barriers_per_sm": Sourced(64, "HDR cudaOccMaxBlocksPerSMBlockBarrierLimit (10.0)"),
    "tmem_columns": Sourced(512, "PTX §9.7.16.1; CUTLASS Sm100TmemCapacityColumns = 512"),
    "tmem_lanes": Sourced(128, "PTX §9.7.16.1; CUTLASS tmem_allocator_sm100.hpp"),
    "tmem_min_alloc_columns": Sourced(32, "PTX §9.7.16.7.1; PTXAS: nCols a power of 2 in [32..512]"),
    "cluster_nonportable_max": Sourced(16, "BTG §1.4.1.2 (B200)"),
}

_BLACKWELL_RTX: dict[str, Sourced] = {
    "cc_major": Sourced(12, "PG-CC T28"),
    "cc_minor": Sourced(0, "PG-CC T28"),
    "smem_per_block_optin": Sourced(101376, "PG-CC T31; CUTLASS arch.h sm120_smem_capacity_bytes"),
    "smem_static_max": Sourced(101376, "PTXAS: 0x18c00 max static .shared on sm_120a"),
    "smem_per_sm": Sourced(102400, "PG-CC T31, T32; HDR (BTG's 128 KB is the unified L1+shared)"),
    "smem_reserved_per_block": Sourced(1024, "PG-CC T31 (100 KiB per SM - 99 KiB per block); HDR"),
    "smem_user_base": _UNCONFIRMED_USER_BASE,
    "max_threads_per_sm": Sourced(1536, "PG-CC T30; BTG §1.4.1.1"),
    "max_warps_per_sm": Sourced(48, "PG-CC T30; BTG §1.4.1.1"),
    "max_ctas_per_sm": Sourced(24, "PG-CC T30; HDR (BTG's 32 conflicts; specs/hardware.md §0.3 item 2)"),
    "sm_count": Sourced(170, "UNCONFIRMED: RTX 5090 as NVIDIA's product pages state; not measured"),
    "named_barriers_per_sm": Sourced(24, "HDR cudaOccMaxBlocksPerSMBlockBarrierLimit (12.x)"),
    "cluster_nonportable_max": Sourced(
        8, "UNCONFIRMED: no published non-portable limit; equal to the portable max (PG-CLUSTER)"
    ),
}

_PLAIN_SM90: dict[str, Sourced] = {
    "smem_static_max": Sourced(
        49152, "PTXAS 13.0.88 on sm_90: 'uses too much shared data (0x10000 bytes, 0xc000 max)'"
    ),
}


def _build(name: str, features: frozenset[str], *layers: dict[str, Sourced]) -> TargetSpec:
    facts: dict[str, Sourced] = {}
    for layer in (_COMMON, *layers):
        facts.update(layer)
    unconfirmed = frozenset(k for k, v in facts.items() if "UNCONFIRMED" in v.source)
    values = {k: v.value for k, v in facts.items()}
    sources = MappingProxyType({k: v.source for k, v in facts.items()})
    return TargetSpec(name=name, features=features, sources=sources, unconfirmed=unconfirmed, **values)


TARGETS: Mapping[str, TargetSpec] = MappingProxyType(
    {
        "sm_90": _build("sm_90", _COMMON_FEATURES, _HOPPER, _PLAIN_SM90),
        "sm_90a": _build("sm_90a", _COMMON_FEATURES | {"wgmma", "setmaxnreg"}, _HOPPER),
        "sm_100a": _build("sm_100a", _COMMON_FEATURES | {"setmaxnreg", "tcgen05", "tmem"}, _BLACKWELL_DC),
        "sm_120a": _build("sm_120a", _COMMON_FEATURES | {"setmaxnreg"}, _BLACKWELL_RTX),
    }
)


def target(name: str) -> TargetSpec | None:
    """The spec of a target name such as ``sm_90a`` (case and surrounding blanks ignored)."""
    return TARGETS.get(name.strip().lower())


def target_for_sm(sm: int) -> TargetSpec | None:
    """A spec with this architecture number (``90`` → ``sm_90a`` before ``sm_90``).

    Cubin headers carry only the number; the arch-specific ``a`` entry is preferred
    because it is the one kernlink builds for.
    """
    matches = [t for t in TARGETS.values() if t.sm == sm]
    matches.sort(key=lambda t: (not t.name.endswith("a"), t.name))
    return matches[0] if matches else None


# Scalar types of params fields, facts and callable signatures: size in bytes. Every
# one is naturally aligned (its alignment equals its size), which is what params
# layouts are checked against; the same on every target, so not part of TargetSpec.
SCALAR_ALIGN_SOURCE = "DOC: CUDA C++ Programming Guide, Device Memory Accesses (1/2/4/8-byte words naturally aligned)"
SCALAR_SIZES: Mapping[str, Sourced] = MappingProxyType(
    {
        "bool": Sourced(1, "DOC: device code follows the host ABI, sizeof(bool) == 1 (x86-64, aarch64 psABI)"),
        "i8": Sourced(1, "PTX §5.2.1 (.s8)"),
        "u8": Sourced(1, "PTX §5.2.1 (.u8)"),
        "i16": Sourced(2, "PTX §5.2.1 (.s16)"),
        "u16": Sourced(2, "PTX §5.2.1 (.u16)"),
        "f16": Sourced(2, "PTX §5.2.1 (.f16)"),
        "bf16": Sourced(2, "PTX §5.2.3 (.bf16, 16-bit storage)"),
        "i32": Sourced(4, "PTX §5.2.1 (.s32)"),
        "u32": Sourced(4, "PTX §5.2.1 (.u32)"),
        "f32": Sourced(4, "PTX §5.2.1 (.f32)"),
        "i64": Sourced(8, "PTX §5.2.1 (.s64)"),
        "u64": Sourced(8, "PTX §5.2.1 (.u64)"),
        "f64": Sourced(8, "PTX §5.2.1 (.f64)"),
        "ptr": Sourced(8, "PTX §5.2.1 (.u64 addresses under .address_size 64)"),
    }
)

_untagged = [k for k, v in SCALAR_SIZES.items() if not any(t in v.source for t in SOURCE_TAGS)]
if _untagged:
    raise ValueError(f"scalar sizes without an evidence tag: {', '.join(_untagged)}")


def scalar_size(type_name: str) -> int | None:
    """Bytes of a contract scalar type (``u32`` → 4); None for a name that is not one."""
    entry = SCALAR_SIZES.get(type_name)
    return entry.value if entry is not None else None


def scalar_align(type_name: str) -> int | None:
    """Natural alignment of a contract scalar type: its size."""
    return scalar_size(type_name)


#: A params field holding a tensor map by value (``tensormap``): the driver's opaque ``CUtensorMap``.
TENSORMAP_SIZE = Sourced(128, "DRV-TMAP: CUtensorMap is 16 64-bit words (CU_TENSOR_MAP_NUM_QWORDS), 128 bytes")
TENSORMAP_ALIGN = Sourced(64, "DRV-TMAP: CUtensorMap is declared alignas(64) in cuda.h; TMA requires the alignment")


def field_size(type_name: str) -> int | None:
    """Bytes of a params field's type: a scalar's, or a by-value tensor map's 128."""
    return TENSORMAP_SIZE.value if type_name == "tensormap" else scalar_size(type_name)


def field_align(type_name: str) -> int | None:
    """Alignment of a params field's type: a scalar's size, or a by-value tensor map's 64."""
    return TENSORMAP_ALIGN.value if type_name == "tensormap" else scalar_align(type_name)
