"""Code generation and the launch helper's params block, without a compiler or a GPU."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from analysis.downstream import verify_downstream
from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from diagnostics.model import DiagnosticError
from kernlink.api import check, check_text
from linker.artifacts import Generated
from linker.generate import generate, unsupported
from package.captured import Captured
from runtime.launch import DeviceBuffer
from runtime.run import params_block
from tests.link.examples import EXAMPLES

PADDED = """
stage "demo.pad" version "1.0.0" {
    target sm_90a
    requires feature setmaxnreg
    role ctl entry ctl_main warps 1
    role mma entry mma_main warps 4 regs 200 warpgroup
    launch fixed threads 256
    params PadParams size 8 align 4 {
        count: u32 @ 0
        tile: u32 @ 4 = fact tile
    }
    owns fact tile: u32 in 64..128
}
"""


def _generate(text: str, needed: frozenset[str]) -> Generated:
    result = check_text(text, "demo.kc")
    assert result.accepted, [f"{d.code}: {d.message}" for d in result.diagnostics]
    comp = result.composition
    assert comp is not None
    captured = Captured(frozenset(), needed)
    comp = dataclasses.replace(comp, stages=tuple(dataclasses.replace(s, captured=captured) for s in comp.stages))
    placed = verify_downstream(comp).placed
    assert placed is not None
    return generate(Plan(comp, placed))


def test_idle_warps_and_register_groups() -> None:
    generated = _generate(PADDED, frozenset({"kl_demo_pad_mma_warp0", "kl_demo_pad_mma_regs"}))
    source = generated.source
    assert "__launch_bounds__(256, 1)" in source
    # setmaxnreg and the roles share one if/else chain: ptxas compiles each branch to its budget
    assert '    if (warp < 4u) {\n        asm volatile("setmaxnreg.dec.sync.aligned.u32 240;");' in source
    assert "        if (warp < 1u) {\n            ctl_main(" in source and "    } else if (warp < 8u) {" in source
    assert "// idle warps 1, 2, 3 return at once" in source
    # 8 warps: 248 registers at entry, pool 2 × 128 × 248; the idle warps' group gives up 8
    assert [(g.op, g.budget) for g in generated.dispatch.groups] == [("dec", 240), ("inc", 256)]
    assert {h.symbol: h.value for h in generated.handles}["kl_demo_pad_mma_warp0"] == 4
    assert "__syncthreads" not in source  # no ring to initialise
    [count, tile] = generated.params.fields
    assert (count.source, tile.source, tile.allowed) == ("caller", "caller", tuple(range(64, 129)))


def test_generation_is_deterministic() -> None:
    needed = frozenset({"kl_demo_pad_mma_warp0"})
    assert _generate(PADDED, needed).source == _generate(PADDED, needed).source


def test_a_tensor_connection_is_no_longer_refused_and_gemm_swiglu_still_checks_and_places() -> None:
    result = check([EXAMPLES / "gemm_swiglu" / "gemm_swiglu.kp"])
    assert result.accepted and result.composition is not None
    assert result.downstream is not None and result.downstream.placed is not None
    assert [r.route.rung for r in result.downstream.routes] == ["smem-staging"]
    assert not [d for d in unsupported(link_inputs(result.composition)) if "tensor" in d.message]


def test_generate_refuses_what_it_cannot_express() -> None:
    text = PADDED.replace(
        "    launch fixed threads 256\n",
        "    launch fixed threads 256\n"
        "    counter c produce by ctl scope sys space host\n"
        "    counter c consume by mma scope sys space host\n",
    )
    with pytest.raises(DiagnosticError) as err:
        _generate(text, frozenset())
    assert [d.code for d in err.value.diagnostics] == ["E-UNSUPPORTED"]


RING_PARAMS = {
    "size": 32,
    "fields": [
        {"stage": "ring.loader", "name": "src", "type": "ptr", "offset": 0, "source": "caller", "fact": None},
        {"stage": "ring.loader", "name": "tiles", "type": "u32", "offset": 8, "source": "caller", "fact": None},
        {"stage": "ring.reduce", "name": "dst", "type": "ptr", "offset": 16, "source": "caller", "fact": None},
        {
            "stage": "ring.reduce",
            "name": "tile_elems",
            "type": "u32",
            "offset": 24,
            "source": "fact",
            "fact": "tile_elems",
            "value": 8192,
        },
        {"stage": "ring.reduce", "name": "tiles", "type": "u32", "offset": 28, "source": "caller", "fact": None},
    ],
}


def test_params_block_writes_facts_and_caller_values() -> None:
    block = params_block({"params": RING_PARAMS}, {"src": DeviceBuffer(0x1000, 64), "dst": 0x2000, "tiles": 37})
    assert block == struct.pack("<QI4xQII", 0x1000, 37, 0x2000, 8192, 37)
    split = params_block({"params": RING_PARAMS}, {"src": 1, "dst": 2, "tiles": 5, "ring.reduce.tiles": 6})
    assert struct.unpack_from("<I", split, 28) == (6,) and struct.unpack_from("<I", split, 8) == (5,)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"src": 1, "dst": 2}, "no value for `ring.loader.tiles`, `ring.reduce.tiles`"),
        ({"src": 1, "dst": 2, "tiles": 3, "tile_elems": 4}, "is the fact `tile_elems`"),
        ({"src": 1, "dst": 2, "tiles": 3, "bogus": 4}, "no params field is named `bogus`"),
        ({"src": 1, "dst": 2, "tiles": -1}, "does not fit a `u32`"),
    ],
)
def test_params_block_rejects_bad_values(values: dict[str, int], message: str) -> None:
    with pytest.raises(DiagnosticError) as err:
        params_block({"params": RING_PARAMS}, values)
    [diag] = err.value.diagnostics
    assert diag.code == "E-RUN" and message in diag.message


def test_stated_values_are_a_fields_allowed_values_within_its_facts() -> None:
    text = PADDED.replace("count: u32 @ 0", "count: u32 @ 0 in {1, 2, 4}").replace(
        "tile: u32 @ 4 = fact tile", "tile: u32 @ 4 = fact tile in {64, 96, 200}"
    )
    fields = {f.name: f for f in _generate(text, frozenset({"kl_demo_pad_mma_warp0"})).params.fields}
    assert fields["count"].allowed == (1, 2, 4) and fields["count"].source == "caller"
    assert fields["tile"].allowed == (64, 96)  # the owner allows 64..128


def test_params_block_keeps_a_field_to_its_stated_values() -> None:
    fields = [
        {
            "stage": "attn.load",
            "name": "page_size",
            "type": "i32",
            "offset": 0,
            "source": "caller",
            "fact": None,
            "allowed": [16, 32, 64],
        },
    ]
    assert params_block({"params": {"size": 4, "fields": fields}}, {"page_size": 32}) == struct.pack("<i", 32)
    with pytest.raises(DiagnosticError) as err:
        params_block({"params": {"size": 4, "fields": fields}}, {"page_size": 8})
    [diag] = err.value.diagnostics
    assert diag.code == "E-RUN" and "`attn.load.page_size` = 8 is not a value its contract (`in {…}`) allows" in (
        diag.message
    )


def test_an_export_no_call_reaches_is_dropped_with_a_note() -> None:
    export = "    export callable unused (f32) -> f32 = demo_unused\n"
    text = PADDED.replace("    owns fact tile", export + "    owns fact tile")
    generated = _generate(text, frozenset())
    assert [(d.stage, d.name, d.symbol) for d in generated.dropped] == [("demo.pad", "unused", "demo_unused")]
    [note] = generated.notes
    assert note.code == "I-EXPORT-DROPPED" and not note.is_error
    assert "demo_unused" not in generated.source
