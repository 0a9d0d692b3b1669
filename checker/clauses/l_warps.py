"""L-WARPS: the roles need more warps than a block has, do not cover the launched block exactly, or there are none.

## What it checks
The roles of all stages are packed into one block in declaration order (stage
order, then source order); a `warpgroup` role starts at the next warp index
divisible by 4, and the linker pads the warps skipped with idle warps. The block's
warps — every role's `warps` plus that padding — must not exceed the target's
`max_warps_per_block` (32 on every target: 1024 threads).

A pipeline whose stages declare no role at all has nothing to run: its kernel would
have 0 threads. It is rejected (once every `use` resolves: an unresolved stage may be
the one that declares the roles).

When a `launch` line (of a stage or of the pipeline) states `threads N`, N must be
a whole number of warps and the roles, padding included, must cover exactly N / 32
warps. When launch lines state different thread counts, L-LAUNCH reports that and
this clause does not compare the roles with any of them.

## Why it matters
A block larger than 1024 threads does not launch (`cudaErrorInvalidValue`).
A stage compiled for a fixed block size (`__launch_bounds__`, `.maxntid`) divides
its work by that size: warps the roles do not cover run no role and never arrive
on the barriers sized for them, and roles beyond the launched block never run.

## Example
```kernlink
stage "attn.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    launch persistent threads 384
}
stage "attn.softmax" version "1.0.0" {
    target sm_90a
    role softmax entry softmax_main warps 8 warpgroup
    role correction entry correction_main warps 4 warpgroup
}
```

## Fix
Make `threads` equal to 32 × the block's warps (padding included), or change the
roles' widths. Padding is the price of a narrow role declared before a warpgroup
role: declaring the warpgroup roles first, or a 4-warp producer warpgroup instead
of one producer warp, removes it. A pipeline that needs more than 32 warps must
be split into two kernels.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition
from checker.report import plural, seam
from checker.warps import BlockLayout, PlacedRole, block_layout
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware.targets import TargetSpec

CODE = Code.L_WARPS


class Shortfall(enum.Enum):
    """Why placement could not lay the roles out in the block."""

    UNCOVERED = "uncovered"  # the roles cover fewer warps than the launch and no warp may idle
    PADDING = "padding"  # alignment padding would be needed and no warp may idle
    LAUNCH = "launch"  # the roles need more warps than the launch states
    BLOCK = "block"  # the roles need more warps than a block can have


@dataclass(frozen=True)
class LayoutCore:
    """Roles placement cannot lay out together: (span, name, warps, warpgroup-aligned) each."""

    shape: Shortfall
    roles: tuple[tuple[Span, str, int, bool], ...]
    covered: int  # warps the roles themselves take
    needs: int
    exact: bool
    offers: int
    minimal: bool


def placement_core(core: LayoutCore) -> Diagnostic:
    """L-WARPS as placement decides it."""
    needs = str(core.needs) if core.exact else f"at least {core.needs}"
    what = {
        Shortfall.UNCOVERED: f"roles cover {core.covered} warps, the launch has {core.offers} and no idle warps",
        Shortfall.PADDING: f"roles packed in declaration order need {needs} warps, {core.needs - core.covered} "
        "of them idle padding, and the block allows no idle warps",
        Shortfall.LAUNCH: f"roles need {needs} warps, the launch has {core.offers}",
        Shortfall.BLOCK: f"roles need {needs} warps, a block has at most {core.offers}",
    }[core.shape]
    labels = tuple(
        Label(span, f"`{name}` needs {warps} warps{', warpgroup-aligned' if aligned else ''}", k == 0)
        for k, (span, name, warps, aligned) in enumerate(core.roles)
    )
    notes = [f"roles in conflict: {', '.join(f'`{name}`' for _, name, _, _ in core.roles)}"]
    if not core.minimal:
        notes.append("the solver budget ran out before this set was shown minimal")
    data = (
        ("capacity", str(core.offers)),
        ("needs", str(core.needs)),
        ("shortfall", str(core.needs - core.offers)),
        ("core", ", ".join(name for _, name, _, _ in core.roles)),
        ("minimal", str(core.minimal).lower()),
    )
    return Diagnostic(
        CODE,
        what,
        Severity.ERROR,
        labels,
        tuple(notes),
        ("use fewer or narrower roles, or a launch geometry with as many warps as the roles take",),
        data,
    )


class WarpsClause(Clause):
    code = CODE
    name = "block-warps"
    summary = "roles need more warps than a block has, do not cover the launched block exactly, or there are none"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if not comp.roles and not comp.unresolved:
            yield self._no_role(comp)
        if target is None or not comp.roles:
            return
        layout = block_layout(comp, target)
        if layout.warps > target.max_warps_per_block:
            yield self._too_many(layout, target)
            return
        launches = _thread_launches(comp)
        if len({threads for threads, _, _ in launches}) != 1:
            return
        threads, span, owner = launches[0]
        if threads % target.warp_size:
            yield seam(
                self.code,
                f"{owner} launches {threads} threads, which is not a whole number of warps",
                (
                    span,
                    f"{threads} = {threads // target.warp_size} × {target.warp_size} + {threads % target.warp_size}",
                ),
                helps=(
                    f"launch {layout.warps * target.warp_size} threads: the roles cover {plural(layout.warps, 'warp')}",
                ),
                data={"threads": threads, "warp_size": target.warp_size},
            )
        elif threads != layout.warps * target.warp_size:
            yield self._uncovered(layout, target, threads, span, owner)

    def _no_role(self, comp: Composition) -> Diagnostic:
        stages = ", ".join(f"`{s.name}`" for s in comp.stages) or "none"
        return seam(
            self.code,
            f"pipeline `{comp.pipeline.name}` has no role: its kernel would run no code",
            (comp.pipeline.span, "no stage of this pipeline declares a role"),
            notes=(
                f"stages used: {stages}",
                "the block's warps are its roles' warps: with none, the dispatch kernel has 0 threads",
            ),
            helps=("declare the roles that run the stages' code: `role NAME entry FUNCTION warps N`",),
            data={"pipeline": comp.pipeline.name, "stages": len(comp.stages), "absent": "role"},
        )

    def _too_many(self, layout: BlockLayout, target: TargetSpec) -> Diagnostic:
        limit = target.max_warps_per_block
        padding = sum(p.padding for p in layout.roles)
        over = next(p for p in layout.roles if p.end > limit)
        others = [p for p in layout.roles if p is not over and p.warps > 0]
        of_which = f" ({padding} of them idle padding)" if padding else ""
        return seam(
            self.code,
            f"the roles need {layout.warps} warps{of_which}, a block on `{target.name}` has at most {limit}",
            (over.info.role.span, f"{_where(over)}: past the block's last warp, {limit - 1}"),
            [(p.info.role.span, _where(p)) for p in others],
            notes=(
                f"`{target.name}` runs at most {target.max_threads_per_block} threads per block "
                f"({target.sources['max_threads_per_block']})",
                *_padding_note(layout),
            ),
            helps=(
                "narrow the roles, declare warpgroup roles before single warps to avoid padding, or split "
                "the pipeline into two kernels",
            ),
            data={"warps": layout.warps, "max_warps": limit, "padding": padding},
        )

    def _uncovered(self, layout: BlockLayout, target: TargetSpec, threads: int, span: Span, owner: str) -> Diagnostic:
        want = threads // target.warp_size
        return seam(
            self.code,
            f"the roles cover {plural(layout.warps, 'warp')} ({layout.warps * target.warp_size} "
            f"threads), but {owner} launches {threads} threads ({plural(want, 'warp')})",
            (span, f"{plural(want, 'warp')} launched"),
            [(p.info.role.span, _where(p)) for p in layout.roles if p.warps > 0],
            notes=tuple(_padding_note(layout))
            or (
                "every warp of the block runs exactly one role; warps outside every role never arrive on "
                "the barriers sized for them",
            ),
            helps=(
                f"launch `threads {layout.warps * target.warp_size}`, or change the roles' widths to cover "
                f"{plural(want, 'warp')}",
            ),
            data={"role_warps": layout.warps, "launched_warps": want, "threads": threads},
        )


def _where(placed: PlacedRole) -> str:
    span = f"warp {placed.start}" if placed.warps == 1 else f"warps {placed.start}–{placed.end - 1}"
    pad = f", after {plural(placed.padding, 'idle warp')} of padding" if placed.padding else ""
    return f"`{placed.name}`: {span}{pad}"


def _padding_note(layout: BlockLayout) -> list[str]:
    padded = [p for p in layout.roles if p.padding]
    if not padded:
        return []
    parts = ", ".join(f"{plural(p.padding, 'idle warp')} before `{p.name}`" for p in padded)
    return [f"a `warpgroup` role starts at a warp index divisible by 4; the linker pads with {parts}"]


def _thread_launches(comp: Composition) -> list[tuple[int, Span, str]]:
    """Every stated `threads` with its line and who states it: the pipeline first, then the stages."""
    return [
        (launch.threads, launch.span, "the pipeline" if stage is None else f"`{stage.name}`")
        for launch, stage in comp.launch_lines
        if launch.threads is not None
    ]
