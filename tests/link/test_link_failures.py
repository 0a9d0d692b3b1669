"""Every way a link fails is a diagnostic with a code, and the link map is written anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.link_inputs import link_inputs
from kernlink.api import LinkResult, check_text, link
from linker.generate import unsupported
from linker.link import CUBIN, JSON, MAP
from package.kpkg import PAYLOADS_KEY, pack_bytes, read_package
from tests.link.examples import build_example

pytestmark = pytest.mark.toolchain


def _codes(result: LinkResult) -> list[str]:
    return sorted({d.code for d in result.diagnostics if d.is_error})


def _status(out: Path) -> str:
    return str(json.loads((out / JSON).read_text())["status"])


def _flip(path: Path, offset_from_end: int) -> None:
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_tampered_package_is_l_integrity(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path)
    _flip(pipeline.parent / "build" / "reduce.kpkg", 200)  # inside the last payload
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-INTEGRITY"]
    assert "does not match its SHA-256" in next(d.message for d in result.diagnostics if d.code == "L-INTEGRITY")
    assert _status(tmp_path / "out") == "rejected"
    assert not (tmp_path / "out" / CUBIN).exists()
    assert "error[L-INTEGRITY]" in (tmp_path / "out" / MAP).read_text()


def test_a_truncated_package_is_l_integrity(tmp_path: Path) -> None:
    pipeline = build_example("hello", tmp_path)
    package = pipeline.parent / "build" / "caller.kpkg"
    package.write_bytes(package.read_bytes()[:300])
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-INTEGRITY"]
    assert "is truncated" in next(d.message for d in result.diagnostics if d.code == "L-INTEGRITY")


def test_a_stage_checked_from_its_contract_alone_is_l_stage(tmp_path: Path) -> None:
    pipeline = build_example("hello", tmp_path)
    (pipeline.parent / "build" / "provider.kpkg").unlink()
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-STAGE"]
    found = next(d for d in result.diagnostics if d.code == "L-STAGE")
    assert found.message == (
        f"stage `hello.provider` was checked from its contract `{found.labels[1].span.file}`; linking needs its package"
    )
    assert _status(tmp_path / "out") == "failed"


def test_a_missing_entry_is_l_symbol(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path, {"loader.cu": {"void ring_load_main(": "void ring_load_mian("}})
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-SYMBOL"]
    assert any("`ring_load_main` is not defined" in d.message for d in result.diagnostics)


def test_an_unresolved_extern_is_l_link_with_nvjitlinks_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = build_example(
        "hello",
        tmp_path,
        {
            "caller.cu": {
                'extern "C" __device__ float kl_call_scale(float x);': (
                    'extern "C" __device__ float kl_call_scale(float x);\n'
                    'extern "C" __device__ float demo_missing(float);'
                ),
                "kl_call_scale(x);": "kl_call_scale(x) + demo_missing(x);",
            }
        },
    )
    _hide_need(pipeline.parent / "build" / "caller.kpkg", "demo_missing")  # a package whose capture lies
    lied = link([pipeline], tmp_path / "bound")
    assert _codes(lied) == ["L-INTEGRITY"]  # the binding reads the needed symbols from its code (issue 32)
    assert any("captured facts its code does not have" in d.message for d in lied.diagnostics)
    import linker.link as link_module

    monkeypatch.setattr(link_module, "rebuild_problems", lambda *_, **__: [])  # past the binding: nvJitLink's log
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-LINK"]
    found = next(d for d in result.diagnostics if d.code == "L-LINK")
    assert dict(found.data)["result"] == "ERROR_PTX_COMPILE"
    assert any("Unresolved extern function 'demo_missing'" in note for note in found.notes)
    text = (tmp_path / "out" / MAP).read_text()
    assert "status failed" in text and "Unresolved extern function 'demo_missing'" in text
    assert (tmp_path / "out" / "generated.cu").exists() and not (tmp_path / "out" / CUBIN).exists()


def _hide_need(package: Path, symbol: str) -> None:
    read = read_package(package)
    manifest = {k: v for k, v in read.manifest.items() if k != PAYLOADS_KEY}
    captured = dict(manifest["captured"])
    captured["needed"] = [s for s in captured["needed"] if s != symbol]
    captured["prototypes"] = {k: v for k, v in captured["prototypes"].items() if k != symbol}
    manifest["captured"] = captured
    package.write_bytes(pack_bytes(manifest, dict(read.payloads)))


def test_static_shared_memory_is_rejected_at_check_with_its_name_and_size(tmp_path: Path) -> None:
    """Issue 12.18/16: the package's code names the array and its size; the link no longer has to."""
    pipeline = build_example(
        "hello",
        tmp_path,
        {
            "caller.cu": {
                "    const unsigned n = params->n;": (
                    "    volatile __shared__ float staging[128];\n"
                    "    staging[t] = 1.0f;\n    const unsigned n = params->n;"
                ),
                "data[i] = __fadd_rn(y, offset);": "data[i] = __fadd_rn(y, offset) * staging[t];",
            }
        },
    )
    result = link([pipeline], tmp_path / "out")
    assert _codes(result) == ["L-CONFORM"]
    (diag,) = [d for d in result.diagnostics if d.is_error]
    assert "static shared memory (512 bytes)" in diag.message and "staging" in diag.message
    assert any(lab.span.file.endswith("caller.kpkg!code.ptx") for lab in diag.labels)
    assert _status(tmp_path / "out") == "rejected"


def test_a_failed_relink_keeps_the_good_link_until_a_new_one_is_complete(tmp_path: Path) -> None:
    pipeline = build_example("hello", tmp_path)
    out = tmp_path / "out"
    assert link([pipeline], out).ok and (out / CUBIN).exists()
    cubin = (out / CUBIN).read_bytes()
    package = pipeline.parent / "build" / "provider.kpkg"
    kept = package.read_bytes()
    package.unlink()
    assert not link([pipeline], out).ok
    assert (out / CUBIN).read_bytes() == cubin and _status(out) == "linked"
    assert json.loads((out / "link.failed.json").read_text())["status"] == "failed"
    package.write_bytes(kept)
    assert link([pipeline], out).ok and not (out / "link.failed.json").exists()


COUNTER_AND_TENSOR = """
stage "demo.mma" version "1.0.0" {
    target sm_100a
    role mma entry mma_main warps 4 warpgroup
    claim tmem acc columns 128
    claim counter done slots 1
    counter done produce by mma scope sys space peer
}
"""


def test_what_the_abi_cannot_express_is_e_unsupported() -> None:
    result = check_text(COUNTER_AND_TENSOR, "demo.kc")
    assert result.composition is not None
    found = unsupported(link_inputs(result.composition))
    assert [d.code for d in found] == ["E-UNSUPPORTED"]  # tensor memory links now (tests/gemm/test_tmem.py)
    assert [dict(d.data)["what"] for d in found] == ["counter `done`"]


def test_the_linked_ptx_names_each_static_shared_variable_and_its_function() -> None:
    """What L-LINK lists for `__shared__` variables the check did not see: read by the one PTX reader."""
    from linker.link import static_shared

    ptx = "\n".join(
        [
            ".version 8.8",
            ".target sm_90a",
            ".extern .shared .align 16 .b8 kl_smem[];",
            ".shared .align 4 .b8 _ZZ14ring_load_mainE7staging[512];",
            ".shared .align 8 .u64 table[4][2];",
            ".visible .entry kl_dispatch()",
            "{",
            "\t.shared .align 4 .f32 scratch[32];",
            "\tret;",
            "}",
        ]
    )
    assert static_shared(ptx) == [
        ("staging", "ring_load_main", 512),
        ("table", None, 64),
        ("scratch", "kl_dispatch", 128),
    ]
