"""The public API: check a composition, link it, format a contract, explain a clause.

``check`` is the whole audit: load the inputs, resolve the pipeline, run every
clause, then — only when the clauses accept — the stages that consume a verified
composition (placement, tensor routes), whose rejections are clause diagnostics
too. ``link`` checks, then generates, compiles and device-links an accepted
composition (``linker/link.py``). Nothing here raises on bad input; everything
becomes a diagnostic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from checker.clause import Clause
from checker.composition import Composition
from checker.engine import ModelOptions, by_code, errors, run_clauses, selected
from checker.protocol.adapter import MODEL_CODES
from checker.resolve import resolve
from diagnostics.model import Diagnostic, DiagnosticError, sort_diagnostics
from diagnostics.sources import SourceMap
from kernlink.downstream import Downstream, verify_downstream
from package.loader import Inputs, UsageError, load

if TYPE_CHECKING:
    from linker.link import LinkOutput


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    sources: SourceMap
    composition: Composition | None = None
    inputs: Inputs | None = field(default=None, repr=False)
    downstream: Downstream | None = field(default=None, repr=False)

    @property
    def accepted(self) -> bool:
        return not errors(self.diagnostics) and self.composition is not None


def compose(paths: Sequence[str | Path], *, target: str | None = None,
            strict: bool = False) -> tuple[Inputs, Composition | None]:
    """Load and resolve; the composition is None when no pipeline could be read."""
    inputs = load(paths, strict=strict)
    if inputs.pipeline is None:
        return inputs, None
    return inputs, resolve(inputs.pipeline, inputs.pipeline_source, inputs.candidates, target, inputs.unparsable)


def check_text(text: str, name: str = "<example>", *, target: str | None = None) -> CheckResult:
    """Check stages (and optionally one pipeline) given as one text, as in clause examples."""
    from contract_lang.parser import parse_text
    from diagnostics.model import DiagnosticError
    from diagnostics.span import Span
    from package.loader import StageEntry, implicit_pipeline

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
    diags = run_checks(comp, None, [])
    if not errors(diags):
        diags.extend(verify_downstream(comp).diagnostics)
    return CheckResult(sort_diagnostics(diags), sources, comp)


def check(paths: Sequence[str | Path], *, target: str | None = None, select: Sequence[str] | None = None,
          ignore: Sequence[str] | None = None, strict: bool = False,
          options: ModelOptions | None = None) -> CheckResult:
    """Audit a composition. Raises only ``UsageError`` / ``SelectionError`` for bad arguments.

    ``strict`` makes warnings about the inputs (a stale `.kc`, W-STALE-CONTRACT) errors;
    ``options`` sets the protocol model's solver budget and bound (``--rlimit``, ``--bound``).
    """
    clauses: list[type[Clause]] = selected(select, ignore)
    inputs, comp = compose(paths, target=target, strict=strict)
    diags = list(inputs.diagnostics)
    downstream = None
    if comp is not None:
        diags.extend(run_checks(comp, clauses, diags, options))
        if not errors(diags):
            codes = {c.code for c in clauses}
            downstream = verify_downstream(comp, options, codes)
            kept = [d for d in downstream.diagnostics if not d.code.startswith("L-") or d.code in codes]
            if not errors(kept):
                # accepted needs a placement and proved routes: what blocks them shows whatever
                # the selection (the protocol's own findings follow the selection, as above)
                kept += [d for d in errors(downstream.diagnostics) if d.code not in MODEL_CODES and d not in kept]
            diags.extend(kept)
    return CheckResult(sort_diagnostics(diags), inputs.sources, comp, inputs, downstream)


#: Clauses that decide whether the pipeline resolves at all; they run first, whatever is selected.
RESOLUTION = ("L-STAGE", "L-VERSION")


def run_checks(comp: Composition, clauses: Sequence[type[Clause]] | None,
               found: Sequence[Diagnostic], options: ModelOptions | None = None) -> list[Diagnostic]:
    """Resolution first, then the (selected) clauses — root cause first.

    While a `use` is unresolved, or an input (``found``) failed to load or parse, only
    the resolution clauses report: every other clause would judge a composition
    missing a stage, and its findings would be that stage's absence told again.
    """
    known = by_code()
    first = run_clauses(comp, [known[c] for c in RESOLUTION])
    # a warning made an error by --strict (W-) hides no stage: it does not stop the check
    if errors(first) or errors(d for d in found if not d.code.startswith("W-")):
        return first
    chosen = list(clauses) if clauses is not None else selected()
    codes = {c.code for c in chosen}
    return sort_diagnostics([*(d for d in first if d.code in codes),
                             *run_clauses(comp, [c for c in chosen if c.code not in RESOLUTION], options)])


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


def link(paths: Sequence[str | Path], out_dir: str | Path | None = None, *, target: str | None = None,
         emit_ptx: bool = False, strict: bool = False, watchdog: int | None = None) -> LinkResult:
    """Check, then link an accepted composition; with ``out_dir``, write the outputs there.

    The link map is written even when the check or the link fails. Raises only
    ``UsageError`` for bad arguments.
    """
    from linker.link import LinkOutput, link_composition, record_for, write_outputs

    if isinstance(out_dir, str) and not out_dir.strip():
        raise UsageError("an output directory cannot be empty")
    result = check(paths, target=target, strict=strict)
    comp, placed = result.composition, result.downstream.placed if result.downstream else None
    if not result.accepted or comp is None or placed is None:
        output = None
        if comp is not None:
            output = LinkOutput(record_for(comp))
            output.record.status = "rejected"
            output.record.diagnostics.extend(result.diagnostics)
    else:
        routes = result.downstream.routes if result.downstream is not None else None
        output = link_composition(comp, placed, emit_ptx=emit_ptx, routes=routes, watchdog=watchdog)
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
