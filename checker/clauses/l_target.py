"""L-TARGET: stages or packages target different architectures or toolkit major versions.

## What it checks
The composition has one target: the pipeline's `target` line, else the first
stage's, else `sm_90a`; `kernlink check --target T` replaces it. The clause rejects

- a target name the hardware table does not know (`sm_90a`, `sm_90`, `sm_100a`,
  `sm_120a`), in the pipeline, in a stage or given with `--target` (the last one is
  reported on the pipeline), with a did-you-mean over the known names;
- a stage whose `target` line names another target than the composition's — so
  two stages that target different architectures are always reported;
- a package whose LTO IR was compiled for another target than the composition's
  (the package's captured `target`);
- packages compiled by toolkits of different major versions (captured `toolkit`,
  e.g. `nvrtc 13.0` and `nvcc 12.8`; only the major version is compared).

With `--target`, the stages' own `target` lines are *not* compared with the
override: the re-check asks whether the contracts fit the other target, as if
every stage were rebuilt for it. Packages are still compared: their LTO IR is
compiled and cannot be re-targeted without rebuilding them.

## Why it matters
LTO IR is not portable. nvJitLink links objects of one architecture only, an
`sm_90a` object carries instructions (`wgmma`) that no other target executes, and
an `sm_90a` cubin runs only on compute capability 9.0 (specs/hardware.md §11). Objects of
different toolkit major versions are different IR versions, which the device
linker refuses or, worse, reads with different defaults.

## Example
```kernlink
stage "gemm.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 4 warpgroup
}
stage "gemm.mma" version "1.0.0" {
    target sm_100a
    role mma entry mma_main warps 8 warpgroup
}
```

## Fix
Rebuild the odd stage for the pipeline's target (or change the pipeline's target
and rebuild the others); rebuild packages with one toolkit. Correct a misspelt
target name (`sm_90a`, not `sm90a`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from diagnostics.model import Diagnostic
from diagnostics.span import UNKNOWN_SPAN, Span
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code
from hardware.targets import TARGETS, TargetSpec
from hardware.targets import target as lookup_target
from package.loader import StageEntry

_NOT_PORTABLE = (
    "LTO IR is compiled for one architecture; nvJitLink links objects of one architecture, and an "
    "`sm_90a` cubin runs only on compute capability 9.0 (specs/hardware.md §11)"
)


def overridden(comp: Composition) -> bool:
    """Whether the target was given on the command line (`kernlink check --target`)."""
    return comp.target_span == UNKNOWN_SPAN


def target_line(comp: Composition) -> Span | None:
    """The `target` line that sets the composition's target; None for `--target` or the default."""
    if overridden(comp):
        return None
    stated = [comp.pipeline.target, *(entry.stage.target for entry in comp.stages)]
    return comp.target_span if any(t is not None and t.span == comp.target_span for t in stated) else None


class TargetClause(Clause):
    code = Code.L_TARGET
    name = "target-mismatch"
    summary = "stages or packages target different architectures or toolkit major versions"
    category = "composition"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        override = overridden(comp)
        if comp.target is None:
            owner = next(
                (
                    f"the target of `{e.name}`"
                    for e in comp.stages
                    if e.stage.target is not None and e.stage.target.span == comp.target_span
                ),
                "the pipeline's target",
            )
            yield self._unknown(
                comp.target_name,
                comp.pipeline.span if override else comp.target_span,
                "given with `--target`" if override else owner,
            )
        for entry in comp.stages:
            line = entry.stage.target
            if line is not None and lookup_target(line.name) is None:
                if line.span != comp.target_span:
                    yield self._unknown(line.name, line.span, f"the target of `{entry.name}`")
                continue
            target = comp.target
            if target is None:
                continue
            if not override and line is not None and lookup_target(line.name) != target:
                yield self._stage(comp, target, entry, line.name, line.span)
                continue
            built = entry.captured.target if entry.captured is not None else None
            if built is not None and lookup_target(built) != target:
                yield self._package(comp, target, entry, built)
        yield from self._toolkits(comp)

    def _unknown(self, name: str, span: Span, what: str) -> Diagnostic:
        known = list(TARGETS)
        guess = did_you_mean(name.strip().lower(), known)
        return seam(
            self.code,
            f"unknown target `{name}`",
            (span, f"{what}: not in the hardware table"),
            notes=(f"known targets: {', '.join(f'`{k}`' for k in known)}",),
            helps=(f"did you mean `{guess}`?",) if guess else ("name one of the known targets",),
            data={"target": name},
        )

    def _stage(self, comp: Composition, target: TargetSpec, entry: StageEntry, name: str, span: Span) -> Diagnostic:
        return seam(
            self.code,
            f"stage `{entry.name}` targets `{name}`, but the pipeline targets `{target.name}`",
            (span, f"`{entry.name}` is built for `{name}`"),
            _target_label(comp),
            notes=(_NOT_PORTABLE,),
            helps=(
                f"rebuild `{entry.name}` for `{target.name}`, or retarget the pipeline and rebuild the other stages",
            ),
            data={"stage": entry.name, "stage_target": name, "target": target.name},
        )

    def _package(self, comp: Composition, target: TargetSpec, entry: StageEntry, built: str) -> Diagnostic:
        package = entry.package or entry.source
        return seam(
            self.code,
            f"package `{package}` holds LTO IR for `{built}`, but the pipeline targets `{target.name}`",
            (_use_span(entry), f"`{entry.name}` compiled for `{built}`"),
            _target_label(comp),
            notes=(
                _NOT_PORTABLE,
                *(
                    ()
                    if not overridden(comp)
                    else (f"`--target {target.name}` re-targets contracts, not compiled packages",)
                ),
            ),
            helps=(f"rebuild `{package}` for `{target.name}` with `kernlink pack`",),
            data={"stage": entry.name, "package_target": built, "target": target.name},
        )

    def _toolkits(self, comp: Composition) -> Iterator[Diagnostic]:
        built = [
            (entry, entry.captured.toolkit)
            for entry in comp.stages
            if entry.captured is not None and entry.captured.toolkit is not None
        ]
        if not built:
            return
        (first, first_kit), *others = built
        for entry, kit in others:
            if _major(kit) == _major(first_kit):
                continue
            yield seam(
                self.code,
                f"package `{entry.package or entry.source}` was compiled with `{kit}`, but "
                f"`{first.package or first.source}` with `{first_kit}`",
                (_use_span(entry), f"`{entry.name}`: `{kit}`"),
                [(_use_span(first), f"`{first.name}`: `{first_kit}`")],
                notes=("LTO IR of different toolkit major versions does not link into one kernel",),
                helps=("rebuild the packages with one toolkit",),
                data={"stage": entry.name, "toolkit": kit, "reference": first_kit},
            )


def _target_label(comp: Composition) -> list[tuple[Span, str]]:
    line = target_line(comp)
    if line is None or comp.target is None:
        return []
    owner = next((e.name for e in comp.stages if e.stage.target is not None and e.stage.target.span == line), None)
    text = (
        f"`{owner}` targets `{comp.target.name}`, which sets the pipeline's target"
        if owner is not None
        else f"the pipeline targets `{comp.target.name}`"
    )
    return [(line, text)]


def _use_span(entry: StageEntry) -> Span:
    if entry.use is not None and entry.use.span != UNKNOWN_SPAN:
        return entry.use.span
    span = entry.stage.span
    return Span(span.file, span.line, span.col, span.line, span.col + len(f'stage "{entry.name}"'))


def _major(toolkit: str) -> str:
    """The major version of a toolkit string (`nvrtc 13.0` → `13`), or the string when it has none."""
    match = re.search(r"\d+", toolkit)
    return match.group(0) if match else toolkit
