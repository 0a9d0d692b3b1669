"""One rule: every shared-memory overflow is L-OVERLAP; L-DEPTH is for depth ranges.

So `--select L-OVERLAP` catches them all, whether a ring overflows alone at its
minimum depth (it was L-DEPTH) or only together with other claims.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernlink.api import check

CLAUSES = Path(__file__).parent

ALONE = (CLAUSES / "L-OVERLAP" / "fail_no_depth_fits.kc").read_text()
# 6 × 32 KiB slots fit alone (192 KiB), not beside a kernel-lifetime 64 KiB claim.
TOGETHER = (
    ALONE.replace("64KiB per_slot", "16KiB per_slot")
    .replace("128KiB", "32KiB")
    .replace("full copy 64KiB", "full copy 16KiB")
    .replace("depth 2..4", "depth 6..8")
    .replace(
        "    ring kv produce by load {",
        "    claim smem stash bytes 64KiB align 128 lifetime kernel\n    ring kv produce by load {",
    )
)


@pytest.mark.parametrize("text", [ALONE, TOGETHER], ids=["ring alone", "ring with other claims"])
def test_select_overlap_catches_shared_memory_overflow(text: str, tmp_path: Path) -> None:
    path = tmp_path / "x.kc"
    path.write_text(text)
    everything = sorted({d.code for d in check([path]).diagnostics if d.is_error})
    assert everything == ["L-OVERLAP"]
    selected = sorted({d.code for d in check([path], select=["L-OVERLAP"]).diagnostics if d.is_error})
    assert selected == ["L-OVERLAP"]
    assert not [d for d in check([path], select=["L-DEPTH"]).diagnostics if d.code == "L-DEPTH"]
