"""The block layout and register groups shared by L-WARPS, L-WARPGROUP and L-REGS."""

from __future__ import annotations

from checker.warps import block_layout, register_groups
from hardware.residency import entry_registers
from hardware.targets import TARGETS
from kernlink.api import check_text

SM90A = TARGETS["sm_90a"]


def _layout(roles: str):  # type: ignore[no-untyped-def]
    result = check_text(f'stage "s" version "1.0.0" {{\n    target sm_90a\n{roles}}}\n', "s.kc")
    assert result.composition is not None
    return block_layout(result.composition, SM90A)


def test_warpgroup_roles_start_aligned_after_padding() -> None:
    layout = _layout(
        "    role load entry a warps 1\n    role mma entry b warps 8 warpgroup\n    role epi entry c warps 1\n"
    )
    assert [(p.name, p.start, p.padding) for p in layout.roles] == [("load", 0, 0), ("mma", 4, 3), ("epi", 12, 0)]
    assert layout.warps == 13


def test_register_groups_take_the_largest_budget_and_default_to_the_minimum() -> None:
    layout = _layout(
        "    role load entry a warps 1\n    role aux entry b warps 2 regs 56\n"
        "    role mma entry c warps 8 warpgroup regs 232\n"
    )
    groups = register_groups(layout, SM90A)
    assert [g.budget for g in groups] == [56, 232, 232]
    assert groups[0].decided_by is not None and groups[0].decided_by.name == "aux"
    load_only = _layout("    role load entry a warps 1\n    role mma entry c warps 4 warpgroup regs 232\n")
    assert [g.budget for g in register_groups(load_only, SM90A)] == [SM90A.setmaxnreg_min, 232]


def test_entry_registers_match_ptxas() -> None:
    # specs/hardware.md §3.1: 384 threads → 168, 640 threads → 96 (ptxas and the H200).
    assert entry_registers(SM90A, 12) == 168
    assert entry_registers(SM90A, 20) == 96
    assert entry_registers(SM90A, 16) == 128
    assert entry_registers(SM90A, 13) == 128  # warps count as a multiple of 4 (HDR's hardware check)
    assert entry_registers(SM90A, 4) == 248  # min(255, 512) rounded down to the unit of 8
    # `blocks_per_sm 2` at 384 threads: the 80-register cap ptxas gave `ring` on the H200
    assert entry_registers(SM90A, 12, 2) == 80
