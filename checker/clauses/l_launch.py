"""L-LAUNCH: stages disagree on launch geometry (grid kind, block size, blocks per SM).

## What it checks
All stages of a pipeline run in one kernel launch, so every `launch` line —
each stage's and the pipeline's own — must agree on what it states:

- the grid: `launch persistent` (a grid sized to the machine, looping over work)
  or `launch fixed` (one block per unit of work);
- the block size, `threads N`;
- the occupancy the stage was tuned and compiled for, `blocks_per_sm N`.

An attribute a line leaves out agrees with any value. The pipeline's `launch` line,
when present, is the reference; otherwise the first stage stating the attribute
is. Each disagreeing line is reported once per attribute, with the reference line
labelled. Whether the roles cover the agreed block size is L-WARPS' question.

## Why it matters
A persistent stage computes its next tile from `gridDim` and a work counter; a
fixed-grid stage takes its tile from `blockIdx` and exits. Composed, one of them
either skips work or repeats it. A stage compiled with `__launch_bounds__` for one
block size divides its work by it; its registers were allocated for its
`blocks_per_sm` (`.minnctapersm`), which a different occupancy target breaks.

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
drop the stages' disagreeing attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span


@dataclass(frozen=True)
class _Line:
    launch: A.Launch
    owner: str  # "the pipeline" or "`stage.name`"

    @property
    def span(self) -> Span:
        return self.launch.span


_ATTRIBUTES = (
    ("kind", "grid",
     "a persistent stage loops over work from a counter; a fixed-grid stage takes its work from `blockIdx`",
     "write both stages for one grid kind"),
    ("threads", "block size",
     "a stage compiled for one block size (`__launch_bounds__`) divides its work by it",
     "state one block size; the roles must then cover it (L-WARPS)"),
    ("blocks_per_sm", "blocks per SM",
     "`blocks_per_sm` is the occupancy the stage's registers were allocated for (`.minnctapersm`)",
     "state one `blocks_per_sm` and rebuild the stage tuned for the other"),
)


class LaunchClause(Clause):
    code = "L-LAUNCH"
    name = "launch-geometry"
    summary = "stages disagree on launch geometry (grid kind, block size, blocks per SM)"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        lines = [_Line(item, "the pipeline") for item in comp.pipeline.items if isinstance(item, A.Launch)]
        lines += [_Line(owned.item, f"`{owned.stage_name}`") for owned in comp.items(A.Launch)]
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
                    self.code, f"{line.owner} and {ref.owner} disagree on the {what}: {_show(attr, got)} vs "
                               f"{_show(attr, want)}",
                    (line.span, f"{line.owner} states {_show(attr, got)}"),
                    [(ref.span, f"{ref.owner} states {_show(attr, want)}")],
                    notes=("all stages run in one kernel launch, with one geometry", why),
                    helps=(fix,),
                    data={"attribute": attr, "value": got, "reference": want})


def _show(attr: str, value: object) -> str:
    return f"`launch {value}`" if attr == "kind" else f"`{attr} {value}`"
