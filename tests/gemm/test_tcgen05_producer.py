"""gemm_swiglu on sm_100a: a tcgen05 producer whose accumulator stays in tensor memory.

Linked on the CPU only (no Blackwell GPU here). The epilogue is the same source, byte
for byte, as the sm_90a pairings link (its contract retargeted: sm100/epilogue.kc); the
route is `tcgen05.ld` from the producer's tensor-memory claim, ordered after the
producer's MMAs by `tcgen05.fence::before_thread_sync`, one named barrier and
`tcgen05.fence::after_thread_sync`; the dispatch kernel allocates and frees the tensor
memory. The facts are asserted on the linked PTX, the cubin and (where a disassembler is
installed) the SASS; the link map is snapshot-tested.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlink.api import LinkResult, check, link
from linker.sass import disassemble, find_disassembler, functions
from package.kpkg import read_package
from tests.gemm.compositions import FOLDER, SM100, TCGEN05_PIPELINE, build, build_sm100
from tests.gemm.test_gemm_swiglu import _stable
from tests.snapshots import assert_text_snapshot
from toolchain.cubin import read_cubin

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> tuple[LinkResult, Path, Path]:
    folder = build_sm100(tmp_path_factory.mktemp("tcgen05") / "gemm_swiglu")
    out = tmp_path_factory.mktemp("tcgen05-linked") / "tcgen05"
    result = link([folder / TCGEN05_PIPELINE], out, emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    return result, out, folder


@pytest.mark.toolchain
def test_the_epilogue_is_the_same_source_as_on_sm_90a(linked: tuple[LinkResult, Path, Path], tmp_path: Path) -> None:
    _, _, folder = linked
    sm90 = build(tmp_path / "sm90", components=("epilogue",))
    sources = {
        read_package(path).payloads["source.cu"]
        for path in (folder / "build" / "epilogue.kpkg", sm90 / "build" / "epilogue.kpkg")
    }
    assert sources == {(FOLDER / "epilogue.cu").read_bytes()}
    # the contracts differ only in the target and the launch width
    ours = [line for line in (FOLDER / SM100 / "epilogue.kc").read_text().splitlines() if not line.startswith("#")]
    theirs = [line for line in (FOLDER / "epilogue.kc").read_text().splitlines() if not line.startswith("#")]
    assert ours == [
        line.replace("target sm_90a", "target sm_100a").replace("threads 512", "threads 384") for line in theirs
    ]
    assert ours != theirs


@pytest.mark.toolchain
def test_the_tensor_memory_route_is_ordered_after_the_producers_mmas(linked: tuple[LinkResult, Path, Path]) -> None:
    result, _, _ = linked
    assert result.output is not None and result.output.generated is not None
    generated = result.output.generated
    [transfer] = generated.transfers
    assert (transfer.rung, transfer.shared, transfer.chunks, transfer.barrier_threads) == ("tmem-load", "", 4, 256)
    [bar] = transfer.barrier_ids
    assert (transfer.producer_threads, transfer.consumer_threads) == ((128, 128), (256, 128))
    assert "tensor-memory claim `accumulator` of `gemm.tcgen05` (column 0)" in transfer.why
    export, imported = transfer.source.split("void kl_swiglu_epilogue_acc_import(")
    assert export.index("tcgen05.fence::before_thread_sync;") < export.index(f"barrier.arrive {bar}, 256;")
    chunk0 = imported[imported.index("case 0:") : imported.index("case 1:")]
    assert (
        chunk0.index(f"barrier.sync {bar}, 256;")
        < chunk0.index("tcgen05.fence::after_thread_sync;")
        < chunk0.index("tcgen05.ld.sync.aligned.32x32b.x32.b32")
        < chunk0.index("tcgen05.wait::ld")
    )
    later = imported[imported.index("case 1:") :]
    assert "barrier.sync" not in later and later.count("tcgen05.ld.sync.aligned.32x32b.x32.b32") == 3
    # the dispatch kernel allocates the claim's 128 columns and frees them
    assert (generated.dispatch.tmem_columns, generated.dispatch.tmem_slot) != (0, 0)
    assert generated.dispatch.tmem_columns == 128
    values = {h.symbol: h.value for h in generated.handles}
    assert values["kl_gemm_tcgen05_accumulator_tmem"] == 0


@pytest.mark.toolchain
def test_the_linked_ptx_and_sass_hold_the_tcgen05_pipeline(linked: tuple[LinkResult, Path, Path]) -> None:
    _, out, _ = linked
    ptx = (out / "kernel.ptx").read_text()
    count = {
        op: len(re.findall(rf"{re.escape(op)}\b", ptx))
        for op in (
            "tcgen05.mma.cta_group::1.kind::f16",
            "tcgen05.commit.cta_group::1.mbarrier::arrive::one",
            "tcgen05.ld.sync.aligned.32x32b.x32.b32",
            "tcgen05.wait::ld.sync.aligned",
            "tcgen05.alloc",
            "tcgen05.relinquish_alloc_permit",
            "tcgen05.dealloc",
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        )
    }
    assert count == {
        "tcgen05.mma.cta_group::1.kind::f16": 4,
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one": 2,
        "tcgen05.ld.sync.aligned.32x32b.x32.b32": 4,
        "tcgen05.wait::ld.sync.aligned": 4,
        "tcgen05.alloc": 1,
        "tcgen05.relinquish_alloc_permit": 1,
        "tcgen05.dealloc": 1,
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes": 2,
    }
    assert "cvt.rn.bf16x2.f32" in ptx and "st.global.v4.b32" in ptx  # the epilogue's packed stores
    # every handle folded: no call, no handle symbol left; the instruction descriptor is an immediate
    assert not re.search(r"\bcall(\.uni)?\b", ptx), "a call survived LTO"
    assert "kl_" not in ptx.replace("kl_dispatch", "").replace("kl_smem", "")
    assert re.search(r"mov\.b32\s+%r\d+, 136316048;", ptx) and ".global" not in ptx.split("kl_dispatch")[0]
    [kernel] = read_cubin((out / "kernel.cubin").read_bytes()).kernels
    assert (kernel.name, kernel.static_smem, kernel.frame_bytes) == ("kl_dispatch", 0, 0)
    tool = find_disassembler()
    if tool is None:
        pytest.skip("no disassembler (nvdisasm or cuobjdump) for the SASS facts")
    sass = [i for body in functions(disassemble(tool, (out / "kernel.cubin").read_bytes())).values() for i in body]
    opcodes = [m.group(1) for i in sass if (m := re.search(r"\b(UTCHMMA|UTCBAR|LDTM\.x32|UTMALDG\.2D)\b", i))]
    assert sorted(set(opcodes)) == ["LDTM.x32", "UTCBAR", "UTCHMMA", "UTMALDG.2D"]
    assert (opcodes.count("UTCHMMA"), opcodes.count("LDTM.x32"), opcodes.count("UTCBAR")) == (4, 4, 2)
    calls = {m.group(1) for i in sass if (m := re.search(r"CALL\.\w+(?:\.\w+)*\s+`\(([^)]*)\)", i))}
    assert all(c.startswith("$__internal_") for c in calls), calls  # only the toolkit's own slow paths


@pytest.mark.toolchain
def test_the_tcgen05_link_map_matches_its_snapshot(linked: tuple[LinkResult, Path, Path]) -> None:
    _, out, folder = linked
    text = _stable((out / "link.map").read_text().replace(f"{folder}/", ""))
    assert_text_snapshot(DATA / "gemm_swiglu_tcgen05.link.map", text)


def test_check_accepts_the_sm100_composition() -> None:
    result = check([FOLDER / SM100 / TCGEN05_PIPELINE])
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]


def test_check_rejects_an_epilogue_placed_off_its_tensor_memory_lanes(tmp_path: Path) -> None:
    # the producer writes row m to lane 127 - m: warp w of the epilogue would need lanes of
    # another warp's quadrant, which tcgen05.ld cannot reach
    folder = build_sm100(tmp_path / "edited", {"tcgen05.kc": {"m = lane": "m = 127 - lane"}}, packed=False)
    result = check([folder / TCGEN05_PIPELINE])
    assert not result.accepted
    assert {d.code for d in result.diagnostics if d.is_error} == {"L-ROUTE"}


@pytest.mark.toolchain
def test_a_tensor_memory_claim_narrower_than_the_placement_is_refused_at_link(tmp_path: Path) -> None:
    # the placement reaches column 127; the claim the tile lives in holds 64 (its twin: the
    # unedited composition links above)
    folder = build_sm100(tmp_path / "edited", {"tcgen05.kc": {"accumulator columns 128": "accumulator columns 64"}})
    result = link([folder / TCGEN05_PIPELINE], tmp_path / "out")
    assert not result.ok
    [error] = [d for d in result.diagnostics if d.is_error]
    assert error.code == "L-LINK"
    assert error.message == (
        "export `accumulator` of `gemm.tcgen05` places elements up to column 128 of its "
        "tensor-memory claim, which holds 64 columns"
    )
