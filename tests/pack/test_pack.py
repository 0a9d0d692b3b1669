"""`kernlink pack` and `kernlink inspect` on the reference components and on broken variants."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checker.clauses import l_integrity
from checker.clauses.l_handle import describe
from checker.handles import handle_problems, symbol_problems
from checker.params import params_problems
from contract_lang.parser import parse_file
from diagnostics import DiagnosticError, Severity
from kernlink.cli import main
from package.manifest import LTO_PAYLOAD, SOURCE_PAYLOAD, read_stage_package
from packing import binding
from packing.layout import params_blocks
from packing.pack import PackResult, pack, prototypes_of
from tests.link.examples import EXAMPLES
from toolchain.cuda import nvcc_path, nvjitlink_version

pytestmark = pytest.mark.toolchain

EXPECTED = {
    "hello/provider": ({"hello_scale"}, set()),
    "hello/caller": ({"hello_caller_main"}, {"kl_call_scale", "kl_hello_caller_main_warp0"}),
    "ring/loader": (
        {"ring_load_main", "ring_loader_kv_init"},
        {
            "kl_ring_loader_load_warp0",
            "kl_ring_loader_kv_depth",
            "kl_ring_loader_kv_full_bar",
            "kl_ring_loader_kv_empty_bar",
            "kl_ring_loader_kv_full_count",
            "kl_ring_loader_kv_empty_count",
            "kl_ring_loader_stage_smem",
            "kl_ring_loader_stage_stride",
        },
    ),
    "ring/reduce": (
        {"ring_reduce_main"},
        {
            "kl_ring_reduce_reduce_warp0",
            "kl_ring_reduce_kv_depth",
            "kl_ring_reduce_kv_full_bar",
            "kl_ring_reduce_kv_empty_bar",
            "kl_ring_reduce_kv_stage_smem",
            "kl_ring_reduce_kv_stage_stride",
        },
    ),
}


#: The reference components as hand-written before generated headers: each declares its own
#: handles and params struct, so these tests can break one declaration at a time.
HANDWRITTEN = Path(__file__).parent / "handwritten"


def _copy(tmp_path: Path, component: str, edit: tuple[str, str] | None = None) -> tuple[Path, Path]:
    """The component's hand-written source and its contract copied to tmp_path, the source optionally edited."""
    source = EXAMPLES / f"{component}.cu"
    src, kc = tmp_path / source.name, tmp_path / source.with_suffix(".kc").name
    text = (HANDWRITTEN / source.name).read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1])
    src.write_text(text)
    shutil.copy(source.with_suffix(".kc"), kc)
    return src, kc


@pytest.mark.parametrize("component", sorted(EXPECTED))
def test_examples_pack_clean_with_the_symbols_their_contracts_name(
    packed: dict[str, PackResult], component: str
) -> None:
    result = packed[component]
    defined, needed = EXPECTED[component]
    assert result.captured.defined_symbols == defined
    assert result.captured.needed_symbols == needed
    assert result.warnings == ()
    assert result.target == "sm_90a" and result.toolkit.startswith("nvrtc ")
    stage = read_stage_package(result.path)
    assert stage.captured == result.captured
    assert stage.lto_ir and stage.stage == result.stage.name
    assert symbol_problems(result.stage, stage.captured) == []
    assert handle_problems(result.stage, stage.captured) == []


@pytest.mark.parametrize("component", sorted(EXPECTED))
def test_captured_params_layouts_equal_the_declared_ones(packed: dict[str, PackResult], component: str) -> None:
    result = packed[component]
    declared = {
        (p.name, p.size, p.align, tuple((f.name, f.offset) for f in p.fields)) for p in params_blocks(result.stage)
    }
    captured = {
        (p.name, p.size, p.align, tuple((f, off) for f, off, _ in p.fields)) for p in result.captured.params_layouts
    }
    assert captured == declared
    assert params_problems(result.stage, result.captured) == []


def test_the_manifest_records_contract_prototypes_and_payloads(packed: dict[str, PackResult]) -> None:
    result = packed["ring/loader"]
    pkg = read_stage_package(result.path)
    assert pkg.contract_text.startswith('stage "ring.loader" version "1.0.0" {\n    target sm_90a\n')
    protos = prototypes_of(pkg.manifest)
    assert str(protos["ring_load_main"]) == ".func (b64, b64)"
    assert str(protos["kl_ring_loader_kv_depth"]) == ".func () -> b32"
    assert pkg.manifest["compile"] == {
        "compiler": "nvrtc",
        "source": "loader.cu",
        "options": ["-arch=sm_90a", "-dlto", "-rdc=true", "-std=c++17"],
        "ptx": {
            "from": "lto.ir",
            "nvrtc": ["-lineinfo"],
            "nvjitlink": "{}.{}".format(*nvjitlink_version()),
            "options": ["-lto", "-ptx", "-Xnvvm=--device-c", "-lineinfo"],
        },
    }
    names = [p["name"] for p in pkg.manifest["payloads"]]
    assert names == ["code.ptx", "kl_ring_loader.h", LTO_PAYLOAD, SOURCE_PAYLOAD]  # the header it includes


def test_packing_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = EXAMPLES / "ring" / "loader.cu"
    first = pack(source, source.with_suffix(".kc"), tmp_path / "a" / "one.kpkg")
    elsewhere = tmp_path / "b"
    shutil.copytree(EXAMPLES / "ring", elsewhere, ignore=shutil.ignore_patterns("build", "host"))
    copy_src, copy_kc = elsewhere / "loader.cu", elsewhere / "loader.kc"
    monkeypatch.chdir(elsewhere)
    second = pack(copy_src.name, copy_kc.name, tmp_path / "c" / "two.kpkg")
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == second.sha256


def test_default_output_is_build_beside_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, kc = _copy(tmp_path, "hello/provider")
    assert main(["pack", str(src), "--contract", str(kc), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["package"] == str(tmp_path / "build" / "provider.kpkg")
    assert (report["stage"], report["defined"], report["needed"], report["warnings"]) == (
        "hello.provider",
        ["hello_scale"],
        [],
        [],
    )
    assert read_stage_package(tmp_path / "build" / "provider.kpkg").stage == "hello.provider"


@pytest.mark.skipif(nvcc_path() is None, reason="no nvcc on PATH")
def test_nvcc_captures_the_same_symbols_and_layouts(tmp_path: Path, packed: dict[str, PackResult]) -> None:
    source = EXAMPLES / "ring" / "reduce.cu"
    result = pack(source, source.with_suffix(".kc"), tmp_path / "reduce.kpkg", compiler="nvcc")
    assert result.toolkit.startswith("nvcc ")
    assert result.captured.defined_symbols == packed["ring/reduce"].captured.defined_symbols
    assert result.captured.needed_symbols == packed["ring/reduce"].captured.needed_symbols
    assert result.captured.params_layouts == packed["ring/reduce"].captured.params_layouts
    assert result.warnings == ()
    # its code.ptx is its LTO IR's lowering, as NVRTC's is: it binds (packing/binding.py), and not by its cache
    binding.forget()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNLINK_NO_BINDING_CACHE", "1")
        assert binding.decide(str(result.path), result.stage, rebuild=True).bound


# ----------------------------------------------------------------- what the checker is told


def test_a_source_missing_its_entry_is_an_l_symbol_finding(tmp_path: Path) -> None:
    src, kc = _copy(tmp_path, "ring/reduce", ("void ring_reduce_main(", "void ring_reduce_body("))
    result = pack(src, kc, tmp_path / "out.kpkg")
    pkg = read_stage_package(result.path)
    found = symbol_problems(result.stage, pkg.captured)
    assert [(f.clause, f.problem, f.symbol, f.item) for f in found] == [
        ("L-SYMBOL", "entry-missing", "ring_reduce_main", "reduce")
    ]
    warning = next(w for w in result.warnings if w.code == "L-SYMBOL")
    assert warning.severity is Severity.WARNING
    assert warning.labels and warning.labels[0].span.file == str(kc)


def test_an_entry_with_the_wrong_abi_is_an_l_symbol_finding(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path,
        "hello/caller",
        (
            "void hello_caller_main(const CallerParams* params, unsigned char* /*smem*/)",
            "void hello_caller_main(const CallerParams* params)",
        ),
    )
    result = pack(src, kc, tmp_path / "out.kpkg")
    found = symbol_problems(result.stage, result.captured, result.prototypes)
    assert [(f.problem, f.symbol) for f in found] == [("entry-signature", "hello_caller_main")]


def test_a_need_no_contract_item_explains_is_an_l_symbol_finding(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path,
        "hello/caller",
        (
            "float kl_call_scale(float x);",
            'float kl_call_scale(float x);\nextern "C" __device__ float other_scale(float);',
        ),
    )
    text = src.read_text().replace("const float y = kl_call_scale(x);", "const float y = other_scale(x);")
    src.write_text(text)
    result = pack(src, kc, tmp_path / "out.kpkg")
    found = symbol_problems(result.stage, result.captured)
    assert [(f.problem, f.symbol) for f in found] == [("unexplained-need", "other_scale")]


def test_a_handle_no_claim_binds_is_an_l_handle_finding(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path,
        "ring/reduce",
        (
            "__device__ unsigned kl_ring_reduce_kv_depth();",
            "__device__ unsigned kl_ring_reduce_kv_depth();\n__device__ unsigned kl_ring_reduce_scratch_smem();",
        ),
    )
    text = src.read_text().replace(
        "const unsigned depth = kl_ring_reduce_kv_depth();",
        "const unsigned depth = kl_ring_reduce_kv_depth() + kl_ring_reduce_scratch_smem();",
    )
    src.write_text(text)
    result = pack(src, kc, tmp_path / "out.kpkg")
    pkg = read_stage_package(result.path)
    assert "kl_ring_reduce_scratch_smem" in pkg.captured.needed_symbols
    found = handle_problems(result.stage, pkg.captured)
    assert [(f.clause, f.problem, f.symbol) for f in found] == [("L-HANDLE", "unbound", "kl_ring_reduce_scratch_smem")]
    assert symbol_problems(result.stage, pkg.captured) == []
    assert [w.code for w in result.warnings] == ["L-HANDLE"]


def test_a_handle_read_as_the_wrong_kind_is_an_l_handle_finding(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path, "ring/loader", ("unsigned kl_ring_loader_stage_stride();", "unsigned kl_ring_loader_stage_bar_id();")
    )
    src.write_text(src.read_text().replace("kl_ring_loader_stage_stride()", "kl_ring_loader_stage_bar_id()"))
    result = pack(src, kc, tmp_path / "out.kpkg")
    found = handle_problems(result.stage, result.captured)
    assert [(f.problem, f.symbol, f.item) for f in found] == [("wrong-kind", "kl_ring_loader_stage_bar_id", "stage")]
    message, _ = describe(found[0])
    assert "named-barrier ID" in message and "shared-memory claim" in message


def test_a_handle_declared_with_another_signature_is_an_l_handle_finding(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path,
        "ring/loader",
        ("__device__ unsigned kl_ring_loader_kv_depth();", "__device__ unsigned long long kl_ring_loader_kv_depth();"),
    )
    result = pack(src, kc, tmp_path / "out.kpkg")
    found = handle_problems(result.stage, result.captured, result.prototypes)
    assert [(f.problem, f.symbol) for f in found] == [("signature", "kl_ring_loader_kv_depth")]


def test_a_moved_params_field_is_captured_where_the_compiler_put_it(tmp_path: Path) -> None:
    src, kc = _copy(
        tmp_path,
        "ring/loader",
        (
            "    const float* src;  // @ 0: tiles * 8192 floats, 16-byte aligned\n    unsigned tiles;    // @ 8\n",
            "    unsigned tiles;\n    const float* src;\n",
        ),
    )
    result = pack(src, kc, tmp_path / "out.kpkg")
    (layout,) = read_stage_package(result.path).captured.params_layouts
    assert layout.fields == (("src", 8, 8), ("tiles", 0, 4))
    problems = params_problems(result.stage, result.captured)
    assert [(p.problem, p.field, p.declared, p.captured) for p in problems] == [
        ("offset", "src", 0, 8),
        ("offset", "tiles", 8, 0),
    ]
    assert [w.code for w in result.warnings] == ["L-PARAMS", "L-PARAMS"]


def test_a_missing_params_struct_or_field_is_captured_as_absent(tmp_path: Path) -> None:
    src, kc = _copy(tmp_path, "ring/loader", ("    unsigned tiles;    // @ 8\n", "    unsigned count;\n"))
    src.write_text(src.read_text().replace("params->tiles", "params->count"))
    result = pack(src, kc, tmp_path / "a.kpkg")
    assert result.captured.params_layouts[0].fields == (("src", 0, 8),)
    src.write_text(src.read_text().replace("LoaderParams", "LoaderArgs"))
    result = pack(src, kc, tmp_path / "b.kpkg")
    assert result.captured.params_layouts == ()
    assert [p.problem for p in params_problems(result.stage, result.captured)] == ["missing-struct"]


# ----------------------------------------------------------------- errors


def test_a_compile_error_points_into_the_source(tmp_path: Path) -> None:
    src, kc = _copy(tmp_path, "hello/provider", ("return x *", "return y *"))
    with pytest.raises(DiagnosticError) as info:
        pack(src, kc, tmp_path / "out.kpkg")
    (diag,) = info.value.diagnostics
    assert diag.code == "E-COMPILE" and "y" in diag.message
    assert diag.labels[0].span.file == str(src) and diag.labels[0].span.line == 12
    assert not (tmp_path / "out.kpkg").exists()


def test_a_contract_with_several_stages_needs_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, kc = _copy(tmp_path, "hello/provider")
    kc.write_text(kc.read_text() + (EXAMPLES / "hello" / "caller.kc").read_text())
    assert main(["pack", str(src), "--contract", str(kc), "-o", str(tmp_path / "x.kpkg"), "--color", "never"]) == 1
    assert "E-PACK" in capsys.readouterr().out
    assert (
        main(["pack", str(src), "--contract", str(kc), "-o", str(tmp_path / "x.kpkg"), "--stage", "hello.provider"])
        == 0
    )
    assert read_stage_package(tmp_path / "x.kpkg").stage == "hello.provider"


def test_a_missing_source_is_an_io_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kc = EXAMPLES / "hello" / "provider.kc"
    assert main(["pack", str(tmp_path / "nope.cu"), "--contract", str(kc), "--color", "never"]) == 2
    assert "E-IO" in capsys.readouterr().out


# ----------------------------------------------------------------- loading and inspect


def test_tampered_and_truncated_packages_are_rejected_on_load(
    tmp_path: Path, packed: dict[str, PackResult], capsys: pytest.CaptureFixture[str]
) -> None:
    data = packed["ring/reduce"].path.read_bytes()
    tampered, truncated = tmp_path / "tampered.kpkg", tmp_path / "truncated.kpkg"
    flipped = bytearray(data)
    flipped[-10] ^= 0x01  # a byte of the last payload
    tampered.write_bytes(bytes(flipped))
    truncated.write_bytes(data[: len(data) // 2])
    for path in (tampered, truncated):
        with pytest.raises(DiagnosticError) as info, l_integrity.worded():
            read_stage_package(path)
        assert [d.code for d in info.value.diagnostics] == ["L-INTEGRITY"]
        assert main(["inspect", str(path), "--color", "never"]) == 1
        assert "L-INTEGRITY" in capsys.readouterr().out


def test_inspect_shows_manifest_symbols_layouts_and_payloads(
    packed: dict[str, PackResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(packed["hello/caller"].path)
    assert main(["inspect", path, "--color", "never"]) == 0
    text = capsys.readouterr().out
    for expected in (
        "hello.caller",
        "nvrtc 13",
        "hello_caller_main",
        "kl_call_scale",
        "call `scale`",
        "CallerParams",
        "lto.ir",
        "source.cu",
        'stage "hello.caller"',
    ):
        assert expected in text, expected
    assert main(["inspect", path, "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["manifest"]["stage"] == "hello.caller"
    assert {s["symbol"]: s["meaning"] for s in view["symbols"]}["kl_hello_caller_main_warp0"].startswith("handle")
    assert view["params"][0]["fields"] == [["data", 0, 8], ["n", 8, 4], ["factor", 12, 4]]
    assert [p["name"] for p in view["payloads"]] == ["code.ptx", "kl_hello_caller.h", "lto.ir", "source.cu"]


def test_packages_feed_check(packed: dict[str, PackResult], tmp_path: Path) -> None:
    ring = tmp_path / "ring"
    (ring / "build").mkdir(parents=True)
    shutil.copy(EXAMPLES / "ring" / "ring.kp", ring)
    for name in ("loader", "reduce"):
        shutil.copy(packed[f"ring/{name}"].path, ring / "build" / f"{name}.kpkg")
    pipeline, _ = parse_file(ring / "ring.kp")
    assert pipeline.pipelines[0].name == "ring"
    assert main(["check", str(ring / "ring.kp"), "--color", "never"]) == 0
