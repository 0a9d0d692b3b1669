"""Issue 18 item 1: one residency model, placement for `blocks_per_sm`, and a brute-force oracle."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing.compositions.bundle import Bundle
from hardware import residency as R
from hardware.targets import TARGETS, TargetSpec
from kernlink.api import check
from placement.adapter import placed_residency
from placement.problem import Domain
from tests.tiers import examples

ROOT = Path(__file__).resolve().parents[2]
RING = ROOT / "specs" / "examples" / "ring"


def ring_copy(tmp: Path, launch: str, regs: tuple[int | None, int | None] = (32, 104)) -> list[Path]:
    """The ring example checked from its contracts, with a pipeline `launch` line and budgets."""
    for name in ("loader.kc", "reduce.kc"):
        shutil.copy(RING / name, tmp / name)
    loader, reduce = tmp / "loader.kc", tmp / "reduce.kc"
    lt, rt = loader.read_text(), reduce.read_text()
    lt = lt.replace("regs 40", f"regs {regs[0]}" if regs[0] else "")
    rt = rt.replace("regs 232", f"regs {regs[1]}" if regs[1] else "")
    if regs == (None, None):
        lt = lt.replace(", setmaxnreg", "")
        rt = rt.replace(", setmaxnreg", "")
    loader.write_text(lt)
    reduce.write_text(rt)
    pipeline = (
        (RING / "ring.kp")
        .read_text()
        .replace(' from "build/loader.kpkg"', "")
        .replace(' from "build/reduce.kpkg"', "")
        .replace("    target sm_90a\n", f"    target sm_90a\n    {launch}\n", 1)
    )
    (tmp / "ring.kp").write_text(pipeline)
    return [tmp / "ring.kp", loader, reduce]


def test_ring_with_two_blocks_per_sm_is_placed_for_two_resident_blocks(tmp_path: Path) -> None:
    result = check(ring_copy(tmp_path, "launch fixed threads 384 blocks_per_sm 2"))
    assert result.accepted, [d.message for d in result.diagnostics]
    assert result.downstream is not None and result.downstream.placed is not None
    p = result.downstream.placed.placement
    spec = TARGETS["sm_90a"]
    # half the SM: 233 472 / 2 − 1 024 reserved = 115 712 B per block; 3 slots of 32 KiB fit, 4 do not
    assert p.use(Domain.SMEM).limit - spec.smem_user_base == 115712
    assert p.depth("kv") == 3
    assert p.entry_regs == 80 and p.register_pool == 80 * 384
    res = placed_residency(spec, p)
    assert res.blocks >= 2
    # the same ring at one block per SM takes the whole SM: depth 6, one block resident
    one = check(ring_copy(tmp_path, "launch fixed threads 384 blocks_per_sm 1"))
    assert one.downstream is not None and one.downstream.placed is not None
    assert one.downstream.placed.placement.depth("kv") == 6
    assert placed_residency(spec, one.downstream.placed.placement).blocks == 1


def test_blocks_per_sm_the_shared_memory_cannot_hold_is_rejected_naming_it(tmp_path: Path) -> None:
    # four blocks get 57 344 B each; the ring's minimum depth 2 needs 64 KiB of slots
    result = check(ring_copy(tmp_path, "launch fixed threads 384 blocks_per_sm 4", regs=(None, None)))
    errors = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["L-OVERLAP"], [d.message for d in errors]
    assert "shared memory" in errors[0].message and "blocks_per_sm 4" in errors[0].message


# ----------------------------------------------------------------- the brute-force oracle


def brute_blocks(spec: TargetSpec, warps: int, regs: int, smem: int, barriers: int, tmem: int) -> int:
    """Blocks per SM by trying n = 1, 2, … and simulating n resident blocks on one SM.

    Independent of hardware.residency: every resource is a running total, registers are
    dealt warp by warp to the sub-partitions' files, and the per-block launch checks are
    written out from specs/hardware.md §1.1, §3.1 and §4.
    """
    per_warp = -(-regs * 32 // 256) * 256
    if regs > spec.max_regs_per_thread or per_warp * (-(-warps // 4) * 4) > spec.regs_per_block:
        return 0
    if smem > spec.smem_per_block_optin or warps * 32 > spec.max_threads_per_block:
        return 0
    n = 0
    while True:
        m = n + 1
        files = [0] * spec.sub_partitions
        for w in range(m * warps):
            files[w % spec.sub_partitions] += per_warp
        charge = -(-(smem + spec.smem_reserved_per_block) // 128) * 128
        fits = (
            m * warps * 32 <= spec.max_threads_per_sm
            and m * warps <= spec.max_warps_per_sm
            and m <= spec.max_ctas_per_sm
            and max(files) <= spec.regs_per_sm // spec.sub_partitions
            and m * charge <= spec.smem_per_sm
            and m * barriers <= spec.named_barriers_per_sm
            and (tmem == 0 or m * tmem <= spec.tmem_columns)
        )
        if not fits:
            return n
        n = m


@given(
    st.sampled_from(sorted(TARGETS)),
    st.integers(1, 32),
    st.integers(1, 255),
    st.integers(0, 240 * 1024),
    st.integers(1, 16),
    st.sampled_from((0, 32, 64, 128, 256, 512)),
)
def test_residency_never_claims_more_blocks_than_brute_force(
    name: str, warps: int, regs: int, smem: int, barriers: int, tmem: int
) -> None:
    spec = TARGETS[name]
    tmem = tmem if spec.tmem_columns else 0
    model = R.residency(spec, R.Demand(warps, regs, smem, barriers, tmem)).blocks
    assert model <= brute_blocks(spec, warps, regs, smem, barriers, tmem)


@given(st.sampled_from(sorted(TARGETS)), st.integers(1, 32), st.integers(1, 32))
def test_entry_registers_let_the_blocks_reside(name: str, warps: int, blocks: int) -> None:
    spec = TARGETS[name]
    entry = R.entry_registers(spec, warps, blocks)
    if entry:
        assert brute_blocks(spec, warps, entry, 0, 1, 0) >= min(
            blocks, R.residency(spec, R.Demand(warps, entry)).blocks
        )
        assert R.blocks_by_registers(spec, entry, warps) >= blocks
        assert (
            entry + R.reg_unit(spec) > spec.max_regs_per_thread
            or R.blocks_by_registers(spec, entry + R.reg_unit(spec), warps) < blocks
        )


def test_known_occupancies() -> None:
    h = TARGETS["sm_90a"]
    # specs/hardware.md §1.1: 115 712 B → 2 blocks, 116 224 B → 1 (H200 occupancy API)
    assert R.residency(h, R.Demand(1, 32, 115712)).blocks == 2
    assert R.residency(h, R.Demand(1, 32, 116224)).blocks == 1
    assert R.residency(h, R.Demand(1, 32, 0)).blocks == 32
    # §4: 16 barrier IDs → 4 blocks; sm_120a: a block using ID 15 → 1
    assert R.residency(h, R.Demand(1, 32, 0, 16)).blocks == 4
    assert R.residency(TARGETS["sm_120a"], R.Demand(1, 32, 0, 16)).blocks == 1
    # `__launch_bounds__(256, 8)` on sm_120a: threads allow 6
    lim = R.residency(TARGETS["sm_120a"], R.Demand(8, 32)).limiting
    assert (lim.resource, lim.blocks) == ("threads", 6)


@pytest.mark.parametrize("name", ["sm_90a", "sm_100a", "sm_120a"])
def test_placed_compositions_never_claim_more_blocks_than_brute_force(name: str) -> None:
    """For generated compositions (with a drawn `blocks_per_sm`), the blocks per SM the placement
    claims are at most what the brute-force simulation finds for the placed kernel."""
    from analysis.downstream import verify_downstream
    from checker.engine import run_clauses
    from checker.resolve import resolve
    from contract_lang.parser import parse_text
    from fuzzing.compositions.generate import compositions
    from package.loader import StageEntry

    spec = TARGETS[name]

    @examples(0.08)
    @given(compositions(spec, max_stages=2), st.integers(1, 4))
    def prop(bundle: Bundle, blocks: int) -> None:
        text = bundle.text()
        text = re.sub(
            r"launch fixed threads (\d+)( blocks_per_sm \d+)?",
            lambda m: f"launch fixed threads {m[1]} blocks_per_sm {blocks}",
            text,
        )
        source = parse_text(text, "bundle.kc")
        comp = resolve(source.pipelines[0], "bundle.kc", [StageEntry(s, "bundle.kc", None) for s in source.stages])
        if any(d.is_error for d in run_clauses(comp)):
            return  # a drawn blocks_per_sm the block cannot reach: L-LAUNCH / L-REGS, tested elsewhere
        placed = verify_downstream(comp).placed
        if placed is None:
            return
        p = placed.placement
        claimed = placed_residency(spec, p).blocks
        smem = max(0, p.use(Domain.SMEM).end - spec.smem_user_base)
        brute = brute_blocks(
            spec, p.block_warps, p.entry_regs or 8, smem, max(p.use(Domain.BARRIER).end, 1), p.use(Domain.TMEM).end
        )
        assert claimed <= brute, text
        if "blocks_per_sm" in text:
            assert brute >= blocks, text  # the placement was made for `blocks` resident blocks

    prop()
