"""The one-unit control build of a linked composition (`kernlink parity`, specs/parity.md).

The control is what the linked kernel is compared with: the same sources compiled as
one translation unit, by the same front end with the same options, then device-linked
alone with the same nvJitLink options. ``control.cu`` holds, in this order:

1. every ``#include`` line of the components, hoisted out of them (in first-seen order,
   each once): a header included inside a namespace would be declared in it;
2. each stage's source as its package carries it (``source.cu``), wrapped in
   ``namespace kl_unit_<stage> { … }`` with a ``#line`` directive so compiler messages
   name the package, and followed by an ``#undef`` of every macro it defines — so the
   components' file-local helpers (anonymous namespaces, ``static`` functions, macros)
   do not collide, as they would not in separate translation units. ``extern "C"``
   names are unaffected by namespaces: handle declarations and definitions, exports and
   entries are the same functions as in the link;
3. the link's generated glue rendered for the control (``render(generated, control=True)``):
   role entries and init hooks named from their namespaces and called with the params
   type they are defined with.

The front end is the packages' (``compile.compiler`` in each manifest); when they
differ, or ``front_end`` overrides it, the report says so. A package without its
source cannot take part: ``E-PARITY`` names it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from checker.clauses import l_integrity
from diagnostics.model import Diagnostic, DiagnosticError, Label
from diagnostics.symbols import Code
from linker.artifacts import Generated
from linker.render import render, unit_namespace
from package.kpkg import read_package
from package.manifest import SOURCE_PAYLOAD

if TYPE_CHECKING:
    from analysis.link_inputs import LinkInputs
from packing.binding import carried_headers, extra_include_dirs
from toolchain.cuda import (
    CompileResult,
    LinkResult,
    compile_nvcc,
    compile_nvrtc,
    link,
    link_options,
    nvcc_version,
    nvrtc_version,
    stable_cwd,
)

FrontEnd = Literal["nvrtc", "nvcc"]
FRONT_ENDS: tuple[FrontEnd, ...] = ("nvrtc", "nvcc")
CONTROL_SOURCE = "control.cu"

_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
#: options every compile of a front end sets itself (the rest are the package's own: -D, -std, …)
_OWN = {"nvrtc": ("-arch=", "-dlto", "-rdc=true", "-std="), "nvcc": ("-arch=", "-dlto", "-ltoir", "-rdc=true", "-std=")}


@dataclass(frozen=True)
class UnitPart:
    """One stage's source in the control unit."""

    stage: str
    package: str  # the pipeline's path of the package
    source_name: str  # the file name the package was compiled from
    front_end: FrontEnd
    toolkit: str
    options: tuple[str, ...]
    target: str = ""  # the architecture the package was compiled for


@dataclass(frozen=True)
class ControlUnit:
    """The control's one translation unit and how it is to be compiled."""

    source: str
    parts: tuple[UnitPart, ...]
    front_end: FrontEnd
    options: tuple[str, ...]  # the packages' options it is compiled with
    arch: str
    notes: tuple[str, ...]  # front-end and option differences between the packages and the control
    headers: tuple[tuple[str, bytes], ...] = ()  # the local headers the packages carry
    include_dirs: tuple[Path, ...] = ()  # header folders a package's compile record names (CUTLASS)


@dataclass(frozen=True)
class ControlBuild:
    """A compiled control unit: its compile and link options and its cubin and PTX."""

    unit: ControlUnit
    toolkit: str
    options: tuple[str, ...]
    link_options: tuple[str, ...]
    cubin: bytes
    ptx: str
    info_log: str

    @property
    def parts(self) -> tuple[UnitPart, ...]:
        return self.unit.parts

    @property
    def notes(self) -> tuple[str, ...]:
        return self.unit.notes


def assemble(inputs: LinkInputs, generated: Generated, *, front_end: FrontEnd | None = None) -> ControlUnit:
    """The control unit of a linked composition (module docstring).

    Raises ``DiagnosticError`` (``E-PARITY``) when a stage's package carries no source.
    """
    sources, parts = _stage_sources(inputs)
    headers: dict[str, bytes] = {}
    extra_dirs: list[Path] = []
    for entry in inputs.stages:
        if entry.package is not None:
            with l_integrity.worded():
                pkg = read_package(entry.package)
            headers.update(carried_headers(pkg.payloads))
            info = pkg.manifest.get("compile")
            if isinstance(info, Mapping):
                extra_dirs += [d for d in extra_include_dirs(info) if d not in extra_dirs]
    chosen: FrontEnd = front_end or _common_front_end(parts)
    options = _options(parts, chosen)
    notes = _notes(parts, chosen, options, overridden=front_end is not None)
    notes += [
        f"`{p.stage}` was compiled for `{p.target}`; the control is compiled for `{generated.target}`"
        for p in parts
        if p.target and p.target != generated.target
    ]
    glue = render(generated, [p.package for p in parts], control=True)
    return ControlUnit(
        unit_source(parts, sources, glue),
        tuple(parts),
        chosen,
        options,
        generated.target,
        tuple(notes),
        tuple(sorted(headers.items())),
        tuple(extra_dirs),
    )


def compile_control(
    unit: ControlUnit, *, include_dirs: Sequence[str | Path] = (), kernel: str = "kl_dispatch"
) -> ControlBuild:
    """Compile the unit with its front end and options, then link it alone with nvJitLink.

    Raises ``DiagnosticError``: ``E-COMPILE`` when the unit does not compile (messages
    name the package's line), ``L-LINK`` when it does not link.
    """
    std = next((o.removeprefix("-std=") for o in unit.options if o.startswith("-std=")), "c++17")
    extra = [o for o in unit.options if not o.startswith(_OWN[unit.front_end])]
    with tempfile.TemporaryDirectory(prefix="kernlink-control-") as tmp:
        for name, blob in unit.headers:
            (Path(tmp) / name).write_bytes(blob)
        dirs = [*include_dirs, Path(tmp), *unit.include_dirs]
        compiled = _compile_unit(unit, std, dirs, extra)
    return _link_unit(unit, compiled, kernel)


def _compile_unit(unit: ControlUnit, std: str, include_dirs: Sequence[str | Path], extra: list[str]) -> CompileResult:
    try:
        with stable_cwd():
            if unit.front_end == "nvcc":
                compiled = compile_nvcc(
                    unit.source, CONTROL_SOURCE, arch=unit.arch, std=std, include_dirs=include_dirs, extra_options=extra
                )
            else:
                compiled = compile_nvrtc(
                    unit.source, CONTROL_SOURCE, arch=unit.arch, std=std, include_dirs=include_dirs, extra_options=extra
                )
    except DiagnosticError as err:
        raise DiagnosticError([_in_control(d) for d in err.diagnostics]) from None
    return compiled


def _link_unit(unit: ControlUnit, compiled: CompileResult, kernel: str) -> ControlBuild:
    result: LinkResult = link(
        [(CONTROL_SOURCE, compiled.ltoir)], arch=unit.arch, kernels=[kernel], verbose=True, emit_ptx=True
    )
    version = nvcc_version() if unit.front_end == "nvcc" else nvrtc_version()
    toolkit = f"{unit.front_end} {version[0]}.{version[1]}" if version else unit.front_end
    shown = tuple(o for o in compiled.options if not o.startswith(("--include-path=", "-I", "--use-bundled-headers=")))
    return ControlBuild(
        unit,
        toolkit,
        shown,
        (f"-arch={unit.arch}", *link_options(), "-verbose"),
        result.cubin,
        result.ptx or "",
        result.info_log,
    )


def unit_source(parts: Sequence[UnitPart], sources: Mapping[str, str], glue: str) -> str:
    """The text of ``control.cu`` (module docstring): hoisted includes, namespaced stages, control glue."""
    includes: dict[str, None] = {}
    bodies: list[str] = []
    for part in parts:
        text = sources[part.stage]
        for line in _INCLUDE.findall(text):
            includes.setdefault(re.sub(r"^#[ \t]*include[ \t]*", "#include ", line.strip()), None)
        body = _INCLUDE.sub("", text)  # the line stays (empty), so `#line` numbers hold
        macros = list(dict.fromkeys(_DEFINE.findall(body)))
        bodies += [
            f"// ---- {part.stage}: {part.package} ({part.source_name}, {part.toolkit})",
            f"namespace {unit_namespace(part.stage)} {{",
            f'#line 1 "{_quoted(part.package)}:{_quoted(part.source_name)}"',
            body.rstrip("\n"),
            f"}}  // namespace {unit_namespace(part.stage)}",
            *(f"#undef {m}" for m in macros),
            "",
        ]
    head = [
        "// kernlink parity: the one-unit control build of a linked composition (specs/parity.md).",
        "// Every component's source in its own namespace, then the link's glue; compiled as one unit.",
        *includes,
        "",
    ]
    text = "\n".join([*head, *bodies]) + "\n"
    # the directive is on line n + 1 of the unit; the glue starts on line n + 2
    return text + f'#line {text.count(chr(10)) + 2} "{CONTROL_SOURCE}"\n' + glue


def _quoted(text: str) -> str:
    """Text for a ``#line`` file name: no quote, backslash or line break can end it early."""
    return "".join(c if c.isprintable() and c not in '"\\' else "_" for c in text)


# ----------------------------------------------------------------- packages


def _stage_sources(inputs: LinkInputs) -> tuple[dict[str, str], list[UnitPart]]:
    sources: dict[str, str] = {}
    parts: list[UnitPart] = []
    problems: list[Diagnostic] = []
    for entry in inputs.stages:
        span = entry.use_span if entry.use_span is not None else inputs.span
        shown = entry.use_path or entry.package or entry.source
        if entry.package is None:
            problems.append(_no_source(entry.name, shown, span, "the stage was checked from its contract alone"))
            continue
        with l_integrity.worded():
            pkg = read_package(entry.package)
        blob = pkg.payloads.get(SOURCE_PAYLOAD)
        if blob is None:
            problems.append(
                _no_source(
                    entry.name, shown, span, f"the package has no `{SOURCE_PAYLOAD}` payload (a binary-only package)"
                )
            )
            continue
        try:
            sources[entry.name] = blob.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(_no_source(entry.name, shown, span, f"its `{SOURCE_PAYLOAD}` is not UTF-8 text"))
            continue
        parts.append(_part(entry.name, shown, pkg.manifest))
    if problems:
        raise DiagnosticError(problems)
    return sources, parts


def _part(stage: str, shown: str, manifest: Mapping[str, Any]) -> UnitPart:
    toolkit = str(manifest.get("toolkit", ""))
    compile_info = manifest.get("compile")
    info = compile_info if isinstance(compile_info, Mapping) else {}
    compiler = str(info.get("compiler") or toolkit.split(" ", 1)[0])
    front: FrontEnd = "nvcc" if compiler == "nvcc" else "nvrtc"
    raw = info.get("options")
    options = tuple(str(o) for o in raw) if isinstance(raw, list) else ()
    name = str(info.get("source") or SOURCE_PAYLOAD)
    return UnitPart(stage, shown, name, front, toolkit or front, options, str(manifest.get("target", "")))


def _no_source(stage: str, package: str, span: Any, why: str) -> Diagnostic:
    return Diagnostic(
        Code.E_PARITY,
        f"stage `{stage}` has no source: the one-unit control build is impossible",
        labels=(Label(span, "this stage"),),
        notes=(
            f"`{package}`: {why}",
            "the control compiles every component's source with the generated glue as "
            "one translation unit; the linked kernel is compared with it",
        ),
        helps=(
            "pack the component with its source (`kernlink pack SOURCE.cu --contract STAGE.kc`), or ask its "
            "owner for a package that carries it",
        ),
        data=(("stage", stage), ("reason", "no-source")),
    )


def _common_front_end(parts: Sequence[UnitPart]) -> FrontEnd:
    """The packages' front end; NVRTC (kernlink's default) when they differ."""
    fronts = {p.front_end for p in parts}
    return "nvcc" if fronts == {"nvcc"} else "nvrtc"


def _options(parts: Sequence[UnitPart], front: FrontEnd) -> tuple[str, ...]:
    """The options of the first package built by ``front`` (the unit has one set of options)."""
    return next((p.options for p in parts if p.front_end == front), ())


def _notes(parts: Sequence[UnitPart], front: FrontEnd, options: tuple[str, ...], *, overridden: bool) -> list[str]:
    notes = []
    other = [p for p in parts if p.front_end != front]
    if other:
        names = ", ".join(f"`{p.stage}` ({p.front_end})" for p in other)
        why = "as asked (`--front-end`)" if overridden else "the packages were built by different front ends"
        notes.append(
            f"the control is compiled with {front}, {why}; {names} were not: NVRTC and nvcc generate "
            "different code for the same source, so a difference may be the front end's, not the link's"
        )
    for p in parts:
        if p.front_end == front and p.options != options:
            notes.append(
                f"`{p.stage}` was compiled with options {' '.join(p.options) or '(none)'}; the one unit "
                f"uses {' '.join(options) or '(none)'}"
            )
    return notes


def _in_control(d: Diagnostic) -> Diagnostic:
    return Diagnostic(
        d.code,
        d.message,
        d.severity,
        d.labels,
        notes=(*d.notes, f"while compiling the one-unit control build (`{CONTROL_SOURCE}` in the output directory)"),
        helps=(
            *d.helps,
            "a component that declares a handle, an export or a tensor handle with another type than "
            "the generated code defines cannot be built as one unit; declare it as specs/handles.md "
            "says (a quoted `#include` needs `-I` with the folder of its header)",
        ),
        data=d.data,
    )
