"""`orders`: a barrier stands between two accesses of the claim only where it runs whenever both do.

moe4's expert GEMM stages a tile in claim `operands` and syncs `expert_sync` (which `orders operands`)
before its threads read it. Put that sync under a thread-invariant branch the accesses are not under
and it may not run: the pair is undecided (I-CONFORM, an error under --strict), never ordered."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checker.conformance import check
from package.codefacts import derive
from packing.pack import build

pytestmark = pytest.mark.toolchain

MOE4 = Path(__file__).resolve().parents[2] / "specs" / "examples" / "moe4"
CALL = "bar_sync(kl_moe_gemm_expert_sync_bar_id(), kl_moe_gemm_expert_sync_threads());"
NEXT = "\n        const unsigned short* we"
SYNC = f"        {CALL}{NEXT}"


def _findings(tmp_path: Path, replacement: str) -> list[tuple[str, str, bool]]:
    folder = tmp_path / "moe4"
    shutil.copytree(MOE4, folder, ignore=shutil.ignore_patterns("build"))
    source = (folder / "gemm.cu").read_text()
    assert source.count(SYNC) == 1
    (folder / "gemm.cu").write_text(source.replace(SYNC, replacement))
    built = build(folder / "gemm.cu", folder / "gemm.kc")
    assert built.ptx is not None
    found = check(built.stage, derive(built.ptx))
    return [(f.check, f.problem, f.decided) for f in found if f.check == "barrier-orders"]


@pytest.mark.parametrize(
    ("replacement", "expected"),
    [
        (SYNC, []),
        (f"        if (p->tokens > 1u) {CALL}{NEXT}", [("barrier-orders", "undecided", False)]),
        (NEXT.lstrip("\n"), [("barrier-orders", "unordered", True)]),
    ],
    ids=["the-sync", "a-sync-that-may-not-run", "no-sync"],
)
def test_a_barrier_under_a_branch_the_accesses_are_not_under_does_not_order_them(
    tmp_path: Path, replacement: str, expected: list[tuple[str, str, bool]]
) -> None:
    assert _findings(tmp_path, replacement) == expected
