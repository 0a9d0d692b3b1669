"""Protocol verdicts as :class:`~diagnostics.model.Diagnostic` s.

Codes: the clause of each finding (``L-INIT``, ``L-ARRIVE``, ``L-TXBYTES``, ``L-PARITY``,
``L-RACE``, ``L-DEADLOCK``) and ``E-SOLVER-UNKNOWN`` for a query the solver could not
decide within its budget. ``E-`` (not ``L-``) because it names no clause violation but the
checker's own failure to decide one; it is an error so an undecided protocol is never
accepted. Traces appear twice: as a step table in the notes and as labels on the
contracts (primary on the blocking or racing step, secondary on the other steps).
"""

from __future__ import annotations

from checker.protocol.check import DEFAULT_RLIMIT, UNKNOWN_CODE, check_protocol
from checker.protocol.model import Protocol
from checker.protocol.smt import PARITY_RULE, PHASE_RULE, fact_text
from checker.protocol.verdict import Finding, ProtocolVerdict, Trace, Undecided
from diagnostics.model import Diagnostic, Label, sort_diagnostics
from diagnostics.symbols import Code
from solver import unknown_diagnostic

__all__ = ["UNKNOWN_CODE", "check_protocol", "protocol_diagnostics", "verdict_diagnostics"]


def verdict_diagnostics(verdict: ProtocolVerdict) -> list[Diagnostic]:
    """One diagnostic per finding and per undecided query, in deterministic order."""
    diags = [_finding(f) for f in verdict.findings]
    for query in verdict.undecided:
        diags.append(
            undecided_diagnostic(
                query.code,
                f"the protocol model could not decide {_question(query)} within its budget (rlimit {verdict.rlimit})",
                tuple(Label(p.span, f"{query.code} undecided here", True) for p in query.where[:1]),
                (
                    f"model: {verdict.stats.events} steps over {verdict.stats.bound} "
                    f"iterations, {verdict.stats.assertions} assertions",
                ),
                (("undecided", query.what), ("rlimit", str(verdict.rlimit))),
            )
        )
    return sort_diagnostics(diags)


_QUESTIONS: dict[str, str] = {
    Code.L_ARRIVE: "the arrival count of {}",
    Code.L_TXBYTES: "the transaction bytes of {}",
    Code.L_PARITY: "the first parities on {}",
    Code.L_RACE: "whether there is an {}",
}


def _question(query: Undecided) -> str:
    return _QUESTIONS.get(query.code, "{}").format(query.what)


def undecided_diagnostic(
    code: str,
    message: str,
    labels: tuple[Label, ...],
    notes: tuple[str, ...] = (),
    data: tuple[tuple[str, str], ...] = (),
    helps: tuple[str, ...] = (),
) -> Diagnostic:
    """``E-SOLVER-UNKNOWN`` for an undecided question of clause ``code`` (never a pass)."""
    return unknown_diagnostic(code, message, labels, more_notes=notes, helps=helps, data=data)


def protocol_diagnostics(
    protocol: Protocol, *, bound: int | None = None, rlimit: int = DEFAULT_RLIMIT
) -> list[Diagnostic]:
    """Check ``protocol`` and return its diagnostics (empty when it is safe)."""
    return verdict_diagnostics(check_protocol(protocol, bound=bound, rlimit=rlimit))


def proof_notes(verdict: ProtocolVerdict) -> list[str]:
    """ "Why safe" lines for each query proved unsat (needs ``explain=True``)."""
    lines = []
    for proof in verdict.proofs:
        facts = "; ".join(fact_text(f) for f in proof.facts)
        lines.append(f"{proof.query} is impossible because of: {facts}")
    return lines


def _finding(finding: Finding) -> Diagnostic:
    """A finding in words. What quotes the contracts' text (the trace's step table, the core)
    is written here, from the finding's provenances: a verdict is decided, and kept, on its
    protocol's meaning alone (checker/protocol/adapter.py, ``canonical``)."""
    labels = [Label(p.span, text, True) for p, text in finding.primary]
    primaries = {p for p, _ in finding.primary}
    labels += [Label(p.span, text, False) for p, text in finding.secondary if p not in primaries]
    notes = [render_table(finding.trace)] if finding.trace is not None else []
    notes += finding.notes
    data = finding.data
    if finding.trace is not None:
        notes.append(f"semantics: {PHASE_RULE.text}; {PARITY_RULE.text}")
    if finding.core:
        core = "; ".join(fact_text(f) for f in finding.core)
        notes.append(f"minimal conflicting facts: {core}")
        data = (*data, ("core", core))
    return Diagnostic(
        finding.code,
        finding.message,
        labels=tuple(_dedupe(labels)),
        notes=tuple(notes),
        helps=finding.helps,
        data=data,
    )


def render_table(trace: Trace) -> str:
    """The step table of a trace (``->`` marks the steps it ends at)."""
    head = ("#", "role", "step", "iter", "barrier", "slot", "phase", "parity", "effect")
    body = []
    for row in (*trace.rows, *trace.stuck):
        mark = "->" if row in trace.stuck else str(row.index)
        body.append(
            (
                mark,
                row.role,
                row.step.provenance.text,
                "pre" if row.iteration < 0 else str(row.iteration),
                row.barrier,
                _opt(row.slot),
                _opt(row.phase),
                _opt(row.parity),
                row.effect,
            )
        )
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    lines = ["trace (schedule order; phase = phases the barrier completed before the step):"]
    for r in (head, *body):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


def _dedupe(labels: list[Label]) -> list[Label]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for label in labels:
        key = (label.span, label.text, label.primary)
        if key not in seen:
            seen.add(key)
            out.append(label)
    return out
