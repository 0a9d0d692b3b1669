"""L-STAGE: a pipeline names a stage no package or contract provides, or two provide it, or lacks a `use`.

## What it checks
Every `use "name" version …` line of the pipeline must be served by exactly one
stage: a package named with `from`, or a `stage "name"` block in a `.kc` file beside
the pipeline (or named on the command line). Two candidates with the same name and
the same best version are ambiguous. A stage whose file does not parse is not
reported missing: the syntax error is the cause, and it is reported alone.

A stage found beside the pipeline (or named) that no `use` selects, while the used
stages need what it provides — a tensor they import, a callable they call, a fact
they use, the other side of a ring — is a missing `use` line: it is reported once,
naming the file that defines the stage, instead of as every dependent's failure.

Resolution comes first: while a `use` is unresolved (this clause or L-VERSION), no
other clause runs, since each would judge a composition other than the one meant.

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
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.loader import StageEntry


class StageClause(Clause):
    code = Code.L_STAGE
    name = "missing-stage"
    summary = "a used stage is provided by no package or contract, or by two, or a needed stage is not used"
    category = "composition"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        yield from self._not_used(comp)
        for problem in comp.unresolved:
            use = problem.use
            if problem.reason == "missing":
                known = sorted({s.name for s in comp.stages})
                yield seam(
                    self.code,
                    f"no package or contract provides stage `{use.stage}`",
                    (use.span, "used here"),
                    notes=(
                        f"stages found: {', '.join(f'`{k}`' for k in known)}"
                        if known
                        else "no stage contracts were found",
                    ),
                    helps=(
                        f'add a `.kc` file declaring `stage "{use.stage}"` beside the pipeline, '
                        "or name its package with `from`",
                    ),
                )
            elif problem.reason == "duplicate":
                first, *others = problem.candidates
                yield seam(
                    self.code,
                    f"stage `{use.stage}` version {first.stage.version} is provided twice",
                    (use.span, "used here"),
                    [
                        (first.stage.span, f"provided in `{first.source}`"),
                        *((o.stage.span, f"and in `{o.source}`") for o in others),
                    ],
                    helps=("keep one of them, or give them different versions",),
                )

    def _not_used(self, comp: Composition) -> Iterator[Diagnostic]:
        if comp.unresolved:
            return  # a used stage that did not resolve (or parse) may be the provider: its own finding comes first
        wanted = _needs(comp)
        if not wanted:
            return
        offers: dict[Need, list[StageEntry]] = {}
        for entry in comp.unused:
            for hit in sorted(_provides(entry.stage) & set(wanted)):
                if all(e.name != entry.name for e in offers.get(hit, [])):
                    offers.setdefault(hit, []).append(entry)
        reported: set[str] = set()
        for (what, name), entries in sorted(offers.items()):
            if any(e.name in reported for e in entries):
                continue  # one missing `use` line, one diagnostic, whatever else that stage provides
            entry, others = entries[0], entries[1:]
            reported.update(e.name for e in entries)
            needer = wanted[(what, name)]
            major_minor = ".".join(entry.stage.version.split(".")[:2])
            origin = (
                f' from "{entry.use.path}"'
                if entry.use is not None and entry.use.path
                else (f' from "{entry.package}"' if entry.package else "")
            )
            line = f'use "{entry.name}" version ^{major_minor}{origin}'
            also = [f"`{o.name}` (`{o.source}`) provides {what} `{name}` too: use one of them" for o in others]
            yield seam(
                self.code,
                f"pipeline `{comp.pipeline.name}` does not use stage `{entry.name}`, which "
                f"`{entry.source}` defines and `{needer.stage_name}` needs",
                (comp.pipeline.span, f'no `use "{entry.name}"` in this pipeline'),
                [(entry.stage.span, f"provides {what} `{name}`"), (needer.span, f"needs {what} `{name}`")],
                notes=(
                    *also,
                    f"without `{entry.name}`, every item that needs it fails; those failures are not "
                    "reported until the pipeline uses it",
                ),
                helps=(f"add `{line}` to the pipeline",),
                data={"stage": entry.name, "file": entry.source, "needs": f"{what} {name}"},
            )


Need = tuple[str, str]


def _provides(stage: A.Stage) -> set[Need]:
    """What a stage offers to others: tensors, callables, facts, ring sides, roles."""
    out: set[Need] = set()
    for it in stage.items:
        if isinstance(it, A.ExportTensor):
            out.add(("tensor", it.name))
        elif isinstance(it, A.ExportCallable):
            out.add(("callable", it.name))
        elif isinstance(it, A.OwnsFact):
            out.add(("fact", it.name))
        elif isinstance(it, A.Ring):
            out.add((f"the {it.side}r side of ring", it.name))
        elif isinstance(it, A.Role):
            out.add(("role", it.name))
    return out


def _needs(comp: Composition) -> dict[Need, Owned[A.Node]]:
    """What the used stages need and none of them provides, with the item that needs it."""
    out: dict[Need, Owned[A.Node]] = {}
    for imp in comp.tensor_imports:
        if imp.item.export not in comp.tensor_exports:
            out.setdefault(("tensor", imp.item.export), imp)  # type: ignore[arg-type]
    for call in comp.calls:
        if call.item.name not in comp.exports:
            out.setdefault(("callable", call.item.name), call)  # type: ignore[arg-type]
    for fact in comp.items(A.UsesFact):
        if fact.item.name not in comp.owners:
            out.setdefault(("fact", fact.item.name), fact)  # type: ignore[arg-type]
    for name, ends in comp.rings.items():
        sides = {e.item.side for e in ends}
        for missing in {"produce", "consume"} - sides:
            out.setdefault((f"the {missing}r side of ring", name), ends[0])  # type: ignore[arg-type]
    for imp in comp.tensor_imports:
        if imp.item.role not in comp.roles:
            out.setdefault(("role", imp.item.role), imp)  # type: ignore[arg-type]
    return out


def no_package(stage: str, source: str, use_span: Span, contract_span: Span) -> Diagnostic:
    """A stage checked from its contract alone, at the link: there is no object code to link."""
    name = source.rsplit("/", 1)[-1]
    return Diagnostic(
        Code.L_STAGE,
        f"stage `{stage}` was checked from its contract `{source}`; linking needs its package",
        labels=(Label(use_span, "used here"), Label(contract_span, "contract only", primary=False)),
        notes=("a contract has no object code: the link needs the LTO IR that `kernlink pack` puts in a package",),
        helps=(
            f"run `kernlink pack <source>.cu --contract {name} -o build/<name>.kpkg` and name the package "
            f'in the pipeline: `use "{stage}" version … from "build/<name>.kpkg"`',
        ),
        data=(("stage", stage), ("reason", "no-package")),
    )
