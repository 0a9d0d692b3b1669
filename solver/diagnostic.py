"""``E-SOLVER-UNKNOWN``: a question the solver could not decide, shown where it was asked; and
``E-SOLVER-BUDGET`` for a check that ran out of its time budget."""

from __future__ import annotations

from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code

UNKNOWN_CODE = Code.E_SOLVER_UNKNOWN
"""An error, never a warning: an undecided question is not a pass, so nothing is accepted."""

NOT_A_PASS = "an undecided query is not a pass: the composition is not accepted"
RAISE_BUDGET = (
    "raise the solver budget (`kernlink check --rlimit N`) or lower the iterations the model unrolls (`--bound K`)"
)


def unknown_diagnostic(
    clause: str,
    message: str,
    labels: tuple[Label, ...],
    *,
    notes: tuple[str, ...] | None = None,
    more_notes: tuple[str, ...] = (),
    helps: tuple[str, ...] = (),
    data: tuple[tuple[str, str], ...] = (),
) -> Diagnostic:
    """``E-SOLVER-UNKNOWN`` for an undecided question of ``clause``, with at least one label.

    ``notes`` replaces the standard first note (whose clause the question is, and that it is
    not a pass), ``more_notes`` follow it; ``helps`` defaults to raising the budget.
    ``data["clause"]`` names the clause: selections keep the diagnostic whatever they name.
    """
    if not labels:
        raise ValueError(f"{UNKNOWN_CODE} needs a span: where was `{clause}` asked?")
    lead = notes if notes is not None else (f"the question belongs to `{clause}`; {NOT_A_PASS}",)
    return Diagnostic(
        UNKNOWN_CODE,
        message,
        severity=Severity.ERROR,
        labels=labels,
        notes=(*lead, *more_notes),
        helps=helps or (RAISE_BUDGET,),
        data=(("clause", clause), *data),
    )


def time_budget_diagnostic(seconds: float, span: Span) -> Diagnostic:
    """``E-SOLVER-BUDGET``: the check of the composition at ``span`` was not decided within ``seconds``."""
    return Diagnostic(
        Code.E_SOLVER_BUDGET,
        f"the check was not decided within its time budget of {seconds:g} s",
        severity=Severity.ERROR,
        labels=(Label(span, "the composition checked"),),
        notes=("a check that runs out of time is not a pass: the composition is not accepted",),
        helps=(
            "raise the budget (`kernlink check --time-budget SECONDS`, 0 for none), or narrow the choices "
            "the check must explore (fixed ring depths instead of wide ranges, fewer rings per stage)",
        ),
        data=(("seconds", f"{seconds:g}"),),
    )
