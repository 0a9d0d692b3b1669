"""L-TOPO: the stages accept no common cluster shape, or a shape exceeds the target's cluster limit.

## What it checks
A stage's `cluster` lines list the thread-block cluster shapes it is written for;
a stage without a `cluster` line accepts only `1x1x1` (no clusters). The kernel
launches with one shape, so:

- when the pipeline states `cluster X`, every stage must accept X;
- otherwise the stages' accepted shapes must have at least one shape in common.

Every shape written (in a stage or the pipeline) must also have at most
`cluster_nonportable_max` CTAs (x × y × z) on the target: 16 on sm_90a and
sm_100a. Shapes of 9 to 16 CTAs are within the limit but need the launch attribute
`cudaFuncAttributeNonPortableClusterSizeAllowed`; that is not an error.

## Why it matters
A stage written for a 2x1x1 cluster multicasts TMA loads to its peer CTA and
arrives on the peer's barriers; launched without clusters it waits for a peer that
does not exist. A stage written without clusters, launched in one, is never told
that a peer shares its tiles. A cluster larger than the hardware allows does not
launch (`cudaErrorInvalidClusterSize` for 32 CTAs on an H200, specs/hardware.md §9).

## Example
```kernlink
stage "gemm.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 4 warpgroup
    cluster 2x1x1
}
stage "gemm.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 8 warpgroup
}
```

## Fix
Give the stages a shape in common: list every shape a stage supports on its
`cluster` line (`cluster 1x1x1, 2x1x1`), state the shape to launch in the pipeline,
or rebuild the stage that assumes a cluster for the others' shape.
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
from diagnostics.symbols import Code
from hardware.targets import TargetSpec
from package.loader import StageEntry

_NO_CLUSTER = (1, 1, 1)


@dataclass(frozen=True)
class _Accepts:
    """The shapes one stage accepts, and the line that says so (the stage itself when none does)."""

    stage: StageEntry
    shapes: frozenset[tuple[int, int, int]]
    span: Span
    stated: bool

    def describe(self) -> str:
        shapes = ", ".join(_text(s) for s in sorted(self.shapes))
        return f"`{self.stage.name}` accepts {shapes}" + ("" if self.stated else " (no `cluster` line)")


class TopoClause(Clause):
    code = Code.L_TOPO
    name = "cluster-shape"
    summary = "the stages accept no common cluster shape, or a shape exceeds the target's cluster limit"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        if comp.target is not None:
            yield from self._too_large(comp, comp.target)
        accepts = [_accepted(entry) for entry in comp.stages]
        launched = next((it for it in comp.pipeline.items if isinstance(it, A.PipelineCluster)), None)
        if launched is not None:
            yield from self._launched(launched, accepts)
        elif accepts:
            yield from self._common(accepts)

    def _too_large(self, comp: Composition, target: TargetSpec) -> Iterator[Diagnostic]:
        shapes = [it.shape for it in comp.pipeline.items if isinstance(it, A.PipelineCluster)]
        shapes += [shape for owned in comp.items(A.Cluster) for shape in owned.item.shapes]
        limit = target.cluster_nonportable_max
        by_shape: dict[tuple[int, int, int], list[A.ClusterShape]] = {}
        for shape in shapes:
            if shape.size > limit:
                by_shape.setdefault((shape.x, shape.y, shape.z), []).append(shape)
        for first, *again in by_shape.values():
            yield seam(
                self.code,
                f"cluster shape {first} has {first.size} CTAs; `{target.name}` launches clusters of at most {limit}",
                (first.span, f"{first.x} × {first.y} × {first.z} = {first.size} CTAs"),
                [(other.span, f"{other} again") for other in again],
                notes=(
                    f"{target.cluster_portable_max} CTAs is the portable maximum; up to {limit} need "
                    f"`cudaFuncAttributeNonPortableClusterSizeAllowed` "
                    f"({target.sources['cluster_nonportable_max']})",
                ),
                helps=(f"use a shape of at most {limit} CTAs",),
                data={"shape": str(first), "size": first.size, "max": limit},
            )

    def _launched(self, launched: A.PipelineCluster, accepts: list[_Accepts]) -> Iterator[Diagnostic]:
        shape = launched.shape
        for acc in accepts:
            if (shape.x, shape.y, shape.z) in acc.shapes:
                continue
            yield seam(
                self.code,
                f"the pipeline launches clusters of {shape}, which `{acc.stage.name}` does not accept",
                (launched.span, f"clusters of {shape}"),
                [(acc.span, acc.describe())],
                notes=("a stage without a `cluster` line accepts only 1x1x1",) if not acc.stated else (),
                helps=(
                    f"launch a shape `{acc.stage.name}` accepts, or add {shape} to its `cluster` line if it "
                    "supports it",
                ),
                data={
                    "shape": str(shape),
                    "stage": acc.stage.name,
                    "accepted": ",".join(_text(s) for s in sorted(acc.shapes)),
                },
            )

    def _common(self, accepts: list[_Accepts]) -> Iterator[Diagnostic]:
        common = set(accepts[0].shapes)
        for index, acc in enumerate(accepts):
            common &= acc.shapes
            if common:
                continue
            earlier = accepts[:index]
            yield seam(
                self.code,
                "no cluster shape is accepted by every stage",
                (acc.span, acc.describe()),
                [(other.span, other.describe()) for other in earlier],
                notes=(
                    ("a stage without a `cluster` line accepts only 1x1x1",)
                    if any(not a.stated for a in accepts[: index + 1])
                    else ()
                ),
                helps=(
                    "list every shape a stage supports on its `cluster` line, or rebuild one stage for the "
                    "others' shape",
                ),
                data={"stages": ",".join(a.stage.name for a in accepts[: index + 1])},
            )
            return


def _accepted(entry: StageEntry) -> _Accepts:
    lines = entry.stage.of(A.Cluster)
    shapes = frozenset((s.x, s.y, s.z) for line in lines if isinstance(line, A.Cluster) for s in line.shapes)
    if not lines:
        return _Accepts(entry, frozenset({_NO_CLUSTER}), _header(entry.stage), False)
    return _Accepts(entry, shapes, lines[0].span, True)


def _header(stage: A.Stage) -> Span:
    """The `stage "name"` words that open a stage block."""
    span = stage.span
    return Span(span.file, span.line, span.col, span.line, span.col + len(f'stage "{stage.name}"'))


def _text(shape: tuple[int, int, int]) -> str:
    return "x".join(str(v) for v in shape)
