"""What conformance does not decide yet, each an expected failure that turns into a pass (and so
an xpass error) when it is fixed (specs/language.md §8.8).

A consumer that resets its ring cursor (slot and phase) at every unit of work, while its producer
carries its own from one unit to the next, waits on the wrong slot and phase from the second unit
on. Conformance reads a wait's first parity and that it changes from pass to pass, not that the
ring position at the k-loop's entry is the one the previous unit left: it conforms today.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packing.pack import build, conformance_findings

PERSISTENT = Path(__file__).resolve().parents[2] / "specs" / "examples" / "gemm_swiglu" / "persistent"
LOOP = "        gs::mainloop<kN, 1, 2, 1, 1>(acc, ring, cur, u.k_end - u.k_begin, 0u, t == 0, 0u);\n"


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="the ring position carried across units of work is not a code fact (§8.8)",
)
def test_a_cursor_reset_per_unit_of_work_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "persistent"
    shutil.copytree(PERSISTENT, folder, ignore=shutil.ignore_patterns("build"))
    source = folder / "consumer_swapab.cu"
    text = source.read_text()
    assert text.count(LOOP) == 1
    source.write_text(text.replace(LOOP, "        cur = gs::RingCursor{};\n" + LOOP))
    found = conformance_findings(build(source, folder / "consumer_swapab.kc"), tmp_path / "x.kpkg", strict=True)
    assert [d.code for d in found] == ["L-CONFORM"]
