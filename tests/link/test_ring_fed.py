"""Ring-fed tensor exports in the linker (linker/ring_fed.py), without a compiler: what it generates
for a hand-off of one generation per tile through a ring, and what it still refuses, and why."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from checker.clauses.l_handle import describe
from checker.handles import handle_problems
from contract_lang.parser import parse_text
from diagnostics.model import DiagnosticError
from kernlink.api import check
from linker.artifacts import Generated
from linker.generate import generate, unsupported
from package.captured import Captured, Prototype
from tests.link.examples import EXAMPLES

EXAMPLE = EXAMPLES / "ring_fed"
PRODUCTION = Path(__file__).resolve().parents[1] / "corpus" / "production" / "ring_fed_epilogue" / "pass"
# the production fixture's ring `accs` with one arrival per warp instead of one per warpgroup
PER_WARP = {
    "mainloop.kc": {
        "full init per_warpgroup(mma)": "full init per_warp(mma)",
        "empty init per_warpgroup(epilogue)": "empty init per_warp(epilogue)",
        "full arrive per_warpgroup(mma)": "full arrive per_warp(mma)",
    },
    "epilogue.kc": {"empty arrive per_warpgroup(epilogue)": "empty arrive per_warp(epilogue)"},
}


def _copy(source: Path, root: Path, edits: Mapping[str, Mapping[str, str]]) -> Path:
    folder = root / source.name
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("build", "*.cu", "*.h"))
    for name, changes in edits.items():
        text = (folder / name).read_text()
        for old, new in changes.items():
            assert old in text, f"{old!r} not in {name}"
            text = text.replace(old, new)
        (folder / name).write_text(text)
    return folder


def _checked(pipeline: Path, contracts: tuple[str, ...]) -> tuple[object, object, object]:
    result = check([pipeline, *(pipeline.parent / c for c in contracts)])
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.composition is not None and result.downstream is not None and result.downstream.placed is not None
    return result.composition, result.downstream.placed, result.downstream.routes


def _example(root: Path, edits: Mapping[str, Mapping[str, str]] | None = None) -> tuple[object, object, object]:
    folder = _copy(EXAMPLE, root, edits or {})
    return _checked(folder / "ring_fed.kp", ("producer.kc", "consumer.kc"))


def _generate(parts: tuple[object, object, object]) -> Generated:
    comp, placed, routes = parts
    return generate(Plan(comp, placed, tuple(routes)))  # type: ignore[arg-type]


def test_the_production_fixture_links_its_per_warpgroup_releases_through_warpgroup_barriers(tmp_path: Path) -> None:
    """The issue's production fixture (a persistent mainloop handing each tile to another owner's
    epilogue) arrives once per warpgroup: each warpgroup meets on a named barrier of its own, placed
    with the route, before its thread 0 arrives for it. Its per-warp twin needs no named barrier."""
    result = check([PRODUCTION / "gemm_swiglu.kp"])
    assert result.accepted and result.composition is not None and result.downstream is not None
    assert unsupported(link_inputs(result.composition)) == []
    parts = (result.composition, result.downstream.placed, result.downstream.routes)
    [t] = _generate(parts).transfers  # type: ignore[arg-type]
    assert (t.ring, t.depth, len(t.barrier_ids), t.barrier_threads) == ("accs", 2, 3, 128)
    one, two, epi = t.barrier_ids
    export, imp = t.source.split('extern "C" __device__ void kl_swiglu_epilogue_acc_import')
    assert (
        f'    if (t < 128u) {{\n        asm volatile("barrier.sync {one}, 128;" ::: "memory");\n    }} else {{\n'
        f'        asm volatile("barrier.sync {two}, 128;" ::: "memory");\n    }}\n'
    ) in export
    assert "if ((t % 128u) == 0u) kl_ring_fed_arrive(" in export and "__syncwarp" not in export
    assert f'asm volatile("barrier.sync {epi}, 128;" ::: "memory");' in imp
    assert imp.rindex("kl_ld_b32") < imp.index(f"barrier.sync {epi}, 128") < imp.index("if ((t % 128u) == 0u)")
    assert "void kl_gemm_mainloop_accumulator_export(const unsigned int* held, unsigned generation)" in t.source
    twin = _copy(PRODUCTION, tmp_path, PER_WARP)
    [t] = _generate(_checked(twin / "gemm_swiglu.kp", ("mainloop.kc", "epilogue.kc"))).transfers
    assert (t.barrier_ids, t.barrier_threads) == ((), 0) and "barrier.sync" not in t.source


def test_the_hand_off_waits_stores_and_arrives_on_the_generations_slot(tmp_path: Path) -> None:
    generated = _generate(_example(tmp_path))
    [t] = generated.transfers
    assert (t.ring, t.depth, t.scratch_claim, t.scratch_offset) == ("tiles", 2, "slots", 0)
    assert t.slot_stride == 17408 and t.scratch_bytes == 128 * 33 * 4  # rows padded by one word
    src = t.source
    base, full, empty = 1024, 1024 + 34816, 1024 + 34816 + 16
    export, imp = src.split('extern "C" __device__ void kl_ring_fed_consumer_tile_import')
    # the producer: slot g % 2, its `empty wait` from parity 1, 32 stores into the slot, lane 0's `full arrive`
    assert "const unsigned slot = generation % 2u;" in export
    assert f"const unsigned at = {base}u + 17408u * slot;" in export
    assert f"kl_ring_fed_wait({empty}u + 8u * slot, 1u ^ ((generation / 2u) & 1u));" in export
    assert export.count("kl_st_b32(at + ") == 32 and "kl_ld_b32" not in export.split("#endif")[-1]
    assert export.index("kl_ring_fed_wait(") < export.index("kl_st_b32(at") < export.index("__syncwarp();")
    assert f"if ((threadIdx.x & 31u) == 0u) kl_ring_fed_arrive({full}u + 8u * slot);" in export
    # the consumer: chunk 0 waits `full` from parity 0; chunk 3 releases `empty` after its loads
    chunks = re.split(r"    if \(chunk == \d\) \{", imp)[1:]
    assert len(chunks) == 4 and all(c.count("kl_ld_b32(at + ") == 8 for c in chunks)
    assert f"kl_ring_fed_wait({full}u + 8u * slot, 0u ^ ((generation / 2u) & 1u));" in chunks[0]
    assert all("kl_ring_fed_wait" not in c for c in chunks[1:]) and all("arrive" not in c for c in chunks[:3])
    assert chunks[3].rindex("kl_ld_b32") < chunks[3].index("__syncwarp();")
    assert f"kl_ring_fed_arrive({empty}u + 8u * slot);" in chunks[3]
    assert not re.search(r"(?<!m)barrier\.(sync|arrive)", src)  # no named barrier: the ring orders it
    assert not [s for s in generated.handles if "rows" in s.symbol or "tile_import" in s.symbol]


def test_the_hand_off_is_deterministic(tmp_path: Path) -> None:
    assert _generate(_example(tmp_path / "a")).source == _generate(_example(tmp_path / "b")).source


def test_per_thread_arrivals_arrive_from_every_thread(tmp_path: Path) -> None:
    edits = {
        "producer.kc": {"empty init per_warp(sum)": "empty init per_thread(sum)"},
        "consumer.kc": {"empty arrive per_warp(sum)": "empty arrive per_thread(sum)"},
    }
    [t] = _generate(_example(tmp_path, edits)).transfers
    export, imp = t.source.split('extern "C" __device__ void kl_ring_fed_consumer_tile_import')
    assert "__syncwarp" in export and "__syncwarp" not in imp
    assert "kl_ring_fed_arrive(35856u + 8u * slot);  // `empty arrive per_thread(sum)`" in imp


REFUSED = {
    "a constant": (
        {
            "producer.kc": {"full init per_warp(make)": "full init 4", "full arrive per_warp(make)": "full arrive 4"},
        },
        "arrives `4`",
    ),
    "an import without its generation": (
        {"consumer.kc": {"        generation ring tiles\n": ""}},
        "write `generation ring tiles` in the import",
    ),
    "a one-shot ring": (
        {
            "producer.kc": {"        depth 2\n": "        depth 2\n        once\n"},
            "consumer.kc": {"        full wait\n": "        once\n        full wait\n"},
        },
        "runs `once`",
    ),
    "a prearmed release": (
        {
            "producer.kc": {"        empty wait  #": "        empty wait parity 0  #"},
            "consumer.kc": {"        full wait\n": "        empty arrive per_warp(sum) prearm\n        full wait\n"},
        },
        "must run `full wait` then `empty arrive`",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_hand_off_does_not_generate_is_refused_with_the_reason(tmp_path: Path, case: str) -> None:
    edits, reason = REFUSED[case]
    comp, placed, routes = _example(tmp_path, edits)
    [refused] = unsupported(link_inputs(comp))  # type: ignore[arg-type]
    assert refused.code == "E-UNSUPPORTED" and "the ring-fed export `rows`" in refused.message
    assert reason in refused.notes[0], refused.notes[0]
    with pytest.raises(DiagnosticError) as err:
        generate(Plan(comp, placed, tuple(routes)))  # type: ignore[arg-type]
    assert [d.code for d in err.value.diagnostics] == ["E-UNSUPPORTED"]


def test_a_scratch_outside_the_rings_slots_is_refused(tmp_path: Path) -> None:
    """Each generation needs its own slot: a lent claim that is not `per_slot R` holds one."""
    edits = {"consumer.kc": {"bytes 17KiB align 16 per_slot tiles": "bytes 17KiB align 16"}}
    comp, placed, routes = _example(tmp_path, edits)
    assert unsupported(link_inputs(comp)) == []  # type: ignore[arg-type]
    with pytest.raises(DiagnosticError) as err:
        generate(Plan(comp, placed, tuple(routes)))  # type: ignore[arg-type]
    [d] = err.value.diagnostics
    assert d.code == "E-UNSUPPORTED" and "declared `per_slot tiles`" in d.notes[0]


def test_a_ring_fed_handle_declared_without_its_generation_is_l_handle() -> None:
    """The ring-fed handles take the generation: an object declaring the one-generation prototype
    (compiled against an old header) is refused at check time, and the ring-fed prototype passes."""
    stage = parse_text((EXAMPLE / "producer.kc").read_text(), "producer.kc", "contract").stages[0]
    symbol = "kl_ring_fed_producer_rows_export"
    needed = Captured(frozenset(), frozenset({symbol}))
    [old] = handle_problems(stage, needed, {symbol: Prototype("func", ("b64",), ())})
    assert (old.problem, old.symbol) == ("signature", symbol)
    worded = " ".join(map(str, describe(old)))
    assert "void kl_ring_fed_producer_rows_export(const T* held, unsigned generation)" in worded
    assert handle_problems(stage, needed, {symbol: Prototype("func", ("b64", "b32"), ())}) == []


def test_slots_that_share_storage_with_another_claim_are_refused(tmp_path: Path) -> None:
    """Placement may alias a claim that dies at the import's done event; a ring-fed slot is reused
    generation after generation, so a claim placed over it would overwrite tiles not yet read."""
    claim = "    claim smem slots bytes 17KiB align 16 per_slot tiles\n"
    aliased = (
        "    claim smem slots bytes 17KiB align 16 per_slot tiles lifetime until tile.done\n"
        "    claim smem after bytes 34KiB align 16 lifetime from tile.done\n"
    )
    comp, placed, routes = _example(tmp_path, {"consumer.kc": {claim: aliased}})
    with pytest.raises(DiagnosticError) as err:
        generate(Plan(comp, placed, tuple(routes)))  # type: ignore[arg-type]
    [d] = err.value.diagnostics
    assert d.code == "E-UNSUPPORTED" and "share storage with `ring_fed.consumer.after` (from tile.done)" in d.notes[0]
