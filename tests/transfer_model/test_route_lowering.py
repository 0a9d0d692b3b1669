"""Lowering: generated CUDA for every route kind, compiled with NVRTC; link-constant checks."""

from __future__ import annotations

import re

import pytest

from transfer_model.library import mma_m16n8k16_f32, wgmma_m64nNk16_f32
from transfer_model.lower import LinkConstants, lower
from transfer_model.maps import REGS, SMEM, TMEM, Chunk, LayoutMap
from transfer_model.program import Program, Shuffle
from transfer_model.routes import select_route
from transfer_model.simulate import expected, simulate
from transfer_model.tensors import Lends, RoleThreads, TensorExport, TensorImport

from .builders import SKETCH_TILE, b, export_of, import_of, regs, sketch_demand, sketch_placement


def _program(export: TensorExport, imp: TensorImport, lends: Lends, tmem: bool) -> Program:
    result = select_route(export, imp, lends, target_has_tmem=tmem)
    assert result.route is not None, result.diagnostics
    assert simulate(result.route.program, export) == expected(imp)
    return result.route.program


def _permuted(placement: LayoutMap, sigma: object) -> LayoutMap:
    return LayoutMap(REGS, placement.params, placement.outputs, placement.at({"t": sigma}))  # type: ignore[dict-item]


def _constants(program: Program) -> LinkConstants:
    return LinkConstants(
        smem_addr=1024 if program.shared else None,
        barrier_ids=tuple(range(1, 1 + program.barriers)),
        tmem_addr=0x20 if program.route == "tmem-load" else None,
    )


MMA = mma_m16n8k16_f32()
MMA_TILE = (("m", 16), ("n", 8))
MMA2 = mma_m16n8k16_f32(warps_m=2)
MMA2_TILE = (("m", 32), ("n", 8))
WG = wgmma_m64nNk16_f32(32)
WG_TILE = (("m", 64), ("n", 32))
TMEM_PLACEMENT = LayoutMap(TMEM, (("lane", 128), ("col", 256)), ("m", "n"), (b("+", "lane", 0), b("+", "col", 0)))


Seam = tuple[TensorExport, TensorImport, Lends, bool]


def _seams() -> dict[str, Seam]:
    xor_1 = b("-", b("+", "t", 1), b("*", 2, b("%", "t", 2)))  # t ^ 1, through a negative intermediate
    per_warp = b("+", b("*", 32, b("/", "t", 32)), b("%", b("+", b("%", "t", 32), b("/", "t", 32)), 32))
    smem_tile = (("m", 16), ("n", 8))
    smem_placement = LayoutMap(SMEM, smem_tile, ("addr",), (b("*", 4, b("+", b("*", 8, "m"), "n")),))
    rotate_3 = b("+", b("*", 32, b("/", "t", 32)), b("%", b("+", "t", 3), 32))
    row_per_thread_2 = regs((("t", 64), ("r", 4)), b("/", "t", 2), b("+", b("*", 4, b("%", "t", 2)), "r"))
    row_per_thread = regs((("t", 32), ("r", 4)), b("/", "t", 2), b("+", b("*", 4, b("%", "t", 2)), "r"))
    return {
        "copy": (export_of(MMA, MMA_TILE), import_of(MMA, MMA_TILE, 0, role="mma"), Lends(), False),
        "shuffle-xor": (
            export_of(MMA, MMA_TILE),
            import_of(_permuted(MMA, xor_1), MMA_TILE, 0, role="mma"),
            Lends(),
            False,
        ),
        "shuffle-rotate": (
            export_of(WG, WG_TILE),
            import_of(_permuted(WG, rotate_3), WG_TILE, 0, role="mma"),
            Lends(),
            False,
        ),
        "shuffle-thread-table": (
            export_of(WG, WG_TILE),
            import_of(_permuted(WG, per_warp), WG_TILE, 0, role="mma"),
            Lends(),
            False,
        ),
        "staging-chunk": (
            export_of(sketch_placement(), SKETCH_TILE),
            import_of(sketch_demand(), SKETCH_TILE, 256, Chunk("n", 32)),
            Lends(16384),
            False,
        ),
        "staging-tile": (
            export_of(sketch_placement(), SKETCH_TILE),
            import_of(sketch_demand(), SKETCH_TILE, 256, Chunk("n", 32)),
            Lends(1 << 17),
            False,
        ),
        "staging-bf16": (
            export_of(sketch_placement(), SKETCH_TILE, elem="bf16"),
            import_of(sketch_demand(), SKETCH_TILE, 256, Chunk("n", 32), elem="bf16"),
            Lends(8192),
            False,
        ),
        "staging-same-role": (
            export_of(MMA2, MMA2_TILE),
            import_of(row_per_thread_2, MMA2_TILE, 0, role="mma"),
            Lends(1024),
            False,
        ),
        "staging-buffer": (
            TensorExport("accumulator", "mma", "f32", smem_tile, smem_placement, RoleThreads(0, 32)),
            import_of(row_per_thread, smem_tile, 32),
            Lends(),
            False,
        ),
        "tmem-32x32b": (
            export_of(TMEM_PLACEMENT, SKETCH_TILE),
            import_of(sketch_demand(), SKETCH_TILE, 128, Chunk("n", 32)),
            Lends(),
            True,
        ),
    }


SEAMS = _seams()
CASES = {name: _program(*seam) for name, seam in SEAMS.items()}


def test_shuffle_lane_selection_kinds() -> None:
    kinds = {
        name: {op.lanes.kind for ops in p.import_ops for op in ops if isinstance(op, Shuffle)}
        for name, p in CASES.items()
        if name.startswith("shuffle")
    }
    assert kinds == {"shuffle-xor": {"xor"}, "shuffle-rotate": {"rotate"}, "shuffle-thread-table": {"thread_table"}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_moves_bits_only(name: str) -> None:
    program = CASES[name]
    source = lower(program, _constants(program))
    assert 'extern "C" __device__ void kl_export_accumulator(' in source
    assert 'extern "C" __device__ void kl_import_acc(' in source
    assert not re.search(r"\bfloat\b|__half|__nv_bfloat16|__float2|__int2float|cvt\.", source)
    word = "unsigned int" if program.elem_bytes == 4 else "unsigned short"
    assert f"const {word}* held, {word}* dst, int chunk" in source


def test_link_constants_fold_into_the_code() -> None:
    program = CASES["staging-chunk"]
    source = lower(program, LinkConstants(smem_addr=2048, barrier_ids=(5, 7)))
    assert "barrier.sync 5, 384;" in source and "barrier.sync 7, 384;" in source
    assert "kl_st_b32(2048u + " in source and "kl_ld_b32(2048u + " in source
    tmem = lower(CASES["tmem-32x32b"], LinkConstants(tmem_addr=64, barrier_ids=(3,)))
    assert "tcgen05.ld.sync.aligned.32x32b.x32.b32" in tmem and "64u" in tmem
    # ordered after the producer's writes: fence, arrive / sync, fence, then the loads
    export, imported = tmem.split("void kl_import_")
    assert export.index("tcgen05.fence::before_thread_sync;") < export.index("barrier.arrive 3, 256;")
    chunk0 = imported[imported.index("case 0:") : imported.index("case 1:")]
    assert (
        chunk0.index("barrier.sync 3, 256;")
        < chunk0.index("tcgen05.fence::after_thread_sync;")
        < chunk0.index("tcgen05.ld.")
        < chunk0.index("tcgen05.wait::ld")
    )


def test_missing_or_bad_constants_are_rejected() -> None:
    with pytest.raises(ValueError, match="shared-memory address"):
        lower(CASES["staging-chunk"], LinkConstants(barrier_ids=(1, 2)))
    with pytest.raises(ValueError, match="needs 2 barrier IDs"):
        lower(CASES["staging-chunk"], LinkConstants(smem_addr=1024, barrier_ids=(1,)))
    with pytest.raises(ValueError, match=r"barrier IDs must be in 1\.\.15"):
        lower(CASES["staging-chunk"], LinkConstants(smem_addr=1024, barrier_ids=(0, 16)))
    with pytest.raises(ValueError, match="not aligned"):
        lower(CASES["staging-chunk"], LinkConstants(smem_addr=1026, barrier_ids=(1, 2)))
    with pytest.raises(ValueError, match="tensor-memory address"):
        lower(CASES["tmem-32x32b"], LinkConstants(barrier_ids=(1,)))


def test_symbols_can_be_renamed() -> None:
    source = lower(CASES["copy"], export_name="kl_x_export", import_name="kl_x_import")
    assert "void kl_x_export(" in source and "void kl_x_import(" in source


def _nvrtc(source: str, arch: str, lto: bool) -> str:
    """Compile with NVRTC: to LTO IR (``-dlto``), or to a relocatable cubin so ptxas checks the inline PTX."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"route.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        opts = [f"-arch={arch}".encode(), b"-rdc=true", *([b"-dlto"] if lto else [])]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert status == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
        _, out_size = nvrtc.nvrtcGetLTOIRSize(prog) if lto else nvrtc.nvrtcGetCUBINSize(prog)
        assert out_size > 0
        return log.decode(errors="replace").strip("\x00 \n")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_compiles_with_nvrtc(name: str) -> None:
    program = CASES[name]
    arch = "sm_100a" if program.route == "tmem-load" else "sm_90a"
    source = lower(program, _constants(program))
    for lto in (True, False):
        log = _nvrtc(source, arch, lto)
        assert "warning" not in log, log
