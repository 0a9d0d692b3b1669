"""L-LAUNCH: stages disagree on launch geometry (grid kind, block size, blocks per SM).

## What it checks
All stages of a pipeline run in one kernel launch, so every `launch` line —
each stage's and the pipeline's own — must agree on what it states:

- the grid: `launch persistent` (a grid sized to the machine, looping over work)
  or `launch fixed` (one block per unit of work);
- the block size, `threads N`;
- the occupancy the stage was tuned and compiled for, `blocks_per_sm N`, with
  N ≥ 1 (`blocks_per_sm 0` asks for no resident block at all).

- the grid, `grid N` or `grid resident`, and whether it is `cooperative`.

An attribute a line leaves out agrees with any value. The pipeline's `launch` line,
when present, is the reference; otherwise the first stage stating the attribute
is. Each disagreeing line is reported once per attribute, with the reference line
labelled. Whether the roles cover the agreed block size is L-WARPS' question.

**Residency.** `blocks_per_sm B` (`__launch_bounds__(T, B)`) must hold on every
resource an SM divides between its blocks (`hardware/residency.py`): B blocks of T
threads within the SM's threads and warps (2048 on sm_90a/sm_100a, 1536 on sm_120a),
B within the per-SM block limit (32, 24 on sm_120a), some entry register count with
which B blocks fit the register file, and B × the named-barrier IDs the block uses
within the SM's barriers (64, 24 on sm_120a). Placement then gives each block
1/B of the SM's shared memory and tensor memory (a claim that does not fit its
share is L-OVERLAP or L-DEPTH, naming `blocks_per_sm`), and checks the placed block
once more: its barrier IDs, shared memory and registers must let B blocks reside.

**Co-residency.** Blocks that wait on each other — a `persistent` launch, or a role
waiting on a `scope gpu` counter — hang unless every block is resident at once. A
fixed-grid composition with such waits must state its grid (`grid N`, or `grid
resident`: B × the SMs); a `grid N` above B × the SMs of the target's reference
device (132 on sm_90a, H200) is rejected unless the launch is `cooperative`
(`cudaLaunchCooperativeKernel` refuses a grid that cannot be resident instead of
hanging). `kernlink fit` reports the largest safe grid per target.

## Why it matters
A persistent stage computes its next tile from `gridDim` and a work counter; a
fixed-grid stage takes its tile from `blockIdx` and exits. Composed, one of them
either skips work or repeats it. A stage compiled with `__launch_bounds__` for one
block size divides its work by it; its registers were allocated for its
`blocks_per_sm` (`.minnctapersm`), which a different occupancy target breaks.
A `blocks_per_sm` the SM cannot hold is silently dropped by ptxas (a warning the
driver never sees): `__launch_bounds__(256, 8)` on a 1 536-thread SM runs 6 blocks,
and a persistent grid sized for 8 per SM waits forever on blocks that never start.

## Example
```kernlink
stage "gemm.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 4 warpgroup
    launch persistent threads 384
}
stage "gemm.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 8 warpgroup
    launch fixed threads 384
}
```

## Fix
Write every stage for the same launch: rebuild the odd stage for the pipeline's
grid kind, block size and occupancy, or state the launch once in the pipeline and
drop the stages' disagreeing attributes. Lower `blocks_per_sm` to what the limiting
resource allows (the diagnostic names it), and launch grids whose blocks wait on
each other as `grid resident` or `cooperative`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from checker.residency import ResidencyFinding, grid_waits, launch_blocks, residency_finding
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware.targets import TargetSpec


def _n(value: int) -> str:
    return f"{value:,}".replace(",", " ")


@dataclass(frozen=True)
class _Line:
    launch: A.Launch
    owner: str  # "the pipeline" or "`stage.name`"

    @property
    def span(self) -> Span:
        return self.launch.span


_ATTRIBUTES = (
    (
        "kind",
        "grid",
        "a persistent stage loops over work from a counter; a fixed-grid stage takes its work from `blockIdx`",
        "write both stages for one grid kind",
    ),
    (
        "threads",
        "block size",
        "a stage compiled for one block size (`__launch_bounds__`) divides its work by it",
        "state one block size; the roles must then cover it (L-WARPS)",
    ),
    (
        "blocks_per_sm",
        "blocks per SM",
        "`blocks_per_sm` is the occupancy the stage's registers were allocated for (`.minnctapersm`)",
        "state one `blocks_per_sm` and rebuild the stage tuned for the other",
    ),
    (
        "grid_text",
        "grid",
        "the grid decides whether blocks that wait on each other are all resident",
        "state one `grid`",
    ),
)


class LaunchClause(Clause):
    code = Code.L_LAUNCH
    name = "launch-geometry"
    summary = "stages disagree on launch geometry (grid kind, block size, blocks per SM)"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        lines = [
            _Line(launch, "the pipeline" if stage is None else f"`{stage.name}`") for launch, stage in comp.launch_lines
        ]
        zero = [line for line in lines if line.launch.blocks_per_sm == 0]
        for line in zero:
            yield seam(
                self.code,
                f"{line.owner} states `blocks_per_sm 0`: a launch runs at least one block per SM",
                (line.span, "`blocks_per_sm 0`"),
                notes=(
                    "`blocks_per_sm B` is `__launch_bounds__(T, B)`: the occupancy the registers are allocated "
                    "for, and the share of shared and tensor memory each block gets",
                ),
                helps=("state `blocks_per_sm 1` or more, or leave it out (one block per SM)",),
                data={"blocks_per_sm": 0},
            )
        if zero:
            return
        disagree = False
        for attr, what, why, fix in _ATTRIBUTES:
            stating = [line for line in lines if getattr(line.launch, attr) is not None]
            if not stating:
                continue
            ref, *others = stating
            want = getattr(ref.launch, attr)
            for line in others:
                got = getattr(line.launch, attr)
                if got == want:
                    continue
                yield seam(
                    self.code,
                    f"{line.owner} and {ref.owner} disagree on the {what}: {_show(attr, got)} vs {_show(attr, want)}",
                    (line.span, f"{line.owner} states {_show(attr, got)}"),
                    [(ref.span, f"{ref.owner} states {_show(attr, want)}")],
                    notes=("all stages run in one kernel launch, with one geometry", why),
                    helps=(fix,),
                    data={"attribute": attr, "value": got, "reference": want},
                )
                disagree = True
        if disagree or comp.target is None or not lines:
            return
        found = residency_finding(comp, comp.target)
        if found is not None:
            yield residency_diagnostic(found, comp.target)
            return
        yield from self._grid(comp, comp.target, lines)

    def _grid(self, comp: Composition, target: TargetSpec, lines: list[_Line]) -> Iterator[Diagnostic]:
        waits = grid_waits(comp)
        kind = lines[0].launch.kind
        grid_line = next((line for line in lines if line.launch.grid_text is not None), None)
        cooperative = any(line.launch.cooperative for line in lines)
        blocks = launch_blocks(comp)
        resident = blocks * target.sm_count
        if grid_line is None:
            if kind == "fixed" and waits:
                span, what = waits[0]
                yield seam(
                    self.code,
                    "blocks wait on each other, but the fixed-grid launch states no grid",
                    (span, what),
                    [(lines[0].span, "`launch fixed` without `grid`")],
                    notes=(
                        "a block waiting on a counter another block raises hangs when the raising block is "
                        "not resident: a fixed grid larger than the SMs hold starts it only after the waiter "
                        "exits",
                    ),
                    helps=(
                        f"state `grid resident` ({blocks} × {target.sm_count} SMs = {resident} blocks on "
                        f"`{target.name}`), or `grid N cooperative`",
                    ),
                    data={"resident": resident},
                )
            return
        grid = grid_line.launch.grid
        if grid is None or grid <= resident or cooperative or not (waits or kind == "persistent"):
            return
        what = (
            f"{_n(grid)} blocks wait on each other, but `{target.name}` holds {blocks} × {target.sm_count} SMs "
            f"= {_n(resident)} at once"
        )
        yield seam(
            self.code,
            what,
            (grid_line.span, f"`grid {grid}`"),
            [(span, label) for span, label in waits[:1]],
            notes=(
                f"{target.sm_count} SMs is `{target.name}`'s reference device "
                f"({target.sources['sm_count']}); a part with fewer SMs holds fewer",
                "blocks that are not resident start only when a resident one exits: a wait on them never returns",
            ),
            helps=(
                f"launch at most `grid {resident}`, `grid resident`, or add `cooperative` so the launch is "
                "refused instead of hanging",
            ),
            data={"grid": grid, "resident": resident, "blocks_per_sm": blocks, "sms": target.sm_count},
        )


def _show(attr: str, value: object) -> str:
    if attr == "grid_text":
        return f"`grid {value}`"
    return f"`launch {value}`" if attr == "kind" else f"`{attr} {value}`"


_WHY = {
    "threads": "ptxas drops a `.minnctapersm` the SM's threads cannot hold (with a warning nobody sees), and "
    "the kernel runs fewer blocks per SM than it was written for",
    "warps": "the SM schedules at most its warps; extra blocks wait for a resident one to exit",
    "blocks": "the SM holds at most this many blocks, whatever their size",
    "registers": "no register count per thread lets this many blocks share the register file",
    "named barriers": "every block is charged its highest barrier ID + 1; the SM's barriers run out first",
    "shared memory": "each block is charged its shared memory plus the reserved bytes, rounded to 128 B",
    "tensor memory": "`tcgen05.alloc` blocks until the SM's columns are free: blocks that cannot all hold "
    "their columns serialise",
}


def residency_diagnostic(found: ResidencyFinding, target: TargetSpec) -> Diagnostic:
    """`blocks_per_sm B` that the limiting resource cannot give (check time, placement or link time)."""
    lim = found.limit
    message = (
        f"`blocks_per_sm {found.blocks}` cannot be resident on `{target.name}`: {lim.resource} allow "
        f"{lim.blocks} {'block' if lim.blocks == 1 else 'blocks'} per SM"
    )
    fix = (
        f"lower `blocks_per_sm` to {lim.blocks}"
        if lim.blocks >= 1
        else f"shrink the block: not even one block fits the SM's {lim.resource}"
    )
    notes = [lim.detail, _WHY.get(lim.resource, ""), *found.notes]
    return seam(
        Code.L_LAUNCH,
        message,
        (found.span, f"`blocks_per_sm {found.blocks}`"),
        notes=tuple(n for n in notes if n),
        helps=(
            fix
            + (
                f", or free {lim.resource}"
                if lim.resource in ("shared memory", "registers", "named barriers", "tensor memory")
                else ""
            ),
        ),
        data={"blocks_per_sm": found.blocks, "resource": lim.resource, "allows": lim.blocks},
    )
