"""L-STAGE: a pipeline names a stage no package or contract provides, or two provide it.

## What it checks
Every `use "name" version …` line of the pipeline must be served by exactly one
stage: a package named with `from`, or a `stage "name"` block in a `.kc` file beside
the pipeline (or named on the command line). Two candidates with the same name and
the same best version are ambiguous.

## Why it matters
The linker links exactly the LTO objects the pipeline names. A missing stage would
leave its roles without code; two equal candidates would make the cubin depend on
which file happened to be read first.

## Example
```kernlink
pipeline "demo" {
    target sm_90a
    use "demo.loader" version ^1.0
}
stage "demo.other" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
}
```

## Fix
Put the stage's contract beside the pipeline, name its package with `from`, or
fix the stage name in the `use` line. When two files provide the same stage and
version, remove one or bump one's version.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from diagnostics.model import Diagnostic


class StageClause(Clause):
    code = "L-STAGE"
    name = "missing-stage"
    summary = "a used stage is provided by no package or contract, or by two"
    category = "composition"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for problem in comp.unresolved:
            use = problem.use
            if problem.reason == "missing":
                known = sorted({s.name for s in comp.stages})
                yield seam(
                    self.code, f"no package or contract provides stage `{use.stage}`",
                    (use.span, "used here"),
                    notes=(f"stages found: {', '.join(f'`{k}`' for k in known)}" if known
                           else "no stage contracts were found",),
                    helps=(f"add a `.kc` file declaring `stage \"{use.stage}\"` beside the pipeline, "
                           "or name its package with `from`",))
            elif problem.reason == "duplicate":
                first, *others = problem.candidates
                yield seam(
                    self.code,
                    f"stage `{use.stage}` version {first.stage.version} is provided twice",
                    (use.span, "used here"),
                    [(first.stage.span, f"provided in `{first.source}`"),
                     *((o.stage.span, f"and in `{o.source}`") for o in others)],
                    helps=("keep one of them, or give them different versions",))
