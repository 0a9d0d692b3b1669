"""The one-unit control build: its source, its front end, and what makes it impossible."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from analysis.link_inputs import link_inputs
from checker.composition import Composition
from diagnostics.model import DiagnosticError
from kernlink.api import check
from linker.artifacts import Generated
from linker.control import CONTROL_SOURCE, UnitPart, _common_front_end, _notes, assemble, compile_control, unit_source
from linker.link import link_composition
from linker.render import render
from toolchain.cubin import read_cubin

pytestmark = pytest.mark.toolchain


def _linked(pipeline: Path) -> tuple[Composition, Generated]:
    result = check([pipeline])
    assert result.accepted and result.downstream is not None and result.downstream.placed is not None
    assert result.composition is not None
    out = link_composition(result.composition, result.downstream.placed, routes=result.downstream.routes)
    assert out.ok and out.generated is not None
    return result.composition, out.generated


def test_the_control_of_ring_compiles_and_has_the_kernel(compositions: dict[str, Path]) -> None:
    comp, generated = _linked(compositions["ring"])
    unit = assemble(link_inputs(comp), generated)
    assert unit.front_end == "nvrtc" and unit.notes == ()
    src = unit.source
    # each component in its namespace, named by its package; the glue names the entries from there
    assert 'namespace kl_unit_ring_loader {\n#line 1 "build/loader.kpkg:loader.cu"' in src
    assert "using kl_unit_ring_loader::ring_load_main;" in src
    assert "ring_load_main((kl_entry_params<decltype(ring_load_main)>::type)params.ring_loader, kl_smem);" in src
    assert "const void* params" not in src
    built = compile_control(unit)
    kernel = read_cubin(built.cubin).kernel("kl_dispatch")
    assert kernel is not None and kernel.registers > 0 and "kl_dispatch" in built.ptx


def test_the_generated_glue_as_linked_does_not_compile_in_one_unit(compositions: dict[str, Path]) -> None:
    """Why the control glue exists: `const void*` entry declarations conflict with the components' own."""
    comp, generated = _linked(compositions["hello"])
    unit = assemble(link_inputs(comp), generated)
    plain = render(generated)
    broken = dataclasses.replace(unit, source=unit_source(unit.parts, _sources(unit.source, unit.parts), plain))
    with pytest.raises(DiagnosticError) as err:
        compile_control(broken)
    assert {d.code for d in err.value.diagnostics} == {"E-COMPILE"}
    assert any(CONTROL_SOURCE in n for d in err.value.diagnostics for n in d.notes)
    compile_control(unit)  # the control glue compiles


def _sources(text: str, parts: tuple[UnitPart, ...]) -> dict[str, str]:
    """Each stage's body back out of a unit (between its `#line` and the namespace's end)."""
    out = {}
    for part in parts:
        head = text.index(f'#line 1 "{part.package}:{part.source_name}"\n')
        body = text[text.index("\n", head) + 1 : text.index("}  // namespace kl_unit_", head)]
        out[part.stage] = body
    return out


def test_includes_are_hoisted_once_and_macros_stay_in_their_component() -> None:
    parts = tuple(UnitPart(s, f"build/{s}.kpkg", f"{s}.cu", "nvrtc", "nvrtc 13.0", ()) for s in ("a.x", "b.y"))
    sources = {
        "a.x": "#include <cuda_fp16.h>\n#define TILE 64\nint a = TILE;\n",
        "b.y": '  #  include <cuda_fp16.h>\n#include "local.h"\nint b = 1;\n',
    }
    text = unit_source(parts, sources, "// glue\n")
    head = text[: text.index("namespace kl_unit")]
    assert head.count("#include <cuda_fp16.h>") == 1 and '#include "local.h"' in head
    body = text[text.index("namespace kl_unit") :]
    assert "#include" not in body
    assert "}  // namespace kl_unit_a_x\n#undef TILE\n" in body
    # the emptied include line keeps the numbering: `int b` is on line 3 of b.y
    b_lines = body[body.index('#line 1 "build/b.y.kpkg:b.y.cu"') :].splitlines()
    assert b_lines[3] == "int b = 1;"
    assert text.endswith("// glue\n")
    # the glue's `#line` names its real line in control.cu
    lines = text.splitlines()
    [directive] = [i for i, line in enumerate(lines) if line.endswith(f'"{CONTROL_SOURCE}"')]
    assert lines[directive] == f'#line {directive + 2} "{CONTROL_SOURCE}"' and lines[directive + 1] == "// glue"


def test_a_package_without_source_makes_the_control_impossible(compositions: dict[str, Path]) -> None:
    comp, generated = _linked(compositions["binary_only"])
    with pytest.raises(DiagnosticError) as err:
        assemble(link_inputs(comp), generated)
    [diag] = err.value.diagnostics
    assert diag.code == "E-PARITY" and "`hello.caller` has no source" in diag.message
    assert dict(diag.data)["reason"] == "no-source"
    assert diag.labels and diag.labels[0].span.file.endswith("hello.kp")
    assert any("binary-only" in n for n in diag.notes)


def test_front_end_is_the_packages_and_differences_are_noted() -> None:
    def part(stage: str, front: str, options: tuple[str, ...] = ("-std=c++17",)) -> UnitPart:
        return UnitPart(stage, f"{stage}.kpkg", "s.cu", front, f"{front} 13.0", options)  # type: ignore[arg-type]

    same = (part("a", "nvcc"), part("b", "nvcc"))
    assert _common_front_end(same) == "nvcc" and _notes(same, "nvcc", ("-std=c++17",), overridden=False) == []
    mixed = (part("a", "nvcc"), part("b", "nvrtc"))
    assert _common_front_end(mixed) == "nvrtc"
    [note] = _notes(mixed, "nvrtc", ("-std=c++17",), overridden=False)
    assert "`a` (nvcc)" in note and "different front ends" in note
    [asked] = _notes(same, "nvrtc", (), overridden=True)
    assert "as asked (`--front-end`)" in asked
    options = (part("a", "nvrtc", ("-std=c++17", "-DX=1")), part("b", "nvrtc"))
    [differ] = _notes(options, "nvrtc", ("-std=c++17", "-DX=1"), overridden=False)
    assert differ.startswith("`b` was compiled with options -std=c++17")
