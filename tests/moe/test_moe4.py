"""moe4's real components pack, check, place and link on the CPU; counters and facts fold.

`specs/examples/moe4`: `moe.interp` (the instruction list, the rendezvous `phase`, counter
`phase_done`), `moe.comm` (the dispatch into per-expert buffers, counter `tokens_ready` per
tile), `moe.gemm` (the grouped GEMM, waiting per tile, ring `h`) and `moe.act` (GELU and the
combine). Every handle folds (no call is left in the linked PTX), both counters get their
claimed slots in `kl_counters`, every fact reaches its consumers' params fields, and the
watchdog build bounds every counter and ring wait. The GPU run against PyTorch is
bench/stale_facts.py (`--build`, then `--run` on the H200).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernlink.api import link
from linker.counters import ARRAY, RESET_RULE

EXAMPLE = Path(__file__).resolve().parents[2] / "specs" / "examples" / "moe4"
COMPONENTS = ("interp", "comm", "gemm", "act")


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from packing.pack import pack

    folder = tmp_path_factory.mktemp("moe4") / "moe4"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build"))
    for name in COMPONENTS:
        pack(folder / f"{name}.cu", folder / f"{name}.kc", folder / "build" / f"{name}.kpkg")
    return folder / "moe4.kp"


@pytest.mark.toolchain
def test_moe4_links_with_every_handle_folded(packed: Path, tmp_path: Path) -> None:
    result = link([packed], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics if d.is_error]
    # the audit proves every barrier ID, the handle-fed ones included (`mov 1` then `bar.sync` keeps 1)
    assert not [d.message for d in result.diagnostics if d.code == "I-AUDIT"]
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert "call" not in ptx
    assert f".visible .global .align 128 .b8 {ARRAY}[288];" in ptx  # 64 + 8 words
    assert "red.release.gpu.global.add.u32" in ptx  # tokens_ready (comm), phase_done (sched)
    assert "ld.acquire.gpu.global.u32" in ptx
    record = json.loads((tmp_path / "out" / "link.json").read_text())
    counters = record["counters"]
    assert (counters["words"], counters["reset"]) == (72, RESET_RULE)
    assert [(c["name"], c["index"], c["slots"], c["owner"]) for c in counters["counters"]] == [
        ("tokens_ready", 0, 64, "moe.comm"),
        ("phase_done", 64, 8, "moe.interp"),
    ]
    facts = {(f["stage"], f["name"]): f["value"] for f in record["params"]["fields"] if f["source"] == "fact"}
    assert facts == {
        ("moe.comm", "num_experts"): 8,
        ("moe.comm", "top_k"): 2,
        ("moe.gemm", "num_experts"): 8,
        ("moe.gemm", "top_k"): 2,
        ("moe.gemm", "tile_rows"): 32,
        ("moe.gemm", "capacity"): 128,
        ("moe.gemm", "tokens_per_signal"): 8,
        ("moe.act", "num_experts"): 8,
        ("moe.act", "top_k"): 2,
        ("moe.act", "tile_rows"): 32,
        ("moe.act", "capacity"): 128,
        ("moe.act", "slot_elems"): 4096,
    }
    source = (tmp_path / "out" / "generated.cu").read_text()
    for handle in (
        "kl_moe_comm_fact_capacity() { return 128u; }",
        "kl_moe_gemm_fact_slot_elems() { return 4096u; }",
        "kl_moe_gemm_h_depth() { return 4u; }",
        "kl_moe_act_h_depth() { return 4u; }",
    ):
        assert handle in source


@pytest.mark.toolchain
def test_a_relink_after_one_owner_changes_a_fact_carries_it_to_every_consumer(packed: Path, tmp_path: Path) -> None:
    from packing.pack import pack

    folder = tmp_path / "moe4"
    shutil.copytree(packed.parent, folder)
    contract = folder / "comm.kc"
    contract.write_text(contract.read_text().replace("owns fact tile_rows: u32 = 32", "owns fact tile_rows: u32 = 16"))
    pack(folder / "comm.cu", contract, folder / "build" / "comm.kpkg")  # only the owner is repacked
    result = link([folder / "moe4.kp"], tmp_path / "out")
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics if d.is_error]
    record = json.loads((tmp_path / "out" / "link.json").read_text())
    assert {f["stage"]: f["value"] for f in record["params"]["fields"] if f["name"] == "tile_rows"} == {
        "moe.gemm": 16,
        "moe.act": 16,
    }
    assert "kl_moe_comm_fact_tile_rows() { return 16u; }" in (tmp_path / "out" / "generated.cu").read_text()


@pytest.mark.toolchain
def test_the_watchdog_build_bounds_the_counter_and_ring_waits(packed: Path, tmp_path: Path) -> None:
    assert link([packed], tmp_path / "plain").ok
    assert link([packed], tmp_path / "watched", watchdog=20_000_000).ok
    plain = (tmp_path / "plain" / "generated.cu").read_text()
    watched = (tmp_path / "watched" / "generated.cu").read_text()
    assert "20000000" not in plain and watched.count("20000000") >= 4  # 2 counter waits, 2 ring waits
    record = json.loads((tmp_path / "watched" / "link.json").read_text())
    assert record.get("watchdog")
