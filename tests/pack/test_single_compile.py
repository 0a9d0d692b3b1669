"""`kernlink pack` compiles a component once: its PTX is nvJitLink's lowering of the LTO IR that is linked.

Proved on every bundled example component against the two-compile scheme it replaces (the
probed source compiled again by NVRTC to PTX): the same defined and needed symbols with
the same prototypes, the same params layouts, the same conformance facts (their PTX line
numbers aside: the facts point into the PTX the package carries, and the two PTX texts
differ in register numbering and block order). And the probe and the line information
the LTO IR now carries leave no trace in a linked kernel: linking the packages gives the
cubin and PTX that LTO IR of the plain source, compiled without ``-lineinfo``, gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checker import conformance
from kernlink.builder.incremental import packages_of
from package.manifest import read_stage_package
from packing import binding, layout
from packing.pack import build, choose_stage
from tests.link.examples import EXAMPLES, KERNEL, build_example
from toolchain.cuda import compile_nvrtc, link, stable_cwd
from toolchain.symbols import compile_ptx, read_ptx_symbols

# The attention family's sources include CUDA headers (stdint.h, cuda.h, cuda_bf16.h) that NVRTC from
# PyPI does not bundle: tests/examples/test_attention_family.py packs them with nvcc.
COMPONENTS = sorted(
    p for p in EXAMPLES.glob("*/*.cu") if p.with_suffix(".kc").is_file() and p.parent.name != "attention"
)


def _without_ptx_lines(facts: Any) -> Any:
    """The facts without where their instructions sit in the PTX (the lines, and the positions that
    order, loop headers and the facts a path reaches are given in, and the branches conditions name),
    which the block layout of each compile decides, as it decides the conditions' expressions: two
    checks that trap may be two branches or one on both predicates."""
    if isinstance(facts, dict):
        return {
            k: _without_ptx_lines(v)
            for k, v in facts.items()
            if k not in ("line", "order", "loops", "reaches", "conds", "when")
        }
    if isinstance(facts, list):
        return [_without_ptx_lines(v) for v in facts]
    return facts


@pytest.mark.parametrize("source", COMPONENTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_one_compile_records_what_two_compiles_did(source: Path) -> None:
    built = build(source, source.with_suffix(".kc"))
    stage = choose_stage(source.with_suffix(".kc"), None)
    blocks = layout.params_blocks(stage)
    probed = source.read_text() + "\n" + layout.probe_source(blocks, stage.name)
    with stable_cwd():
        ptx = compile_ptx(
            probed, source.name, arch=built.target, include_dirs=[source.parent.resolve()], extra_options=("-lineinfo",)
        )
    ptx = binding.normalise_ptx(ptx)
    before = read_ptx_symbols(ptx).without([layout.PROBE_SYMBOL, layout.probe_keeper(stage.name)])
    assert built.captured.defined_symbols == frozenset(before.defined)
    assert built.captured.needed_symbols == frozenset(before.needed)
    assert built.prototypes == before.prototypes()
    assert built.captured.params_layouts == layout.read_probe(ptx, blocks)
    assert built.code is not None
    facts = json.loads(json.dumps(built.code.as_json()))
    again = json.loads(json.dumps(conformance.derive(ptx).as_json()))
    assert _without_ptx_lines(facts) == _without_ptx_lines(again)
    assert built.ptx is not None and "kl_probe" not in "".join(built.prototypes)


@pytest.mark.parametrize("example", ["hello", "ring"])
def test_the_linked_kernel_is_the_one_plain_lto_ir_gives(example: str, tmp_path: Path) -> None:
    from kernlink.api import link as link_pipeline

    pipeline = build_example(example, tmp_path)
    out = tmp_path / "out"
    assert link_pipeline([pipeline], out).ok
    inputs = []
    assert b"kl_probe" not in (out / "kernel.cubin").read_bytes()
    for package in packages_of(pipeline):  # in the pipeline's order, as the link adds them
        pkg = read_stage_package(package)
        source = pipeline.parent / f"{package.stem}.cu"
        with stable_cwd():
            plain = compile_nvrtc(source.read_text(), source.name, arch=pkg.target, include_dirs=[source.parent])
        inputs.append((str(package.relative_to(pipeline.parent)), plain.ltoir))
    with stable_cwd():
        glue = compile_nvrtc((out / "generated.cu").read_text(), "generated.cu", arch="sm_90a")
    result = link([*inputs, ("kl_generated.ltoir", glue.ltoir)], kernels=[KERNEL], verbose=True, emit_ptx=True)
    assert result.cubin == (out / "kernel.cubin").read_bytes()
    assert result.ptx == (out / "kernel.ptx").read_text()


def test_a_lowering_nvjitlink_refuses_is_a_pack_diagnostic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from diagnostics import DiagnosticError
    from packing.pack import pack
    from toolchain import symbols

    monkeypatch.setattr(symbols, "ptx_link_options", lambda arch: (f"-arch={arch}", "-lto", "-ptx", "-no-such-option"))
    source = EXAMPLES / "ring" / "reduce.cu"
    with pytest.raises(DiagnosticError) as caught:
        pack(source, source.with_suffix(".kc"), tmp_path / "reduce.kpkg")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "E-PACK"
    assert diagnostic.message == f"nvJitLink could not lower the LTO IR of `{source}` to PTX"
    assert not (tmp_path / "reduce.kpkg").exists()


def test_a_probe_that_does_not_compile_is_named_as_such(tmp_path: Path) -> None:
    """The probe is compiled with the component now: its errors are the probe's, the component's its own."""
    from diagnostics import DiagnosticError
    from packing.pack import pack

    (tmp_path / "p.kc").write_text(
        'stage "p" version "1.0.0" {\n    target sm_90a\n    params P size 4 align 4 {\n        x: u32 @ 0\n    }\n}\n'
    )
    (tmp_path / "p.cu").write_text('typedef int P;\nextern "C" __device__ int p_main() { return 1; }\n')
    with pytest.raises(DiagnosticError) as caught:
        pack(tmp_path / "p.cu", tmp_path / "p.kc", tmp_path / "p.kpkg")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.message) == (
        "E-PACK",
        f"the params probe for `{tmp_path / 'p.cu'}` does not compile",
    )
    (tmp_path / "p.cu").write_text('typedef int P;\nextern "C" __device__ int p_main() { return missing; }\n')
    with pytest.raises(DiagnosticError) as caught:
        pack(tmp_path / "p.cu", tmp_path / "p.kc", tmp_path / "p.kpkg")
    assert [(d.code, d.labels[0].span.file) for d in caught.value.diagnostics] == [
        ("E-COMPILE", str(tmp_path / "p.cu"))
    ]
