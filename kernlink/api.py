"""The public API: check a composition, format a contract, explain a clause.

``check`` is the whole audit: load the inputs, resolve the pipeline, run every
clause, then — only when the clauses accept — the stages that consume a verified
composition (placement, tensor routes), whose rejections are clause diagnostics
too. Nothing here raises on bad input; everything becomes a diagnostic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from checker.clause import Clause
from checker.composition import Composition
from checker.engine import errors, run_clauses, selected
from checker.resolve import resolve
from diagnostics.model import Diagnostic, sort_diagnostics
from diagnostics.sources import SourceMap
from kernlink.downstream import verify_downstream
from kernlink.loader import Inputs, load


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    sources: SourceMap
    composition: Composition | None = None
    inputs: Inputs | None = field(default=None, repr=False)

    @property
    def accepted(self) -> bool:
        return not errors(self.diagnostics) and self.composition is not None


def compose(paths: Sequence[str | Path], *, target: str | None = None) -> tuple[Inputs, Composition | None]:
    """Load and resolve; the composition is None when no pipeline could be read."""
    inputs = load(paths)
    if inputs.pipeline is None:
        return inputs, None
    return inputs, resolve(inputs.pipeline, inputs.pipeline_source, inputs.candidates, target)


def check_text(text: str, name: str = "<example>", *, target: str | None = None) -> CheckResult:
    """Check stages (and optionally one pipeline) given as one text, as in clause examples."""
    from checker.composition import StageEntry
    from checker.resolve import implicit_pipeline
    from contract_lang.parser import parse_text
    from diagnostics.model import DiagnosticError
    from diagnostics.span import Span

    sources = SourceMap()
    sources.add(name, text)
    try:
        source = parse_text(text, name, "any")
    except DiagnosticError as err:
        return CheckResult(list(err.diagnostics), sources)
    stages = [StageEntry(s, name, None) for s in source.stages]
    pipeline = (source.pipelines[0] if source.pipelines
                else implicit_pipeline(source.stages, name, Span(name, 1, 1, 1, 1)))
    comp = resolve(pipeline, name, stages, target)
    diags = run_clauses(comp)
    if not errors(diags):
        diags.extend(verify_downstream(comp).diagnostics)
    return CheckResult(sort_diagnostics(diags), sources, comp)


def check(paths: Sequence[str | Path], *, target: str | None = None, select: Sequence[str] | None = None,
          ignore: Sequence[str] | None = None) -> CheckResult:
    """Audit a composition. Raises only ``UsageError`` / ``SelectionError`` for bad arguments."""
    clauses: list[type[Clause]] = selected(select, ignore)
    inputs, comp = compose(paths, target=target)
    diags = list(inputs.diagnostics)
    if comp is not None:
        diags.extend(run_clauses(comp, clauses))
        if not errors(diags):
            codes = {c.code for c in clauses}
            later = verify_downstream(comp).diagnostics
            diags.extend(d for d in later if not d.code.startswith("L-") or d.code in codes)
    return CheckResult(sort_diagnostics(diags), inputs.sources, comp, inputs)
