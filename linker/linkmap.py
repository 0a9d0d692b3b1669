"""The link map: every decision of one link, as text for people (lld ``-Map`` style) and JSON for tools.

:class:`LinkRecord` collects what a link decided and observed — inputs, the placement,
the generated stubs, trampolines, params block and dispatch kernel, each toolchain
attempt with the registers read back from the cubin, the output's hash, and every
diagnostic. Both renderings are pure functions of it with no time, host or absolute
path in them, so the same inputs give byte-identical maps. The linker writes the map
even when the link fails (with ``status`` ``failed``, or ``rejected`` when the checker
rejected the composition), holding whatever was decided before the failure.

The text map opens with a comment header explaining every column (mold's
``--print-dependencies`` does the same), then one section per kind of decision under
one fixed column header (lld's ``MapFile.cpp``): ``Value Size Align Lifetime Symbol
Why``, with a hierarchy by indentation in ``Symbol`` and ``<internal>`` for what the
linker synthesized.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from diagnostics.model import Diagnostic
from linker.artifacts import Generated
from linker.counters import RESET_RULE
from linker.launch_config import LaunchConfig, describe
from linker.watchdog import LEDGER
from placement.problem import Domain
from placement.report import to_jsonable as placement_jsonable
from placement.result import Placement

FORMAT = "kernlink-link/1"

_HEADER = """\
# kernlink link map ({format})
# pipeline `{pipeline}` from {source}; target {target}; kernel `{kernel}`; status {status}
# toolkit {toolkit}; nvJitLink options {options}
#
# Each section lists rows under one header:
#   Value     the decided number: an offset (smem: bytes from the dynamic shared memory base,
#             shared address {base}; params: bytes into the kernel's params block), a named-
#             barrier ID, a ring depth, a first warp, a register budget, a handle's constant
#   Size      bytes (inputs, smem, params, facts), warps (warps, registers), threads (barrier)
#   Align     the alignment the value obeys; for warps, the warp alignment of the role
#   Lifetime  kernel | phase P | until C.E | from C.E | between C.E C.F (smem, barrier)
#   Symbol    a package or stage, then its items indented; <internal> is what the linker
#             synthesized (handle stubs, trampolines, the params block, the dispatch kernel);
#             <reserved> and <idle> are the system's
#   Why       the clause, objective or rule that decided the row
# The placement comes from one joint solve (`kernlink place` prints it alone):
# objective {optimal}; tie-break {canonical}."""

_W = (10, 10, 6, 12, 46)


def _row(
    value: object = "",
    size: object = "",
    align: object = "",
    lifetime: str = "",
    symbol: str = "",
    why: str = "",
    depth: int = 0,
) -> str:
    sym = "    " * depth + symbol
    return (
        f"{value!s:>{_W[0]}} {size!s:>{_W[1]}} {align!s:>{_W[2]}}  {lifetime:<{_W[3]}} {sym:<{_W[4]}} {why}"
    ).rstrip()


@dataclass(frozen=True)
class InputRecord:
    """One linked package: where the pipeline names it, what it holds."""

    path: str
    stage: str
    version: str
    toolkit: str
    size: int
    sha256: str
    lto_bytes: int


@dataclass
class Attempt:
    """One generate → compile → link round and what the cubin said about registers (filled as it runs)."""

    entry_assumed: int
    lto_bytes: int = 0
    registers: int | None = None
    ptxas_registers: int | None = None
    static_smem: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    pool: int | None = None
    demand: int | None = None
    outcome: str = ""


@dataclass
class LinkRecord:
    """Everything one link decided, in the order it was decided."""

    pipeline: str
    pipeline_source: str
    target: str
    status: str = "failed"
    toolkit: dict[str, str] = field(default_factory=dict)
    options: tuple[str, ...] = ()
    inputs: list[InputRecord] = field(default_factory=list)
    placement: Placement | None = None
    resolved: bool = False
    generated: Generated | None = None
    attempts: list[Attempt] = field(default_factory=list)
    cubin_size: int | None = None
    cubin_sha256: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    providers: list[dict[str, Any]] = field(default_factory=list)  # linker/providers.py, in stage order
    launch: LaunchConfig | None = None  # linker/launch_config.py: what every launcher reads


# ----------------------------------------------------------------- text


def render_text(record: LinkRecord) -> str:
    """The text map, ending with a newline."""
    r = record
    g = r.generated
    p = r.placement
    base = g.dispatch.smem_base if g is not None else 1024
    lines = [
        _HEADER.format(
            format=FORMAT,
            pipeline=r.pipeline,
            source=r.pipeline_source,
            target=r.target,
            status=r.status,
            kernel=g.dispatch.kernel if g is not None else "kl_dispatch",
            toolkit=", ".join(f"{k} {v}" for k, v in sorted(r.toolkit.items())) or "(not reached)",
            options=" ".join(r.options) or "(not reached)",
            base=base,
            optimal=("proven optimal" if p.optimal else "not proven optimal (budget)") if p else "(not placed)",
            canonical=("proven canonical" if p.canonical else "not proven canonical (budget)") if p else "(not placed)",
        ),
        "",
        _row("Value", "Size", "Align", "Lifetime", "Symbol", "Why"),
    ]
    lines += _inputs(r)
    if r.providers or r.status == "linked":
        lines += _host_code(r.providers)
    if p is not None:
        lines += _storage(p, base, g)
        lines += _rings(p)
        lines += _warps(p, g)
        lines += _registers(r, p, g)
    if g is not None:
        lines += _params(g, r.providers)
        lines += _handles(g)
        lines += _calls(g)
        lines += _transfers(g)
        lines += _facts(g)
        lines += _counters(g)
        lines += _watchdog(g)
        lines += _dispatch(g, r.launch)
    lines += _link(r)
    lines += ["", "diagnostics"]
    if not r.diagnostics:
        lines.append("    (none)")
    for d in r.diagnostics:
        lines.append(f"    {d.severity.value}[{d.code}]: {d.message}")
        lines += [f"        note: {n}" for note in d.notes for n in note.splitlines()]
    return "\n".join(lines) + "\n"


def _inputs(r: LinkRecord) -> list[str]:
    lines = ["", "inputs"]
    for i in r.inputs:
        lines.append(
            _row(
                "",
                i.size,
                "",
                "",
                i.path,
                f"{i.stage} {i.version}; {i.toolkit}; lto.ir {i.lto_bytes} B; sha256 {i.sha256[:16]}",
            )
        )
    if r.attempts and r.attempts[-1].lto_bytes:
        lines.append(
            _row("", r.attempts[-1].lto_bytes, "", "", "<internal>", "generated.cu compiled by NVRTC to LTO IR")
        )
    return lines


def _host_code(providers: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "",
        "host  host providers: the stages' C code that kernel.h and kernlink.Session compile and run before "
        "the kernel (Value: the offset of the params block it is given)",
    ]
    if not providers:
        lines.append(_row(symbol="(none)", why="no stage calls a host provider: the link carries no host code"))
    for x in providers:
        fills = ", ".join(x["fills"]) or "nothing"
        offset = "NULL" if x["offset"] is None else x["offset"]
        why = f"{x['stage']}: fn {x['function']} fills {fills}; sha256 {x['sha256']}"
        lines.append(_row(offset, "", "", "", x["file"], why))
    return lines


def _storage(p: Placement, base: int, g: Generated | None) -> list[str]:
    use = p.use(Domain.SMEM)
    dynamic = max(0, use.end - base)
    lines = [
        "",
        f"smem  dynamic shared memory: {dynamic} B from shared address {base} (no static shared memory)",
        _row(-base, base, "", "kernel", "<reserved>", "system bytes of every block, below the dynamic base"),
    ]
    lines += _domain(p, Domain.SMEM, -base)
    lines += [
        "",
        "barrier  named barriers (IDs)",
        _row(0, "", "", "kernel", "<reserved>", "the block-wide barrier (`__syncthreads`)"),
    ]
    lines += _domain(p, Domain.BARRIER, 0)
    return lines


def _domain(p: Placement, domain: Domain, shift: int) -> list[str]:
    lines = []
    slots = p.in_domain(domain)
    for owner in sorted({s.owner for s in slots}):
        lines.append(_row(symbol=owner))
        for s in sorted((s for s in slots if s.owner == owner), key=lambda s: (s.offset, s.name)):
            why = s.why
            if s.kind == "mbarriers":
                per = s.size // 2
                why += f"; full barriers at +0, empty at +{per}"
            size = s.demand if domain is Domain.BARRIER else s.size
            lines.append(_row(s.offset + shift, size, s.align, s.lifetime.text(), s.name, why, 1))
    return lines


def _rings(p: Placement) -> list[str]:
    lines = ["", "rings  depth chosen at link time (Size: bytes of one slot)"]
    if not p.rings:
        lines.append(_row(symbol="(none)"))
    lines += [
        _row(r.depth, r.slot_bytes, "", "", f"{r.owner}.{r.name}", f"depth in {r.depth_min}..{r.depth_max}: {r.why}")
        for r in p.rings
    ]
    return lines


def _warps(p: Placement, g: Generated | None) -> list[str]:
    entries = {(r.stage, r.role): r.entry for r in g.dispatch.roles} if g is not None else {}
    lines = ["", f"warps  {p.block_warps} warps = {32 * p.block_warps} threads"]
    for owner in sorted({r.owner for r in p.roles}):
        lines.append(_row(symbol=owner))
        for r in sorted((r for r in p.roles if r.owner == owner), key=lambda r: r.first_warp):
            entry = entries.get((r.owner, r.name))
            why = (f"entry `{entry}`; " if entry else "") + r.why
            lines.append(_row(r.first_warp, r.warps, 4 if r.warpgroup else 1, "", r.name, why, 1))
    for w in p.idle_warps:
        lines.append(_row(w, 1, 1, "", "<idle>", "padding: returns at once"))
    return lines


def _registers(r: LinkRecord, p: Placement, g: Generated | None) -> list[str]:
    if g is not None and not g.dispatch.setmaxnreg:
        return ["", "registers  no setmaxnreg: no role declares `regs`; every warp keeps the kernel's entry count"]
    last = r.attempts[-1] if r.attempts else None
    seen = (
        f"{last.registers} registers per thread in the cubin" if last and last.registers is not None else "no cubin yet"
    )
    head = f"registers  setmaxnreg per warpgroup; entry {p.entry_regs} predicted, {seen}; pool {p.register_pool}" + (
        " (re-solved with the linked kernel's count)" if r.resolved else ""
    )
    lines = ["", head]
    ops = {}
    if g is not None:
        for run in g.dispatch.groups:
            for index in run.groups:
                ops[index] = f"setmaxnreg.{run.op} {run.budget}" if run.op else f"keeps {run.budget}"
    lines.append(_row(symbol="<internal>"))
    for grp in p.groups:
        roles = ", ".join(grp.roles) or "<idle>"
        lines.append(
            _row(
                grp.budget,
                grp.warps,
                "",
                "",
                f"group {grp.index} (warps {grp.first_warp}..{grp.first_warp + grp.warps - 1})",
                f"{ops.get(grp.index, '')}: {roles}; {grp.why}",
                1,
            )
        )
    return lines


def _params(g: Generated, providers: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    lines = ["", f"params  the kernel's params block `KlParams`: {g.params.size} B, align {g.params.align}"]
    if not g.params.regions:
        lines.append(_row(symbol="(none)", why="no stage declares `params`; the kernel takes no parameter"))
    for region in g.params.regions:
        lines.append(
            _row(
                region.offset,
                region.size,
                region.align,
                "",
                region.stage,
                f"`{region.block}` at the next multiple of its alignment, in pipeline order",
            )
        )
        for f in (f for f in g.params.fields if f.stage == region.stage and f.block == region.block):
            if f.source == "fact":
                why = (
                    f"{f.type} = fact `{f.fact}` = {f.value}, owned by {f.owner}{_pinned(g, f.fact)}; "
                    "written by the launch helper"
                )
            elif f.fact is not None:
                allowed = f"; allowed {_values(f.allowed)}" if f.allowed else ""
                why = f"{f.type} = fact `{f.fact}`, given by the caller{allowed}"
            else:
                filler = next(
                    (p["function"] for p in providers if p["stage"] == f.stage and f.name in p["fills"]), None
                )
                why = f"{f.type}, " + (f"filled by host provider `{filler}`" if filler else "given by the caller")
                why += f"; allowed {_values(f.allowed)}" if f.allowed else ""
            lines.append(_row(f.offset, f.size, f.size, "", f.name, why, 1))
    return lines


def _values(values: tuple[int, ...]) -> str:
    return ", ".join(str(v) for v in values[:8]) + (", …" if len(values) > 8 else "")


def _handles(g: Generated) -> list[str]:
    lines = ["", "handles  stubs in generated.cu; LTO folds each into an immediate"]
    if not g.handles:
        lines.append(_row(symbol="(none)", why="no component reads a handle"))
    for stage in dict.fromkeys(h.stage for h in g.handles):
        lines.append(_row(symbol=stage))
        lines += [_row(h.value, "", "", "", h.symbol, h.why, 1) for h in g.handles if h.stage == stage]
    return lines


def _calls(g: Generated) -> list[str]:
    lines = ["", "calls  trampolines in generated.cu, and exports no call reaches"]
    if not g.trampolines and not g.dropped:
        lines.append(_row(symbol="(none)"))
    if g.trampolines:
        lines.append(_row(symbol="<internal>"))
    for t in g.trampolines:
        lines.append(
            _row(
                "",
                "",
                "",
                "",
                f"{t.symbol} -> {t.export_symbol}",
                f"call `{t.call}` {t.signature} by {'; '.join(t.callers)}; served by the export of {t.export_stage}",
                1,
            )
        )
    for d in g.dropped:
        lines.append(
            _row(
                "",
                "",
                "",
                "",
                f"{d.stage}: {d.symbol}",
                f"export `{d.name}` dropped: no call site reaches it (I-EXPORT-DROPPED)",
            )
        )
    return lines


def _transfers(g: Generated) -> list[str]:
    lines = [
        "",
        "transfers  tensor connections: routes in generated.cu (Value: scratch offset from the dynamic "
        "base; Size: scratch bytes)",
    ]
    if not g.transfers and not g.unused_exports:
        lines.append(_row(symbol="(none)"))
    for t in g.transfers:
        value = t.scratch_offset if t.scratch_offset is not None else ""
        size = t.scratch_bytes or ""
        lines.append(_row(value, size, "", "", t.connection, t.why))
        p_first, p_count = t.producer_threads
        c_first, c_count = t.consumer_threads
        when = (
            f"once per tile with its generation g (slot g % {t.depth} of ring `{t.ring}`, slots {t.slot_stride} B "
            "apart)"
            if t.ring
            else "once at the ready event"
        )
        lines.append(
            _row(
                "",
                "",
                "",
                "",
                t.export_symbol,
                f"export handle: threads {p_first}..{p_first + p_count - 1} call it {when}",
                1,
            )
        )
        lines.append(
            _row(
                "",
                "",
                "",
                "",
                t.import_symbol,
                f"import handle: threads {c_first}..{c_first + c_count - 1} call it for chunks "
                f"0..{t.chunks - 1}{' of each generation' if t.ring else ''}, {t.regs_per_call} {t.elem} registers "
                "per call",
                1,
            )
        )
        for i, bar in enumerate(t.barrier_ids):
            lines.append(
                _row(
                    bar,
                    t.barrier_threads,
                    "",
                    "kernel",
                    f"barrier {i}",
                    f"named barrier `transfer.{t.import_name}.{i}` (placed with the other barriers)",
                    1,
                )
            )
    for u in g.unused_exports:
        lines.append(
            _row(
                "",
                "",
                "",
                "",
                f"{u.stage}: {u.symbol}",
                f"export `{u.export}` is imported by no stage: the handle does nothing",
            )
        )
    return lines


def _pinned(g: Generated, fact: str | None) -> str:
    """``, pinned by `T` (assumes x == 128)`` for a fact its assumers pinned, else nothing."""
    return next((f", {why}" for name, _, why in g.pins if name == fact), "")


def _facts(g: Generated) -> list[str]:
    lines = ["", "facts  values written into params fields, and fact handles LTO folds into immediates"]
    facts = [f for f in g.params.fields if f.fact is not None]
    folded = [h for h in g.handles if h.kind == "fact"]
    if not facts and not folded and not g.pins:
        lines.append(_row(symbol="(none)"))
    for fact, pinned, why in g.pins:
        lines.append(_row(pinned, "", "", "", fact, f"owner's choice {why}"))
    for h in folded:
        lines.append(_row(h.value, "", "", "", h.item, f"folded: `{h.stage}` reads it through `{h.symbol}`"))
    for f in facts:
        value = f.value if f.value is not None else "caller"
        lines.append(
            _row(
                value,
                f.size,
                "",
                "",
                f.fact or "",
                f"owned by {f.owner or '(no owner)'}{_pinned(g, f.fact)}; "
                f"`{f.stage}` field `{f.name}` at params +{f.offset}",
            )
        )
    return lines


def _counters(g: Generated) -> list[str]:
    a = g.counters
    if a.size == 0:
        return []
    lines = [
        "",
        f"counters  `{a.symbol}`: {a.size} 32-bit words in global memory (Value: first slot)",
        _row("", 4 * a.size, "", "launch", a.symbol, f"reset: {RESET_RULE}", 1),
    ]
    for c in a.counters:
        lines.append(
            _row(c.index, c.slots, "", "launch", c.name, f"scope {c.scope}; {c.why}; read by {', '.join(c.users)}", 2)
        )
    return lines


def _watchdog(g: Generated) -> list[str]:
    wd = g.watchdog
    if wd is None:
        return []
    lines = [
        "",
        f"watchdog  --watchdog={wd.cycles}: every wait below traps after {wd.cycles} cycles and records "
        f"an entry in the host-mapped ledger `{LEDGER}` (Value: site)",
    ]
    for site in wd.sites:
        lines.append(
            _row(
                site.id,
                "",
                "",
                "",
                site.symbol,
                f"{site.where}: {site.stage} `{site.item}` ({site.kind}; {site.detail})",
                1,
            )
        )
    return lines


def _dispatch(g: Generated, launch: LaunchConfig | None) -> list[str]:
    d = g.dispatch
    bounds = f"{d.threads}, {d.min_blocks}" if d.min_blocks is not None else f"{d.threads}"
    lines = [
        "",
        "dispatch  the generated kernel",
        _row(symbol="<internal>"),
        _row(
            "",
            d.threads,
            "",
            "",
            d.kernel,
            f"__launch_bounds__({bounds}); {d.dynamic_smem} B dynamic shared memory; {d.launch} grid"
            + (f"; blocks_per_sm {d.blocks_per_sm}" if d.blocks_per_sm else "")
            + (
                "; clusters of {}x{}x{} CTAs (`__cluster_dims__`; cluster barriers after the ring inits and "
                "before exit)".format(*d.cluster)
                if d.clustered
                else ""
            ),
            1,
        ),
    ]
    if launch is not None:
        lines.append(
            _row(
                symbol="launch",
                why=f"link.json `launch`, what kernel.h, run_linked and Session launch with: {describe(launch)}",
                depth=2,
            )
        )
    for init in d.inits:
        lines.append(
            _row(
                init.thread,
                1,
                "",
                "",
                f"{init.symbol}",
                f"ring `{init.ring}` init by role `{init.role}`: its first thread, before `__syncthreads()`",
                2,
            )
        )
    for role in d.roles:
        lines.append(
            _row(
                role.first_warp,
                role.warps,
                "",
                "",
                role.entry,
                f"{role.stage} role `{role.role}` with "
                + (f"params `{role.params_member}`" if role.params_member else "no params"),
                2,
            )
        )
    return lines


def _link(r: LinkRecord) -> list[str]:
    lines = ["", "link  nvJitLink rounds (Value: registers per thread the cubin records for the kernel)"]
    if not r.attempts:
        lines.append(_row(symbol="(not reached)"))
    for n, a in enumerate(r.attempts, 1):
        regs = a.registers if a.registers is not None else "-"
        facts = [f"generated for entry {a.entry_assumed}"]
        if a.ptxas_registers is not None:
            facts.append(f"ptxas -verbose reports {a.ptxas_registers}")
        if a.static_smem is not None:
            facts.append(f"static smem {a.static_smem} B")
        if a.spill_stores or a.spill_loads:
            facts.append(f"spills {a.spill_stores} B stored, {a.spill_loads} B loaded")
        if a.pool is not None and a.demand is not None:
            facts.append(f"groups need {a.demand} of pool {a.pool}")
        lines.append(_row(regs, "", "", "", f"round {n}", "; ".join(facts) + (f": {a.outcome}" if a.outcome else "")))
    if r.cubin_sha256 is not None:
        lines.append(_row("", r.cubin_size, "", "", "kernel.cubin", f"sha256 {r.cubin_sha256}"))
    return lines


# ----------------------------------------------------------------- JSON


def to_jsonable(record: LinkRecord) -> dict[str, Any]:
    r = record
    g = r.generated
    out: dict[str, Any] = {
        "format": FORMAT,
        "pipeline": r.pipeline,
        "pipeline_source": r.pipeline_source,
        "target": r.target,
        "status": r.status,
        "toolkit": dict(sorted(r.toolkit.items())),
        "options": list(r.options),
        "inputs": [i.__dict__ for i in r.inputs],
        "placement": _placement(r.placement),
        "resolved": r.resolved,
        "attempts": [a.__dict__ for a in r.attempts],
        "cubin": None if r.cubin_sha256 is None else {"size": r.cubin_size, "sha256": r.cubin_sha256},
        "diagnostics": [_diagnostic(d) for d in r.diagnostics],
    }
    if g is not None:
        d = g.dispatch
        out["generated"] = {
            "handles": [h.__dict__ for h in g.handles],
            "trampolines": [
                {**t.__dict__, "callers": list(t.callers), "params": list(t.params)} for t in g.trampolines
            ],
            "dropped_exports": [x.__dict__ for x in g.dropped],
            "transfers": [t.as_json() for t in g.transfers],
            "unused_tensor_exports": [u.__dict__ for u in g.unused_exports],
        }
        if g.counters.size:
            out["counters"] = g.counters.as_json()
        if g.watchdog is not None:
            out["watchdog"] = g.watchdog.as_json()
        out["params"] = {
            "size": g.params.size,
            "align": g.params.align,
            "regions": [x.__dict__ for x in g.params.regions],
            "fields": [{**f.__dict__, "allowed": list(f.allowed)} for f in g.params.fields],
        }
        out["dispatch"] = {
            "kernel": d.kernel,
            "threads": d.threads,
            "block_warps": d.block_warps,
            "min_blocks": d.min_blocks,
            "dynamic_smem": d.dynamic_smem,
            "smem_base": d.smem_base,
            "launch": d.launch,
            "blocks_per_sm": d.blocks_per_sm,
            "setmaxnreg": d.setmaxnreg,
            "entry_regs": d.entry_regs,
            "groups": [{**x.__dict__, "groups": list(x.groups), "roles": list(x.roles)} for x in d.groups],
            "inits": [x.__dict__ for x in d.inits],
            "roles": [x.__dict__ for x in d.roles],
            "idle_warps": list(d.idle_warps),
            "cluster": list(d.cluster),
        }
    if r.providers:
        out["providers"] = list(r.providers)
    if r.launch is not None:
        out["launch"] = r.launch.as_json()
    return out


def _placement(p: Placement | None) -> dict[str, Any] | None:
    return None if p is None else placement_jsonable(p)


def _diagnostic(d: Diagnostic) -> dict[str, Any]:
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "notes": list(d.notes),
        "helps": list(d.helps),
        "data": dict(d.data),
    }


def render_json(record: LinkRecord) -> str:
    """Deterministic JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(to_jsonable(record), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
