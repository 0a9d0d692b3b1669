"""Problem invariants and the capacity arithmetic."""

from __future__ import annotations

import pytest

from placement import Capacities, Phase, Problem, Ring, Role, SmemClaim, TmemClaim

from .helpers import TINY, caps


def test_capacities_from_the_hardware_table() -> None:
    c = caps("sm_90a")
    assert (c.smem_user_base, c.smem_limit) == (1024, 1024 + 232448)
    assert caps("sm_120a").smem_per_block_optin == 101376
    assert caps("sm_100a").tmem_columns == 512


@pytest.mark.parametrize(
    ("warps", "entry", "pool"),
    [
        (12, 168, 64512),  # 384 threads: specs/hardware.md §3.1/§3.2
        (16, 128, 65536),
        (20, 96, 61440),  # 640 threads → 96 (specs/hardware.md §3.1)
        (8, 248, 63488),  # 255 per thread at most, rounded down to 8
        (10, 168, 53760),  # warps rounded up to 12 for the allocation
    ],
)
def test_entry_registers_and_pool(warps: int, entry: int, pool: int) -> None:
    c = caps()
    assert c.entry_regs(warps) == entry
    assert c.register_pool(warps) == pool


def test_items_are_kept_in_canonical_order() -> None:
    a = SmemClaim("b", "x", 64)
    b = SmemClaim("a", "y", 64)
    one = Problem(TINY, smem=(a, b))
    two = Problem(TINY, smem=(b, a))
    assert one == two
    assert [c.owner for c in one.smem] == ["a", "b"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: SmemClaim("a", "x", 0),
        lambda: SmemClaim("a", "x", 64, align=24),
        lambda: SmemClaim("", "x", 64),
        lambda: Ring("a", "r", 3, 2),
        lambda: TmemClaim("a", "t", 0),
        lambda: Role("a", "r", 0),
        lambda: Problem(TINY, smem=(SmemClaim("a", "x", 8), SmemClaim("a", "x", 16))),
        lambda: Problem(TINY, smem=(SmemClaim("a", "x", 8, per_slot_ring="nope"),)),
        lambda: Problem(TINY, smem=(SmemClaim("a", "x", 8, lifetime=Phase("p")),)),
        lambda: Problem(TINY, roles=(Role("a", "r", 3, warpgroup=True),)),
        lambda: Problem(TINY, roles=(Role("a", "r", 4, regs=300),)),
        lambda: Problem(TINY, block_warps=9),
        lambda: Problem(TINY, smem=(SmemClaim("a", "r.mbarriers", 8),), rings=(Ring("a", "r", 1, 2),)),
    ],
)
def test_invariants_reject_malformed_problems(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        build()


def test_capacity_invariants() -> None:
    with pytest.raises(ValueError):
        Capacities(**{**TINY.__dict__, "syncthreads_barrier_id": 3})
    with pytest.raises(ValueError):
        Capacities(**{**TINY.__dict__, "setmaxnreg_min": 20})


def test_ring_slot_storage_is_aligned() -> None:
    p = Problem(TINY, smem=(SmemClaim("a", "s", 40, 16, per_slot_ring="r"),), rings=(Ring("a", "r", 1, 3),))
    assert p.slot_stride(p.smem[0]) == 48
    assert p.smem_size(p.smem[0], {"r": 3}) == 144
    assert p.ring_barrier_bytes(p.rings[0], 3) == 48
    assert p.handle_count == 1 + 2


def test_unbounded_ring_depth_is_capped_by_shared_memory() -> None:
    p = Problem(TINY, smem=(SmemClaim("a", "s", 24, 8, per_slot_ring="r"),), rings=(Ring("a", "r", 1, None),))
    # one slot takes 24 B plus two 8 B mbarriers; 160 B hold at most 4 of them
    assert p.rings[0].depth_max == 4
    assert p.depth_range(p.rings[0]) == (1, 4)
