"""A fact pinned by its assumers flows to the link (issue 27; checker/pins.py).

The owner states `tile in 64..128`; a stage compiled for 96 pins the linker's choice. The link
writes 96 into the params field `= fact tile` (not the caller), folds the owner's fact handle to
96 and says in the link map who pinned it. Without the assumer the field stays the caller's.
"""

from __future__ import annotations

import dataclasses

from analysis.downstream import verify_downstream
from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from kernlink.api import check_text
from linker.artifacts import Generated
from linker.generate import generate
from linker.linkmap import LinkRecord, render_text
from package.captured import Captured

OWNER = """
stage "demo.pad" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    launch fixed threads 128
    params PadParams size 8 align 4 {
        count: u32 @ 0
        tile: u32 @ 4 = fact tile
    }
    owns fact tile: u32 in 64..128
}
"""
ASSUMER = """
stage "demo.epi" version "1.0.0" {
    target sm_90a
    assumes fact tile: u32 == 96
}
"""
NEEDED = frozenset({"kl_demo_pad_fact_tile"})


def _generate(text: str) -> tuple[Generated, str]:
    result = check_text(text, "demo.kc")
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]
    comp = result.composition
    assert comp is not None
    captured = Captured(frozenset(), NEEDED)
    comp = dataclasses.replace(comp, stages=tuple(dataclasses.replace(s, captured=captured) for s in comp.stages))
    placed = verify_downstream(comp).placed
    assert placed is not None
    generated = generate(Plan(comp, placed))
    record = LinkRecord("demo", "demo.kc", "sm_90a", "linked", placement=placed.placement, generated=generated)
    return generated, render_text(record)


def test_a_pinned_fact_is_written_folded_and_shown() -> None:
    generated, text = _generate(OWNER + ASSUMER)
    [count, tile] = generated.params.fields
    assert count.source == "caller"
    assert (tile.source, tile.value, tile.owner) == ("fact", 96, "demo.pad")
    assert {h.symbol: h.value for h in generated.handles}["kl_demo_pad_fact_tile"] == 96
    assert generated.pins == (("tile", 96, "pinned by `demo.epi` (assumes tile == 96)"),)
    pinned = [line for line in text.splitlines() if "pinned by `demo.epi`" in line]
    # the params field, the folded handle, the facts section's pin row and its field row
    assert len(pinned) == 4, text
    assert any(line.split()[:2] == ["96", "tile"] and "owner's choice pinned" in line for line in pinned), pinned


def test_without_an_assumer_the_caller_gives_the_value() -> None:
    result = check_text(OWNER, "demo.kc")
    assert result.accepted and result.composition is not None
    facts = link_inputs(result.composition).facts
    assert (facts["tile"].kind, facts["tile"].pinned) == ("range", "")
