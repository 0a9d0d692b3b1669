"""The generator refuses what has no correct code: a zero arrival count, a kernel with no role.

These reach the generator only when a clause is ignored or misses them; the
generator is the last line, and it must refuse with a diagnostic rather than emit
`mbarrier.init(…, 0)` (on which nvJitLink has crashed) or `__launch_bounds__(0)`.
"""

from __future__ import annotations

import dataclasses

import pytest

from analysis.downstream import verify_downstream
from analysis.plan import Plan
from diagnostics.model import DiagnosticError
from kernlink.api import check_text
from linker.generate import generate
from package.captured import Captured

ZERO_COUNT = """
stage "demo.zero" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    role mma entry mma_main warps 2
    ring kv produce by load {
        full init 1
        empty init per_warpgroup(mma)
        empty wait
        full arrive 1
        init by load
    }
    ring kv consume by mma {
        full wait
        empty arrive per_warpgroup(mma)
    }
}
"""

NO_ROLE = """
stage "demo.none" version "1.0.0" {
    target sm_90a
    owns fact tile: u32 = 64
}
"""


def _generate(text: str, needed: frozenset[str]) -> None:
    comp = check_text(text, "demo.kc").composition
    assert comp is not None
    captured = Captured(frozenset(), needed)
    comp = dataclasses.replace(comp, stages=tuple(dataclasses.replace(s, captured=captured) for s in comp.stages))
    placed = verify_downstream(comp).placed
    assert placed is not None
    generate(Plan(comp, placed))


def test_zero_arrival_count_is_refused() -> None:
    with pytest.raises(DiagnosticError) as err:
        _generate(ZERO_COUNT, frozenset({"kl_demo_zero_kv_empty_count", "kl_demo_zero_kv_full_count"}))
    [diag] = err.value.diagnostics
    assert diag.code == "L-LINK" and "0 arrivals" in diag.message and "`empty`" in diag.message
    assert diag.labels and diag.labels[0].span.line == 8  # the `empty init` line


def test_no_role_is_refused() -> None:
    with pytest.raises(DiagnosticError) as err:
        _generate(NO_ROLE, frozenset())
    [diag] = err.value.diagnostics
    assert diag.code == "L-LINK" and "no role" in diag.message


REGS = """
stage "demo.regs" version "1.0.0" {
    target sm_90a
    requires feature setmaxnreg
    role load entry load_main warps 4 regs 24 warpgroup
    role mma entry mma_main warps 4 regs 200 warpgroup
}
"""


@pytest.mark.parametrize("entry", [0, 16])
def test_a_kernel_below_the_smallest_budget_is_l_regs(entry: int) -> None:
    """A linked kernel of fewer than 8 registers once crashed the re-solve (`capacity … must be positive`)."""
    from analysis.plan import Plan

    result = check_text(REGS, "demo.kc")
    assert result.accepted and result.composition is not None
    placed = verify_downstream(result.composition).placed
    assert placed is not None
    with pytest.raises(DiagnosticError) as err:
        Plan(result.composition, placed).for_entry(entry, "kl_dispatch")
    [diag] = err.value.diagnostics
    assert diag.code == "L-REGS" and f"starts with {entry} registers" in diag.message
    assert {lab.text for lab in diag.labels} == {"`load`: regs 24", "`mma`: regs 200"}
