"""Storage demand shared by L-ALIGN, L-DEPTH, L-OVERLAP and L-TMEM: alignments, depths, liveness, peaks."""

from __future__ import annotations

from checker.composition import Composition
from checker.storage import (
    agreed_depth,
    certainly_colive,
    min_depth,
    needed_alignment,
    overflowing_rings,
    peak,
    slot_bytes,
    smem_demands,
    tmem_demands,
)
from contract_lang import ast as A
from hardware.targets import TARGETS
from kernlink.api import check_text

RING = """
stage "l" version "1.0.0" {{
    target {target}
    role load entry load_main warps 1
    claim smem tiles bytes 32KiB align 1024 per_slot kv use tma, swizzle128
    claim smem scratch bytes 4KiB
    ring kv produce by load {{
        depth {producer}
        init by load fenced
    }}
}}
stage "m" version "1.0.0" {{
    target {target}
    role mma entry mma_main warps 4 warpgroup
    ring kv consume by mma {{
        depth {consumer}
    }}
}}
"""


def _comp(text: str) -> Composition:
    comp = check_text(text, "t.kc").composition
    assert comp is not None
    return comp


def test_needed_alignment_takes_the_largest_use() -> None:
    spec = TARGETS["sm_90a"]
    assert needed_alignment(spec, ("tma", "swizzle128", "wgmma")) == (1024, "swizzle128")
    assert needed_alignment(spec, ("swizzle64",)) == (512, "swizzle64")
    assert needed_alignment(spec, ("swizzle32", "ldmatrix")) == (256, "swizzle32")
    assert needed_alignment(spec, ("mbarrier",)) == (8, "mbarrier")
    assert needed_alignment(spec, ("generic",)) == (1, None)


def test_ring_depths_and_slot_storage() -> None:
    comp = _comp(RING.format(target="sm_90a", producer="2..6", consumer="3..8"))
    assert agreed_depth(comp, "kv") == (3, 6)
    assert min_depth(comp, "kv") == 3
    assert slot_bytes(comp, "kv") == 32 * 1024 + 2 * 8
    total, members = peak(comp, smem_demands(comp))
    assert total == 3 * (32 * 1024 + 16) + 4096
    assert [m.name for m in members] == ["tiles", "scratch", "ring kv"]
    assert overflowing_rings(comp) == []


def test_disjoint_ranges_fall_back_to_the_least_stated_depth() -> None:
    comp = _comp(RING.format(target="sm_90a", producer="4..8", consumer="2..3"))
    assert agreed_depth(comp, "kv") is None
    assert min_depth(comp, "kv") == 2


def test_a_ring_overflows_alone_at_its_minimum_depth() -> None:
    comp = _comp(RING.format(target="sm_120a", producer="4..8", consumer="4"))
    assert overflowing_rings(comp) == ["kv"]


PHASED = """
stage "i" version "1.0.0" {{
    target sm_100a
    role sched entry sched_main warps 1
    phases {mode} gemm, softmax
}}
stage "w" version "1.0.0" {{
    target sm_100a
    role mma entry mma_main warps 1
    claim tmem acc columns 512 lifetime phase gemm
    claim tmem stats columns 20 lifetime phase softmax
    claim tmem bias columns 32
}}
"""


def test_exclusive_phases_do_not_add_up() -> None:
    comp = _comp(PHASED.format(mode="exclusive"))
    total, members = peak(comp, tmem_demands(comp))
    assert total == 512 + 32 and [m.name for m in members] == ["acc", "bias"]


def test_concurrent_phases_add_up_at_their_allocations() -> None:
    comp = _comp(PHASED.format(mode="concurrent"))
    total, _ = peak(comp, tmem_demands(comp))
    assert total == 512 + 32 + 32  # 20 columns are allocated as 32


def test_certain_colive_intervals() -> None:
    comp = _comp("""
stage "p" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    export tensor out from role mma {
        elem f32
        tile m 64 n 64
        ready event acc.ready
    }
}
stage "c" version "1.0.0" {
    target sm_90a
    role epi entry epi_main warps 4 warpgroup
    import tensor acc from out into role epi {
        elem f32
        tile m 64 n 64
        done event acc.done
    }
}
""")
    ready, done = A.EventRef("acc", "ready"), A.EventRef("acc", "done")
    until_ready = A.Lifetime("until", end=ready)
    between = A.Lifetime("between", start=ready, end=done)
    from_ready = A.Lifetime("from", start=ready)
    reversed_ = A.Lifetime("between", start=done, end=ready)
    assert not certainly_colive(comp, until_ready, between)
    assert certainly_colive(comp, between, from_ready)
    assert certainly_colive(comp, until_ready, A.Lifetime("until", end=done))
    assert not certainly_colive(comp, reversed_, between)
    assert certainly_colive(comp, A.KERNEL_LIFETIME, reversed_)
    assert not certainly_colive(comp, A.Lifetime("phase", phase="x"), between)
