"""The hang recorder: `--watchdog` bounds the waits the linker generates; off, nothing changes.

The counter hand-off (`tests/moe/data/handoff`) reads one counter wait; linked with
`--watchdog`, only that function (and the ledger/trap prelude) differs from the normal
build, and the normal build's PTX has no trace of the watchdog. Ring waits
(`P_R_full_wait` / `P_R_empty_wait`) are checked on the ring example's contracts with
the handles as captured needs. A ledger written as the device writes it decodes into
E-HANG diagnostics naming the role, the counter or ring, the slot and the contract line.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import struct
from pathlib import Path

import pytest

from analysis.plan import Plan
from kernlink.api import check, link
from kernlink.cli import main
from linker.artifacts import Generated
from linker.generate import generate
from linker.watchdog import CAPACITY, DEFAULT_CYCLES, ENTRY_WORDS, HEADER_WORDS, LEDGER, MAGIC, decode_ledger
from package.captured import Captured
from tests.link.examples import EXAMPLES
from tests.moe.test_counters import build_handoff


@pytest.mark.toolchain
def test_the_watchdog_changes_only_the_waits_and_is_absent_by_default(tmp_path: Path) -> None:
    pipeline = build_handoff(tmp_path)
    plain = link([pipeline], tmp_path / "plain", emit_ptx=True)
    watched = link([pipeline], tmp_path / "watched", emit_ptx=True, watchdog=1000)
    assert plain.ok and watched.ok
    plain_ptx = (tmp_path / "plain" / "kernel.ptx").read_text()
    for token in ("trap", "clock64", LEDGER, "kl_watchdog_fire"):
        assert token not in plain_ptx
    assert "trap;" in (tmp_path / "watched" / "kernel.ptx").read_text()
    before = (tmp_path / "plain" / "generated.cu").read_text().splitlines()
    after = (tmp_path / "watched" / "generated.cu").read_text().splitlines()
    removed = [
        line[1:]
        for line in difflib.unified_diff(before, after, n=0, lineterm="")
        if line.startswith("-") and not line.startswith("---")
    ]
    assert removed == ["    do {", "    } while (seen < target);"]  # the unbounded loop becomes the bounded one
    watchdog = json.loads((tmp_path / "watched" / "link.json").read_text())["watchdog"]
    assert watchdog["cycles"] == 1000
    assert [(s["id"], s["symbol"], s["kind"], s["where"].rsplit("/", 1)[-1]) for s in watchdog["sites"]] == [
        (0, "kl_hand_cons_ready_counter_wait", "counter_wait", "cons.kpkg!contract.kc:11")
    ]
    assert "watchdog  --watchdog=1000" in (tmp_path / "watched" / "link.map").read_text()
    assert "watchdog" not in json.loads((tmp_path / "plain" / "link.json").read_text())


@pytest.mark.toolchain
def test_the_watchdog_leaves_a_composition_without_waits_identical(tmp_path: Path) -> None:
    from tests.link.examples import build_example

    pipeline = build_example("ring", tmp_path / "src")
    assert link([pipeline], tmp_path / "a", emit_ptx=True).ok
    assert link([pipeline], tmp_path / "b", emit_ptx=True, watchdog=DEFAULT_CYCLES).ok
    assert (tmp_path / "a" / "kernel.ptx").read_bytes() == (tmp_path / "b" / "kernel.ptx").read_bytes()
    assert (tmp_path / "a" / "kernel.cubin").read_bytes() == (tmp_path / "b" / "kernel.cubin").read_bytes()


def _ring(needed: set[str], watchdog: int | None) -> Generated:
    result = check([EXAMPLES / "ring" / "ring.kp"])
    assert result.accepted and result.composition is not None and result.downstream is not None
    placed = result.downstream.placed
    assert placed is not None
    comp = dataclasses.replace(
        result.composition,
        stages=tuple(
            dataclasses.replace(s, captured=Captured(frozenset(), frozenset(needed))) for s in result.composition.stages
        ),
    )
    return generate(Plan(comp, placed), watchdog=watchdog)


def test_ring_wait_handles_wait_on_the_slots_barrier_and_are_watched_on_request() -> None:
    needed = {
        "kl_ring_reduce_kv_full_wait",
        "kl_ring_loader_kv_empty_wait",
        "kl_ring_loader_kv_full_bar",
        "kl_ring_loader_kv_depth",
    }
    plain = _ring(needed, None)
    full_bar = next(h.value for h in plain.handles if h.symbol == "kl_ring_loader_kv_full_bar")
    depth = next(h.value for h in plain.handles if h.symbol == "kl_ring_loader_kv_depth")
    src = plain.source
    assert f"const unsigned bar = {1024 + full_bar}u + 8u * slot;" in src
    assert f"const unsigned bar = {1024 + full_bar + 8 * depth}u + 8u * slot;" in src
    assert src.count("mbarrier.try_wait.parity.shared::cta.b64") == 2 and "clock64" not in src
    assert plain.watchdog is None
    watched = _ring(needed, 5000)
    assert watched.watchdog is not None
    assert [(s.symbol, s.kind) for s in watched.watchdog.sites] == [
        ("kl_ring_loader_kv_empty_wait", "ring_empty_wait"),
        ("kl_ring_reduce_kv_full_wait", "ring_full_wait"),
    ]
    assert watched.source.count("if (kl_waited > 5000ll)") == 2


def _ledger(*entries: tuple[int, ...], torn: bool = False) -> bytes:
    words = [0, CAPACITY, 0, 0]
    for e in entries:
        words += [MAGIC, *e, 0]
    if torn:  # an entry whose writer had not stored its marker yet
        words += [0, 9, 9, 0, 0, 0, 0, 0, 0, 0]
    words += [0] * (HEADER_WORDS + CAPACITY * ENTRY_WORDS - len(words))
    return struct.pack(f"<{len(words)}I", *words)


LINK_MAP = {
    "dispatch": {
        "roles": [
            {"stage": "hand.prod", "role": "prod", "first_warp": 0, "warps": 1},
            {"stage": "hand.cons", "role": "cons", "first_warp": 1, "warps": 1},
        ]
    },
    "counters": {
        "counters": [
            {
                "name": "ready",
                "users": ["hand.prod claim", "hand.prod role `prod` produces", "hand.cons role `cons` consumes"],
            }
        ]
    },
    "watchdog": {
        "cycles": 1000,
        "sites": [
            {
                "id": 0,
                "symbol": "kl_hand_cons_ready_counter_wait",
                "kind": "counter_wait",
                "stage": "hand.cons",
                "item": "ready",
                "where": "cons.kc:11",
                "detail": "`kl_counters[0 + slot]`, scope gpu",
            },
            {
                "id": 1,
                "symbol": "kl_ring_reduce_kv_full_wait",
                "kind": "ring_full_wait",
                "stage": "ring.reduce",
                "item": "kv",
                "where": "reduce.kc:9",
                "detail": "full mbarrier of slot i at shared address 1024 + 8i",
            },
        ],
    },
}


def test_a_ledger_decodes_into_hangs_that_name_the_role_the_item_and_the_contract_line() -> None:
    found = decode_ledger(LINK_MAP, _ledger((3, 32, 0, 2, 132, 131, 1500, 0), (7, 33, 1, 1, 0, 0xABC, 5, 2)))
    assert [d.code for d in found] == ["E-HANG", "E-HANG"]
    assert found[0].message == (
        "block 3, thread 32 hung: counter `ready` slot 2: role `cons` of `hand.cons` waits for >= 132, last saw 131"
    )
    assert found[0].notes[0].startswith("cons.kc:11: hand.cons `ready`")
    assert "producers: hand.prod role `prod` produces" in found[0].notes
    assert found[1].message == (
        "block 7, thread 33 hung: ring `kv` slot 1, parity 0: role `cons` of `hand.cons` "
        "waits `full` (mbarrier state word 0x00000abc)"
    )
    assert found[1].notes[1] == f"waited up to {(2 << 32) + 5} cycles (the bound is 1000)"


def test_the_same_stuck_wait_in_several_blocks_is_one_diagnostic() -> None:
    same = [(b, 32, 0, 0, 5, 4, 100 + b, 0) for b in (2, 0, 1, 3)]
    found = decode_ledger(LINK_MAP, _ledger(*same, (9, 32, 0, 0, 5, 3, 7, 0)))
    assert [d.message.split(" hung")[0] for d in found] == ["4 blocks (0, 1, 2, 3), thread 32", "block 9, thread 32"]
    assert found[0].notes[1] == "waited up to 103 cycles (the bound is 1000)"


def test_the_same_stuck_wait_in_many_threads_of_a_role_is_one_diagnostic() -> None:
    """moe4's grouped GEMM waits in every thread: many threads of a block time out on one counter slot."""
    link_map = {
        **LINK_MAP,
        "dispatch": {"roles": [{"stage": "hand.cons", "role": "cons", "first_warp": 1, "warps": 8}]},
    }
    same = [(b, t, 0, 0, 5, 4, 100, 0) for b in (0, 1) for t in (32, 33, 64, 287)]
    found = decode_ledger(link_map, _ledger(*same, (0, 40, 0, 0, 5, 3, 7, 0)))
    assert [d.message.split(" hung")[0] for d in found] == [
        "2 blocks (0, 1), 4 threads (32, 33, 64, 287)",
        "block 0, thread 40",
    ]


def test_a_wait_that_finds_the_ledger_full_sleeps_instead_of_trapping_first() -> None:
    from linker.watchdog import Watchdog, prelude_lines

    text = "\n".join(prelude_lines(Watchdog(1000, ())))
    room = text.index(f"if (entry < {CAPACITY}u)")
    full = text.index("} else {", room)
    assert "__nanosleep" in text[full : text.index("}", full + 8)]
    assert text.index('asm volatile("trap;")') > full  # the only trap: after a recorded entry, or without a ledger


def test_an_empty_ledger_and_an_incomplete_entry_decode_to_nothing() -> None:
    assert decode_ledger(LINK_MAP, _ledger()) == []
    assert decode_ledger(LINK_MAP, _ledger(torn=True)) == []


def test_the_link_command_takes_a_watchdog_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["link", str(EXAMPLES / "ring" / "ring.kp"), "-o", str(tmp_path / "o"), "--watchdog=zero"])
    assert "is not a number of cycles" in capsys.readouterr().err
