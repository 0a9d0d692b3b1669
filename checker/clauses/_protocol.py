"""The protocol model's findings as diagnostics: the parts every protocol clause's wording shares.

The model decides (``checker/protocol/check.py``: typed findings, no text); the clause that
owns the code words it (l_arrive, l_txbytes, l_parity, l_race, l_deadlock), through
:class:`ModelClause`. This module holds what their diagnostics share: labels from
provenances, the trace's step table, the minimal core, and the ``E-SOLVER-UNKNOWN`` of a
query the solver could not decide. Traces appear twice: as a step table in the notes and as
labels on the contracts (primary on the blocking or racing step, secondary on the other steps).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.clause import Clause
from checker.composition import Composition
from checker.context import CheckContext
from checker.protocol.events import SYNC_ARRIVE
from checker.protocol.model import Op, Provenance, Step
from checker.protocol.smt import PARITY_RULE, PHASE_RULE, Fact, Rule, fact_text
from checker.protocol.verdict import StaticViolation, Trace, TraceRow, Undecided
from diagnostics.model import Diagnostic, Label
from solver import unknown_diagnostic

Labelled = tuple[Provenance, str]


class ModelClause(Clause, base=True):
    """A clause the protocol model decides: its findings come typed from the check's model, and it words them."""

    category = "protocol"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """The clause's own findings, in a check of its code alone (what no clause owns is the engine's)."""
        return self.check_in(comp, CheckContext(comp, frozenset({self.code})))

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return (self.word(found) for found in ctx.protocol_for(self.code))


def diagnostic(
    code: str,
    message: str,
    primary: Sequence[Labelled],
    secondary: Sequence[Labelled] = (),
    notes: Sequence[str] = (),
    helps: Sequence[str] = (),
    *,
    trace: Trace | None = None,
    core: Sequence[Fact] = (),
    data: Sequence[tuple[str, str]] = (),
) -> Diagnostic:
    """A finding in words: labels on the contracts' lines; the step table, notes, semantics and core."""
    labels = [Label(p.span, text, True) for p, text in primary]
    primaries = {p for p, _ in primary}
    labels += [Label(p.span, text, False) for p, text in secondary if p not in primaries]
    shown = [render_table(trace)] if trace is not None else []
    shown += notes
    if trace is not None:
        shown.append(f"semantics: {PHASE_RULE.text}; {PARITY_RULE.text}")
    if core:
        facts = "; ".join(fact_text(f) for f in core)
        shown.append(f"minimal conflicting facts: {facts}")
        data = (*data, ("core", facts))
    return Diagnostic(
        code, message, labels=tuple(_dedupe(labels)), notes=tuple(shown), helps=tuple(helps), data=tuple(data)
    )


def static_diagnostic(
    found: StaticViolation,
    messages: Sequence[str],
    primary: Sequence[Labelled],
    secondary: Sequence[Labelled],
    fix: str,
) -> Diagnostic:
    """A barrier's broken rules (``messages``: one per rule, the first reported) with their core and accounting."""
    acct = found.accounting
    notes = tuple(f"also: {m}" for m in messages[1:])
    notes += tuple(f"rule: {f.text}" for f in found.core if isinstance(f, Rule))
    data = (
        ("barrier", found.name),
        ("init", str(found.init)),
        ("arrivals", str(acct.arrivals)),
        ("expected_tx", str(acct.expected)),
        ("completed_tx", str(acct.completed)),
    )
    return diagnostic(found.code, messages[0], primary, secondary, notes, (fix,), core=found.core, data=data)


def count_labels(found: StaticViolation, declaration: str) -> tuple[list[Labelled], list[Labelled]]:
    """The labels of an accounting conflict: the declaration (when in the core) first, then the core's steps."""
    primary: list[Labelled] = []
    secondary: list[Labelled] = []
    if found.in_core:
        primary.append((found.declared_at, declaration))
    for step in found.steps:
        (secondary if primary else primary).append((step.provenance, _step_label(step)))
    return primary, secondary


def arrivals(n: int) -> str:
    return f"{n} arrival" + ("" if n == 1 else "s")


def times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _step_label(step: Step) -> str:
    if step.op is Op.ARRIVE and step.prearm:
        return f"`{step.role}` pre-arms with {arrivals(step.count)}"
    if step.op is Op.ARRIVE:
        tx = f" and expects {step.nbytes} bytes" if step.nbytes else ""
        return f"`{step.role}` arrives {times(step.count)} per phase{tx}"
    if step.op is Op.EXPECT_TX:
        return f"`{step.role}` expects {step.nbytes} bytes per phase"
    if step.op is Op.COPY:
        return f"a copy by `{step.role}` completes {step.nbytes} bytes"
    return f"`{step.role}` step"


def undecided(found: Undecided, what: str, question: str) -> Diagnostic:
    """``E-SOLVER-UNKNOWN`` for a query of ``found.code`` about ``what`` (``question`` words it), never a pass."""
    stats = found.stats
    model = f"model: {stats.events} steps over {stats.bound} iterations, {stats.assertions} assertions" if stats else ""
    return unknown_diagnostic(
        found.code,
        f"the protocol model could not decide {question} within its budget (rlimit {found.rlimit})",
        tuple(Label(p.span, f"{found.code} undecided here", True) for p in found.where[:1]),
        more_notes=(model,) if model else (),
        data=(("undecided", what), ("rlimit", str(found.rlimit))),
    )


def trace_labels(rows: Sequence[TraceRow], exclude: set[Provenance]) -> list[Labelled]:
    """One secondary label per line the trace runs (other than ``exclude``): when it runs."""
    seen: dict[Provenance, list[int]] = {}
    for row in rows:
        if row.step.provenance not in exclude:
            seen.setdefault(row.step.provenance, []).append(row.index)
    labels = []
    for prov, indices in seen.items():
        shown = ", ".join(f"#{i}" for i in indices[:6]) + (", …" if len(indices) > 6 else "")
        labels.append((prov, f"runs at trace {shown}"))
    return labels


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
                _effect(row),
            )
        )
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    lines = ["trace (schedule order; phase = phases the barrier completed before the step):"]
    for r in (head, *body):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _effect(row: TraceRow) -> str:
    """What a step of the trace did."""
    if row.blocked:
        return "blocks"
    done = f", completes phase {row.phase}" if row.completes else ""
    step = row.step
    op = step.op
    if op is Op.WAIT:
        return "passes"
    if op is Op.ARRIVE:
        tx = f", expects {step.nbytes} B" if step.nbytes else ""
        return f"arrives {step.count}{tx}{done}"
    if op is Op.EXPECT_TX:
        return f"expects {step.nbytes} B{done}"
    if op is Op.COPY:
        return f"writes slot {row.slot}, completes {step.nbytes} B{done}"
    if op is Op.WRITE:
        return f"writes slot {row.slot}" if row.slot is not None else f"writes tile {row.iteration}"
    if op is Op.READ:
        return f"reads slot {row.slot}" if row.slot is not None else f"reads tile {row.iteration}"
    if op is Op.READ_WAIT:
        return "its reads done"
    if op is Op.ADD:
        return f"adds {step.count} (value {row.value})"
    if op is Op.WAIT_GE:
        return f"passes (value {row.value} >= {row.threshold})"
    if op is Op.BAR_ARRIVE or row.part == SYNC_ARRIVE:
        return f"arrives {step.count} threads{done}"
    return "passes"


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
