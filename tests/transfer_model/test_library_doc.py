"""specs/library-maps.md states each library map's formulas; they must be the maps the library builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from transfer_model.library import library_map

DOC = Path(__file__).resolve().parents[2] / "specs" / "library-maps.md"


def _formulas(heading: str) -> dict[str, str]:
    """The `name = expression` lines of the first code block after ``heading``."""
    text = DOC.read_text()
    section = text[text.index(heading) :]
    block = section[section.index("```\n") + 4 :]
    block = block[: block.index("```")]
    return {left.strip(): right.strip() for left, right in (line.split("=", 1) for line in block.strip().splitlines())}


def _value(expression: str, env: dict[str, int]) -> int:
    return int(eval(re.sub(r"(?<![/])/(?!/)", "//", expression), {}, dict(env)))  # the doc's `/` is floor division


@pytest.mark.parametrize("n,warpgroups", [(8, 1), (128, 2), (256, 1), (64, 3)])
def test_the_wgmma_formulas_are_the_library_map(n: int, warpgroups: int) -> None:
    doc = _formulas("## `wgmma_m64nNk16_f32")
    layout = library_map("wgmma_m64nNk16_f32", {"n": n, "warpgroups": warpgroups})
    for t in range(128 * warpgroups):
        w, lane = (t // 32) % 4, t % 32
        for i in range(n // 2):
            env = {"t": t, "i": i, "w": w, "l": lane}
            assert layout.evaluate((t, i)) == (_value(doc["m"], env), _value(doc["n"], env))


@pytest.mark.parametrize("wm,wn,am,an", [(1, 1, 1, 1), (2, 2, 2, 2), (4, 1, 1, 4), (1, 2, 3, 1)])
def test_the_mma_sync_formulas_are_the_library_map(wm: int, wn: int, am: int, an: int) -> None:
    doc = _formulas("## `mma_m16n8k16_f32")
    layout = library_map("mma_m16n8k16_f32", {"warps_m": wm, "warps_n": wn, "atoms_m": am, "atoms_n": an})
    for t in range(32 * wm * wn):
        for r in range(4 * am * an):
            atom, i = divmod(r, 4)
            env = {"t": t, "i": i, "g": (t % 32) // 4, "am": atom // an, "an": atom % an, "AM": am, "AN": an}
            env |= {"WN": wn}
            assert layout.evaluate((t, r)) == (_value(doc["m"], env), _value(doc["n"], env))
