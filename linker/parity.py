"""Static evidence that a link is free: the linked cubin against the one-unit control (specs/parity.md).

:func:`compare` reads both cubins on the CPU and reports

- ``.text`` per function: size and SHA-256 of the bytes, and the relocations against
  them (offset, type, symbol — symbols renamed by first appearance, as in SASS);
- resources of the kernel: registers, static shared memory, the dynamic shared memory
  of the launch (one plan serves both builds), launch bounds, barriers, stack frame,
  parameter bytes, code bytes, and the spills ptxas reports;
- normalized SASS per function and a diff (when a disassembler is found, :mod:`linker.sass`);
- every call left: CALL/RET in the SASS, ``call``/``.extern .func`` in the PTX. A call to
  a seam — a handle, a trampoline or the export it calls, a tensor transfer function,
  a role entry or init hook — or an indirect call is *unfolded*: the link did not
  become straight-line code there. A call between a component's own functions is
  *kept*: it is the component's, in both builds.

The verdict: ``identical`` (every ``.text`` byte, relocation, resource and — when
compared — SASS instruction agrees), ``explained`` (they differ, and the control could
not be built the way the packages were: another front end or other options; the notes
say which), or ``differs``. The link is proved free when the verdict is not ``differs``
and nothing is unfolded.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from linker import sass
from linker.artifacts import Generated
from linker.control import ControlBuild
from toolchain.cubin import KernelInfo, read_cubin

Parity = Literal["identical", "explained", "differs"]
"""How a linked kernel compares with its single-unit control build (not a solver verdict)."""
_SPILLS = re.compile(r"(?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_LOCAL_PREFIX = re.compile(r"^\$[^$]+\$")


@dataclass(frozen=True)
class TextSection:
    """One function's ``.text`` in both builds (sizes 0 and empty hashes where a build lacks it)."""

    function: str
    linked_bytes: int
    control_bytes: int
    linked_sha256: str
    control_sha256: str
    relocations_equal: bool

    @property
    def identical(self) -> bool:
        return self.linked_sha256 == self.control_sha256 and bool(self.linked_sha256) and self.relocations_equal


@dataclass(frozen=True)
class Resource:
    name: str
    linked: str
    control: str

    @property
    def equal(self) -> bool:
        return self.linked == self.control


@dataclass(frozen=True)
class CallFinding:
    """A call left in one build: ``unfolded`` (a seam or an indirect call) or ``kept`` (a component's own)."""

    build: str  # linked | control
    where: str  # sass | ptx
    function: str
    op: str  # CALL (SASS), call or .extern .func (PTX)
    target: str | None
    kind: str  # unfolded | kept
    seam: str | None = None  # what the target is, when it is a seam


@dataclass(frozen=True)
class SassEvidence:
    tool: str | None
    skipped: str | None  # why SASS was not compared
    identical: bool | None
    instructions: Mapping[str, tuple[int, int]]  # function -> (linked, control)
    rets: tuple[int, int]
    diff: str
    linked: Mapping[str, Sequence[str]] = field(default_factory=dict, repr=False)
    control: Mapping[str, Sequence[str]] = field(default_factory=dict, repr=False)
    linked_calls: tuple[sass.Call, ...] = ()
    control_calls: tuple[sass.Call, ...] = ()


@dataclass(frozen=True)
class ParityReport:
    pipeline: str
    target: str
    kernel: str
    front_end: Mapping[str, Any]
    notes: tuple[str, ...]
    text: tuple[TextSection, ...]
    resources: tuple[Resource, ...]
    sass: SassEvidence
    calls: tuple[CallFinding, ...]

    @property
    def identical(self) -> bool:
        same_text = bool(self.text) and all(t.identical for t in self.text)
        return same_text and all(r.equal for r in self.resources) and self.sass.identical is not False

    @property
    def verdict(self) -> Parity:
        if self.identical:
            return "identical"
        return "explained" if self.notes else "differs"

    @property
    def unfolded(self) -> tuple[CallFinding, ...]:
        return tuple(c for c in self.calls if c.build == "linked" and c.kind == "unfolded")

    @property
    def folded(self) -> bool:
        return not self.unfolded

    @property
    def proved(self) -> bool:
        return self.verdict != "differs" and self.folded

    def as_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "target": self.target,
            "kernel": self.kernel,
            "verdict": self.verdict,
            "folded": self.folded,
            "proved": self.proved,
            "front_end": dict(self.front_end),
            "notes": list(self.notes),
            "text": [{**asdict(t), "identical": t.identical} for t in self.text],
            "resources": [{**asdict(r), "equal": r.equal} for r in self.resources],
            "sass": {
                "tool": self.sass.tool,
                "skipped": self.sass.skipped,
                "identical": self.sass.identical,
                "instructions": {k: list(v) for k, v in sorted(self.sass.instructions.items())},
                "rets": list(self.sass.rets),
                "diff": _capped(self.sass.diff),
            },
            "calls": [asdict(c) for c in self.calls],
        }


#: lines of the SASS diff kept in the JSON report (``sass.diff`` holds all of it)
DIFF_LINES = 400


def _capped(diff: str) -> str:
    lines = diff.splitlines()
    if len(lines) <= DIFF_LINES:
        return diff
    return "\n".join(lines[:DIFF_LINES]) + f"\n... {len(lines) - DIFF_LINES} more lines in sass.diff\n"


def compare(
    pipeline: str,
    generated: Generated,
    linked_cubin: bytes,
    linked_ptx: str,
    linked_spills: tuple[int, int],
    control: ControlBuild,
    tool: sass.Disassembler | None,
) -> ParityReport:
    """The static evidence for one linked kernel and its control (module docstring).

    ``linked_spills`` are the spill stores and loads ptxas reported for the linked kernel.
    """
    kernel = generated.dispatch.kernel
    text = _text_sections(linked_cubin, control.cubin)
    resources = _resources(
        generated,
        read_cubin(linked_cubin, name="the linked cubin").kernel(kernel),
        read_cubin(control.cubin, name="the control cubin").kernel(kernel),
        f"{linked_spills[0]}/{linked_spills[1]}",
        control.info_log,
        kernel,
    )
    seams = seam_symbols(generated)
    evidence = _sass(tool, linked_cubin, control.cubin)
    calls = [*_ptx_findings("linked", linked_ptx, seams), *_ptx_findings("control", control.ptx, seams)]
    if evidence.tool is not None:
        calls += [
            *_sass_findings("linked", evidence.linked_calls, seams),
            *_sass_findings("control", evidence.control_calls, seams),
        ]
    front = {
        "packages": {p.stage: p.toolkit for p in control.parts},
        "control": control.toolkit,
        "control_options": list(control.options),
        "link_options": list(control.link_options),
        "glue": "nvrtc (the linked build compiles its generated glue with NVRTC)",
    }
    return ParityReport(
        pipeline, generated.target, kernel, front, control.notes, text, resources, evidence, tuple(calls)
    )


def seam_symbols(generated: Generated) -> dict[str, str]:
    """Every symbol the generated glue defines or calls across a component boundary, with what it is."""
    names: dict[str, str] = {}
    for h in generated.handles:
        names.setdefault(h.symbol, f"handle of `{h.stage}` ({h.why})")
    for t in generated.trampolines:
        names.setdefault(t.symbol, f"trampoline of call `{t.call}` {t.signature}")
        names.setdefault(t.export_symbol, f"export of `{t.export_stage}` serving call `{t.call}` through `{t.symbol}`")
    for tr in generated.transfers:
        names.setdefault(tr.export_symbol, f"tensor export handle of `{tr.export_stage}` ({tr.connection})")
        names.setdefault(tr.import_symbol, f"tensor import handle of `{tr.import_stage}` ({tr.connection})")
    for u in generated.unused_exports:
        names.setdefault(u.symbol, f"unused tensor export handle of `{u.stage}`")
    for r in generated.dispatch.roles:
        names.setdefault(r.entry, f"entry of role `{r.role}` of `{r.stage}`")
    for i in generated.dispatch.inits:
        names.setdefault(i.symbol, f"init hook of ring `{i.ring}` of `{i.stage}`")
    return names


# ----------------------------------------------------------------- .text


def _text_sections(linked: bytes, control: bytes) -> tuple[TextSection, ...]:
    a, b = _texts(linked), _texts(control)
    out = []
    for name in sorted(set(a) | set(b)):
        (da, ra), (db, rb) = a.get(name, (b"", None)), b.get(name, (b"", None))
        out.append(TextSection(name, len(da), len(db), _sha(da, name in a), _sha(db, name in b), ra == rb))
    return tuple(out)


def _sha(data: bytes, present: bool) -> str:
    return hashlib.sha256(data).hexdigest() if present else ""


def _texts(cubin: bytes) -> dict[str, tuple[bytes, list[tuple[int, int, str]] | None]]:
    """``.text.F`` bytes and their relocations (offset, type, symbol renamed by first appearance)."""
    elf = ELFFile(io.BytesIO(cubin))
    symtab = elf.get_section_by_name(".symtab")
    out: dict[str, tuple[bytes, list[tuple[int, int, str]] | None]] = {}
    for section in elf.iter_sections():
        if section.name.startswith(".text."):
            out[section.name.removeprefix(".text.")] = (section.data(), None)
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection):
            continue
        target = elf.get_section(section["sh_info"]).name
        if not target.startswith(".text."):
            continue
        names: dict[str, str] = {}
        rows = []
        for rel in section.iter_relocations():
            name = ""
            if isinstance(symtab, SymbolTableSection) and rel["r_info_sym"]:
                name = symtab.get_symbol(rel["r_info_sym"]).name
            rows.append((int(rel["r_offset"]), int(rel["r_info_type"]), names.setdefault(name, f"sym{len(names)}")))
        key = target.removeprefix(".text.")
        data, _ = out.get(key, (b"", None))
        out[key] = (data, rows)
    return out


# ----------------------------------------------------------------- resources


def _resources(
    generated: Generated, a: KernelInfo | None, b: KernelInfo | None, spills_a: str, log_b: str, kernel: str
) -> tuple[Resource, ...]:
    def row(name: str, pick: Any) -> Resource:
        return Resource(name, str(pick(a)) if a is not None else "absent", str(pick(b)) if b is not None else "absent")

    dynamic = str(generated.dispatch.dynamic_smem)
    return (
        row("registers", lambda k: k.registers),
        row("static smem (B)", lambda k: k.static_smem),
        Resource("dynamic smem (B, launch)", dynamic, dynamic),
        row("launch bounds: max threads", lambda k: "x".join(map(str, k.max_threads)) if k.max_threads else "-"),
        row("launch bounds: max registers", lambda k: k.max_registers if k.max_registers is not None else "-"),
        row("required threads", lambda k: "x".join(map(str, k.required_threads)) if k.required_threads else "-"),
        row("named barriers", lambda k: k.barriers),
        row("stack frame (B)", lambda k: k.frame_bytes),
        row("param bytes", lambda k: k.param_bytes),
        row("code bytes", lambda k: k.code_bytes),
        Resource("spills (stores/loads B)", spills_a, _spills(log_b, kernel)),
    )


def _spills(info_log: str, kernel: str) -> str:
    current = None
    for line in info_log.splitlines():
        found = _PROPERTIES.search(line)
        if found:
            current = found["name"]
            continue
        spills = _SPILLS.search(line)
        if spills and current == kernel:
            return f"{spills['stores']}/{spills['loads']}"
    return "0/0"


# ----------------------------------------------------------------- SASS and calls


def _sass(tool: sass.Disassembler | None, linked: bytes, control: bytes) -> SassEvidence:
    if tool is None:
        return SassEvidence(
            None, "no disassembler: install `nvdisasm` or `pip install 'kernlink[sass]'`", None, {}, (0, 0), ""
        )
    try:
        raw_a, raw_b = sass.disassemble(tool, linked), sass.disassemble(tool, control)
    except OSError as err:
        return SassEvidence(None, f"{tool.label} failed: {err}", None, {}, (0, 0), "")
    a, b = sass.normalized(raw_a), sass.normalized(raw_b)
    counts = {name: (len(a.get(name, [])), len(b.get(name, []))) for name in sorted(set(a) | set(b))}
    calls_a, calls_b = tuple(sass.sass_calls(raw_a)), tuple(sass.sass_calls(raw_b))
    rets = (sum(c.op == "RET" for c in calls_a), sum(c.op == "RET" for c in calls_b))
    diff = sass.unified_diff(a, b)
    return SassEvidence(
        tool.label,
        None,
        a == b,
        counts,
        rets,
        diff,
        {k: tuple(v) for k, v in a.items()},
        {k: tuple(v) for k, v in b.items()},
        calls_a,
        calls_b,
    )


def _sass_findings(build: str, calls: Sequence[sass.Call], seams: Mapping[str, str]) -> list[CallFinding]:
    out = []
    for call in calls:
        if call.op != "CALL":
            continue
        target = _LOCAL_PREFIX.sub("", call.target) if call.target is not None else None
        out.append(CallFinding(build, "sass", call.function, call.op, target, *_kind(target, seams)))
    return out


def _ptx_findings(build: str, ptx: str, seams: Mapping[str, str]) -> list[CallFinding]:
    calls, externs, _ = sass.ptx_calls(ptx)
    out = [CallFinding(build, "ptx", c.function, "call", c.target, *_kind(c.target, seams)) for c in calls]
    out += [
        CallFinding(
            build, "ptx", "-", ".extern .func", name, "unfolded", seams.get(name, "a function no input defines")
        )
        for name in externs
    ]
    return out


def _kind(target: str | None, seams: Mapping[str, str]) -> tuple[str, str | None]:
    """``unfolded`` with the seam's description, or ``kept`` (a component's own function)."""
    if target is None or target.startswith("%"):
        return "unfolded", "an indirect call: its target is not known"
    if target in seams:
        return "unfolded", seams[target]
    return "kept", None
