"""Tensor connections link: one case per rung sm_90a has (register copy, warp shuffle, shared-memory staging).

The components (tests/link/tensor_cases.py) call the tensor handles; the linker defines
them as the lowered routes, places the staging routes' named barriers with the others
and records each route in the map. CPU tests link to a cubin (``toolchain``); the GPU
tests run each kernel and compare with the host's expectation bit for bit
(``bench/gpu/run_examples.sh`` runs them on the H200, and the staging cases under
compute-sanitizer through ``bench/gpu/run_tensor.py``).
"""

from __future__ import annotations

import json
import re
from array import array
from pathlib import Path

import pytest

from analysis.link_inputs import link_inputs
from checker.clauses.l_handle import describe
from checker.handles import handle_problems, symbol_problems
from contract_lang.parser import parse_text
from kernlink.api import LinkResult, check, check_text, link
from linker.generate import unsupported
from linker.link import JSON, MAP
from package.captured import Captured, Prototype
from placement.problem import Domain
from runtime.launch import GpuSession
from runtime.run import run_linked
from tests.link.tensor_cases import CASES, build_case

Linked = dict[str, tuple[LinkResult, Path]]


@pytest.fixture(scope="module")
def tensor_linked(tmp_path_factory: pytest.TempPathFactory) -> Linked:
    root = tmp_path_factory.mktemp("tensor")
    out = {}
    for name, case in CASES.items():
        result = link([build_case(case, root / "src")], root / "out" / name, emit_ptx=True)
        assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
        out[name] = (result, root / "out" / name)
    return out


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rung_links_and_its_route_is_in_the_code_the_ptx_and_the_map(tensor_linked: Linked, name: str) -> None:
    case = CASES[name]
    result, out = tensor_linked[name]
    assert result.output is not None and result.output.generated is not None
    generated = result.output.generated
    [transfer] = generated.transfers
    assert transfer.rung == case.rung
    stage = "xfer_solo" if case.same_role else "xfer_prod"
    importer = "xfer_solo" if case.same_role else "xfer_cons"
    assert (transfer.export_symbol, transfer.import_symbol) == (f"kl_{stage}_tile_export", f"kl_{importer}_got_import")
    source = generated.source
    assert "// Tensor transfers" in source and f"route {case.rung}" in source
    assert f'extern "C" __device__ void {transfer.export_symbol}(const unsigned int* held) {{' in source
    assert (
        f'extern "C" __device__ void {transfer.import_symbol}(const unsigned int* held, unsigned int* dst, '
        "int chunk) {"
    ) in source
    ptx = (out / "kernel.ptx").read_text()
    assert not re.search(r"\bcall(\.uni)?\b", ptx), "a handle call survived LTO"
    assert ".extern" not in ptx
    text = (out / MAP).read_text()
    assert transfer.connection in text and transfer.title in text
    [recorded] = json.loads((out / JSON).read_text())["generated"]["transfers"]
    assert (recorded["rung"], recorded["barrier_ids"]) == (case.rung, list(transfer.barrier_ids))


@pytest.mark.toolchain
@pytest.mark.parametrize("name", [n for n, c in sorted(CASES.items()) if not c.same_role])
def test_staging_barriers_are_placed_with_the_others_and_the_scratch_is_the_lent_claim(
    tensor_linked: Linked, name: str
) -> None:
    case = CASES[name]
    result, out = tensor_linked[name]
    assert result.output is not None and result.output.generated is not None
    [transfer] = result.output.generated.transfers
    placement = result.output.record.placement
    assert placement is not None
    ids = sorted(s.offset for s in placement.in_domain(Domain.BARRIER))
    assert len(ids) == len(set(ids)) and all(1 <= i < 16 for i in ids)
    assert len(transfer.barrier_ids) == case.chunks  # tile mode: one barrier; chunk mode: two
    assert set(transfer.barrier_ids) <= set(ids)
    assert transfer.barrier_threads == 64
    scratch = placement.slot("xfer.cons", "scratch", Domain.SMEM)
    assert (transfer.scratch_claim, transfer.scratch_addr) == ("scratch", scratch.offset)
    assert case.scratch is not None and 0 < transfer.scratch_bytes <= case.scratch
    ptx = (out / "kernel.ptx").read_text()
    for bar in transfer.barrier_ids:
        assert re.search(rf"barrier\.sync\s+{bar},\s*64;", ptx)
    text = (out / MAP).read_text()
    assert "named barrier `transfer.got.0`" in text and "stages through `scratch`" in text


@pytest.mark.toolchain
@pytest.mark.parametrize("name", ["staging", "staging-chunk"])
def test_place_and_fit_report_the_route_barriers_the_link_uses(
    tensor_linked: Linked, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check places the staging routes' named barriers: `place`, `fit` and the link read one placement."""
    from kernlink.cli import main

    result, out = tensor_linked[name]
    assert result.output is not None and result.output.generated is not None
    [transfer] = result.output.generated.transfers
    pipeline = out.parent.parent / "src" / CASES[name].name / "xfer.kp"
    checked = check([pipeline])
    assert checked.placed is not None and checked.placed.placement == result.output.record.placement
    used = len(transfer.barrier_ids)
    assert main(["place", str(pipeline)]) == 0
    assert f"used {used} IDs (end {used + 1})" in capsys.readouterr().out
    assert main(["fit", str(pipeline), "--targets", "sm_90a", "--format", "json"]) == 0
    [fitted] = json.loads(capsys.readouterr().out)["targets"]
    assert {"resource": "named barrier IDs", "used": used + 1, "capacity": 16, "unit": "IDs"} in fitted["resources"]


@pytest.mark.toolchain
def test_register_routes_need_no_barrier_and_no_scratch(tensor_linked: Linked) -> None:
    for name in ("copy", "shuffle"):
        result, _ = tensor_linked[name]
        assert result.output is not None and result.output.generated is not None
        [transfer] = result.output.generated.transfers
        assert (transfer.barrier_ids, transfer.scratch_claim, transfer.scratch_addr) == ((), None, None)
        placement = result.output.record.placement
        assert placement is not None and not placement.in_domain(Domain.BARRIER)


@pytest.mark.toolchain
def test_linking_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    pipeline = build_case(CASES["staging-chunk"], tmp_path / "src")
    first, second = link([pipeline], tmp_path / "a"), link([pipeline], tmp_path / "b")
    assert first.ok and second.ok
    for name in ("kernel.cubin", "generated.cu", MAP, JSON):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_gemm_swiglu_still_checks_and_routes_without_sources() -> None:
    examples = Path(__file__).resolve().parents[2] / "specs" / "examples"
    result = check([examples / "gemm_swiglu" / "gemm_swiglu.kp"])
    assert result.accepted and result.downstream is not None and result.downstream.routes


TENSOR_STAGE = """
stage "t.s" version "1.0.0" {
    target sm_90a
    role mma entry t_main warps 1
    export tensor tile from role mma {
        elem u32
        tile m 16 n 8
        placement regs(t: 32, r: 4) -> (m, n) { m = t / 4 + 8 * (r / 2)  n = 2 * (t % 4) + r % 2 }
        ready event got.ready
    }
}
"""


def test_tensor_handles_are_bound_with_their_own_prototypes() -> None:
    stage = parse_text(TENSOR_STAGE, "t.kc", "contract").stages[0]
    entry = Prototype("func", ("b64", "b64"), ())
    good = Captured(frozenset({"t_main"}), frozenset({"kl_t_s_tile_export"}))
    protos = {"t_main": entry, "kl_t_s_tile_export": Prototype("func", ("b64",), ())}
    assert handle_problems(stage, good, protos) == [] and symbol_problems(stage, good, protos) == []
    wrong = {**protos, "kl_t_s_tile_export": Prototype("func", (), ("b32",))}
    [finding] = handle_problems(stage, good, wrong)
    assert (finding.problem, finding.symbol) == ("signature", "kl_t_s_tile_export")
    assert "void kl_t_s_tile_export(const T* held)" in describe(finding)[0]
    unbound = Captured(frozenset({"t_main"}), frozenset({"kl_t_s_got_import"}))
    [finding] = handle_problems(stage, unbound, protos)
    assert finding.problem == "unbound"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("blocks", [1, 132])
def test_each_linked_route_delivers_every_element_bit_for_bit(tensor_linked: Linked, name: str, blocks: int) -> None:
    case = CASES[name]
    want = case.expected(blocks)
    with GpuSession() as gpu:
        out = gpu.alloc(4 * len(want))
        run_linked(tensor_linked[name][1], gpu=gpu, grid=blocks, values={"out": out})
        got = array("I", gpu.download(out)).tolist()
    assert got == want


FAN_OUT = TENSOR_STAGE + "".join(
    f"""
stage "t.c{i}" version "1.0.0" {{
    target sm_90a
    role epi{i} entry c{i}_main warps 1
    claim smem scratch{i} bytes 512 align 16 lifetime between got{i}.ready got{i}.done
    import tensor got{i} from tile into role epi{i} {{
        elem u32
        tile m 16 n 8
        demand regs(t: 32, r: 4) -> (m, n) {{ m = t / 2  n = 4 * (t % 2) + r }}
        lends smem scratch{i}
        done event got{i}.done
    }}
}}
"""
    for i in (1, 2)
)


def test_an_export_with_two_imports_is_no_longer_refused() -> None:
    # fan-out links (tests/gemm/test_fanout.py): the export handle runs both routes in import order
    result = check_text(FAN_OUT.replace("ready event got.ready", "ready event got1.ready"), "fan.kc")
    assert result.composition is not None
    assert not [d for d in unsupported(link_inputs(result.composition)) if "tensor" in d.message]
