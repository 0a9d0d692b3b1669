"""TileLang stages: the SwiGLU epilogue packed from its lowering record, its derived contract, and the link.

TileLang needs an environment of its own (torch, a z3-solver older than kernlink's): these tests
pack from the lowering record beside the stage, which TileLang's driver printed; the one that lowers
again runs only where ``KERNLINK_TILELANG_PYTHON`` names a Python with TileLang.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_node
from diagnostics import DiagnosticError
from kernlink.builder.incremental import build
from kernlink.cli import main
from package.manifest import read_stage_package
from packing.frontends import tilelang, triton
from packing.pack import choose_stage, pack
from tests.link.examples import EXAMPLES

STAGE = EXAMPLES / "gemm_swiglu" / "tilelang"


def _header() -> A.Stage:
    return choose_stage(STAGE / "epilogue.kc", None)


def _record() -> tilelang.Record:
    return tilelang.Record(json.loads((STAGE / "epilogue.tilelang.json").read_text()), "test")


def test_the_demand_map_and_params_come_from_the_program() -> None:
    derived = tilelang.derived_stage(_record(), _header())
    imported = next(i for i in derived.items if isinstance(i, A.ImportTensor))
    assert print_node(A.Stage("s", "1", (imported,))).split("\n")[1:-2] == [
        "    import tensor acc from accumulator into role epilogue {",
        "        elem f32",
        "        tile m 128 n 128",
        "        chunk n 32",
        "        demand regs(t: 128, p: 32, c: 4) -> (m, n) {",
        "            m = t",
        "            n = c * 32 + p",
        "        }",
        "        lends smem scratch, regs 32",
        "        done event acc.done",
        "    }",
    ]
    assert not any(isinstance(i, A.ImportTensor) and i.demand for i in _header().items), "the header states no map"
    role = derived.roles[0]
    assert (role.entry, role.warps, role.regs, role.warpgroup) == ("swiglu_tilelang_epilogue_main", 4, 72, True)
    params = next(i for i in derived.items if isinstance(i, A.Params))
    assert (params.size, params.align) == (16, 8)
    assert [(f.name, f.type, f.offset) for f in params.fields] == [
        ("out", "ptr", 0),
        ("ldo", "i32", 8),
        ("rows", "i32", 12),
    ]


def test_a_header_that_states_a_value_keeps_it() -> None:
    header = _header()
    own = tuple(dataclasses.replace(i, elem="u32") if isinstance(i, A.ImportTensor) else i for i in header.items)
    derived = tilelang.derived_stage(_record(), A.Stage(header.name, header.version, own))
    assert next(i for i in derived.items if isinstance(i, A.ImportTensor)).elem == "u32"


def test_the_component_is_a_role_entry_over_the_import_handle() -> None:
    source = tilelang.component(_record(), _header())
    assert "__global__" not in source and "__launch_bounds__" not in source
    assert 'extern "C" __device__ void swiglu_tilelang_epilogue_main(const SwigluTilelangParams* kl_params' in source
    assert "kl_swiglu_tilelang_acc_import(nullptr, reinterpret_cast<unsigned int*>(dst), chunk);" in source
    assert "threadIdx.x - 32u * kl_swiglu_tilelang_epilogue_warp0()" in source
    assert source.count("threadIdx.x") == 1


def test_the_params_struct_follows_the_programs_order_not_the_kernels() -> None:
    """TileLang's kernel lists scalars by name; the struct and the derived layout follow the program."""
    data = dict(_record().data)
    out, ldo, rows = data["params"]
    record = tilelang.Record({**data, "params": [out, rows, ldo]}, "test")
    source = tilelang.component(record, _header())
    assert "    void* out;\n    int rows;\n    int ldo;\n};" in source
    params = next(i for i in tilelang.derived_stage(record, _header()).items if isinstance(i, A.Params))
    assert [(f.name, f.offset) for f in params.fields] == [("out", 0), ("rows", 8), ("ldo", 12)]


@pytest.mark.toolchain
def test_pack_writes_the_derived_contract_and_it_conforms(tmp_path: Path) -> None:
    folder = tmp_path / "tilelang"
    shutil.copytree(STAGE, folder, ignore=shutil.ignore_patterns("build"))
    result = pack(folder / "epilogue.py", folder / "epilogue.kc", folder / "build" / "epilogue.kpkg")
    assert result.warnings == ()
    loaded = read_stage_package(result.path)
    stage = parse_text(loaded.contract_text, "<package>", "contract").stages[0]
    assert stage == tilelang.derived_stage(_record(), _header())
    assert "demand regs(t: 128, p: 32, c: 4) -> (m, n)" in loaded.contract_text


@pytest.mark.toolchain
def test_the_tilelang_epilogue_links_against_the_wgmma_mainloop(tmp_path: Path) -> None:
    root = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build"))
    assert main(["pack", str(root / "mainloop.cu"), "--contract", str(root / "mainloop.kc")]) == 0
    assert (
        main(["pack", str(root / "tilelang" / "epilogue.py"), "--contract", str(root / "tilelang" / "epilogue.kc")])
        == 0
    )
    out = tmp_path / "linked"
    assert main(["link", str(root / "gemm_swiglu_tilelang.kp"), "-o", str(out)]) == 0
    linkmap = (out / "link.map").read_text()
    assert "gemm.mainloop.accumulator -> swiglu.tilelang.acc shared-memory staging" in linkmap
    assert main(["audit", str(out)]) == 0


@pytest.mark.toolchain
def test_a_record_of_another_program_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if tilelang.has_tilelang():
        pytest.skip("this interpreter has TileLang: it lowers the edited program instead")
    monkeypatch.delenv("KERNLINK_TILELANG_PYTHON", raising=False)
    folder = tmp_path / "tilelang"
    shutil.copytree(STAGE, folder, ignore=shutil.ignore_patterns("build"))
    (folder / "epilogue.py").write_text((folder / "epilogue.py").read_text() + "\n# edited\n")
    with pytest.raises(DiagnosticError) as err:
        pack(folder / "epilogue.py", folder / "epilogue.kc", folder / "build" / "epilogue.kpkg")
    assert "is of another version of `epilogue.py`" in err.value.diagnostics[0].message
    assert not (folder / "build" / "epilogue.kpkg").exists()


def test_no_tilelang_and_no_record_says_what_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if tilelang.has_tilelang():
        pytest.skip("this interpreter has TileLang")
    monkeypatch.delenv("KERNLINK_TILELANG_PYTHON", raising=False)
    (tmp_path / "stage.py").write_text("import tilelang.language as T\n")
    with pytest.raises(DiagnosticError) as err:
        tilelang.lower(tmp_path / "stage.py", _header(), "sm_90a")
    said = err.value.diagnostics[0]
    assert "neither TileLang nor a lowering record `stage.tilelang.json`" in said.message
    assert "KERNLINK_TILELANG_PYTHON" in said.helps[0]


@pytest.mark.skipif(not os.environ.get("KERNLINK_TILELANG_PYTHON"), reason="KERNLINK_TILELANG_PYTHON names no TileLang")
def test_the_committed_record_is_what_tilelang_prints() -> None:
    python = os.environ["KERNLINK_TILELANG_PYTHON"]
    command = [
        python,
        str(tilelang.DRIVER),
        "epilogue.py",
        "--arch",
        "sm_90a",
        f"--import=acc={tilelang.bridge('acc')}",
    ]
    done = subprocess.run(command, cwd=STAGE, capture_output=True, text=True, check=True)
    assert done.stdout == (STAGE / "epilogue.tilelang.json").read_text()


# ---------------------------------------------------------------------------- the callable over registers


def _regs_header() -> A.Stage:
    return choose_stage(STAGE / "epilogue_regs.kc", None)


def _regs_record(**edits: object) -> tilelang.Record:
    data = json.loads((STAGE / "epilogue_regs.tilelang.json").read_text())
    return tilelang.Record({**data, **edits}, "test")


def test_a_stage_without_a_role_exports_a_callable_whose_signature_is_the_programs() -> None:
    header = _regs_header()
    assert not header.roles and not any(isinstance(i, A.ExportCallable) for i in header.items)
    derived = tilelang.derived_stage(_regs_record(), header)
    (export,) = (i for i in derived.items if isinstance(i, A.ExportCallable))
    assert (export.name, str(export.signature), export.symbol) == (
        "swiglu_regs",
        "(ptr, ptr, i32, i32, i32, i32) -> void",
        "swiglu_tilelang_regs_swiglu_regs",
    )
    assert tilelang.driver_arguments(header) == ["--callable=tl_import_{name}"]
    assert tilelang.driver_arguments(_header()) == ["--import=acc=tl_import_acc"]


def test_the_fragment_map_tilelang_gives_is_the_wgmma_accumulator() -> None:
    """TileLang's layout of its wgmma accumulator, as the record holds it, is element for element the
    transfer model's `wgmma_m64nNk16_f32(n: 128)`: the caller's registers are the fragment as they lie."""
    from contract_lang.expr import evaluate
    from transfer_model.library import wgmma_m64nNk16_f32

    (fragment,) = _regs_record().data["imports"]
    assert (fragment["param"], fragment["regs"], fragment["chunks"], fragment["shape"]) == ("acc", 64, 1, [64, 128])
    index = [tilelang._expr(e) for e in fragment["indices"]]
    wgmma = wgmma_m64nNk16_f32(n=128)
    for t in range(128):
        for r in range(64):
            ours = tuple(evaluate(e, {"t": t, "p": r}) for e in index)
            assert ours == tuple(evaluate(e, {"t": t, "r": r}) for e in wgmma.exprs), (t, r)


def test_the_derived_contract_states_the_fragment_the_callable_takes() -> None:
    derived = tilelang.derived_stage(_regs_record(), _regs_header())
    (taken,) = (i for i in derived.items if isinstance(i, A.Fragment))
    (fragment,) = _regs_record().data["imports"]
    assert (taken.name, taken.callable, taken.side, taken.elem) == ("acc", "swiglu_regs", "import", "f32")
    assert taken.tile == (A.Dim("m", 64), A.Dim("n", 128))
    assert taken.map == tilelang.fragment_map(fragment, 128)
    text = print_node(derived)
    assert "    import tensor acc into callable swiglu_regs {" in text
    assert parse_text(text, "derived.kc", "contract").stages[0] == derived


def _regs_pair(**edits: object) -> list[tuple[str, str]]:
    """The derived callable checked with the register mainloop that calls it: its errors."""
    from kernlink.api import check_text

    derived = tilelang.derived_stage(_regs_record(**edits), _regs_header())
    text = print_node(derived) + "\n" + (STAGE / "mainloop_regs.kc").read_text()
    return [(d.code, d.message) for d in check_text(text, "regs.kc").diagnostics if d.is_error]


def test_the_derived_fragment_is_proved_against_the_mainloops_accumulator() -> None:
    assert _regs_pair() == []


def test_a_fragment_read_in_another_register_order_is_refused_at_the_call() -> None:
    """TileLang's map with the row and column register bits swapped: still exact, each element in the
    caller's thread, but not in the register the callable reads (L-ROUTE, both lines)."""
    (fragment,) = _regs_record().data["imports"]
    m, n = fragment["indices"]
    swapped = {
        **fragment,
        "indices": [m.replace("((p % 4) / 2)", "(p % 2)"), n.replace("+ (p % 2))", "+ ((p % 4) / 2))")],
    }
    assert swapped["indices"] != fragment["indices"]
    ((code, message),) = _regs_pair(imports=[swapped])
    assert code == "L-ROUTE"
    assert message.startswith("fragment `acc` passed to `swiglu_regs`: the callable reads element `(m=0, n=1)`")


def test_an_m64n64_fragment_is_refused_against_the_m64n128_accumulator() -> None:
    (fragment,) = _regs_record().data["imports"]
    half = {**fragment, "shape": [64, 64], "regs": 32}
    ((code, message),) = _regs_pair(imports=[half])
    assert code == "L-TENSOR" and "tile `m 64 n 64`" in message and "`m 64 n 128`" in message


def test_the_callable_component_copies_the_callers_registers() -> None:
    source = tilelang.component(_regs_record(), _regs_header())
    assert "__global__" not in source and "__launch_bounds__" not in source
    assert (
        'extern "C" __device__ void swiglu_tilelang_regs_swiglu_regs(void* kl_frag_acc, void* kl_arg_out, int ldo, '
        "int rows, int row0, int col0) {" in source
    )
    body = source.split('extern "C" __device__ void', 1)[1]
    assert "const unsigned kl_tid = threadIdx.x % 128u;" in body and body.count("threadIdx.x") == 1
    assert "tl_import_acc(kl_frag_acc, (&(frag[0])), 0);" in source
    assert "//   `acc` (float32 64 x 128): regs(t: 128, p: 64) -> (m, n) { m = " in source


def test_a_fragment_map_that_is_not_exact_is_refused() -> None:
    (fragment,) = _regs_record().data["imports"]
    twice = {**fragment, "indices": [fragment["indices"][0], "((p / 4) * 8) + (p % 2)"]}  # without t % 4
    with pytest.raises(DiagnosticError) as err:
        tilelang.component(_regs_record(imports=[twice]), _regs_header())
    said = err.value.diagnostics[0].message
    assert said.startswith("fragment `acc` of `swiglu.tilelang_regs`: thread 1, register 0 holds (0, 0), as thread 0")


def test_a_callable_stage_that_synchronises_its_block_is_refused() -> None:
    record = _regs_record()
    kernel = dict(record.data["kernel"])
    kernel["source"] = str(kernel["source"]).replace("float frag[64];", "float frag[64];\n  __syncthreads();")
    with pytest.raises(DiagnosticError) as err:
        tilelang.component(_regs_record(kernel=kernel), _regs_header())
    assert "synchronises its block or claims shared memory" in err.value.diagnostics[0].message


@pytest.mark.toolchain
def test_the_register_route_links_and_is_its_one_unit_build(tmp_path: Path) -> None:
    root = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build"))
    tl = root / "tilelang"
    assert main(["pack", str(tl / "epilogue_regs.py"), "--contract", str(tl / "epilogue_regs.kc"), "--strict"]) == 0
    mainloop = [
        "pack",
        str(root / "mainloop.cu"),
        "--contract",
        str(tl / "mainloop_regs.kc"),
        "-D",
        "GEMM_MMA_EPILOGUE",
        "--strict",
    ]
    assert main([*mainloop, "-o", str(tl / "build" / "mainloop_regs.kpkg")]) == 0
    pipeline = tl / "regs" / "gemm_swiglu_tilelang_regs.kp"
    assert main(["link", str(pipeline), "-o", str(tmp_path / "linked")]) == 0
    linkmap = (tmp_path / "linked" / "link.map").read_text()
    assert "warps  12 warps = 384 threads" in linkmap and "staging" not in linkmap
    assert main(["parity", str(pipeline), "-o", str(tmp_path / "parity"), "--no-sass"]) == 0
    assert json.loads((tmp_path / "parity" / "parity.json").read_text())["proved"] is True


@pytest.mark.toolchain
@pytest.mark.skipif(
    tilelang.has_tilelang() or bool(os.environ.get("KERNLINK_TILELANG_PYTHON")),
    reason="TileLang lowers here: the build packs a TileLang stage every time",
)
def test_kernlink_build_builds_the_register_route_as_it_is_packed_by_hand(tmp_path: Path) -> None:
    """One command from a clean folder: the mainloop from ../mainloop.cu with GEMM_MMA_EPILOGUE (its
    recipe, tilelang/mainloop_regs.flags) and the TileLang callable from its lowering record give the
    packages and the cubin of the hand-packed route; an edit of either's input repacks that one only."""
    by_hand, built = tmp_path / "by_hand" / "gemm_swiglu", tmp_path / "built" / "gemm_swiglu"
    for root in (by_hand, built):
        shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build", "persistent"))
    tl = by_hand / "tilelang"
    assert main(["pack", str(tl / "epilogue_regs.py"), "--contract", str(tl / "epilogue_regs.kc")]) == 0
    mainloop = ["pack", str(by_hand / "mainloop.cu"), "--contract", str(tl / "mainloop_regs.kc")]
    assert main([*mainloop, "-D", "GEMM_MMA_EPILOGUE", "-o", str(tl / "build" / "mainloop_regs.kpkg")]) == 0
    assert main(["link", str(tl / "regs" / "gemm_swiglu_tilelang_regs.kp"), "-o", str(tmp_path / "by_hand_out")]) == 0
    pipeline = built / "tilelang" / "regs" / "gemm_swiglu_tilelang_regs.kp"
    assert main(["build", str(pipeline), "-o", str(tmp_path / "built_out"), "--no-server"]) == 0
    for package in ("mainloop_regs.kpkg", "epilogue_regs.kpkg"):
        assert (built / "tilelang" / "build" / package).read_bytes() == (tl / "build" / package).read_bytes()
    cubin = (tmp_path / "built_out" / "kernel.cubin").read_bytes()
    assert cubin == (tmp_path / "by_hand_out" / "kernel.cubin").read_bytes()

    def actions() -> list[str]:
        time.sleep(0.05)  # a file saved within a clock tick of a compile is not trusted (incremental._settled)
        result, _ = build(pipeline, tmp_path / "built_out")
        assert result.ok, [d.message for d in result.diagnostics]
        return [s.action for s in result.steps]

    assert actions() == ["reused", "reused"]
    record = built / "tilelang" / "epilogue_regs.tilelang.json"
    record.write_text(record.read_text() + "\n")  # the same record, other bytes: the key is the bytes
    assert actions() == ["reused", "packed"]
    source = built / "mainloop.cu"
    source.write_text(source.read_text() + "\n// edited\n")
    assert actions() == ["packed", "reused"]
    assert (tmp_path / "built_out" / "kernel.cubin").read_bytes() == cubin


@pytest.mark.skipif(not os.environ.get("KERNLINK_TILELANG_PYTHON"), reason="KERNLINK_TILELANG_PYTHON names no TileLang")
def test_the_committed_callable_record_is_what_tilelang_prints() -> None:
    python = os.environ["KERNLINK_TILELANG_PYTHON"]
    command = [python, str(tilelang.DRIVER), "epilogue_regs.py", "--arch", "sm_90a"]
    command += tilelang.driver_arguments(_regs_header())
    done = subprocess.run(command, cwd=STAGE, capture_output=True, text=True, check=True)
    assert done.stdout == (STAGE / "epilogue_regs.tilelang.json").read_text()


@pytest.mark.toolchain
def test_the_link_refuses_a_mainloop_that_passes_another_register_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mainloop's contract claims its accumulator with the row and column register bits swapped:
    packed, it links against the derived callable no more (L-ROUTE on both packages' lines)."""
    root = tmp_path / "gemm_swiglu"
    shutil.copytree(EXAMPLES / "gemm_swiglu", root, ignore=shutil.ignore_patterns("build"))
    tl = root / "tilelang"
    contract = tl / "mainloop_regs.kc"
    swapped = (
        "placement regs(t: 128, r: 64) -> (m, n) { m = 16 * (t / 32) + (t % 32) / 4 + 8 * (r % 2)  "
        "n = 8 * (r / 4) + 2 * (t % 4) + (r / 2) % 2 }"
    )
    text = contract.read_text().replace("placement library wgmma_m64nNk16_f32(n: 128, warpgroups: 1)", swapped)
    assert swapped in text
    contract.write_text(text)
    assert main(["pack", str(tl / "epilogue_regs.py"), "--contract", str(tl / "epilogue_regs.kc")]) == 0
    mainloop = ["pack", str(root / "mainloop.cu"), "--contract", str(contract), "-D", "GEMM_MMA_EPILOGUE"]
    assert main([*mainloop, "-o", str(tl / "build" / "mainloop_regs.kpkg")]) == 0
    capsys.readouterr()
    assert main(["link", str(tl / "regs" / "gemm_swiglu_tilelang_regs.kp"), "-o", str(tmp_path / "linked")]) != 0
    out, err = capsys.readouterr()
    said = out + err
    assert "error[L-ROUTE]: fragment `acc` passed to `swiglu_regs`" in said
    assert "epilogue_regs.kpkg!contract.kc" in said and "mainloop_regs.kpkg!contract.kc" in said


def test_a_stage_its_front_end_lowers_here_is_never_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    """No build record keys an installed TileLang's version: a stage it lowers is packed by every build;
    one lowered from its committed record is keyed by that record's bytes."""
    from kernlink.builder import incremental

    stage = STAGE / "epilogue_regs.py"
    monkeypatch.delenv("KERNLINK_TILELANG_PYTHON", raising=False)
    monkeypatch.setattr(tilelang, "has_tilelang", lambda: False)
    assert not incremental._lowered_live(stage) and not incremental._lowered_live(EXAMPLES / "ring" / "reduce.cu")
    assert incremental._lowering_inputs(stage) == [STAGE / "epilogue_regs.tilelang.json"]
    monkeypatch.setenv("KERNLINK_TILELANG_PYTHON", "python3")
    assert incremental._lowered_live(stage) and not incremental._lowered_live(EXAMPLES / "ring" / "reduce.cu")
    triton_stage = EXAMPLES / "triton" / "act" / "silu_mul.py"
    assert incremental._lowering_inputs(triton_stage) == [triton_stage.with_name("silu_mul.triton.json")]
    monkeypatch.delenv("KERNLINK_TRITON_PYTHON", raising=False)
    monkeypatch.setattr(triton, "has_triton", lambda: False)
    assert not incremental._lowered_live(triton_stage)
    monkeypatch.setenv("KERNLINK_TRITON_PYTHON", "python3")
    assert incremental._lowered_live(triton_stage)
