"""gemm_swiglu: three producers × one unchanged SwiGLU epilogue pack, check, place, route and link.

The components are the real ones (specs/examples/gemm_swiglu/*.cu): a TMA producer with
wgmma, mma.sync or wgmma-into-shared-memory consumers, and the epilogue of another
owner. On the CPU: every pairing links to one cubin with no call left, the handles fold
to immediates in the linked PTX, each pairing's route is the one its placement implies,
the link map matches its snapshot, and `kernlink check` rejects three realistic wrong
edits with the clause that owns each. (bench/gemm_swiglu.py runs them on an H200.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlink.api import LinkResult, check, link
from tests.gemm.compositions import FOLDER, PRODUCERS, build
from tests.snapshots import assert_text_snapshot
from toolchain.cubin import read_cubin

DATA = Path(__file__).parent / "data"
Linked = dict[str, tuple[LinkResult, Path]]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("gemm") / "gemm_swiglu")


@pytest.fixture(scope="module")
def linked(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Linked:
    out = tmp_path_factory.mktemp("gemm-linked")
    results = {}
    for name, producer in PRODUCERS.items():
        result = link([folder / producer.pipeline], out / name, emit_ptx=True)
        assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
        results[name] = (result, out / name)
    return results


def test_every_pipeline_uses_the_one_epilogue_package() -> None:
    for producer in PRODUCERS.values():
        text = (FOLDER / producer.pipeline).read_text()
        assert 'use "swiglu.epilogue" version ^1.0 from "build/epilogue.kpkg"' in text
        assert f'use "{producer.stage}" ' in text


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_each_producer_links_with_the_epilogue_into_one_kernel_without_calls(linked: Linked, name: str) -> None:
    _, out = linked[name]
    ptx = (out / "kernel.ptx").read_text()
    assert PRODUCERS[name].mma in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "cvt.rn.bf16x2.f32" in ptx and "st.global.v4.b32" in ptx  # the epilogue's packed 16-byte stores
    assert not re.search(r"\bcall(\.uni)?\b", ptx), "a call survived LTO"
    assert ".extern .func" not in ptx and "kl_" not in ptx.replace("kl_dispatch", "").replace("kl_smem", "")
    [kernel] = read_cubin((out / "kernel.cubin").read_bytes()).kernels
    assert (kernel.name, kernel.registers, kernel.static_smem, kernel.frame_bytes) == ("kl_dispatch", 128, 0, 0)


@pytest.mark.toolchain
def test_the_handles_fold_to_immediates_in_the_linked_ptx(linked: Linked) -> None:
    result, out = linked["wgmma"]
    assert result.output is not None and result.output.generated is not None
    generated = result.output.generated
    values = {h.symbol: h.value for h in generated.handles}
    depth = values["kl_gemm_mainloop_kv_depth"]
    assert depth == 7  # the deepest ring of 32 KiB slots that 227 KiB holds next to its barriers
    ptx = (out / "kernel.ptx").read_text()
    # the ring's barrier offsets are immediates added to the shared base
    for handle in ("kl_gemm_mainloop_kv_full_bar", "kl_gemm_mainloop_kv_empty_bar"):
        assert re.search(rf"add\.s32\s+%r\d+, %r\d+, {values[handle]};", ptx), handle
    assert values["kl_gemm_mainloop_kv_empty_bar"] == values["kl_gemm_mainloop_kv_full_bar"] + 8 * depth
    # the budgets and the route's barriers are immediates too
    assert "setmaxnreg.inc.sync.aligned.u32 208;" in ptx and "setmaxnreg.dec.sync.aligned.u32 24;" in ptx
    [transfer] = generated.transfers
    assert all(f"barrier.sync {b}, 384;" in ptx for b in transfer.barrier_ids)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", ["wgmma", "mma_sync"])
def test_the_route_stores_into_the_ring_only_after_every_mma_thread_exported(linked: Linked, name: str) -> None:
    # The epilogue's scratch shares storage with the ring (`until acc.ready`): the lowered
    # export opens with a sync on the route's barrier (every producer and consumer thread),
    # so no thread stores while another's last MMA may still read its slot; chunk 0 of the
    # import syncs it once more before the sync that orders the stores before its loads.
    result, out = linked[name]
    assert result.output is not None and result.output.generated is not None
    [transfer] = result.output.generated.transfers
    [bar] = transfer.barrier_ids
    export = transfer.source[transfer.source.index(f"void {transfer.route_symbol}(") :]
    assert (
        export.index(f"barrier.sync {bar}, 384;")
        < export.index("kl_st_b32(")
        < export.index(f"barrier.arrive {bar}, 384;")
    )
    chunk0 = transfer.source[transfer.source.index("case 0: {") : transfer.source.index("case 1: {")]
    assert chunk0[: chunk0.index("kl_ld_b32(")].count(f"barrier.sync {bar}, 384;") == 2
    assert "rows padded by 1 element(s)" in transfer.why
    assert "so the first store waits until every producer thread has reached the ready event" in transfer.why
    assert "operands" in transfer.why and "(until acc.ready)" in transfer.why
    assert "drained" not in (out / "link.map").read_text()


@pytest.mark.toolchain
def test_each_pairing_gets_the_route_its_placement_implies(linked: Linked) -> None:
    routes = {}
    for name, (result, _) in linked.items():
        assert result.output is not None and result.output.generated is not None
        [transfer] = result.output.generated.transfers
        routes[name] = (
            transfer.rung,
            transfer.shared,
            transfer.scratch_claim,
            transfer.chunks,
            len(transfer.barrier_ids),
            transfer.scratch_bytes,
        )
    # registers of another role: the whole tile staged at once through the epilogue's 65 KiB
    # scratch, one barrier; its 128 rows of 128 words padded by a word each (no bank conflicts
    # when each epilogue thread loads its own row)
    assert routes["wgmma"] == ("smem-staging", "scratch", "scratch", 4, 1, 128 * 129 * 4)
    assert routes["mma_sync"] == ("smem-staging", "scratch", "scratch", 4, 1, 128 * 129 * 4)
    # already in shared memory: read where the producer placed it, one barrier
    assert routes["smem_acc"] == ("smem-staging", "buffer", "accumulator", 4, 1, 4 * (132 * 127 + 127) + 4)


@pytest.mark.toolchain
def test_the_link_map_matches_its_snapshot(linked: Linked, folder: Path) -> None:
    _, out = linked["wgmma"]
    text = _stable((out / "link.map").read_text().replace(f"{folder}/", ""))
    assert_text_snapshot(DATA / "gemm_swiglu.link.map", text)


def _stable(text: str) -> str:
    """The map without the sections that name toolkit builds and hashes (inputs, link rounds)."""
    keep, skip = [], False
    for line in text.splitlines():
        if re.match(r"^(inputs|link)(\s|$)", line):
            skip = True
        elif re.match(r"^[a-z]+(\s|$)", line):
            skip = False
        if not skip and not line.startswith("# toolkit"):
            keep.append(line)
    return "\n".join(keep) + "\n"


# ----------------------------------------------------------------- three realistic wrong edits


def test_the_composition_is_accepted_unedited() -> None:
    for producer in PRODUCERS.values():
        result = check([FOLDER / producer.pipeline])
        assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]


WRONG_EDITS = {
    # the epilogue's owner expects 16 accumulator columns per chunk instead of 32
    "L-MAP": ("epilogue.kc", "n = 32 * c + p", "n = 16 * c + p"),
    # the mainloop's owner asks for a ring of 8 slots of 32 KiB: more than 232 448 B (a capacity
    # overflow is L-OVERLAP, whether or not a ring causes it)
    "L-OVERLAP": ("mainloop.kc", "depth 2..8", "depth 8"),
    # the epilogue's owner raises its register budget past the pool the others leave
    "L-REGS": ("epilogue.kc", "regs 72", "regs 120"),
}


@pytest.mark.parametrize("code", sorted(WRONG_EDITS))
def test_check_rejects_a_wrong_edit_with_its_clause(code: str, tmp_path: Path) -> None:
    file, old, new = WRONG_EDITS[code]
    folder = build(tmp_path / "edited", {file: {old: new}}, components=())
    result = check([folder / "gemm_swiglu.kp"])
    assert not result.accepted
    assert {d.code for d in result.diagnostics if d.is_error} == {code}
