"""Handle names, their bindings, and the L-SYMBOL / L-HANDLE findings (pure: no compiler)."""

from __future__ import annotations

from checker.clauses.l_handle import describe
from checker.handles import (
    ENTRY_PROTOTYPE,
    HANDLE_PROTOTYPE,
    classify_handle,
    expected_handles,
    handle_problems,
    init_hook_symbol,
    required_definitions,
    resolve_handles,
    sanitize,
    symbol_problems,
)
from contract_lang import ast as A
from contract_lang.parser import parse_text
from package.captured import Captured, Prototype

DEMO = """
stage "demo.mma-v2" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 8 regs 232 warpgroup
    role epi entry epi_main warps 4
    params MmaParams size 16 align 8 {
        a: ptr @ 0
        k: u32 @ 8
    }
    claim smem tiles bytes 16KiB align 1024 per_slot kv
    claim smem scratch bytes 4096 align 16 handle kl_demo_scratch
    claim tmem acc columns 256
    claim barrier sync participants mma, epi
    claim barrier done participants epi handle my_done_bar
    claim counter flags slots 2 scope gpu
    ring kv consume by mma {
        full wait
        empty arrive per_warp(mma)
    }
    ring out produce by epi {
        depth 2
        full init 1
        empty init per_warp(mma)
        init by epi
    }
    export callable scale (f32) -> f32 = demo_scale
    call mask (i32, i32) -> bool as kl_call_mask from role mma
}
"""


def _stage(text: str = DEMO) -> A.Stage:
    return parse_text(text, "demo.kc", "contract").stages[0]


def _captured(defined: set[str], needed: set[str]) -> Captured:
    return Captured(frozenset(defined), frozenset(needed))


def test_names_are_derived_from_stage_and_item_with_explicit_overrides() -> None:
    handles = expected_handles(_stage())
    assert sanitize("demo.mma-v2") == "demo_mma_v2"
    assert {s: (h.kind, h.item) for s, h in handles.items()} == {
        "kl_demo_mma_v2_mma_warp0": ("warp0", "mma"),
        "kl_demo_mma_v2_mma_regs": ("regs", "mma"),
        "kl_demo_mma_v2_epi_warp0": ("warp0", "epi"),
        "kl_demo_mma_v2_params_offset": ("params_offset", "params"),
        "kl_demo_mma_v2_tiles_smem": ("smem", "tiles"),
        "kl_demo_mma_v2_tiles_stride": ("smem_stride", "tiles"),
        "kl_demo_scratch": ("smem", "scratch"),
        "kl_demo_mma_v2_acc_tmem": ("tmem", "acc"),
        "kl_demo_mma_v2_sync_bar_id": ("bar_id", "sync"),
        "kl_demo_mma_v2_sync_threads": ("bar_threads", "sync"),
        "my_done_bar": ("bar_id", "done"),
        "my_done_bar_threads": ("bar_threads", "done"),
        "kl_demo_mma_v2_flags_counter": ("counter", "flags"),
        "kl_demo_mma_v2_flags_counter_ptr": ("counter_ptr", "flags"),
        "kl_demo_mma_v2_flags_counter_add": ("counter_add", "flags"),
        "kl_demo_mma_v2_flags_counter_wait": ("counter_wait", "flags"),
        "kl_demo_mma_v2_kv_depth": ("ring_depth", "kv"),
        "kl_demo_mma_v2_kv_full_bar": ("ring_full_bar", "kv"),
        "kl_demo_mma_v2_kv_empty_bar": ("ring_empty_bar", "kv"),
        "kl_demo_mma_v2_kv_full_wait": ("ring_full_wait", "kv"),
        "kl_demo_mma_v2_kv_empty_wait": ("ring_empty_wait", "kv"),
        "kl_demo_mma_v2_out_depth": ("ring_depth", "out"),
        "kl_demo_mma_v2_out_full_bar": ("ring_full_bar", "out"),
        "kl_demo_mma_v2_out_empty_bar": ("ring_empty_bar", "out"),
        "kl_demo_mma_v2_out_full_wait": ("ring_full_wait", "out"),
        "kl_demo_mma_v2_out_empty_wait": ("ring_empty_wait", "out"),
        "kl_demo_mma_v2_out_full_count": ("ring_full_count", "out"),
        "kl_demo_mma_v2_out_empty_count": ("ring_empty_count", "out"),
    }
    assert handles["my_done_bar"].explicit and not handles["kl_demo_mma_v2_sync_bar_id"].explicit
    assert handles["kl_demo_mma_v2_tiles_smem"].node is not None


def test_ring_slot_handles_name_a_per_slot_claim_of_any_stage() -> None:
    spec = classify_handle(_stage(), "kl_demo_mma_v2_kv_tiles_smem")
    assert spec is not None and (spec.kind, spec.item, spec.claim) == ("ring_slot_smem", "kv", "tiles")
    spec = classify_handle(_stage(), "kl_demo_mma_v2_kv_b_tile_stride")
    assert spec is not None and (spec.kind, spec.claim) == ("ring_slot_stride", "b_tile")
    assert classify_handle(_stage(), "kl_demo_mma_v2_kv_smem") is None


def test_required_definitions_are_entries_exports_and_init_hooks() -> None:
    required = required_definitions(_stage())
    assert {s: what for s, (what, _) in required.items()} == {
        "mma_main": "entry",
        "epi_main": "entry",
        "demo_scale": "export",
        "demo_mma_v2_out_init": "init",
    }
    assert init_hook_symbol("ring.loader", "kv") == "ring_loader_kv_init"


def test_a_clean_object_has_no_findings() -> None:
    stage = _stage()
    needed = {"kl_call_mask", "kl_demo_scratch", "my_done_bar", "kl_demo_mma_v2_kv_tiles_smem", "vprintf"}
    captured = _captured({"mma_main", "epi_main", "demo_scale", "demo_mma_v2_out_init"}, needed)
    protos = {
        "mma_main": ENTRY_PROTOTYPE,
        "epi_main": ENTRY_PROTOTYPE,
        "demo_mma_v2_out_init": ENTRY_PROTOTYPE,
        "demo_scale": Prototype("func", ("b32",), ("b32",)),
        "kl_call_mask": Prototype("func", ("b32", "b32"), ("b32",)),
        **{s: HANDLE_PROTOTYPE for s in needed if s not in ("kl_call_mask", "vprintf")},
    }
    assert symbol_problems(stage, captured, protos) == []
    assert handle_problems(stage, captured, protos) == []
    assert set(resolve_handles(stage, needed)) == {"kl_demo_scratch", "my_done_bar", "kl_demo_mma_v2_kv_tiles_smem"}


def test_missing_definitions_and_unexplained_needs_are_l_symbol() -> None:
    stage = _stage()
    captured = _captured({"mma_main", "kl_demo_mma_v2_mma_warp0"}, {"helper_from_elsewhere", "kl_call_mask"})
    found = {(f.problem, f.symbol) for f in symbol_problems(stage, captured)}
    assert found == {
        ("entry-missing", "epi_main"),
        ("export-missing", "demo_scale"),
        ("init-missing", "demo_mma_v2_out_init"),
        ("reserved-definition", "kl_demo_mma_v2_mma_warp0"),
        ("unexplained-need", "helper_from_elsewhere"),
    }
    assert all(f.clause == "L-SYMBOL" for f in symbol_problems(stage, captured))


def test_signatures_are_checked_when_prototypes_are_known() -> None:
    stage = _stage()
    captured = _captured({"mma_main", "epi_main", "demo_scale", "demo_mma_v2_out_init"}, {"kl_call_mask"})
    protos = {
        "mma_main": Prototype("entry", ("b64",)),
        "epi_main": ENTRY_PROTOTYPE,
        "demo_mma_v2_out_init": ENTRY_PROTOTYPE,
        "demo_scale": Prototype("func", ("b64",), ("b32",)),
        "kl_call_mask": Prototype("func", ("b32",), ("b32",)),
    }
    found = {(f.problem, f.symbol) for f in symbol_problems(stage, captured, protos)}
    assert found == {
        ("entry-signature", "mma_main"),
        ("export-signature", "demo_scale"),
        ("call-signature", "kl_call_mask"),
    }


def test_handle_findings_unbound_wrong_kind_explicit_name_and_conditions() -> None:
    stage = _stage()
    needed = {
        "kl_demo_mma_v2_nothing_smem",
        "kl_demo_mma_v2_acc_smem",
        "kl_demo_mma_v2_scratch_smem",
        "kl_demo_mma_v2_epi_regs",
        "kl_demo_mma_v2_kv_full_count",
        "kl_demo_mma_v2_scratch_stride",
    }
    found = {f.symbol: (f.problem, f.item) for f in handle_problems(stage, _captured(set(), needed))}
    assert found == {
        "kl_demo_mma_v2_nothing_smem": ("unbound", None),
        "kl_demo_mma_v2_acc_smem": ("wrong-kind", "acc"),
        "kl_demo_mma_v2_scratch_smem": ("unbound", "scratch"),
        "kl_demo_mma_v2_epi_regs": ("unbound", "epi"),
        "kl_demo_mma_v2_kv_full_count": ("unbound", "kv"),
        "kl_demo_mma_v2_scratch_stride": ("unbound", "scratch"),
    }
    messages = {f.symbol: describe(f)[0] for f in handle_problems(stage, _captured(set(), needed))}
    assert "names its handle `kl_demo_scratch`" in messages["kl_demo_mma_v2_scratch_smem"]
    assert "declares no `regs` budget" in messages["kl_demo_mma_v2_epi_regs"]
    assert "initialised by another stage" in messages["kl_demo_mma_v2_kv_full_count"]
    assert "tensor-memory claim" in messages["kl_demo_mma_v2_acc_smem"]


def test_a_handle_bound_twice_and_a_bad_handle_signature() -> None:
    text = DEMO.replace("handle kl_demo_scratch", "handle kl_demo_mma_v2_acc_tmem")
    stage = _stage(text)
    needed = {"kl_demo_mma_v2_sync_bar_id"}
    found = handle_problems(
        stage, _captured(set(), needed), {"kl_demo_mma_v2_sync_bar_id": Prototype("func", (), ("b64",))}
    )
    assert [(f.problem, f.symbol) for f in found] == [
        ("bound-twice", "kl_demo_mma_v2_acc_tmem"),
        ("signature", "kl_demo_mma_v2_sync_bar_id"),
    ]


def test_call_symbols_with_the_handle_prefix_are_not_handles() -> None:
    stage = _stage()
    assert handle_problems(stage, _captured(set(), {"kl_call_mask"})) == []
    assert "kl_call_mask" not in resolve_handles(stage, {"kl_call_mask"})


def test_both_sides_of_a_rendezvous_in_one_stage_read_one_barrier() -> None:
    """A stage holding a rendezvous's arrive and sync sides (ping-pong warpgroups) binds its handles once."""
    text = DEMO.replace(
        "    claim barrier sync participants mma, epi\n",
        "    claim barrier sync participants mma, epi\n"
        "    rendezvous turn arrive by epi threads 384\n"
        "    rendezvous turn sync by mma threads 384\n",
    )
    stage = _stage(text)
    needed = {"kl_demo_mma_v2_turn_bar_id", "kl_demo_mma_v2_turn_threads"}
    found = handle_problems(stage, _captured(set(), needed))
    assert [(f.problem, f.symbol) for f in found if f.problem == "bound-twice"] == []
    assert {s.symbol for s in expected_handles(stage).values() if s.item == "turn"} == needed
