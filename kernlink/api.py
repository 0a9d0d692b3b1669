"""The public API: check a composition, link it, format a contract, explain a clause.

``check`` is the whole audit: load the inputs, then the one check pipeline
(:func:`analysis.pipeline.analyse`): resolve the pipeline, run every clause, then —
only when the clauses accept — the stages that consume a verified composition
(placement, tensor routes), whose rejections are clause diagnostics too. ``link``
checks, then generates, compiles and device-links an accepted composition
(``linker/link.py``). Nothing here raises on bad input; everything becomes a
diagnostic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.pipeline import Analysis, AnalysisContext, analyse, resolve_inputs
from checker.composition import Composition
from checker.engine import ModelOptions, selected
from checker.memo import Memo
from diagnostics.model import Diagnostic, DiagnosticError, sort_diagnostics
from diagnostics.sources import SourceMap
from diagnostics.span import Span
from package.loader import Inputs, UsageError, load
from solver import Deadline, TimeBudgetSpent, time_budget_diagnostic, within

if TYPE_CHECKING:
    from linker.link import LinkOutput

#: What ``check`` returns: the pipeline's analysis (analysis/pipeline.py).
CheckResult = Analysis


def compose(
    paths: Sequence[str | Path], *, target: str | None = None, strict: bool = False
) -> tuple[Inputs, Composition | None]:
    """Load and resolve; the composition is None when no pipeline could be read."""
    inputs = load(paths, strict=strict)
    return inputs, resolve_inputs(inputs, target)


def check_text(text: str, name: str = "<example>", *, target: str | None = None) -> CheckResult:
    """Check stages (and optionally one pipeline) given as one text, as in clause examples."""
    from contract_lang.parser import parse_text
    from diagnostics.span import Span
    from package.loader import StageEntry, implicit_pipeline

    sources = SourceMap()
    sources.add(name, text)
    try:
        source = parse_text(text, name, "any")
    except DiagnosticError as err:
        return CheckResult(list(err.diagnostics), sources)
    stages = [StageEntry(s, name, None) for s in source.stages]
    pipeline = (
        source.pipelines[0] if source.pipelines else implicit_pipeline(source.stages, name, Span(name, 1, 1, 1, 1))
    )
    return analyse(Inputs(pipeline, name, stages, sources), AnalysisContext(target))


def check(
    paths: Sequence[str | Path],
    *,
    target: str | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    strict: bool = False,
    options: ModelOptions | None = None,
    memo: Memo | None = None,
    host_code: bool = True,
    require_binding: bool = False,
    deadline: Deadline | None = None,
) -> CheckResult:
    """Audit a composition. Raises only ``UsageError`` / ``SelectionError`` for bad arguments.

    ``strict`` makes warnings about the inputs (a stale `.kc`, W-STALE-CONTRACT) errors, and so
    is a code site the conformance analysis cannot decide (the analysis context's ``strict``);
    ``strict`` or ``require_binding`` refuses a package whose checked code is not shown to be the
    code it links (packing/binding.py: its LTO IR is lowered here, once per package's bytes);
    ``options`` sets the protocol model's solver budget and bound (``--rlimit``, ``--bound``);
    ``memo`` keeps verdicts for the caller's later checks (``--watch``, the language server);
    ``host_code=False`` (``--no-host-code``) refuses every host provider (E-HOST-CODE);
    ``deadline`` bounds the check's wall-clock time (``--time-budget``): past it the check is
    ``E-SOLVER-BUDGET``; cancelled, it raises :class:`solver.Cancelled`.
    """
    ctx = AnalysisContext(
        target,
        tuple(selected(select, ignore)),
        options or ModelOptions(),
        memo or Memo(),
        host_code=host_code,
        strict=strict,
    )
    if strict or require_binding:
        from packing.binding import refuse_unbound
    if deadline is None:
        inputs = load(paths, strict=strict)
        if strict or require_binding:
            refuse_unbound(inputs)
        return _told(analyse(inputs, ctx))
    loaded: Inputs | None = None
    try:
        with within(deadline):
            loaded = load(paths, strict=strict)
            if strict or require_binding:
                refuse_unbound(loaded)
            return _told(analyse(loaded, ctx))
    except TimeBudgetSpent as spent:
        head = loaded.pipeline.span if loaded is not None and loaded.pipeline is not None else None
        span = Span.point(head.file, head.line, head.col) if head is not None else Span.point(str(paths[0]), 1, 1)
        sources = loaded.sources if loaded is not None else SourceMap()
        return CheckResult([time_budget_diagnostic(spent.seconds, span)], sources, inputs=loaded)


def _told(result: CheckResult) -> CheckResult:
    """``result`` with spans inside a package told in the user's `.kc` where it holds the same contract."""
    from kernlink.spans import user_spans

    result.diagnostics = user_spans(result.diagnostics, result.inputs)
    return result


@dataclass
class LinkResult:
    """A link's diagnostics (the check's and the linker's), sources to render them, and its output."""

    diagnostics: list[Diagnostic]
    sources: SourceMap
    output: LinkOutput | None = None

    @property
    def ok(self) -> bool:
        """The link succeeded and its outputs were written."""
        return self.output is not None and self.output.ok and not any(d.is_error for d in self.diagnostics)


def link(
    paths: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    target: str | None = None,
    emit_ptx: bool = False,
    strict: bool = False,
    watchdog: int | None = None,
    memo: Memo | None = None,
    host_code: bool = True,
    require_binding: bool = False,
) -> LinkResult:
    """Check, then link an accepted composition; with ``out_dir``, write the outputs there.

    The link map is written even when the check or the link fails. Raises only
    ``UsageError`` for bad arguments. ``memo``, ``host_code``, ``strict`` and ``require_binding``: as for
    :func:`check` (the link refuses an unbound package too).
    """
    from linker.link import LinkOutput, link_composition, record_for, write_outputs

    if isinstance(out_dir, str) and not out_dir.strip():
        raise UsageError("an output directory cannot be empty")
    bind = strict or require_binding
    result = check(paths, target=target, strict=strict, memo=memo, require_binding=bind, host_code=host_code)
    comp, placed = result.composition, result.placed
    if not result.accepted or comp is None or placed is None:
        output = None
        if comp is not None:
            output = LinkOutput(record_for(comp))
            output.record.status = "rejected"
            output.record.diagnostics.extend(result.diagnostics)
    else:
        routes = result.downstream.routes if result.downstream is not None else None
        output = link_composition(
            comp, placed, emit_ptx=emit_ptx, routes=routes, watchdog=watchdog, require_binding=bind
        )
    diags = list(result.diagnostics)
    if output is not None and output.record.status != "rejected":
        diags = sort_diagnostics([*diags, *output.diagnostics])
    sources = result.sources
    if output is not None and output.generated is not None:
        sources.add("generated.cu", output.generated.source)
    if output is not None:
        from kernlink.paths import relocate_record

        relocate_record(output.record)  # the record names inputs relative to the pipeline, not the cwd
    if out_dir is not None and output is not None:
        try:
            write_outputs(output, out_dir)
        except DiagnosticError as err:
            diags.extend(err.diagnostics)
    return LinkResult(diags, sources, output)
