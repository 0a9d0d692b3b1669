"""Gaps conformance used to miss, each kept as a plain test once closed (specs/language.md §8.8).

A consumer that resets its ring cursor (slot and phase) at every unit of work, while its producer
carries its own from one unit to the next, waits on the wrong slot and phase from the second unit
on. Conformance read a wait's first parity and that it changes from pass to pass, not that the
ring position at the k-loop's entry is the one the previous unit left, so it conformed; the wait's
``entry`` fact (package/codefacts/carry.py) now tells a carried position from a reset one, and
``wait-parity`` rejects the reset (tests/conformance/test_ring_entry.py has the variants).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from packing.pack import build, conformance_findings

PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
LOOP = "        mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"


def test_a_cursor_reset_per_unit_of_work_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    shared = folder / "consumer_swapab.cuh"  # the swap-AB consumers' code (consumer_swapab.cu instantiates it)
    text = shared.read_text()
    assert text.count(LOOP) == 1
    shared.write_text(text.replace(LOOP, "        cur = gs::RingCursor{};\n" + LOOP))
    found = conformance_findings(
        build(folder / "consumer_swapab.cu", folder / "consumer_swapab.kc"), tmp_path / "x.kpkg", strict=True
    )
    assert [d.code for d in found] == ["L-CONFORM"]
