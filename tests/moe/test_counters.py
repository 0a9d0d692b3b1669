"""Counters in the linker: the counter array, folded counter handles, scopes, and the reset rule.

`tests/moe/data/handoff` is a two-owner composition: `hand.prod` writes a tile per block and
adds 1 to counter slot k (`claim counter ready slots 4`), `hand.cons` waits until slot k reaches
the grid size and copies another block's tile. It packs, checks, places and links; every
counter handle folds (no call is left in the linked PTX); the release and acquire carry the
declared scope; the link map lists the slots and the reset rule the launch helper keeps.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from analysis.downstream import verify_downstream
from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from checker.clauses.l_handle import describe
from checker.handles import handle_bindings, handle_problems
from contract_lang.parser import parse_text
from kernlink.api import check_text, link
from linker.artifacts import Generated
from linker.counters import ARRAY, RESET_RULE, unsupported_counters
from linker.generate import generate
from package.captured import Captured, Prototype
from packing.pack import pack

DATA = Path(__file__).parent / "data"


def build_handoff(root: Path, edits: dict[str, dict[str, str]] | None = None) -> Path:
    folder = root / "handoff"
    shutil.copytree(DATA / "handoff", folder)
    for file, changes in (edits or {}).items():
        text = (folder / file).read_text()
        for old, new in changes.items():
            assert old in text, f"{old!r} not in {file}"
            text = text.replace(old, new)
        (folder / file).write_text(text)
    for component in ("prod", "cons"):
        source = folder / f"{component}.cu"
        pack(source, source.with_suffix(".kc"), folder / "build" / f"{component}.kpkg")
    return folder / "handoff.kp"


@pytest.mark.toolchain
def test_a_counter_hand_off_links_with_folded_counter_handles(tmp_path: Path) -> None:
    result = link([build_handoff(tmp_path)], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert "call" not in ptx  # every handle, the counter functions included, is inlined
    assert f".visible .global .align 128 .b8 {ARRAY}[16];" in ptx
    assert "red.release.gpu.global.add.u32" in ptx and "ld.acquire.gpu.global.u32" in ptx
    text = (tmp_path / "out" / "link.map").read_text()
    assert f"counters  `{ARRAY}`: 4 32-bit words" in text and f"reset: {RESET_RULE}" in text
    counters = json.loads((tmp_path / "out" / "link.json").read_text())["counters"]
    assert (counters["symbol"], counters["words"], counters["reset"]) == (ARRAY, 4, RESET_RULE)
    assert [(c["name"], c["index"], c["slots"], c["scope"]) for c in counters["counters"]] == [("ready", 0, 4, "gpu")]


@pytest.mark.toolchain
def test_a_sys_scope_counter_releases_and_acquires_at_sys_scope(tmp_path: Path) -> None:
    pipeline = build_handoff(
        tmp_path,
        {
            "prod.kc": {
                "slots 4 scope gpu": "slots 4 scope sys",
                "produce by prod scope gpu": "produce by prod scope sys",
            },
            "cons.kc": {"consume by cons scope gpu": "consume by cons scope sys"},
        },
    )
    result = link([pipeline], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert "red.release.sys.global.add.u32" in ptx and "ld.acquire.sys.global.u32" in ptx
    assert ".gpu.global" not in ptx


TWO_COUNTERS = """stage "demo.cnt" version "1.0.0" {
    target sm_90a
    role push entry push_main warps 1
    role pull entry pull_main warps 1
    launch fixed threads 64 grid resident
    claim counter flags slots 3 scope gpu
    counter flags produce by push scope gpu {
        add 1
    }
    counter flags consume by pull scope gpu {
        wait ge 1
    }
    counter done produce by pull scope gpu {
        add 1
    }
    counter done consume by push scope gpu {
        wait ge 1
    }
}
"""


def _generated(text: str, needed: set[str]) -> Generated:
    result = check_text(text, "demo.kc")
    assert result.accepted and result.composition is not None, [d.message for d in result.diagnostics]
    captured = Captured(frozenset({"push_main", "pull_main"}), frozenset(needed))
    comp = dataclasses.replace(
        result.composition, stages=tuple(dataclasses.replace(s, captured=captured) for s in result.composition.stages)
    )
    placed = verify_downstream(comp).placed
    assert placed is not None
    return generate(Plan(comp, placed))


def test_a_counter_only_endpoints_name_gets_one_word_after_the_claims() -> None:
    generated = _generated(
        TWO_COUNTERS, {"kl_demo_cnt_flags_counter", "kl_demo_cnt_done_counter", "kl_demo_cnt_done_counter_wait"}
    )
    assert [(h.symbol, h.value) for h in generated.handles] == [
        ("kl_demo_cnt_done_counter", 3),
        ("kl_demo_cnt_flags_counter", 0),
    ]
    assert generated.counters.size == 4
    assert [(c.name, c.index, c.slots, c.owner) for c in generated.counters.counters] == [
        ("flags", 0, 3, "demo.cnt"),
        ("done", 3, 1, ""),
    ]
    assert f"__device__ __align__(128) unsigned {ARRAY}[4];" in generated.source
    assert "void kl_demo_cnt_done_counter_wait(unsigned slot, unsigned target)" in generated.source
    assert "kl_demo_cnt_flags_counter_add" not in generated.source  # only what the objects read


def test_a_composition_without_counters_has_no_counter_array() -> None:
    generated = _generated(TWO_COUNTERS.split("    claim counter")[0] + "}\n", set())
    assert generated.counters.size == 0 and ARRAY not in generated.source


def test_the_endpoint_of_a_claimed_counter_reads_the_claims_handles_once() -> None:
    stage = parse_text(TWO_COUNTERS, "demo.kc", "contract").stages[0]
    symbols = [h.symbol for h in handle_bindings(stage) if h.item == "flags"]
    assert symbols == [
        "kl_demo_cnt_flags_counter",
        "kl_demo_cnt_flags_counter_ptr",
        "kl_demo_cnt_flags_counter_add",
        "kl_demo_cnt_flags_counter_wait",
    ]
    assert not handle_problems(stage, Captured(frozenset(), frozenset(symbols)))


def test_a_counter_function_handle_with_another_prototype_is_l_handle() -> None:
    stage = parse_text(TWO_COUNTERS, "demo.kc", "contract").stages[0]
    found = handle_problems(
        stage,
        Captured(frozenset(), frozenset({"kl_demo_cnt_flags_counter_ptr"})),
        {"kl_demo_cnt_flags_counter_ptr": Prototype("func", (), ("b32",))},
    )
    assert [(f.clause, f.problem) for f in found] == [("L-HANDLE", "signature")]
    assert "unsigned* kl_demo_cnt_flags_counter_ptr()" in describe(found[0])[0]
    twin = handle_problems(
        stage,
        Captured(frozenset(), frozenset({"kl_demo_cnt_flags_counter_ptr"})),
        {"kl_demo_cnt_flags_counter_ptr": Prototype("func", (), ("b64",))},
    )
    assert not twin


AMBIGUOUS = """stage "a.one" version "1.0.0" {
    target sm_90a
    role r1 entry r1_main warps 1
    launch fixed threads 96 grid resident
    claim counter x slots 1 scope gpu
    counter x produce by r1 scope gpu {
        add 1
    }
}
stage "a.two" version "1.0.0" {
    target sm_90a
    role r2 entry r2_main warps 1
    launch fixed threads 96 grid resident
    claim counter CLAIM slots 1 scope gpu
}
stage "a.three" version "1.0.0" {
    target sm_90a
    role r3 entry r3_main warps 1
    launch fixed threads 96 grid resident
    counter x consume by r3 scope gpu {
        wait ge 1
    }
}
"""


def test_an_endpoint_that_could_read_two_stages_claims_is_l_link() -> None:
    result = check_text(AMBIGUOUS.replace("CLAIM", "x"), "demo.kc")
    assert result.accepted and result.composition is not None
    refused, found = unsupported_counters(link_inputs(result.composition))
    assert not refused
    assert [(d.code, d.message) for d in found] == [("L-LINK", "counter `x` of `a.three` could be any of 2 claims")]
    twin = check_text(AMBIGUOUS.replace("CLAIM", "y"), "demo.kc")
    assert twin.composition is not None and unsupported_counters(link_inputs(twin.composition)) == ([], [])
