"""Fit a composition to several targets and search re-checked repairs (``kernlink fit``).

For every target the composition is checked and placed as ``kernlink check --target``
would; the report shows each resource's use against its capacity (block threads,
shared memory per block — the block's share at ``blocks_per_sm`` —, tensor memory,
named-barrier IDs, the register pool, blocks per SM) and the largest grid whose
blocks are all resident at once (blocks per SM × the SMs of the target's reference
device). For a target that fails, the rejection's core (the claims, rings, roles or
launch attribute it names) becomes candidate edits of the contracts — a ring's
minimum depth lowered within its range, a lower register budget, a claim halved, a
smaller ``blocks_per_sm``, a resident grid — each applied to a copy of the inputs and
re-checked for that target; those that make it fit are printed, cheapest first, with
what they cost.

Costs are relative losses, comparable across kinds: lowering a ring's minimum depth
from d to d' costs (d − d') / d, a budget from r to r' costs (r − r') / r, halving a
claim 0.5, ``blocks_per_sm`` from b to b' (b − b') / b; a resident grid costs 0 (the
work loop takes the rest).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.pipeline import Analysis, AnalysisContext, analyse
from checker.composition import Composition
from checker.residency import blocks_line, launch_blocks
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware import residency as R
from hardware.targets import TargetSpec, target
from package.loader import load
from placement.adapter import placed_residency
from placement.problem import Domain

DEFAULT_TARGETS = ("sm_90a", "sm_100a", "sm_120a")
MAX_REPAIRS = 3
ROWS = (
    "block threads",
    "shared memory per block",
    "tensor memory",
    "named barrier IDs",
    "register pool",
    "blocks per SM (asked / resident)",
)


@dataclass(frozen=True)
class Row:
    """One resource of one target: what the composition uses of what the target offers."""

    resource: str
    used: int | None
    capacity: int
    unit: str

    @property
    def ok(self) -> bool:
        return self.used is None or self.used <= self.capacity


@dataclass(frozen=True)
class Edit:
    """One suggested change of one contract line: the attribute ``old`` (``keyword value``)
    becomes ``new`` on the line of ``span`` (an empty ``old`` appends ``new`` to the line);
    ``also`` are the edits that must go with it (a halved slot's transaction bytes)."""

    span: Span
    old: str
    new: str
    what: str
    cost: float
    detail: str = ""
    also: tuple[Edit, ...] = ()

    def edits(self) -> tuple[Edit, ...]:
        return (self, *self.also)

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.span.file,
            "line": self.span.line,
            "old": self.old,
            "new": self.new,
            "edit": self.what,
            "cost": round(self.cost, 4),
            "detail": self.detail,
            "also": [{"file": e.span.file, "line": e.span.line, "old": e.old, "new": e.new} for e in self.also],
        }


@dataclass
class TargetFit:
    target: str
    fits: bool
    errors: list[Diagnostic] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    blocks_per_sm: int = 1
    resident: int | None = None
    limiting: str | None = None
    safe_grid: int | None = None
    repairs: list[Edit] = field(default_factory=list)
    tried: int = 0
    relaxed: bool = False  # the rows are the composition's use at its minimum ring depths (analysis/fit_demand.py)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "fits": self.fits,
            "errors": [{"code": d.code, "message": d.message} for d in self.errors],
            "resources": [
                {"resource": r.resource, "used": r.used, "capacity": r.capacity, "unit": r.unit} for r in self.rows
            ],
            "blocks_per_sm": self.blocks_per_sm,
            "resident_blocks_per_sm": self.resident,
            "limiting": self.limiting,
            "largest_safe_grid": self.safe_grid,
            "repairs": [e.as_dict() for e in self.repairs],
            "repairs_tried": self.tried,
            "resources_at_minimum_depths": self.relaxed,
        }


# ----------------------------------------------------------------- one target


def fit_target(paths: Sequence[Path], name: str, *, repairs: bool = True) -> TargetFit:
    """Check and place ``paths`` for target ``name``; for a failure, search repairs."""
    result = _check(paths, name)
    spec = target(name)
    out = TargetFit(name, result.accepted, [d for d in result.diagnostics if d.is_error])
    if spec is None:
        return out
    comp = result.composition
    out.blocks_per_sm = launch_blocks(comp) if comp is not None else 1
    out.rows = _rows(result, spec)
    placed = result.downstream.placed if result.downstream is not None else None
    out.relaxed = placed is None and any(r.used is not None for r in out.rows)
    if placed is not None:
        res = placed_residency(spec, placed.placement)
        out.resident = res.blocks
        out.limiting = res.limiting.resource
        out.safe_grid = res.blocks * spec.sm_count
    if not out.fits and repairs and comp is not None:
        out.repairs, out.tried = search_repairs(paths, name, comp, out.errors, spec)
    return out


def _check(paths: Sequence[Path], name: str) -> Analysis:
    """The check of ``paths`` for target ``name``, as ``kernlink check --target`` runs it."""
    return analyse(load(paths), AnalysisContext(name))


def _rows(result: Analysis, spec: TargetSpec) -> list[Row]:
    """Each resource's use against the target's capacity; for a target the composition does not fit,
    the use of its placement with room relaxed (analysis/fit_demand.py)."""
    from analysis.fit_demand import demand as relaxed_demand

    placed = result.downstream.placed if result.downstream is not None else None
    comp = result.composition
    found = (placed.placement, placed.problem.capacities) if placed is not None else None
    if found is None and comp is not None:
        found = relaxed_demand(comp)
    if found is None:
        return [
            Row("block threads", None, spec.max_threads_per_block, "threads"),
            Row("shared memory per block", None, spec.smem_per_block_optin, "B"),
        ]
    p, caps = found
    smem = p.use(Domain.SMEM)
    rows = [
        Row("block threads", p.block_warps * spec.warp_size, spec.max_threads_per_block, "threads"),
        Row("shared memory per block", smem.end - smem.start, caps.smem_per_block_optin, "B"),
    ]
    if spec.tmem_columns:
        rows.append(Row("tensor memory", p.use(Domain.TMEM).end, caps.tmem_columns, "columns"))
    rows.append(Row("named barrier IDs", max(p.use(Domain.BARRIER).end, 1), spec.named_barriers_per_cta, "IDs"))
    if p.groups and any(r.role.regs is not None for r in (comp.roles.values() if comp is not None else ())):
        demand = sum(g.budget * g.warps * spec.warp_size for g in p.groups)
        rows.append(Row("register pool", demand, p.register_pool, "registers"))
    res = placed_residency(spec, p)
    rows.append(Row("blocks per SM (asked / resident)", caps.blocks_per_sm, res.blocks, "blocks"))
    return rows


# ----------------------------------------------------------------- repairs


def search_repairs(
    paths: Sequence[Path], name: str, comp: Composition, errors: Sequence[Diagnostic], spec: TargetSpec
) -> tuple[list[Edit], int]:
    """Candidate edits from the first rejection's core, each re-checked; the fitting ones, cheapest first."""
    if not errors:
        return [], 0
    families: dict[tuple[str, int], list[Edit]] = {}
    for edit in dict.fromkeys(_candidates(comp, errors[0], spec)):
        families.setdefault((edit.span.file, edit.span.line), []).append(edit)
    found: list[Edit] = []
    tried = 0
    for family in families.values():
        # one line's edits, cheapest first; each is a larger change of the same number, so the
        # fitting ones are a suffix: binary-search the cheapest
        family.sort(key=lambda e: (e.cost, e.what))
        lo, hi, best = 0, len(family) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            tried += 1
            if apply_and_check(paths, name, [family[mid]]):
                best, hi = family[mid], mid - 1
            else:
                lo = mid + 1
        if best is not None:
            found.append(best)
    found.sort(key=lambda e: (e.cost, e.what))
    return found[:MAX_REPAIRS], tried


def _candidates(comp: Composition, diag: Diagnostic, spec: TargetSpec) -> Iterator[Edit]:
    data = dict(diag.data)
    # placement's core names `owner.claim`; the check-time storage clauses name the claims
    core = set(filter(None, (s.strip() for s in (data.get("core") or data.get("claims", "")).split(","))))
    domain = {"shared memory": "smem", "tensor memory": "tmem"}.get(data.get("domain", ""), data.get("domain"))
    if diag.code in (Code.L_DEPTH, Code.L_OVERLAP) and domain in (None, "smem"):
        yield from _ring_edits(comp, core)
        yield from _smem_edits(comp, core)
        yield from _blocks_edits(comp, spec)
    elif diag.code == Code.L_OVERLAP and domain == "tmem":
        yield from _tmem_edits(comp, core)
        yield from _blocks_edits(comp, spec)
    elif diag.code == Code.L_REGS:
        yield from _regs_edits(comp, spec)
        yield from _blocks_edits(comp, spec)
    elif diag.code == Code.L_LAUNCH:
        if "resource" in data:
            yield from _blocks_edits(comp, spec, int(data.get("allows", "0")))
        elif "resident" in data or "grid" in data:
            yield from _grid_edits(comp)


def _ring_edits(comp: Composition, core: set[str]) -> Iterator[Edit]:
    for ring_name, sides in sorted(comp.rings.items()):
        in_core = any(
            c.startswith(f"{s.stage_name}.{ring_name}") or c.endswith(f".{ring_name}.mbarriers")
            for s in sides
            for c in core
        ) or any(_per_slot(comp, ring_name, c) for c in core)
        if core and not in_core:
            continue
        slot = sum(o.item.bytes or 0 for o in comp.items(A.SmemClaim) if o.item.per_slot == ring_name)
        for side in sides:
            depth = side.item.depth
            if depth is None or depth.lo <= 1:
                continue
            for lo in range(depth.lo - 1, 0, -1):
                old = f"depth {depth.lo}" if depth.lo == depth.hi else f"depth {depth.lo}..{depth.hi}"
                new = f"depth {lo}" if lo == depth.hi else f"depth {lo}..{depth.hi}"
                frees = (depth.lo - lo) * slot
                yield Edit(
                    depth.span,
                    old,
                    new,
                    f"ring `{ring_name}` {old} → {new}",
                    (depth.lo - lo) / depth.lo,
                    f"frees {thousands(frees)} B of slots at the minimum depth",
                )


def _in_core(core: set[str], stage: str, name: str) -> bool:
    return not core or f"{stage}.{name}" in core or name in core


def _per_slot(comp: Composition, ring: str, display: str) -> bool:
    return any(f"{o.stage_name}.{o.item.name}" == display and o.item.per_slot == ring for o in comp.items(A.SmemClaim))


def _smem_edits(comp: Composition, core: set[str]) -> Iterator[Edit]:
    for owned in comp.items(A.SmemClaim):
        claim = owned.item
        if not claim.bytes or claim.bytes < 32 or not _in_core(core, owned.stage_name, claim.name):
            continue
        half = claim.bytes // 2
        old_text = _size_text(claim.bytes)
        also = tuple(_slot_bytes_edits(comp, claim.per_slot, claim.bytes)) if claim.per_slot else ()
        yield Edit(
            claim.span,
            f"bytes {old_text}",
            f"bytes {_size_text(half)}",
            f"claim `{owned.stage_name}.{claim.name}` bytes {old_text} → {_size_text(half)}",
            0.5,
            f"frees {thousands(half)} B{' per slot' if claim.per_slot else ''}; the owner must work on "
            "tiles half the size" + (f" (and the ring's {len(also)} transaction byte counts with it)" if also else ""),
            also,
        )


def _slot_bytes_edits(comp: Composition, ring: str, size: int) -> Iterator[Edit]:
    """A halved slot's companions: the ring's `expect_tx`, `tx` and `copy` bytes equal to the slot's."""
    half = _size_text(size // 2)
    for side in comp.rings.get(ring, ()):
        for item in side.item.items:
            if isinstance(item, A.RingBarrierInit) and item.expect_tx == size:
                yield Edit(item.span, f"expect_tx {_size_text(size)}", f"expect_tx {half}", "", 0.0)
            elif isinstance(item, A.RingArrive) and item.tx == size:
                yield Edit(item.span, f"tx {_size_text(size)}", f"tx {half}", "", 0.0)
            elif isinstance(item, A.RingCopy) and item.bytes == size:
                yield Edit(item.span, f"copy {_size_text(size)}", f"copy {half}", "", 0.0)


def _tmem_edits(comp: Composition, core: set[str]) -> Iterator[Edit]:
    for owned in comp.items(A.TmemClaim):
        claim = owned.item
        if not claim.columns or claim.columns <= 32 or not _in_core(core, owned.stage_name, claim.name):
            continue
        half = claim.columns // 2
        yield Edit(
            claim.span,
            f"columns {claim.columns}",
            f"columns {half}",
            f"tmem claim `{owned.stage_name}.{claim.name}` columns {claim.columns} → {half}",
            0.5,
            f"frees {half} columns; the owner must hold half the accumulator",
        )


def _regs_edits(comp: Composition, spec: TargetSpec) -> Iterator[Edit]:
    roles = [info for info in comp.roles.values() if info.role.regs is not None]
    if not roles:
        return
    top = max(roles, key=lambda info: (info.role.regs or 0, info.warps))
    regs = top.role.regs or 0
    for new in range(regs - spec.setmaxnreg_step, spec.setmaxnreg_min - 1, -spec.setmaxnreg_step):
        yield Edit(
            top.role.span,
            f"regs {regs}",
            f"regs {new}",
            f"role `{top.name}` regs {regs} → {new}",
            (regs - new) / regs,
            f"{regs - new} fewer registers per thread on {top.warps} warps",
        )


def _blocks_edits(comp: Composition, spec: TargetSpec, allows: int = 0) -> Iterator[Edit]:
    line = blocks_line(comp)
    if line is None or line.blocks_per_sm is None or line.blocks_per_sm <= 1:
        return
    b = line.blocks_per_sm
    for new in [allows] if 1 <= allows < b else range(b - 1, 0, -1):
        yield Edit(
            line.span,
            f"blocks_per_sm {b}",
            f"blocks_per_sm {new}",
            f"`blocks_per_sm {b}` → {new}",
            (b - new) / b,
            f"{new} resident {'block' if new == 1 else 'blocks'} per SM instead of {b}; each gets "
            f"{thousands(R.smem_per_block(spec, new))} B of shared memory",
        )


def _grid_edits(comp: Composition) -> Iterator[Edit]:
    for launch in comp.launches:
        if launch.grid is not None:
            yield Edit(
                launch.span,
                f"grid {launch.grid}",
                "grid resident",
                f"`grid {launch.grid}` → `grid resident`",
                0.0,
                "the persistent loop takes the remaining work",
            )
            return
    first = next(iter(comp.launches), None)
    if first is not None:
        yield Edit(
            first.span,
            "",
            "grid resident",
            "state `grid resident` on the launch line",
            0.0,
            "every block resident at once",
        )


def _size_text(value: int) -> str:
    return f"{value // 1024}KiB" if value >= 1024 and value % 1024 == 0 else str(value)


def thousands(value: int) -> str:
    """``value`` with a thin space between thousands, as the fit report prints sizes."""
    return f"{value:,}".replace(",", " ")


# ----------------------------------------------------------------- applying an edit


def apply_and_check(paths: Sequence[Path], name: str, edits: Sequence[Edit]) -> bool:
    """Apply ``edits`` to a copy of the inputs and re-check for target ``name``: does it fit now?"""
    with tempfile.TemporaryDirectory(prefix="kernlink-fit-") as tmp:
        copied = copy_inputs(paths, Path(tmp))
        if copied is None:
            return False
        new_paths, mapping = copied
        for edit in (e for repair in edits for e in repair.edits()):
            if not _apply(mapping, edit):
                return False
        return _check(new_paths, name).accepted


def copy_inputs(paths: Sequence[Path], tmp: Path) -> tuple[list[Path], dict[Path, Path]] | None:
    """Copy the inputs and the contracts beside the pipeline into ``tmp``; the new paths and a map old → new."""
    resolved = [p.resolve() for p in paths]
    root = resolved[0].parent
    mapping: dict[Path, Path] = {}
    for path in sorted({*resolved, *(q.resolve() for q in root.glob("*.k[cp]"))}):
        try:
            rel = path.relative_to(root)
        except ValueError:
            return None
        dest = tmp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)
        mapping[path] = dest
    build = root / "build"
    if build.is_dir():
        shutil.copytree(build, tmp / "build")
    return [mapping[p] for p in resolved], mapping


def _apply(mapping: dict[Path, Path], edit: Edit) -> bool:
    dest = mapping.get(Path(edit.span.file).resolve())
    if dest is None:
        return False
    lines = dest.read_text().splitlines(keepends=True)
    index = edit.span.line - 1
    if not 0 <= index < len(lines):
        return False
    line = lines[index]
    if not edit.old:  # an attribute added at the end of the line
        lines[index] = line.rstrip("\n").rstrip() + f" {edit.new}\n"
    else:  # the keyword's value, however the line writes it (32KiB or 32768)
        keyword = edit.old.split()[0]
        pattern = re.compile(r"(?<![\w.])" + re.escape(keyword) + r"\s+[^\s,]+")
        if not pattern.search(line):
            return False
        lines[index] = pattern.sub(edit.new, line, count=1)
    dest.write_text("".join(lines))
    return True


# ----------------------------------------------------------------- the command


def fit(
    paths: Sequence[Path],
    targets: Sequence[str],
    *,
    repairs: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[TargetFit]:
    out = []
    for name in targets:
        if progress is not None:
            progress(name)
        out.append(fit_target(paths, name, repairs=repairs))
    return out
