"""L-VERSION: a `use … version` requirement is not met by the provided version.

## What it checks
A `use` line's requirement (`^1.0`, `~1.2`, `>=1.0`, `<2`, `=1.0.0`; a bare version
means exactly that prefix) must admit the version of the stage that provides it.
Caret and tilde follow Cargo: `^1.2` admits 1.2.0 up to 2.0.0 (exclusive), `^0.3`
admits 0.3.x, `~1.2` admits 1.2.x.

## Why it matters
A version states a contract revision. Linking a stage whose contract changed
incompatibly (a role renamed, a fact retyped) against a pipeline written for an
older one composes components whose seams were never checked together.

## Example
```kernlink
pipeline "demo" {
    target sm_90a
    use "demo.loader" version ^2.0
}
stage "demo.loader" version "1.4.0" {
    target sm_90a
    role load entry load_main warps 1
}
```

## Fix
Update the requirement after reviewing the stage's change, or provide a version
of the stage that meets it.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class VersionClause(Clause):
    code = Code.L_VERSION
    name = "version-mismatch"
    summary = "a use line's version requirement is not met by the provided stage"
    category = "composition"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for problem in comp.unresolved:
            use = problem.use
            if problem.reason == "version":
                found = ", ".join(sorted(c.stage.version for c in problem.candidates))
                yield seam(
                    self.code,
                    f"stage `{use.stage}` is provided at version {found}, which does not meet `{use.requirement}`",
                    (use.span, f"requires `{use.requirement}`"),
                    [(c.stage.span, f"provides version {c.stage.version}") for c in problem.candidates],
                    data={"requirement": use.requirement, "provided": found},
                    helps=("review the stage's changes, then update the requirement or the stage",),
                )
            elif problem.reason == "bad-requirement":
                yield seam(
                    self.code,
                    f"`{use.requirement}` is not a version requirement",
                    (use.span, "cannot be read as a requirement"),
                    helps=("write a requirement like `^1.0`, `~1.2`, `>=1.0` or `=1.0.0`",),
                )
