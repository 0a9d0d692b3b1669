"""L-FEATURE: a stage requires a hardware feature the target lacks.

## What it checks
Each stage's required features — declared with `requires feature …` or implied by
what it states — must all be features of the composition's target (the hardware
table's feature list, sourced per instruction in specs/hardware.md §11). Implied:

- a `claim tmem` implies `tmem`;
- a library map named `wgmma_*` implies `wgmma`, one named `tcgen05_*` implies `tcgen05`;
- a role with `regs` implies `setmaxnreg`;
- a shared-memory claim with `use tma` (ring-fed or not) implies `tma`;
- a `cluster` line with a shape larger than 1x1x1 implies `clusters`.

Each missing feature is reported once per stage, at the first line that requires
it, with the other lines that require it and the target line labelled and the
target's feature list in a note. The target is the pipeline's (or the one given
with `kernlink check --target`); whether the stages were built for it is L-TARGET's
question.

## Why it matters
These are instructions ptxas refuses for the target: `wgmma` exists only on
sm_90a, `tcgen05` and tensor memory only on sm_100a/sm_103a, and `setmaxnreg` not
on plain sm_90. A stage that needs one cannot be compiled for the target at all,
or its hand-written PTX fails to assemble at link time.

## Example
```kernlink
stage "gemm.mma" version "1.0.0" {
    target sm_90a
    requires feature tma, wgmma
    role mma entry mma_main warps 8 warpgroup regs 232
    claim tmem acc columns 256
}
```

## Fix
Build the pipeline for a target that has the feature (`wgmma`: sm_90a; `tmem`,
`tcgen05`: sm_100a), or use the stage variant written for this target (an
sm_90a consumer keeps its accumulator in registers, not tensor memory).
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses.l_target import target_line
from checker.composition import Composition
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware.targets import TARGETS, TargetSpec
from package.loader import StageEntry

LIBRARY_FEATURES = {"wgmma_": "wgmma", "tcgen05_": "tcgen05"}


class FeatureClause(Clause):
    code = Code.L_FEATURE
    name = "missing-feature"
    summary = "a stage requires a hardware feature the target lacks"
    category = "composition"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None:
            return
        line = target_line(comp)
        for entry in comp.stages:
            for feature, sites in required_features(entry).items():
                if not target.has(feature):
                    yield self._missing(entry, feature, sites, target, line)

    def _missing(
        self, entry: StageEntry, feature: str, sites: list[tuple[Span, str]], target: TargetSpec, line: Span | None
    ) -> Diagnostic:
        (span, why), *more = sites
        having = [t.name for t in TARGETS.values() if t.has(feature)]
        secondary = [(s, f"{w} too") for s, w in more]
        if line is not None:
            secondary.append((line, f"the target is `{target.name}`"))
        return seam(
            self.code,
            f"stage `{entry.name}` needs `{feature}`, which `{target.name}` does not have",
            (span, why),
            secondary,
            notes=(
                f"`{target.name}` has: {', '.join(sorted(target.features))}",
                *(() if line is not None else (f"checked for `--target {target.name}`",)),
            ),
            helps=(
                (
                    f"build for a target with `{feature}` ({', '.join(f'`{t}`' for t in having)}), or use a "
                    f"variant of `{entry.name}` written for `{target.name}`"
                )
                if having
                else f"no known target has `{feature}`; drop the requirement",
            ),
            data={"stage": entry.name, "feature": feature, "target": target.name},
        )


def required_features(entry: StageEntry) -> dict[str, list[tuple[Span, str]]]:
    """Each feature the stage requires, with every line that requires it (declared or implied)."""
    found: dict[str, list[tuple[Span, str]]] = {}

    def need(feature: str, span: Span, why: str) -> None:
        found.setdefault(feature, []).append((span, why))

    for item in entry.stage.items:
        if isinstance(item, A.Features):
            for name in item.names:
                need(name, item.span, f"requires `{name}`")
        elif isinstance(item, A.TmemClaim):
            need("tmem", item.span, f"`claim tmem {item.name}` needs `tmem`")
        elif isinstance(item, A.Role) and item.regs is not None:
            need("setmaxnreg", item.span, f"`regs {item.regs}` needs `setmaxnreg`")
        elif isinstance(item, A.SmemClaim) and "tma" in item.uses:
            need("tma", item.span, f"`use tma` on `{item.name}` needs `tma`")
        elif isinstance(item, A.Cluster) and any(s.size > 1 for s in item.shapes):
            need("clusters", item.span, "a cluster larger than 1x1x1 needs `clusters`")
        elif isinstance(item, (A.ExportTensor, A.ImportTensor)):
            spec = item.placement if isinstance(item, A.ExportTensor) else item.demand
            if isinstance(spec, A.LibraryMap):
                for prefix, feature in LIBRARY_FEATURES.items():
                    if spec.name.startswith(prefix):
                        need(feature, spec.span, f"`library {spec.name}` needs `{feature}`")
    return found
