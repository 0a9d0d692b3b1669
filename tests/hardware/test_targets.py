"""The per-target hardware table: every number sourced, known values right."""

from __future__ import annotations

import dataclasses

import pytest

from hardware import residency
from hardware.targets import (
    FEATURE_SOURCES,
    SOURCE_TAGS,
    TARGETS,
    TargetSpec,
    numeric_fields,
    target,
    target_for_sm,
)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_numeric_field_has_a_tagged_source(name: str) -> None:
    spec = TARGETS[name]
    ints = [f.name for f in dataclasses.fields(spec) if isinstance(getattr(spec, f.name), int)]
    assert set(ints) == set(numeric_fields())
    for field_name in ints:
        source = spec.sources.get(field_name, "")
        assert source, f"{name}.{field_name} has no source"
        assert any(tag in source for tag in SOURCE_TAGS), f"{name}.{field_name}: {source!r}"
        assert spec.fact(field_name).value == getattr(spec, field_name)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_feature_has_a_source(name: str) -> None:
    assert TARGETS[name].features <= set(FEATURE_SOURCES)


def test_unconfirmed_fields_are_marked() -> None:
    for spec in TARGETS.values():
        for field_name in numeric_fields():
            marked = "UNCONFIRMED" in spec.sources[field_name]
            assert marked == (field_name in spec.unconfirmed)
            assert spec.fact(field_name).confirmed is not marked
    assert "cluster_nonportable_max" in TARGETS["sm_120a"].unconfirmed
    assert "smem_user_base" not in TARGETS["sm_90a"].unconfirmed


def test_a_spec_without_a_source_is_refused() -> None:
    spec = TARGETS["sm_90a"]
    sources = dict(spec.sources)
    del sources["smem_per_sm"]
    with pytest.raises(ValueError, match="smem_per_sm"):
        dataclasses.replace(spec, sources=sources)
    sources = dict(spec.sources, smem_per_sm="trust me")
    with pytest.raises(ValueError, match="evidence tag"):
        dataclasses.replace(spec, sources=sources)


def test_shared_memory_values() -> None:
    assert TARGETS["sm_90a"].smem_per_block_optin == 232448
    assert TARGETS["sm_100a"].smem_per_block_optin == 232448
    assert TARGETS["sm_120a"].smem_per_block_optin == 101376
    assert TARGETS["sm_90a"].smem_per_sm == 233472
    assert TARGETS["sm_120a"].smem_per_sm == 102400
    for spec in TARGETS.values():
        assert spec.smem_reserved_per_block == 1024
        assert spec.smem_user_base == 1024
        assert spec.smem_alloc_granularity == 128
        assert spec.smem_per_block_default == 49152
    assert TARGETS["sm_90"].smem_static_max == 49152
    assert TARGETS["sm_90a"].smem_static_max == 232448


def test_thread_and_register_values() -> None:
    for spec in TARGETS.values():
        assert spec.warp_size == 32
        assert (spec.max_threads_per_block, spec.max_warps_per_block) == (1024, 32)
        assert (spec.regs_per_sm, spec.regs_per_block) == (65536, 65536)
        assert spec.max_regs_per_thread == 255
        assert spec.reg_alloc_unit_per_warp == 256
        assert (spec.setmaxnreg_min, spec.setmaxnreg_max, spec.setmaxnreg_step) == (24, 256, 8)
        assert spec.named_barriers_per_cta == 16 and spec.syncthreads_barrier_id == 0
        assert (spec.mbarrier_size, spec.mbarrier_align) == (8, 8)
        assert spec.mbarrier_max_arrivals == 2**20 - 1
        assert (spec.mbarrier_tx_min, spec.mbarrier_tx_max) == (-(2**20 - 1), 2**20 - 1)
        assert (spec.tma_smem_align, spec.swizzle128_align) == (128, 1024)
        assert (spec.swizzle64_align, spec.swizzle32_align) == (512, 256)
        assert (spec.wgmma_operand_align, spec.ldmatrix_align, spec.bulk_copy_align) == (16, 16, 16)
        assert spec.cluster_portable_max == 8
        assert spec.kernel_param_max_bytes == 32764
        assert spec.kernel_param_legacy_max_bytes == 4096
    names = ("sm_90a", "sm_100a", "sm_120a")
    assert [TARGETS[n].named_barriers_per_sm for n in names] == [64, 64, 24]
    assert [TARGETS[n].max_ctas_per_sm for n in names] == [32, 32, 24]
    assert [TARGETS[n].max_warps_per_sm for n in names] == [64, 64, 48]
    assert TARGETS["sm_90a"].cluster_nonportable_max == 16
    assert TARGETS["sm_100a"].cluster_nonportable_max == 16
    assert TARGETS["sm_120a"].cluster_nonportable_max == TARGETS["sm_120a"].cluster_portable_max


def test_tensor_memory() -> None:
    assert TARGETS["sm_100a"].tmem_columns == 512
    assert TARGETS["sm_100a"].tmem_lanes == 128
    assert TARGETS["sm_100a"].tmem_min_alloc_columns == 32
    assert TARGETS["sm_90a"].tmem_columns == 0
    assert TARGETS["sm_120a"].tmem_columns == 0
    assert not TARGETS["sm_120a"].has("tmem")


def test_one_tensor_memory_allocation_rule() -> None:
    blackwell = TARGETS["sm_100a"]
    assert [residency.tmem_allocation(blackwell, c) for c in (1, 32, 33, 96, 512)] == [32, 32, 64, 128, 512]
    assert residency.tmem_allocation(blackwell, 513) is None
    assert residency.tmem_allocation(TARGETS["sm_90a"], 32) is None
    # beyond the capacity the rounding still answers: placement reports 544 columns as 1024
    assert [residency.tmem_alloc_columns(blackwell, n) for n in (1, 32, 33, 200, 512, 544)] == [
        32,
        32,
        64,
        256,
        512,
        1024,
    ]


def test_features() -> None:
    assert TARGETS["sm_90a"].has("wgmma") and TARGETS["sm_90a"].has("setmaxnreg")
    assert not TARGETS["sm_90"].has("wgmma") and not TARGETS["sm_90"].has("setmaxnreg")
    assert not TARGETS["sm_100a"].has("wgmma") and TARGETS["sm_100a"].has("tcgen05")
    assert not TARGETS["sm_120a"].has("tcgen05") and TARGETS["sm_120a"].has("setmaxnreg")
    for spec in TARGETS.values():
        assert {"tma", "mbarrier", "clusters", "named_barriers", "mma_sync"} <= spec.features


def test_lookup() -> None:
    assert target("sm_90a") is TARGETS["sm_90a"]
    assert target(" SM_120A ") is TARGETS["sm_120a"]
    assert target("sm_80") is None
    assert target_for_sm(90) is TARGETS["sm_90a"]
    assert target_for_sm(100) is TARGETS["sm_100a"]
    assert target_for_sm(75) is None
    assert isinstance(TARGETS["sm_90a"], TargetSpec)
    assert TARGETS["sm_90a"].compute_capability == (9, 0)
    assert TARGETS["sm_120a"].lto_arch == "lto_120a"


def test_formulas() -> None:
    hopper = TARGETS["sm_90a"]
    assert residency.smem_charge(hopper, 116224) == 117248
    assert 2 * residency.smem_charge(hopper, 115712) == hopper.smem_per_sm
    assert residency.regs_per_warp(hopper, 255) == 256 * 32
    assert residency.regs_per_warp(hopper, 108) == 3584
