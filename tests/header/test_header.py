"""`kernlink header`: the generated device header agrees with the contract and with the compiler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.handles import handle_bindings
from checker.header import device_header
from contract_lang.parser import parse_file
from diagnostics import DiagnosticError
from kernlink.cli import main
from tests.snapshots import assert_text_snapshot
from toolchain.cuda import compile_nvcc, compile_nvrtc, nvcc_path

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"
SNAPSHOTS = Path(__file__).parent / "snapshots"


def _header(kc: str, *peers: str) -> str:
    path = EXAMPLES / kc
    (stage,) = parse_file(path)[0].stages
    others = [s for p in peers for s in parse_file(EXAMPLES / p)[0].stages]
    return device_header(stage, path.read_text(), path.name, others).text


@pytest.mark.parametrize(
    "kc,peers",
    [
        ("ring/loader.kc", ()),
        ("ring/reduce.kc", ("ring/loader.kc",)),
        ("hello/caller.kc", ()),
        ("hello/provider.kc", ()),
    ],
)
def test_snapshot(kc: str, peers: tuple[str, ...]) -> None:
    text = _header(kc, *peers)
    assert_text_snapshot(SNAPSHOTS / (Path(kc).stem + ".h"), text)
    assert "/" not in text.split("\n", 1)[0].split("from ", 1)[1], "no directories in the banner"


@pytest.mark.parametrize("kc", sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.kc")))
def test_every_bound_handle_is_declared_once(kc: str) -> None:
    for stage in parse_file(EXAMPLES / kc)[0].stages:
        text = device_header(stage, (EXAMPLES / kc).read_text(), Path(kc).name).text
        declared = re.findall(r"__device__ (?:unsigned\*?|void) (kl_\w+)\(", text)
        assert len(declared) == len(set(declared)), kc
        for spec in handle_bindings(stage):
            assert spec.symbol in declared, (kc, spec.symbol)


def _compile(tmp_path: Path, header: str, name: str, body: str) -> None:
    (tmp_path / name).write_text(header)
    compile_nvrtc(f'#include "{name}"\n{body}', "use.cu", include_dirs=[tmp_path], cache_dir=tmp_path)


LOADER_BODY = """
extern "C" __device__ void ring_load_main(const LoaderParams* params, unsigned char* smem) {
    unsigned slot = kl_ring_loader_kv_depth() - 1;
    smem[kl_ring_loader_stage_smem_at(slot)] = (unsigned char)params->tiles;
    const unsigned tile = kl_ring_loader_owned_tile_elems + kl_ring_loader_fact_tile_elems();
    smem[kl_ring_loader_kv_full_bar_at(slot)] = (unsigned char)tile;
}
"""


@pytest.mark.toolchain
def test_header_compiles_with_a_conforming_component(tmp_path: Path) -> None:
    _compile(tmp_path, _header("ring/loader.kc"), "kl_ring_loader.h", LOADER_BODY)


@pytest.mark.toolchain
def test_an_entry_with_another_signature_is_a_compile_error(tmp_path: Path) -> None:
    wrong = LOADER_BODY.replace("const LoaderParams* params", "const float* params").replace(
        "(unsigned char)params->tiles", "(unsigned char)params[0]"
    )
    with pytest.raises(DiagnosticError) as err:
        _compile(tmp_path, _header("ring/loader.kc"), "kl_ring_loader.h", wrong)
    assert {d.code for d in err.value.diagnostics} == {"E-COMPILE"}


@pytest.mark.toolchain
def test_params_static_asserts_catch_a_drifted_offset(tmp_path: Path) -> None:
    text = _header("ring/reduce.kc", "ring/loader.kc")
    text = text.replace("    unsigned tile_elems;", "    unsigned char tile_elems;")
    with pytest.raises(DiagnosticError) as err:
        _compile(tmp_path, text, "kl_ring_reduce.h", "")
    assert "tile_elems is 4 bytes" in str(
        [d.message for d in err.value.diagnostics] + [n for d in err.value.diagnostics for n in d.notes]
    )


def test_cli_writes_the_header(tmp_path: Path) -> None:
    out = tmp_path / "kl_ring_reduce.h"
    assert (
        main(["header", str(EXAMPLES / "ring/reduce.kc"), "--peer", str(EXAMPLES / "ring/loader.kc"), "-o", str(out)])
        == 0
    )
    assert out.read_text() == _header("ring/reduce.kc", "ring/loader.kc")
    assert "kl_ring_reduce_kv_stage_smem_at" in out.read_text()


def test_cli_refuses_an_empty_output_and_an_unknown_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["header", str(EXAMPLES / "ring/reduce.kc"), "-o", ""]) == 2
    assert main(["header", str(EXAMPLES / "ring/reduce.kc"), "--stage", "nope"]) == 2
    assert "no stage `nope`" in capsys.readouterr().err


@pytest.mark.toolchain
@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_nvcc_checks_every_offset(tmp_path: Path) -> None:
    """nvcc has offsetof: a field moved within the same size is caught by its offset assert."""
    good = _header("ring/reduce.kc", "ring/loader.kc")
    (tmp_path / "kl_ring_reduce.h").write_text(good)
    compile_nvcc('#include "kl_ring_reduce.h"\n', "use.cu", include_dirs=[tmp_path])
    swapped = good.replace(
        "    unsigned tile_elems;  // = fact tile_elems\n    unsigned tiles;",
        "    unsigned tiles;\n    unsigned tile_elems;  // = fact tile_elems",
    )
    assert swapped != good
    (tmp_path / "kl_ring_reduce.h").write_text(swapped)
    with pytest.raises(DiagnosticError) as err:
        compile_nvcc('#include "kl_ring_reduce.h"\n', "use.cu", include_dirs=[tmp_path])
    assert "tiles at offset 12" in " ".join(d.message for d in err.value.diagnostics)


@pytest.mark.parametrize(
    "header,kc,peers",
    [
        ("ring/kl_ring_loader.h", "ring/loader.kc", ()),
        ("ring/kl_ring_reduce.h", "ring/reduce.kc", ("ring/loader.kc",)),
        ("hello/kl_hello_caller.h", "hello/caller.kc", ()),
        ("hello/kl_hello_provider.h", "hello/provider.kc", ()),
        ("moe4/kl_moe_interp.h", "moe4/interp.kc", ()),
        ("moe4/kl_moe_comm.h", "moe4/comm.kc", ()),
        ("moe4/kl_moe_gemm.h", "moe4/gemm.kc", ("moe4/act.kc",)),
        ("moe4/kl_moe_act.h", "moe4/act.kc", ("moe4/gemm.kc",)),
    ],
)
def test_the_reference_components_include_current_headers(header: str, kc: str, peers: tuple[str, ...]) -> None:
    """The headers beside the reference components are what `kernlink header` writes now (regenerate them)."""
    assert (EXAMPLES / header).read_text() == _header(kc, *peers), f"regenerate {header} with `kernlink header`"
    source = (EXAMPLES / kc).with_suffix(".cu").read_text()
    assert f'#include "{Path(header).name}"' in source


HELPER_BODY = """
extern "C" __device__ void ring_loader_kv_init(const LoaderParams* params, unsigned char* smem) {
    smem[kl_ring_loader_kv_full_bar_at(1)] = (unsigned char)params->tiles;
}
extern "C" __device__ void ring_load_main(const LoaderParams* params, unsigned char* smem) {
    const unsigned slot = params->tiles % kl_ring_loader_kv_depth();
    smem[kl_ring_loader_stage_smem_at(slot)] = 1;
    smem[kl_ring_loader_kv_empty_bar_at(slot)] = 2;
}
"""


@pytest.mark.toolchain
def test_a_component_using_the_helpers_rebuilds_identically_in_another_folder(tmp_path: Path) -> None:
    """The helpers are macros: an inline function defined in the header made the LTO IR depend on the header's
    folder, and `kernlink link`'s rebuild (in a temporary folder) refused every such package as L-INTEGRITY."""
    from packing.binding import rebuild_problems
    from packing.pack import pack

    folder = tmp_path / "a-folder-of-its-own"
    folder.mkdir()
    (folder / "kl_ring_loader.h").write_text(_header("ring/loader.kc"))
    (folder / "loader.cu").write_text(f'#include "kl_ring_loader.h"\n{HELPER_BODY}')
    (folder / "loader.kc").write_text((EXAMPLES / "ring" / "loader.kc").read_text())
    pack(folder / "loader.cu", folder / "loader.kc", folder / "loader.kpkg")
    (stage,) = parse_file(folder / "loader.kc")[0].stages
    assert [(d.code, d.message) for d in rebuild_problems(str(folder / "loader.kpkg"), stage)] == []


def test_without_peer_the_producer_beside_the_contract_names_the_slot_handles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The consumer reaches the producer's slots only through handles its contract names: found beside it."""
    out = tmp_path / "kl_ring_reduce.h"
    assert main(["header", str(EXAMPLES / "ring/reduce.kc"), "-o", str(out)]) == 0
    assert out.read_text() == _header("ring/reduce.kc", "ring/loader.kc")
    assert "slot handles from `ring.loader` in loader.kc" in capsys.readouterr().err


def test_without_any_producer_the_missing_slot_handles_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alone = tmp_path / "reduce.kc"
    alone.write_text((EXAMPLES / "ring/reduce.kc").read_text())
    out = tmp_path / "kl_ring_reduce.h"
    assert main(["header", str(alone), "-o", str(out)]) == 0
    assert "ring `kv` is consumed by `ring.reduce`" in capsys.readouterr().err
    text = out.read_text()
    assert "// ring kv: consumed here, and no stage given claims its per-slot storage" in text
    assert "kv_stage_smem" not in text


def test_an_assumed_fact_is_a_constant_on_the_assuming_side() -> None:
    text = _header("moe4/gemm.kc", "moe4/act.kc")
    assert "enum : unsigned { kl_moe_gemm_assumed_elem_bits = 16 };  // assumes fact elem_bits == 16" in text


def test_a_stage_holding_both_sides_of_a_ring_defines_each_macro_once(tmp_path: Path) -> None:
    loader = (EXAMPLES / "ring/loader.kc").read_text()
    reduce = (EXAMPLES / "ring/reduce.kc").read_text()
    body = reduce[reduce.index("{") + 1 : reduce.rindex("}")]
    kept = "\n".join(line for line in body.splitlines() if not line.strip().startswith(("target", "launch")))
    both = loader[: loader.rindex("}")] + kept + "}\n"
    path = tmp_path / "both.kc"
    path.write_text(both)
    (stage,) = parse_file(path)[0].stages
    text = device_header(stage, both, path.name).text
    defines = re.findall(r"^#define (\w+)", text, re.M)
    assert defines and len(defines) == len(set(defines))
    compile_nvrtc(text + "\n", "both.cu")


def test_two_producers_beside_that_claim_the_slots_differently_are_refused_not_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With two producers of the consumer's ring beside it, the header took both producers' slot claims;
    now it names them and asks for the one the component runs with."""
    for name in ("reduce.kc", "loader.kc"):
        (tmp_path / name).write_text((EXAMPLES / "ring" / name).read_text())
    other = (EXAMPLES / "ring/loader.kc").read_text().replace('"ring.loader"', '"ring.loader2"')
    (tmp_path / "loader2.kc").write_text(other.replace("claim smem stage ", "claim smem staging "))
    out = tmp_path / "kl_ring_reduce.h"
    assert main(["header", str(tmp_path / "reduce.kc"), "-o", str(out)]) == 2
    assert "ring `kv` of `ring.reduce` is produced by 2 contracts" in capsys.readouterr().err
    assert not out.exists()
    assert main(["header", str(tmp_path / "reduce.kc"), "--peer", str(tmp_path / "loader.kc"), "-o", str(out)]) == 0
    assert out.read_text() == _header("ring/reduce.kc", "ring/loader.kc")
    (tmp_path / "loader2.kc").write_text(other)  # the same claims as loader.kc: one choice, no refusal
    assert main(["header", str(tmp_path / "reduce.kc"), "-o", str(out)]) == 0
