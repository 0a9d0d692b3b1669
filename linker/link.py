"""`kernlink link`: from a checked, placed composition to one cubin, its generated source and its link map.

Steps (every failure is a diagnostic, recorded in the map, which is written anyway):

1. **Inputs.** Every stage must come from a package (a stage checked from its `.kc`
   alone is ``L-STAGE`` here: there is no object to link); each package is read
   again (``L-INTEGRITY`` if it changed since the check) for its LTO IR, which must lower to
   the ``code.ptx`` the check read, and be what its ``source.cu`` compiles to when it can be
   rebuilt here (:mod:`packing.binding`). Parts of
   the composition the role-entry ABI cannot express yet are ``E-UNSUPPORTED``.
1b. **Route barriers** (the plan, :func:`analysis.plan.plan`): the staging routes' named
   barriers are added to the placement problem as barrier claims and solved once more
   (the roles must keep their warps, which the routes were chosen for).
2. **Generate** (:mod:`linker.generate`) the handle stubs, trampolines, params block
   and dispatch kernel ``kl_dispatch``; compile them with NVRTC to LTO IR (from the
   filesystem root, so the IR does not depend on the working directory).
3. **Link** everything with nvJitLink ``-lto -verbose`` (and once more with ``-ptx``
   for the audit, or when asked). An nvJitLink failure is ``L-LINK`` carrying its error log; so is a
   cubin without ``kl_dispatch`` (nvJitLink reports success for a link without a
   kernel) and a kernel with static shared memory (it would move the dynamic base
   that every shared-memory handle counts from).
4. **Registers.** The kernel's register count R is read from the cubin
   (``EIATTR_REGCOUNT``; the map also records ptxas' ``-verbose`` figure). With
   ``setmaxnreg``, ptxas compiles the kernel to the register cap at entry that the
   launch bounds give (``__launch_bounds__(T, B)``: R = the largest multiple of 8 ≤
   65536 / (T·B), at most 255) and compiles the code after each ``setmaxnreg`` within
   that group's budget, spilling if it must — measured with nvJitLink 13.0 on
   sm_90a: a role needing ~60 registers under ``setmaxnreg.dec 40`` compiles with
   spills, and values live across a ``.dec 24`` are spilled, not lost. So R is the
   entry count of every warp, not the live registers of any role, and it bounds no
   budget from below: the loader's 40 under a 168-register entry is the point of
   ``setmaxnreg``. What R decides is (a) the CTA's register pool, ⌊R/8⌋·8 × T — the
   part of the launch allocation that whole ``setmaxnreg`` steps can hand out (for
   T ≤ 256 ptxas reports 255, and the pool counts 248 per thread) — which the group
   budgets must fit, or an ``.inc`` blocks forever; and (b) each ``setmaxnreg``'s
   direction (``.dec`` needs current ≥ budget, ``.inc`` current ≤ budget), so the
   dispatch kernel must be generated for the real entry count. The link is accepted
   when ⌊R/8⌋·8 equals the entry count the code was generated for and Σ budget ×
   threads ≤ the pool. Otherwise the linker re-solves **once**: with the pool too
   small (R below the placement's prediction, e.g. ``blocks_per_sm 2``) the
   placement is solved again with R as the entry count (:meth:`analysis.plan.Plan.for_entry`;
   an ``L-REGS`` rejection from
   that solve ends the link, and so does one that moves a role a tensor route runs
   on); then the code is generated for R and linked again,
   and a second miss is ``L-REGS``. A kernel whose ptxas report says ``'setmaxnreg'
   ignored`` is ``L-REGS`` too. Spilling is reported as an ``I-SPILL`` note: it is
   the cost of a budget below what a role's code uses, not an error.
4b. **Audit** (:mod:`linker.audit`, on by default): the constants in the linked PTX
   and the cubin are the map's (barrier IDs, setmaxnreg operands, ring barriers and
   depths, dynamic shared memory); a mismatch is ``L-LINK`` with both values.
5. **Outputs** (:func:`write_outputs`): ``kernel.cubin``, ``generated.cu``,
   ``link.map``, ``link.json`` and ``kernel.ptx`` (the audit reads it), each written
   atomically, under a lock on the directory, staged first and swapped in with the
   manifest ``link.json`` last (:mod:`linker.outdir`), so the directory is one link's
   or has no manifest. A failed link writes the map and JSON (and the generated source
   when there is one): as ``link.failed.*`` beside a good link, which it keeps, else
   under their own names, removing a stale ``kernel.cubin``/``kernel.ptx``.

The same inputs give byte-identical outputs: placement is canonical, generation is
pure, NVRTC runs from a fixed directory and inputs are named by their pipeline
paths, and the map holds no time, host or absolute path.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.link_inputs import link_inputs
from analysis.plan import Plan, plan, register_demand
from checker.clauses import l_integrity, l_link, l_regs, l_stage
from checker.clauses.l_launch import residency_diagnostic
from checker.composition import Composition
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
from diagnostics.symbols import Code
from linker import linkmap
from linker.artifacts import Generated
from linker.generate import KERNEL, SOURCE_NAME, generate, unsupported
from linker.host_header import host_header
from linker.launch_config import launch_config
from linker.linkmap import Attempt, InputRecord, LinkRecord
from linker.outdir import Hook, write_set
from linker.providers import LinkedProvider, linked_providers
from package.loader import StageEntry
from package.manifest import StagePackage, read_stage_package
from packing.binding import rebuild_problems
from placement.adapter import Placed, residency_shortfall
from toolchain.cubin import KernelInfo, read_cubin
from toolchain.cuda import (
    CompileResult,
    compile_nvrtc,
    link,
    link_options,
    parse_ptxas_usage,
    stable_cwd,
    tool_warnings,
    toolkit_versions,
)

if TYPE_CHECKING:
    from transfer_model.adapter import RoutedSeam

CUBIN = "kernel.cubin"
PTX = "kernel.ptx"
MAP = "link.map"
JSON = "link.json"
#: The C host header of a successful link (linker/host_header.py).
HOST_HEADER = "kernel.h"
GENERATED_LTO = "kl_generated.ltoir"

_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_SPILLS = re.compile(r"(?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_IGNORED = re.compile(r"^.*'setmaxnreg' ignored.*$", re.M)


@dataclass
class LinkOutput:
    """A link's products (``cubin`` only when it succeeded) and its record."""

    record: LinkRecord
    cubin: bytes | None = None
    ptx: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    providers: list[LinkedProvider] = field(default_factory=list)  # host providers, in stage order

    @property
    def ok(self) -> bool:
        return self.record.status == "linked"

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.record.diagnostics

    @property
    def generated(self) -> Generated | None:
        return self.record.generated

    @property
    def map_text(self) -> str:
        return linkmap.render_text(self.record)

    @property
    def map_json(self) -> str:
        return linkmap.render_json(self.record)


@dataclass(frozen=True)
class _Round:
    generated: Generated
    cubin: bytes
    kernel: KernelInfo
    info_log: str
    attempt: Attempt
    ptx: str = ""  # the post-LTO PTX of the same inputs


def record_for(comp: Composition) -> LinkRecord:
    """An empty record for a composition (what a link writes when it stops before placing)."""
    return LinkRecord(comp.pipeline.name, comp.pipeline_source, comp.target_name)


def link_composition(
    comp: Composition,
    placed: Placed,
    *,
    emit_ptx: bool = False,
    routes: Sequence[RoutedSeam] | None = None,
    audit: bool = True,
    watchdog: int | None = None,
    require_binding: bool = False,
) -> LinkOutput:
    """Generate, compile and device-link a checked, placed composition (module docstring).

    ``routes`` are the tensor connections' routes on ``placed`` (``analysis.downstream``
    computed them during the check); None routes them here. ``watchdog`` bounds the generated
    waits (``kernlink link --watchdog``, :mod:`linker.watchdog`). ``require_binding`` refuses a
    package that cannot be bound (:mod:`packing.binding`) instead of noting it.
    """
    start = time.perf_counter()
    record = record_for(comp)
    record.placement = placed.placement
    out = LinkOutput(record)
    try:
        packages = _inputs(comp, record, require_binding)
        planned = plan(comp, placed, routes)  # the route barriers placed (analysis/plan.py)
        placed, routes = planned.placed, planned.routes
        record.placement = placed.placement
        versions = toolkit_versions()
        record.toolkit = {"nvrtc": versions.as_dict()["nvrtc"], "nvjitlink": versions.as_dict()["nvjitlink"]}
        record.options = (f"-arch={_arch(comp)}", *link_options(), "-verbose")
        first = _round(planned, packages, None, record, out.seconds, watchdog)
        final = first
        need = _registers(first, placed)
        if need is not None:
            planned = planned.for_entry(need, KERNEL)  # the register re-solve, when the pool is too small
            placed = planned.placed
            if planned.resolved:
                record.placement, record.resolved = placed.placement, True
            final = _round(planned, packages, need, record, out.seconds, watchdog)
            again = _registers(final, placed)
            if again is not None:
                raise DiagnosticError([_regs_failed(comp, final, placed, again)])
        final.attempt.outcome = "accepted"
        out.cubin = final.cubin
        record.cubin_size = len(final.cubin)
        record.cubin_sha256 = hashlib.sha256(final.cubin).hexdigest()
        record.diagnostics.extend(final.generated.notes)
        record.diagnostics.extend(_spill_notes(comp, final))
        record.diagnostics.extend(_tool_warnings(comp, final))
        _check_residency(comp, placed, final)
        if emit_ptx or audit:
            out.ptx = _link_ptx(final)
        if audit:  # linker/audit.py: the constants in the linked code are the map's
            out.seconds["audit"] = _audit(record, final.cubin, out.ptx or "")
        out.providers = linked_providers(planned.inputs, final.generated.params.regions)
        record.providers = [p.as_json() for p in out.providers]
        record.launch = launch_config(planned.inputs, final.generated.dispatch)
        record.status = "linked"
    except DiagnosticError as err:
        record.status = "failed"
        record.diagnostics.extend(err.diagnostics)
    record.diagnostics[:] = sort_diagnostics(record.diagnostics)
    out.seconds["total"] = time.perf_counter() - start
    return out


def write_outputs(out: LinkOutput, directory: str | Path, *, hook: Hook | None = None) -> list[Path]:
    """Write the link's files into ``directory`` (created if needed); returns the paths written.

    The manifest ``link.json`` goes last and the products first, under a lock on the
    directory (:mod:`linker.outdir`): the directory holds one link's files, or no manifest.
    ``hook`` is called before each step (tests interrupt there). Raises
    ``DiagnosticError`` (``E-IO``) when the directory cannot be made or a file written.
    """
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        message = f"cannot create directory `{root}`: {err.strerror or err}"
        raise DiagnosticError([Diagnostic(Code.E_IO, message)]) from err
    files, manifest = output_files(out)
    complete = out.ok and out.cubin is not None
    return write_set(root, files, manifest, managed=[name for name, _ in files], complete=complete, hook=hook)


def output_files(out: LinkOutput) -> tuple[list[tuple[str, bytes | None]], bytes]:
    """The files of a link in the order they are written (None: the name is removed), and its manifest."""
    linked = out.ok and out.cubin is not None
    files: list[tuple[str, bytes | None]] = [
        (CUBIN, out.cubin if linked else None),
        (PTX, out.ptx.encode() if linked and out.ptx is not None else None),
        (SOURCE_NAME, out.generated.source.encode() if out.generated is not None else None),
        (MAP, out.map_text.encode()),
        (
            HOST_HEADER,
            host_header(json.loads(out.map_json), out.cubin).encode() if linked and out.cubin is not None else None,
        ),
        *((p.file, p.source) for p in out.providers if linked),
    ]
    return files, out.map_json.encode()


# ----------------------------------------------------------------- inputs


def _audit(record: LinkRecord, cubin: bytes, ptx: str) -> float:
    """Run the link audit; its notes join the record, its errors fail the link. Returns its seconds."""
    from linker.audit import audit

    start = time.perf_counter()
    audited = audit(linkmap.to_jsonable(record), cubin, ptx)
    if not audited.ok:
        raise DiagnosticError(list(audited.diagnostics))
    record.diagnostics.extend(audited.diagnostics)
    return time.perf_counter() - start


def _arch(comp: Composition) -> str:
    return comp.target.name if comp.target is not None else comp.target_name


def _inputs(comp: Composition, record: LinkRecord, require_binding: bool) -> list[tuple[str, StagePackage]]:
    problems = unsupported(link_inputs(comp))
    packages: list[tuple[str, StagePackage]] = []
    for entry in comp.stages:
        if entry.package is None or entry.captured is None:
            problems.append(_no_package(comp, entry))
            continue
        try:
            with l_integrity.worded():
                pkg = read_stage_package(entry.package)
        except DiagnosticError as err:
            problems.extend(err.diagnostics)
            continue
        rebuilt = rebuild_problems(entry.package, entry.stage, require=require_binding, sha256=pkg.sha256)
        problems.extend(d for d in rebuilt if d.is_error)
        record.diagnostics.extend(d for d in rebuilt if not d.is_error)
        name = entry.use.path if entry.use is not None and entry.use.path else entry.package
        record.inputs.append(
            InputRecord(
                name,
                pkg.stage,
                pkg.version,
                pkg.toolkit,
                pkg.size,  # hashed as read
                pkg.sha256,
                len(pkg.lto_ir),
            )
        )
        packages.append((name, pkg))
    if problems:
        raise DiagnosticError(problems)
    return packages


def _no_package(comp: Composition, entry: StageEntry) -> Diagnostic:
    span = entry.use.span if entry.use is not None else comp.pipeline.span
    return l_stage.no_package(entry.name, str(entry.source), span, entry.stage.span)


# ----------------------------------------------------------------- one round


def _round(
    planned: Plan,
    packages: Sequence[tuple[str, StagePackage]],
    entry: int | None,
    record: LinkRecord,
    seconds: dict[str, float],
    watchdog: int | None = None,
) -> _Round:
    t0 = time.perf_counter()
    comp = planned.comp
    generated = generate(planned, entry_regs=entry, inputs=[name for name, _ in packages], watchdog=watchdog)
    record.generated = generated
    attempt = Attempt(entry_assumed=generated.dispatch.entry_regs)
    record.attempts.append(attempt)
    t1 = time.perf_counter()
    arch = _arch(comp)
    try:
        glue = _compile_glue(generated.source, arch) if "#include" not in generated.source else _glue(generated, arch)
    except DiagnosticError as err:
        raise DiagnosticError(
            [
                dataclasses.replace(
                    d, notes=(*d.notes, f"in the generated code (`{SOURCE_NAME}` in the link output): a kernlink bug")
                )
                for d in err.diagnostics
            ]
        ) from None
    attempt.lto_bytes = len(glue.ltoir)
    t2 = time.perf_counter()
    inputs = [(name, pkg.lto_ir) for name, pkg in packages] + [(GENERATED_LTO, glue.ltoir)]
    try:
        # the PTX too (the audit reads it), from the same child process: nvJitLink gives one per link
        result = link(inputs, arch=arch, kernels=[KERNEL], verbose=True, emit_ptx=True)
    except DiagnosticError as err:
        raise DiagnosticError(
            [
                d if d.labels else dataclasses.replace(d, labels=(Label(comp.pipeline.span, "linking this pipeline"),))
                for d in err.diagnostics
            ]
        ) from None
    t3 = time.perf_counter()
    for key, value in (("generate", t1 - t0), ("compile", t2 - t1), ("link", t3 - t2)):
        seconds[key] = seconds.get(key, 0.0) + value
    kernel = read_cubin(result.cubin, name="the linked cubin").kernel(KERNEL)
    assert kernel is not None  # link() checked that the kernel is there
    usage = result.ptxas_usage().get(KERNEL)
    attempt.registers = kernel.registers
    attempt.ptxas_registers = usage.registers if usage is not None else None
    attempt.static_smem = kernel.static_smem
    attempt.spill_stores, attempt.spill_loads = _spills(result.info_log)
    if kernel.static_smem:
        raise DiagnosticError([_static_smem(comp, packages, inputs, arch, kernel.static_smem)])
    return _Round(generated, result.cubin, kernel, result.info_log, attempt, result.ptx or "")


def _glue(generated: Generated, arch: str) -> CompileResult:
    with stable_cwd():
        return compile_nvrtc(generated.source, SOURCE_NAME, arch=arch)


@functools.lru_cache(maxsize=8)
def _compile_glue(source: str, arch: str) -> CompileResult:
    """The generated glue's LTO IR, kept per process when it includes no header: then it is a
    function of its text and target alone (NVRTC, from the fixed directory), and a resident build
    (`kernlink build --watch`) whose edit left the composition as it was links the glue it compiled
    last time."""
    with stable_cwd():
        return compile_nvrtc(source, SOURCE_NAME, arch=arch)


_LOCAL_STATIC = re.compile(r"^_ZZ(\d+)")  # a function-scope static: _ZZ<len><function>E<len><name>


def _shared_name(mangled: str) -> tuple[str, str | None]:
    """A `.shared` variable as written (`staging`), and the function that declares it (None at file scope)."""
    found = _LOCAL_STATIC.match(mangled)
    if found is None:
        return mangled, None
    n = int(found.group(1))
    start = found.end()
    function, rest = mangled[start : start + n], mangled[start + n :]
    name = re.match(r"E(\d+)", rest)
    if name is None:
        return mangled, function
    k = int(name.group(1))
    return rest[name.end() : name.end() + k] or mangled, function


def static_shared(ptx: str) -> list[tuple[str, str | None, int]]:
    """The linked PTX's static ``.shared`` variables: (name as written, the function declaring it or
    None at file scope, bytes); the kernel's dynamic shared memory is the placement's, not listed."""
    from package.codefacts.ptx import parse

    found = []
    for decl in parse(ptx).shared:
        if not decl.dynamic:
            name, function = _shared_name(decl.name)
            found.append((name, function or decl.function, decl.size))
    return found


def _static_smem(
    comp: Composition,
    packages: Sequence[tuple[str, StagePackage]],
    inputs: Sequence[tuple[str, bytes]],
    arch: str,
    window: int,
) -> Diagnostic:
    """L-LINK for `__shared__` variables in components: name them, their sizes and their packages."""
    try:
        ptx = link(inputs, arch=arch, kernels=[KERNEL], emit_ptx=True).ptx or ""
    except DiagnosticError:
        ptx = ""
    uses = {entry.use.path: entry.use.span for entry in comp.stages if entry.use is not None and entry.use.path}
    declared: dict[str, list[str]] = {}  # package ("" when unknown) -> "`name` (N B)" entries
    total = 0
    for name, function, size in static_shared(ptx):
        total += size
        owners = [
            pkg for pkg, stage in packages if function is not None and function in stage.manifest["captured"]["defined"]
        ]
        owner = owners[0] if len(owners) == 1 else packages[0][0] if len(packages) == 1 else ""
        where = f" in `{function}`" if function else ""
        declared.setdefault(owner, []).append(f"`{name}`{where} ({size} B)")
    labels = [
        Label(uses[pkg], f"`{pkg}` declares {', '.join(found)}") for pkg, found in declared.items() if pkg in uses
    ]
    unknown = declared.get("", [])
    if unknown:
        labels += [Label(span, f"`{pkg}`: one of the packages linked") for pkg, span in uses.items()]
    if not labels:
        labels = [Label(comp.pipeline.span, "linking this pipeline")]
    labels = [dataclasses.replace(lab, primary=i == 0) for i, lab in enumerate(labels)]
    listed = "; ".join(
        f"{f'`{pkg}`' if pkg else 'a package'} declares `__shared__` {', '.join(found)}"
        for pkg, found in declared.items()
    )
    size_note = (
        f"the variables take {total} B; with their alignment the dynamic shared memory base moves by {window} B"
        if declared
        else f"the kernel has {window} B of static shared memory"
    )
    data = (("kernel", KERNEL), ("static_smem", str(window)), ("bytes", str(total)))
    return l_link.static_shared(listed, tuple(labels), size_note, data)


def _link_ptx(final: _Round) -> str:
    """The post-LTO PTX of the final round's link (its nvJitLink child ran the ``-ptx`` link too)."""
    return final.ptx


def _spills(info_log: str) -> tuple[int, int]:
    """Spill bytes ptxas reports for the kernel under ``-verbose``."""
    current = None
    for line in info_log.splitlines():
        found = _PROPERTIES.search(line)
        if found:
            current = found["name"]
            continue
        spills = _SPILLS.search(line)
        if spills and current == KERNEL:
            return int(spills["stores"]), int(spills["loads"])
    return 0, 0


# ----------------------------------------------------------------- registers


def entry_count(registers: int, unit: int = 8) -> int:
    """The per-thread count whole setmaxnreg steps can redistribute: the kernel's count rounded down."""
    return registers // unit * unit


def _registers(rnd: _Round, placed: Placed) -> int | None:
    """None when the linked kernel fits its register groups; else the entry count to re-solve with."""
    d = rnd.generated.dispatch
    ignored = _IGNORED.findall(rnd.info_log)
    if ignored:
        raise DiagnosticError([l_regs.setmaxnreg_ignored(KERNEL, ignored)])
    if not d.setmaxnreg:
        rnd.attempt.outcome = "no register groups"
        return None
    entry = entry_count(rnd.kernel.registers)
    pool = entry * d.threads
    demand = register_demand(placed)
    rnd.attempt.pool, rnd.attempt.demand = pool, demand
    if entry == d.entry_regs and demand <= pool:
        return None
    if demand > pool:
        rnd.attempt.outcome = f"the groups do not fit the kernel's {rnd.kernel.registers} registers: re-solve"
    else:
        rnd.attempt.outcome = f"generated for entry {d.entry_regs}, the kernel has {entry}: regenerate"
    return entry


def _regs_failed(comp: Composition, rnd: _Round, placed: Placed, entry: int) -> Diagnostic:
    d = rnd.generated.dispatch
    labels = tuple(
        (info.role.span, f"`{info.name}`: budget {placed.placement.role(info.stage.name, name).budget}")
        for name, info in sorted(comp.roles.items())
        if info.role.regs is not None
    )
    return l_regs.pool_overflow(
        l_regs.PoolOverflow(
            register_demand(placed),
            entry,
            d.threads,
            labels,
            notes=(
                f"after the device link: `{KERNEL}` has {rnd.kernel.registers} registers per thread at entry; "
                f"the code was generated for an entry count of {d.entry_regs} and re-solved once",
                "Σ budget × threads over the warpgroups must fit the CTA's pool (specs/hardware.md §3.2)",
            ),
            data=(("registers", str(rnd.kernel.registers)),),
        )
    )


def _tool_warnings(comp: Composition, rnd: _Round) -> list[Diagnostic]:
    """Every ptxas/nvJitLink warning of the final link (a dropped `.minnctapersm`, spills…), surfaced."""
    return [
        Diagnostic(
            Code.I_PTXAS,
            f"ptxas warns about the linked kernel: {text}",
            Severity.WARNING,
            (Label(comp.pipeline.span, "in this composition"),),
            notes=(
                "the device link compiles every component and the generated dispatch together; ptxas printed "
                "this while compiling it",
            ),
            helps=("check the `launch` line (`threads`, `blocks_per_sm`) and the roles' `regs` against the target",),
        )
        for text in tool_warnings(rnd.info_log)
    ]


def _check_residency(comp: Composition, placed: Placed, rnd: _Round) -> None:
    """`blocks_per_sm` with the linked kernel's registers and barriers (L-LAUNCH), as ptxas compiled it."""
    usage = parse_ptxas_usage(rnd.info_log).get(KERNEL)
    found = residency_shortfall(
        comp, placed.placement, registers=rnd.kernel.registers, barriers=usage.barriers if usage is not None else None
    )
    if found is not None and comp.target is not None:
        raise DiagnosticError([residency_diagnostic(found, comp.target)])


def _spill_notes(comp: Composition, rnd: _Round) -> list[Diagnostic]:
    a = rnd.attempt
    if not (a.spill_stores or a.spill_loads):
        return []
    return [
        Diagnostic(
            Code.I_SPILL,
            f"the linked kernel `{KERNEL}` spills registers ({a.spill_stores} B stored, {a.spill_loads} B "
            "loaded per thread)",
            Severity.NOTE,
            (Label(comp.pipeline.span, "in this composition"),),
            notes=("ptxas compiles each role within its setmaxnreg budget and spills what does not fit",),
            helps=("raise the `regs` of the role whose code needs more registers",),
        )
    ]
