"""The reference examples link on the CPU: generated code, folded constants, registers, map, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kernlink.api import LinkResult, link
from linker.link import CUBIN, JSON, MAP, PTX
from tests.link.examples import KERNEL
from toolchain.cubin import read_cubin
from toolchain.cuda import parse_ptxas_usage

pytestmark = pytest.mark.toolchain

Linked = dict[str, tuple[LinkResult, Path]]
_CALL = re.compile(r"^\s*call(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)", re.M)


@pytest.mark.parametrize("name", ["hello", "ring"])
def test_example_links_to_a_cubin_with_its_kernel(linked: Linked, name: str) -> None:
    result, out = linked[name]
    assert sorted(p.name for p in out.iterdir()) == sorted([CUBIN, PTX, MAP, JSON, "generated.cu", "kernel.h"])
    info = read_cubin((out / CUBIN).read_bytes())
    assert info.kernel_names == (KERNEL,)
    kernel = info.kernel(KERNEL)
    assert kernel is not None and kernel.static_smem == 0
    assert result.output is not None and result.output.generated is not None
    assert (out / "generated.cu").read_text() == result.output.generated.source


@pytest.mark.parametrize("name", ["hello", "ring"])
def test_no_call_to_a_handle_or_trampoline_survives_lto(linked: Linked, name: str) -> None:
    ptx = (linked[name][1] / PTX).read_text()
    assert _CALL.findall(ptx) == []
    symbols = set(re.findall(r"\bkl_\w+", ptx))
    assert symbols <= {KERNEL, "kl_smem", f"{KERNEL}_param_0"}, symbols


def test_ring_constants_are_immediates(linked: Linked) -> None:
    ptx = (linked["ring"][1] / PTX).read_text()
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert ptx.count("mbarrier.init.shared::cta.b64") == 12  # depth 6: 6 full + 6 empty, unrolled
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert re.search(r"\.maxntid 384, 1, 1", ptx) and re.search(r"\.minnctapersm 1", ptx)


def test_hello_calls_the_provider_through_its_inlined_trampoline(linked: Linked) -> None:
    ptx = (linked["hello"][1] / PTX).read_text()
    assert re.search(r"mul\.f32\s+%f\d+, %f\d+, 0f40400000;", ptx)  # scale(x) = x * 3.0f, inlined
    assert "setmaxnreg" not in ptx


@pytest.mark.parametrize("name", ["hello", "ring"])
def test_registers_from_the_cubin_equal_the_ptxas_report(linked: Linked, name: str) -> None:
    result, out = linked[name]
    assert result.output is not None
    attempt = result.output.record.attempts[-1]
    cubin = read_cubin((out / CUBIN).read_bytes()).kernel(KERNEL)
    assert cubin is not None
    assert attempt.registers == cubin.registers == attempt.ptxas_registers
    report = json.loads((out / JSON).read_text())["attempts"][-1]
    assert report["registers"] == report["ptxas_registers"] == cubin.registers
    if name == "ring":
        assert cubin.registers == 168  # __launch_bounds__(384, 1): the cap setmaxnreg redistributes


def test_ptxas_usage_parser_reads_the_kernel_line() -> None:
    log = (
        "ptxas info    : Compiling entry function 'kl_dispatch' for 'sm_90a'\n"
        "ptxas info    : Used 168 registers, used 1 barriers\n"
    )
    assert parse_ptxas_usage(log)[KERNEL].registers == 168


def test_ring_map_records_every_decision(linked: Linked) -> None:
    out = linked["ring"][1]
    text = (out / MAP).read_text()
    assert text.startswith("# kernlink link map (kernlink-link/1)\n")
    header = next(line for line in text.splitlines() if line.lstrip().startswith("Value"))
    assert header.split() == ["Value", "Size", "Align", "Lifetime", "Symbol", "Why"]
    for section in (
        "inputs",
        "smem",
        "barrier",
        "rings",
        "warps",
        "registers",
        "params",
        "handles",
        "calls",
        "facts",
        "dispatch",
        "link",
        "diagnostics",
    ):
        assert re.search(rf"^{section}\b", text, re.M), section
    assert re.search(r"^\s+6\s+kl_ring_loader_kv_depth\s", text, re.M)
    assert re.search(r"^\s+24\s+4\s+4\s+tile_elems\s+u32 = fact `tile_elems` = 8192", text, re.M)
    assert "<internal>" in text and "<reserved>" in text
    data = json.loads((out / JSON).read_text())
    assert data["status"] == "linked" and data["dispatch"]["dynamic_smem"] == 6 * 32768 + 96
    handles = {h["symbol"]: h["value"] for h in data["generated"]["handles"]}
    assert handles["kl_ring_reduce_kv_full_bar"] == 6 * 32768
    assert handles["kl_ring_reduce_kv_empty_bar"] == 6 * 32768 + 48
    assert handles["kl_ring_loader_kv_empty_count"] == 8  # per_warp(reduce)
    assert [(g["op"], g["budget"]) for g in data["dispatch"]["groups"]] == [("dec", 40), ("inc", 232)]
    assert [(f["name"], f["offset"], f["source"]) for f in data["params"]["fields"]] == [
        ("src", 0, "caller"),
        ("tiles", 8, "caller"),
        ("dst", 16, "caller"),
        ("tile_elems", 24, "fact"),
        ("tiles", 28, "caller"),
    ]


def test_hello_map_records_the_trampoline_and_the_fact(linked: Linked) -> None:
    out = linked["hello"][1]
    data = json.loads((out / JSON).read_text())
    [trampoline] = data["generated"]["trampolines"]
    assert (trampoline["symbol"], trampoline["export_symbol"], trampoline["export_stage"]) == (
        "kl_call_scale",
        "hello_scale",
        "hello.provider",
    )
    assert data["dispatch"]["setmaxnreg"] is False and data["dispatch"]["dynamic_smem"] == 0
    text = (out / MAP).read_text()
    assert re.search(r"kl_call_scale -> hello_scale\s+call `scale` \(f32\) -> f32 by hello.caller role `main`", text)
    assert "no setmaxnreg" in text


@pytest.mark.parametrize("name", ["hello", "ring"])
def test_same_inputs_give_byte_identical_outputs(
    pipelines: dict[str, Path], linked: Linked, tmp_path: Path, name: str
) -> None:
    again = link([pipelines[name]], tmp_path / name, emit_ptx=True)
    assert again.ok
    first = linked[name][1]
    for file in (CUBIN, PTX, MAP, JSON, "generated.cu"):
        assert (tmp_path / name / file).read_bytes() == (first / file).read_bytes(), file
