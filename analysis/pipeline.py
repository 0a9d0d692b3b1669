"""The one check pipeline: resolve → clauses → place → route, with an explicit per-check context.

``kernlink check`` (:func:`kernlink.api.check`), clause examples (``check_text``), fuzz
campaigns and the clause fixtures all run :func:`analyse`. What one check shares (the
selection, the protocol model's options, the memo of verdicts a caller keeps between
checks, a cache of placements) is its :class:`AnalysisContext`; nothing is module-level.

"Accepted" needs a placement and proved routes: what blocks them is reported whatever
the selection, and an accepted analysis always carries its placement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from analysis.downstream import Downstream, verify_downstream
from analysis.host_code import host_code_refusals
from checker.clause import Clause
from checker.clauses import l_conform, l_integrity
from checker.composition import Composition
from checker.engine import by_code, errors, run_clauses, selected
from checker.memo import Memo
from checker.policy import MODEL_CODES
from checker.protocol.check import ModelOptions
from checker.resolve import resolve
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label, sort_diagnostics
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code
from package.loader import Inputs
from placement.adapter import Placed

#: Clauses that decide whether the pipeline resolves at all; they run first, whatever is selected.
RESOLUTION = (Code.L_STAGE, Code.L_VERSION)


class DownstreamCache(Protocol):
    """Placement and routes kept between checks by what they read (a fuzz campaign keeps one)."""

    def get(self, comp: Composition, compute: Callable[[], Downstream]) -> Downstream: ...


@dataclass
class AnalysisContext:
    """One check's explicit state: the target, the selected clauses, the model options and the memos."""

    target: str | None = None
    clauses: tuple[type[Clause], ...] = field(default_factory=lambda: tuple(selected()))
    options: ModelOptions = field(default_factory=ModelOptions)
    memo: Memo = field(default_factory=Memo, repr=False)
    downstreams: DownstreamCache | None = field(default=None, repr=False)
    host_code: bool = True  # False: `--no-host-code`, every host provider is E-HOST-CODE (analysis/host_code.py)
    strict: bool = False  # `--strict`: a site the conformance analysis cannot decide is an error (l_conform.strict)

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(c.code for c in self.clauses)


@dataclass
class Analysis:
    """A check's diagnostics, the sources to render them and what it built on the way.

    ``downstream`` is None when the check stopped before placement (the inputs or a
    clause rejected the composition); ``later`` are the diagnostics of placement and
    routes that the selection reports.
    """

    diagnostics: list[Diagnostic]
    sources: SourceMap
    composition: Composition | None = None
    inputs: Inputs | None = field(default=None, repr=False)
    downstream: Downstream | None = field(default=None, repr=False)
    later: list[Diagnostic] = field(default_factory=list, repr=False)

    @property
    def accepted(self) -> bool:
        """No error, and a placement (with routes) to link: unknown is never accept."""
        return not errors(self.diagnostics) and self.placed is not None

    @property
    def placed(self) -> Placed | None:
        return self.downstream.placed if self.downstream is not None else None


def resolve_inputs(inputs: Inputs, target: str | None = None) -> Composition | None:
    """The composition the inputs form (None when no pipeline could be read)."""
    if inputs.pipeline is None:
        return None
    return resolve(inputs.pipeline, inputs.pipeline_source, inputs.candidates, target, inputs.unparsable)


def analyse(inputs: Inputs, ctx: AnalysisContext | None = None) -> Analysis:
    """Check loaded inputs: resolve, run the clauses, then place and route an accepted composition.

    Under ``ctx.strict`` an undecided conformance site rejects: every verb and the API read
    "accepted" from here (the inputs' own strictness, a stale `.kc`, is the loader's).
    """
    ctx = ctx or AnalysisContext()
    found = _analyse(inputs, ctx)
    if ctx.strict:
        found.diagnostics = l_conform.strict(found.diagnostics)
    return found


def _analyse(inputs: Inputs, ctx: AnalysisContext) -> Analysis:
    comp = resolve_inputs(inputs, ctx.target)
    loaded = input_diagnostics(inputs)
    diags = list(loaded)
    if comp is None:
        return Analysis(sort_diagnostics(diags), inputs.sources, None, inputs)
    if not ctx.host_code:
        diags.extend(host_code_refusals(comp))
    diags.extend(clause_diagnostics(comp, ctx, loaded))
    if errors(diags):
        return Analysis(sort_diagnostics(diags), inputs.sources, comp, inputs)
    downstream = _downstream(comp, ctx)
    later = _selected_later(comp, downstream, ctx.codes)
    return Analysis(sort_diagnostics([*diags, *later]), inputs.sources, comp, inputs, downstream, later)


def input_diagnostics(inputs: Inputs) -> list[Diagnostic]:
    """What loading the inputs found: its diagnostics, and each package that is not intact (L-INTEGRITY)."""
    return [*inputs.diagnostics, *(l_integrity.defect(u.finding, u.use.span if u.use else None) for u in inputs.unread)]


def clause_diagnostics(comp: Composition, ctx: AnalysisContext, found: Sequence[Diagnostic] = ()) -> list[Diagnostic]:
    """Resolution first, then the selected clauses — root cause first.

    While a `use` is unresolved, or an input (``found``) failed to load or parse, only
    the resolution clauses report: every other clause would judge a composition
    missing a stage, and its findings would be that stage's absence told again.
    """
    known = by_code()
    first = run_clauses(comp, [known[c] for c in RESOLUTION], memo=ctx.memo, leftovers=False)
    # a warning made an error by --strict (W-) hides no stage: it does not stop the check
    if errors(first) or errors(d for d in found if not d.code.startswith("W-")):
        return first
    codes = ctx.codes
    return sort_diagnostics(
        [
            *(d for d in first if d.code in codes),
            *run_clauses(comp, [c for c in ctx.clauses if c.code not in RESOLUTION], ctx.options, ctx.memo),
            *_lone_fragments(comp, codes),
        ]
    )


def _lone_fragments(comp: Composition, codes: frozenset[str]) -> list[Diagnostic]:
    """The register fragments no pair of ``comp`` reaches, each checked on its own side
    (transfer_model.fragments.check_alone): what a stage checked alone can decide of them. Under
    the selection: an undecided query stays whatever clause it belongs to."""
    if not any(True for _ in comp.items(A.Fragment)):
        return []
    from transfer_model.fragments import check_alone

    return [d for d in check_alone(comp) if d.code in codes or dict(d.data).get("clause") in codes]


def _downstream(comp: Composition, ctx: AnalysisContext) -> Downstream:
    def compute() -> Downstream:
        return verify_downstream(comp, ctx.options, ctx.codes, ctx.memo)

    return compute() if ctx.downstreams is None else ctx.downstreams.get(comp, compute)


def _selected_later(comp: Composition, downstream: Downstream, codes: frozenset[str]) -> list[Diagnostic]:
    """Placement's and the routes' diagnostics under the selection.

    Clause codes follow the selection; when what is left accepts, what blocks the placement
    or the routes is reported anyway (the protocol's own findings follow the selection).
    """
    kept = [d for d in downstream.diagnostics if not d.code.startswith("L-") or d.code in codes]
    if not errors(kept):
        kept += [d for d in errors(downstream.diagnostics) if d.code not in MODEL_CODES and d not in kept]
    if not errors(kept) and downstream.placed is None:
        kept.append(
            Diagnostic(
                Code.E_INTERNAL,
                "the clauses accepted a composition that has no placement",
                labels=(Label(comp.pipeline.span, "in this composition"),),
                helps=("report it with the inputs: a clause or the placement should have said why",),
            )
        )
    return kept


__all__ = [
    "RESOLUTION",
    "Analysis",
    "AnalysisContext",
    "DownstreamCache",
    "analyse",
    "clause_diagnostics",
    "resolve_inputs",
]
