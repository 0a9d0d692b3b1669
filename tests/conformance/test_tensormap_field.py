"""A tensor map held in the params block by value (`tmap: tensormap @ OFF box …`), and fills counted one by one.

A role's first argument is its params block, so a TMA copy whose map operand is that argument
plus a constant reads the map at that block offset (a ``map-inline`` fact): the `tensormap`
field there declares the box, and the copy completes its bytes. A map of another field type,
or at an offset no field declares, leaves the bytes undecided. The copies of a function are
added per fill (those after one ``arrive.expect_tx`` and before the next), so a loop the
compiler unrolled into several fills is judged fill by fill. The examples that pass are the
attention loads (`specs/examples/attention/load_*.kc`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.conformance import check
from package.codefacts import derive
from packing.pack import choose_stage

CONTRACT = """stage "fx.tm" version "1.0.0" {{
    target sm_90a
    requires feature tma, mbarrier
    role load entry fx_load warps 1
    params Block size 256 align 64 {{
        {field}
        rows: i32 @ 128
    }}
    claim smem tiles bytes 16KiB align 1024 per_slot r use tma
    ring r produce by load {{
        depth 2
        full init 1 expect_tx 16KiB
        empty init 1
        full arrive 1 tx 16KiB
        full copy 8KiB into tiles
        full copy 8KiB into tiles
        writes async
    }}
}}
"""
FIELD = "tmap: tensormap @ 0 box 64, 64, 1 elem bf16"

COPY = "\tcp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
FILL = (
    "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{b}], %r9;\n"
    + (COPY + " [%r3], [%rd1, {{%r4, %r4, %r4}}], [%r{b}];\n") * 2
)
PTX = """.version 8.0
.target sm_90a
.extern .func  (.param .b32 func_retval0) kl_fx_tm_r_full_bar
(
)
;
.visible .func fx_load(.param .b64 fx_load_param_0, .param .b64 fx_load_param_1)
{{
	.reg .b32 %r<12>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [fx_load_param_0];
	{{ // callseq 0, 0
	.param .b32 retval0;
	call.uni (retval0), kl_fx_tm_r_full_bar, ();
	ld.param.b32 %r1, [retval0+0];
	}} // callseq 0
	add.s32 %r2, %r1, 8;
	mov.u32 %r3, 0;
	mov.u32 %r4, 0;
	mov.u32 %r9, 16384;
{fills}	ret;
}}
"""


def _copy_findings(tmp_path: Path, field: str = FIELD, fills: str | None = None) -> list[tuple[str, bool]]:
    (tmp_path / "tm.kc").write_text(CONTRACT.format(field=field))
    stage = choose_stage(tmp_path / "tm.kc", None)
    ptx = PTX.format(fills=FILL.format(b=1) + FILL.format(b=2) if fills is None else fills)
    return [(f.problem, f.decided) for f in check(stage, derive(ptx)) if f.check == "copy-bytes"]


def test_a_copy_through_a_tensormap_field_completes_its_box_fill_by_fill(tmp_path: Path) -> None:
    assert _copy_findings(tmp_path) == []


def test_a_fill_short_of_a_copy_is_rejected(tmp_path: Path) -> None:
    second = FILL.format(b=2)
    short = second[: second.rindex("\tcp.async")]
    assert _copy_findings(tmp_path, fills=FILL.format(b=1) + short) == [("bytes", True)]


def test_a_box_too_small_is_rejected(tmp_path: Path) -> None:
    assert _copy_findings(tmp_path, FIELD.replace("64, 64, 1", "64, 32, 1")) == [("bytes", True)]


@pytest.mark.parametrize(
    "field",
    ["tmap: ptr @ 0 box 64, 64, 1 elem bf16", "tmap: tensormap @ 64 box 64, 64, 1 elem bf16", "tmap: tensormap @ 0"],
    ids=["a-ptr-field", "no-field-at-the-offset", "no-box"],
)
def test_a_map_the_contract_does_not_size_stays_undecided(tmp_path: Path, field: str) -> None:
    assert _copy_findings(tmp_path, field) == [("undecided", False)]
