"""``E-SOLVER-UNKNOWN``: a question the solver could not decide, shown where it was asked."""

from __future__ import annotations

from diagnostics.model import Diagnostic, Label, Severity
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
