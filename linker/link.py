"""`kernlink link`: from a checked, placed composition to one cubin, its generated source and its link map.

Steps (every failure is a diagnostic, recorded in the map, which is written anyway):

1. **Inputs.** Every stage must come from a package (a stage checked from its `.kc`
   alone is ``L-STAGE`` here: there is no object to link); each package is read
   again (``L-INTEGRITY`` if it changed since the check) for its LTO IR. Parts of
   the composition the role-entry ABI cannot express yet are ``E-UNSUPPORTED``.
1b. **Route barriers** (:mod:`linker.transfers`): the staging routes' named barriers
   are added to the placement problem as barrier claims and solved once more (the
   roles must keep their warps, which the routes were chosen for).
2. **Generate** (:mod:`linker.generate`) the handle stubs, trampolines, params block
   and dispatch kernel ``kl_dispatch``; compile them with NVRTC to LTO IR (from the
   filesystem root, so the IR does not depend on the working directory).
3. **Link** everything with nvJitLink ``-lto -verbose`` (and once more with ``-ptx``
   when asked). An nvJitLink failure is ``L-LINK`` carrying its error log; so is a
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
   placement is solved again with R as the entry count (an ``L-REGS`` rejection from
   that solve ends the link, and so does one that moves a role a tensor route runs
   on); then the code is generated for R and linked again,
   and a second miss is ``L-REGS``. A kernel whose ptxas report says ``'setmaxnreg'
   ignored`` is ``L-REGS`` too. Spilling is reported as an ``I-SPILL`` note: it is
   the cost of a budget below what a role's code uses, not an error.
5. **Outputs** (:func:`write_outputs`): ``kernel.cubin``, ``generated.cu``,
   ``link.map``, ``link.json`` (and ``kernel.ptx`` with ``emit_ptx``), each written
   atomically. A failed link writes the map and JSON (and the generated source when
   there is one) and removes a stale ``kernel.cubin``/``kernel.ptx`` of an earlier
   link from the directory.

The same inputs give byte-identical outputs: placement is canonical, generation is
pure, NVRTC runs from a fixed directory and inputs are named by their pipeline
paths, and the map holds no time, host or absolute path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from checker.composition import Composition, StageEntry
from diagnostics.files import atomic_write_bytes, atomic_write_text
from diagnostics.model import Diagnostic, DiagnosticError, Label, Severity, sort_diagnostics
from linker import linkmap
from linker.cubin import KernelInfo, read_cubin
from linker.generate import KERNEL, SOURCE_NAME, Generated, generate, unsupported
from linker.linkmap import Attempt, InputRecord, LinkRecord
from linker.manifest import StagePackage, read_stage_package
from linker.toolchain import compile_nvrtc, link, stable_cwd, toolkit_versions
from linker.transfers import moved_roles, place_route_barriers
from placement.adapter import Placed
from placement.problem import Problem
from placement.solve import solve
from placement.verify import verify
from transfer_model.adapter import RoutedSeam, route_composition

CUBIN = "kernel.cubin"
PTX = "kernel.ptx"
MAP = "link.map"
JSON = "link.json"
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


def record_for(comp: Composition) -> LinkRecord:
    """An empty record for a composition (what a link writes when it stops before placing)."""
    return LinkRecord(comp.pipeline.name, comp.pipeline_source, comp.target_name)


def link_composition(comp: Composition, placed: Placed, *, emit_ptx: bool = False,
                     routes: Sequence[RoutedSeam] | None = None, watchdog: int | None = None) -> LinkOutput:
    """Generate, compile and device-link a checked, placed composition (module docstring).

    ``routes`` are the tensor connections' routes on ``placed`` (``kernlink.downstream``
    computed them during the check); None routes them here. ``watchdog`` bounds the generated
    waits (``kernlink link --watchdog``, :mod:`linker.watchdog`).
    """
    start = time.perf_counter()
    record = record_for(comp)
    record.placement = placed.placement
    out = LinkOutput(record)
    try:
        packages = _inputs(comp, record)
        if routes is None:
            routes, route_diags = route_composition(comp, placed)
            if any(d.is_error for d in route_diags):
                raise DiagnosticError(route_diags)
        placed = place_route_barriers(comp, placed, routes)
        record.placement = placed.placement
        versions = toolkit_versions()
        record.toolkit = {"nvrtc": versions.as_dict()["nvrtc"], "nvjitlink": versions.as_dict()["nvjitlink"]}
        record.options = (f"-arch={_arch(comp)}", "-lto", "-verbose")
        first = _round(comp, placed, packages, None, record, out.seconds, routes, watchdog)
        final = first
        need = _registers(first, placed)
        if need is not None:
            placed = _resolve(comp, placed, need, record, bool(routes))
            final = _round(comp, placed, packages, need, record, out.seconds, routes, watchdog)
            again = _registers(final, placed)
            if again is not None:
                raise DiagnosticError([_regs_failed(comp, final, placed, again)])
        final.attempt.outcome = "accepted"
        out.cubin = final.cubin
        record.cubin_size = len(final.cubin)
        record.cubin_sha256 = hashlib.sha256(final.cubin).hexdigest()
        record.diagnostics.extend(final.generated.notes)
        record.diagnostics.extend(_spill_notes(comp, final))
        if emit_ptx:
            ptx_start = time.perf_counter()
            out.ptx = _link_ptx(comp, packages, final)
            out.seconds["ptx"] = time.perf_counter() - ptx_start
        record.status = "linked"
    except DiagnosticError as err:
        record.status = "failed"
        record.diagnostics.extend(err.diagnostics)
    record.diagnostics[:] = sort_diagnostics(record.diagnostics)
    out.seconds["total"] = time.perf_counter() - start
    return out


def write_outputs(out: LinkOutput, directory: str | Path) -> list[Path]:
    """Write the link's files into ``directory`` (created if needed); returns the paths written.

    Raises ``DiagnosticError`` (``E-IO``) when the directory cannot be made.
    """
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DiagnosticError([Diagnostic("E-IO", f"cannot create directory `{root}`: {err.strerror or err}")]) from err
    written = []
    if out.generated is not None:
        atomic_write_text(root / SOURCE_NAME, out.generated.source)
        written.append(root / SOURCE_NAME)
    atomic_write_text(root / MAP, out.map_text)
    atomic_write_text(root / JSON, out.map_json)
    written += [root / MAP, root / JSON]
    products = {CUBIN: out.cubin, PTX: out.ptx.encode() if out.ptx is not None else None}
    for name, data in products.items():
        if data is not None and out.ok:
            atomic_write_bytes(root / name, data)
            written.append(root / name)
        else:
            (root / name).unlink(missing_ok=True)
    return written


# ----------------------------------------------------------------- inputs

def _arch(comp: Composition) -> str:
    return comp.target.name if comp.target is not None else comp.target_name


def _inputs(comp: Composition, record: LinkRecord) -> list[tuple[str, StagePackage]]:
    problems = unsupported(comp)
    packages: list[tuple[str, StagePackage]] = []
    for entry in comp.stages:
        if entry.package is None or entry.captured is None:
            problems.append(_no_package(comp, entry))
            continue
        try:
            pkg = read_stage_package(entry.package)
        except DiagnosticError as err:
            problems.extend(err.diagnostics)
            continue
        name = entry.use.path if entry.use is not None and entry.use.path else entry.package
        data = Path(entry.package).read_bytes()
        record.inputs.append(InputRecord(name, pkg.stage, pkg.version, pkg.toolkit, len(data),
                                         hashlib.sha256(data).hexdigest(), len(pkg.lto_ir)))
        packages.append((name, pkg))
    if problems:
        raise DiagnosticError(problems)
    return packages


def _no_package(comp: Composition, entry: StageEntry) -> Diagnostic:
    span = entry.use.span if entry.use is not None else comp.pipeline.span
    source = Path(entry.source).name
    return Diagnostic(
        "L-STAGE", f"stage `{entry.name}` was checked from its contract `{entry.source}`; linking needs its package",
        labels=(Label(span, "used here"), Label(entry.stage.span, "contract only", primary=False)),
        notes=("a contract has no object code: the link needs the LTO IR that `kernlink pack` puts in a package",),
        helps=(f"run `kernlink pack <source>.cu --contract {source} -o build/<name>.kpkg` and name the package "
               f"in the pipeline: `use \"{entry.name}\" version … from \"build/<name>.kpkg\"`",),
        data=(("stage", entry.name), ("reason", "no-package")))


# ----------------------------------------------------------------- one round

def _round(comp: Composition, placed: Placed, packages: Sequence[tuple[str, StagePackage]], entry: int | None,
           record: LinkRecord, seconds: dict[str, float], routes: Sequence[RoutedSeam],
           watchdog: int | None = None) -> _Round:
    t0 = time.perf_counter()
    generated = generate(comp, placed, entry_regs=entry, inputs=[name for name, _ in packages], routes=routes,
                         watchdog=watchdog)
    record.generated = generated
    attempt = Attempt(entry_assumed=generated.dispatch.entry_regs)
    record.attempts.append(attempt)
    t1 = time.perf_counter()
    arch = _arch(comp)
    try:
        with stable_cwd():
            glue = compile_nvrtc(generated.source, SOURCE_NAME, arch=arch)
    except DiagnosticError as err:
        raise DiagnosticError([dataclasses.replace(
            d, notes=(*d.notes, f"in the generated code (`{SOURCE_NAME}` in the link output): a kernlink bug"))
            for d in err.diagnostics]) from None
    attempt.lto_bytes = len(glue.ltoir)
    t2 = time.perf_counter()
    inputs = [(name, pkg.lto_ir) for name, pkg in packages] + [(GENERATED_LTO, glue.ltoir)]
    try:
        result = link(inputs, arch=arch, kernels=[KERNEL], verbose=True)
    except DiagnosticError as err:
        raise DiagnosticError([d if d.labels else dataclasses.replace(
            d, labels=(Label(comp.pipeline.span, "linking this pipeline"),)) for d in err.diagnostics]) from None
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
        raise DiagnosticError([Diagnostic(
            "L-LINK", f"the linked kernel `{KERNEL}` has {kernel.static_smem} B of static shared memory",
            notes=("static shared memory comes before the dynamic shared memory, so it moves the base every "
                   "shared-memory handle counts from",),
            helps=("declare no `__shared__` variables in components: claim shared memory in the contract "
                   "(`claim smem …`) and reach it through its handle",),
            data=(("kernel", KERNEL), ("static_smem", str(kernel.static_smem))))])
    return _Round(generated, result.cubin, kernel, result.info_log, attempt)


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


def _link_ptx(comp: Composition, packages: Sequence[tuple[str, StagePackage]], final: _Round) -> str:
    with stable_cwd():
        glue = compile_nvrtc(final.generated.source, SOURCE_NAME, arch=_arch(comp))
    inputs = [(name, pkg.lto_ir) for name, pkg in packages] + [(GENERATED_LTO, glue.ltoir)]
    result = link(inputs, arch=_arch(comp), kernels=[KERNEL], emit_ptx=True)
    return result.ptx or ""


# ----------------------------------------------------------------- registers

def entry_count(registers: int, unit: int = 8) -> int:
    """The per-thread count whole setmaxnreg steps can redistribute: the kernel's count rounded down."""
    return registers // unit * unit


def register_demand(placed: Placed) -> int:
    """Registers the placed groups hold at once: Σ budget × threads of each group."""
    return sum(g.budget * g.warps * 32 for g in placed.placement.groups)


def _registers(rnd: _Round, placed: Placed) -> int | None:
    """None when the linked kernel fits its register groups; else the entry count to re-solve with."""
    d = rnd.generated.dispatch
    ignored = _IGNORED.findall(rnd.info_log)
    if ignored:
        raise DiagnosticError([Diagnostic(
            "L-REGS", f"ptxas ignored `setmaxnreg` in `{KERNEL}`: the register groups would not be applied",
            notes=tuple(line.strip() for line in ignored),
            helps=("report it with the inputs: the dispatch kernel is generated with launch bounds that cap its "
                   "entry registers",))])
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


def _resolve(comp: Composition, placed: Placed, entry: int, record: LinkRecord, routed: bool) -> Placed:
    """The placement for an entry count of ``entry`` registers (the same one when its pool still fits)."""
    if register_demand(placed) <= entry * placed.placement.block_warps * 32:
        return placed
    caps = placed.problem.capacities
    problem: Problem = dataclasses.replace(
        placed.problem, capacities=dataclasses.replace(caps, max_regs_per_thread=min(entry, caps.max_regs_per_thread)))
    try:
        placement = solve(problem)
    except DiagnosticError as err:
        note = (f"after the device link: `{KERNEL}` has {entry} registers per thread at entry "
                f"(`__launch_bounds__` with its block of {placed.placement.block_warps * 32} threads), "
                f"not the {placed.placement.entry_regs} the placement assumed")
        raise DiagnosticError([dataclasses.replace(d, notes=(*d.notes, note)) for d in err.diagnostics]) from None
    problems = verify(problem, placement)
    if problems:
        raise DiagnosticError([Diagnostic("E-INTERNAL", "the re-solved placement fails verification",
                                          notes=tuple(problems[:10]))])
    moved = moved_roles(placed.placement, placement) if routed else []
    if moved:
        raise DiagnosticError([Diagnostic(
            "L-REGS", f"re-solving the register groups for {entry} entry registers moves roles that tensor routes "
                      "run on", labels=(Label(comp.pipeline.span, "in this composition"),), notes=tuple(moved),
            helps=("lower the roles' `regs`, or the block's `blocks_per_sm`",))])
    record.placement = placement
    record.resolved = True
    return Placed(problem, placement)


def _regs_failed(comp: Composition, rnd: _Round, placed: Placed, entry: int) -> Diagnostic:
    d = rnd.generated.dispatch
    demand = register_demand(placed)
    labels = tuple(Label(info.role.span, f"`{info.name}`: budget {placed.placement.role(info.stage.name, name).budget}",
                         primary=i == 0)
                   for i, (name, info) in enumerate(sorted(comp.roles.items())) if info.role.regs is not None)
    return Diagnostic(
        "L-REGS", f"the linked kernel `{KERNEL}` has {rnd.kernel.registers} registers per thread at entry; its "
                  f"register groups need {demand} registers of a pool of {entry * d.threads}",
        labels=labels,
        notes=(f"the code was generated for an entry count of {d.entry_regs} and re-solved once",
               "Σ budget × threads over the warpgroups must fit the CTA's pool (HARDWARE.md §3.2)"),
        helps=("lower the roles' `regs`, or the block's `blocks_per_sm`",),
        data=(("registers", str(rnd.kernel.registers)), ("demand", str(demand)),
              ("pool", str(entry * d.threads))))


def _spill_notes(comp: Composition, rnd: _Round) -> list[Diagnostic]:
    a = rnd.attempt
    if not (a.spill_stores or a.spill_loads):
        return []
    return [Diagnostic(
        "I-SPILL", f"the linked kernel `{KERNEL}` spills registers ({a.spill_stores} B stored, {a.spill_loads} B "
                   "loaded per thread)",
        Severity.NOTE, (Label(comp.pipeline.span, "in this composition"),),
        notes=("ptxas compiles each role within its setmaxnreg budget and spills what does not fit",),
        helps=("raise the `regs` of the role whose code needs more registers",))]
