"""NVRTC → LTO IR → nvJitLink, and how each failure is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import DiagnosticError, Severity
from toolchain.cuda import (
    BUNDLED_HEADERS_SINCE,
    compile_nvcc,
    compile_nvrtc,
    link,
    nvcc_path,
    nvrtc_options,
    parse_compiler_log,
    toolkit_versions,
)

pytestmark = pytest.mark.toolchain

CALLER = 'extern "C" __device__ int scale(int);\nextern "C" __global__ void k(int* o) { o[0] = scale(o[1]); }\n'
SCALE = 'extern "C" __device__ int scale(int x) { return 2 * x; }\n'
SCALE_AGAIN = 'extern "C" __device__ int scale(int x) { return 3 * x; }\n'
BROKEN = (
    'extern "C" __global__ void k(int* o) {\n'
    "    int unused;\n"
    "    o[0] = undefined_thing + 1;\n"
    "    o[1] = also_bad;\n"
    "}\n"
)


@pytest.fixture(scope="module")
def caller() -> bytes:
    return compile_nvrtc(CALLER, "caller.cu").ltoir


@pytest.fixture(scope="module")
def scale() -> bytes:
    return compile_nvrtc(SCALE, "scale.cu").ltoir


def _one_error(excinfo: pytest.ExceptionInfo[DiagnosticError]) -> tuple[str, dict[str, str]]:
    (diag,) = excinfo.value.diagnostics
    return diag.code, dict(diag.data)


def test_compile_gives_lto_ir_and_options() -> None:
    result = compile_nvrtc(SCALE, "scale.cu", arch="sm_90a")
    assert result.ltoir
    assert result.options[:4] == ("-arch=sm_90a", "-dlto", "-rdc=true", "-std=c++17")
    assert result.compiler == "nvrtc" and result.messages == ()


def test_bundled_headers_go_to_the_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINK_CACHE", str(tmp_path))
    new = nvrtc_options("sm_90a", version=BUNDLED_HEADERS_SINCE)
    assert f"--use-bundled-headers={tmp_path / 'nvrtc-headers'}" in new
    explicit = nvrtc_options("sm_90a", version=(13, 5), cache_dir=tmp_path / "c")
    assert f"--use-bundled-headers={tmp_path / 'c' / 'nvrtc-headers'}" in explicit
    old = nvrtc_options("sm_90a", version=(13, 0), include_dirs=["inc"], defines={"N": "4"})
    assert not any(o.startswith("--use-bundled-headers") for o in old)
    assert "--include-path=inc" in old and "-DN=4" in old


def test_compile_errors_become_labelled_diagnostics() -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        compile_nvrtc(BROKEN, "comp/broken.cu")
    diags = excinfo.value.diagnostics
    assert [d.code for d in diags] == ["E-COMPILE", "E-COMPILE"]
    first, second = (d.primary for d in diags)
    assert first is not None and second is not None
    assert (first.span.file, first.span.line, first.span.col, first.span.end_col) == ("comp/broken.cu", 3, 12, 27)
    assert (second.span.line, second.span.col) == (4, 12)
    assert diags[0].message == 'identifier "undefined_thing" is undefined'
    assert "warning #177-D" in dict(diags[0].data)["log"]


def test_missing_header_and_bad_option() -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        compile_nvrtc('#include "nowhere.h"\n', "h.cu")
    (diag,) = excinfo.value.diagnostics
    assert diag.code == "E-COMPILE" and "nowhere.h" in diag.message
    assert diag.primary is not None and diag.primary.span.line == 1
    with pytest.raises(DiagnosticError) as excinfo:
        compile_nvrtc(SCALE, "s.cu", arch="sm_99z")
    code, data = _one_error(excinfo)
    assert code == "E-COMPILE" and data["result"] == "NVRTC_ERROR_INVALID_OPTION"


def test_parse_compiler_log_warnings() -> None:
    log = 'a.cu(2): warning #177-D: variable "x" was declared but never referenced\n      int x;\n          ^\n'
    (msg,) = parse_compiler_log(log)
    assert msg.severity is Severity.WARNING and (msg.span.line, msg.span.col) == (2, 9)


def test_link_resolves_extern_and_reports_usage(caller: bytes, scale: bytes) -> None:
    result = link([("caller", caller), ("scale", scale)], kernels=["k"], verbose=True, emit_ptx=True)
    assert result.kernels == ("k",)
    assert result.cubin[:4] == b"\x7fELF"
    assert result.ptxas_usage()["k"].registers > 0
    assert result.ptx is not None and ".entry k" in result.ptx
    assert link({"caller": caller, "scale": scale}, verbose=True).cubin == result.cubin
    # ptxas records its options in `.note.nv.tkinfo`, so `-verbose` changes the bytes
    assert link({"caller": caller, "scale": scale}).cubin != result.cubin


def test_link_is_deterministic(caller: bytes, scale: bytes) -> None:
    first = link([("caller", caller), ("scale", scale)]).cubin
    assert link([("caller", caller), ("scale", scale)]).cubin == first


def test_unresolved_extern(caller: bytes) -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        link([("caller", caller)])
    code, data = _one_error(excinfo)
    assert (code, data["result"]) == ("L-LINK", "ERROR_PTX_COMPILE")
    assert "Unresolved extern function 'scale'" in data["error_log"]
    assert any("scale" in n for n in excinfo.value.diagnostics[0].notes)


def test_duplicate_definition(caller: bytes, scale: bytes) -> None:
    again = compile_nvrtc(SCALE_AGAIN, "again.cu").ltoir
    with pytest.raises(DiagnosticError) as excinfo:
        link([("caller", caller), ("scale", scale), ("again", again)])
    code, data = _one_error(excinfo)
    assert (code, data["result"]) == ("L-LINK", "ERROR_NVVM_COMPILE")
    assert "multiply defined" in data["error_log"]


def test_arch_mismatch(caller: bytes) -> None:
    newer = compile_nvrtc(SCALE, "scale.cu", arch="sm_100a").ltoir
    with pytest.raises(DiagnosticError) as excinfo:
        link([("caller", caller), ("scale", newer)], arch="sm_90a")
    code, data = _one_error(excinfo)
    assert (code, data["result"]) == ("L-LINK", "ERROR_ARCH_MISMATCH")


def test_garbage_input(caller: bytes) -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        link([("caller", caller), ("junk", b"not lto ir at all")])
    code, data = _one_error(excinfo)
    assert (code, data["result"]) == ("L-LINK", "ERROR_INCORRECT_INPUT_TYPE")


def test_missing_kernel_is_a_link_error(caller: bytes, scale: bytes) -> None:
    with pytest.raises(DiagnosticError) as excinfo:
        link([("caller", caller), ("scale", scale)], kernels=["k", "other"])
    (diag,) = excinfo.value.diagnostics
    assert diag.code == "L-LINK" and diag.message == "no kernel `other` in the linked cubin"
    with pytest.raises(DiagnosticError) as excinfo:
        link([("scale", scale)])
    assert excinfo.value.diagnostics[0].message == "the linked cubin has no kernel"


def test_versions() -> None:
    versions = toolkit_versions()
    assert versions.nvrtc >= (12, 0) and versions.nvjitlink >= (12, 0)
    assert set(versions.as_dict()) == {"nvrtc", "nvjitlink"}


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_nvcc_lto_ir_links_with_nvrtc_lto_ir(caller: bytes) -> None:
    result = compile_nvcc(SCALE, "parts/scale.cu")
    assert result.compiler == "nvcc" and result.ltoir
    assert link([("caller", caller), ("scale", result.ltoir)], kernels=["k"]).kernels == ("k",)
    with pytest.raises(DiagnosticError) as excinfo:
        compile_nvcc(BROKEN, "parts/broken.cu")
    first = excinfo.value.diagnostics[0].primary
    assert first is not None and (first.span.file, first.span.line) == ("parts/broken.cu", 3)


def test_an_unresolved_kernlink_name_is_not_blamed_on_a_missing_input() -> None:
    """A `kl_` name is the generated code's to define: the help must not ask the user to add an input."""
    caller = 'extern "C" __device__ unsigned kl_demo_ring_full_wait();\n'
    caller += 'extern "C" __global__ void k(unsigned* o) { o[0] = kl_demo_ring_full_wait(); }\n'
    other = 'extern "C" __device__ int scale_of(int);\nextern "C" __global__ void j(int* o) { o[0] = scale_of(1); }\n'
    helps = []
    for name, source, kernel in (("kl", caller, "k"), ("user", other, "j")):
        with pytest.raises(DiagnosticError) as excinfo:
            link([(name, compile_nvrtc(source, f"{name}.cu").ltoir)], kernels=[kernel])
        helps.append(" ".join(excinfo.value.diagnostics[0].helps))
    assert "`kl_demo_ring_full_wait` is a kernlink name" in helps[0] and "add the input" not in helps[0]
    assert "add the input that defines it" in helps[1]
