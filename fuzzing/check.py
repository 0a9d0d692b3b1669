"""Checking one mutant: print, parse back, analyse as ``kernlink check`` does, re-verify, judge."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from analysis.downstream import Downstream
from analysis.pipeline import Analysis, AnalysisContext, analyse
from checker.clause import Clause
from checker.composition import Composition
from checker.engine import by_code, selected
from checker.memo import Memo
from contract_lang import ast as A
from contract_lang.parser import parse_text
from contract_lang.printer import print_node
from diagnostics.model import Diagnostic, DiagnosticError, Severity
from diagnostics.symbols import Code
from fuzzing.compositions.edit import Mutation, apply_edits
from fuzzing.oracles import PARSE_CACHE, Oracle, default_oracles
from fuzzing.subject import Subject
from package.loader import StageEntry

Status = Literal["accepted", "rejected", "bug"]

#: Codes a rejection may carry besides the clauses' own: a solver that could not decide.
UNDECIDED_CODES = frozenset({Code.E_SOLVER_UNKNOWN, Code.E_SOLVER_BUDGET})

BUG_KINDS: Mapping[str, str] = {
    "raised": "the checker raised an exception",
    "internal": "a clause failed (E-INTERNAL)",
    "diagnostic": "a rejection carries an unregistered code or no source span",
    "round-trip": "a printed mutant did not parse back to the edited AST",
    "oracle": "an independent check refuted an accepted mutant",
}


def registered_codes() -> frozenset[str]:
    """Every code a rejection may carry: the registered clauses' and the solver's undecided codes."""
    return frozenset(by_code()) | UNDECIDED_CODES


def _error_codes(diags: Sequence[Diagnostic]) -> tuple[str, ...]:
    return tuple(sorted({d.code for d in diags if d.severity is Severity.ERROR}))


@dataclass(frozen=True)
class Classification:
    """How a campaign classifies one mutant (not a solver verdict): accepted, rejected with the
    clause codes, or a bug, found ``by`` the checker or an oracle (``bug`` says which kind)."""

    status: Status
    codes: tuple[str, ...] = ()
    by: str = "checker"
    bug: str | None = None
    problems: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    """An accepted mutant's oracles that did not run on it: ``"name: why"`` each."""


@dataclass(frozen=True)
class Outcome:
    """One checked mutant."""

    index: int
    mutation: Mutation
    classification: Classification
    seconds: float

    @property
    def kind(self) -> str:
        n = len(self.mutation.edits)
        return self.mutation.kind if n == 1 else f"{n} edits"


class Checker:
    """Checks mutants of one subject with one clause selection and a set of oracles."""

    def __init__(
        self, subject: Subject, clauses: Sequence[type[Clause]] | None = None, oracles: Sequence[Oracle] | None = None
    ) -> None:
        self.subject = subject
        self.clauses = list(clauses) if clauses is not None else selected()
        self.codes = frozenset(c.code for c in self.clauses)
        self.registered = registered_codes()
        self.oracles = list(oracles) if oracles is not None else default_oracles()
        # Printing and parsing are deterministic: an edited block seen before parses the same.
        self._parsed: dict[tuple[int, A.Stage | A.Pipeline], A.Stage | A.Pipeline | Classification] = {}
        self._printed: dict[int, _Printed | None] = {}
        # One context for every mutant's check: protocol verdicts (on their meaning) and PTX facts
        # in its memo; placement is deterministic (the same problem gets the same placement): each
        # is solved once.
        self.context = AnalysisContext(subject.target, tuple(self.clauses), memo=Memo(), downstreams=_Downstreams())

    def units(self, mutation: Mutation) -> tuple[A.Stage | A.Pipeline, ...]:
        return apply_edits(self.subject.bundle.units, mutation.edits)

    def check(self, mutation: Mutation) -> Classification:
        """How one mutant is classified; never raises."""
        try:
            return self._check(mutation)
        except Exception as err:  # anything escaping resolution, the clauses or an oracle is a bug
            return Classification("bug", bug="raised", problems=(f"{type(err).__name__}: {err}",))

    def _check(self, mutation: Mutation) -> Classification:
        analysis = self.analysis(mutation)
        if isinstance(analysis, Classification):
            return analysis
        comp = analysis.composition
        assert comp is not None
        if analysis.downstream is None:
            return self.judge(analysis.diagnostics)
        classified = self.judge(analysis.later, by="placement")
        if classified.status != "accepted":
            return classified
        skipped = []
        for oracle in self.oracles:
            result = oracle.check(comp, analysis.placed, self.codes)
            if result.problems:
                return Classification("bug", bug="oracle", by=oracle.name, problems=result.problems)
            if result.skipped:
                skipped.append(f"{oracle.name}: {result.skipped}")
        return dataclasses.replace(classified, unverified=tuple(skipped)) if skipped else classified

    def analysis(self, mutation: Mutation) -> Analysis | Classification:
        """The mutant printed, parsed back and analysed as ``kernlink check`` does (may raise),
        or the round-trip bug that stops it."""
        subject = self.subject
        units = self.units(mutation)
        candidates = list(subject.inputs.candidates)
        pipeline = subject.inputs.pipeline
        assert pipeline is not None
        n_stages = len(subject.bundle.stages)
        for u in mutation.changed_units():
            parsed = self._reparse(units[u], u)
            if isinstance(parsed, Classification):
                return parsed
            if u == n_stages:
                assert isinstance(parsed, A.Pipeline)
                pipeline = parsed
            else:
                assert isinstance(parsed, A.Stage)
                old = candidates[subject.slots[u]]
                candidates[subject.slots[u]] = StageEntry(
                    parsed, mutant_name(old.source), old.use, old.package, old.captured
                )
        mutant = dataclasses.replace(subject.inputs, pipeline=pipeline, candidates=candidates, diagnostics=[])
        return analyse(mutant, self.context)

    def _reparse(self, unit: A.Stage | A.Pipeline, u: int) -> A.Stage | A.Pipeline | Classification:
        key = (u, unit)
        found = self._parsed.get(key)
        if found is None:
            if len(self._parsed) >= PARSE_CACHE:
                self._parsed.clear()
            found = self._parsed[key] = self._print_and_parse(unit, u)
        return found

    def _print_and_parse(self, unit: A.Stage | A.Pipeline, u: int) -> A.Stage | A.Pipeline | Classification:
        text = print_node(unit)
        kind: Literal["contract", "pipeline"] = "pipeline" if isinstance(unit, A.Pipeline) else "contract"
        if u not in self._printed:
            self._printed[u] = _Printed.of(self.subject.bundle.units[u], mutant_name(f"unit{u}"), kind)
        base = self._printed[u]
        found = base.reparse(unit, text) if base is not None else None
        if found is not None:
            return found
        try:
            source = parse_text(text, mutant_name(f"unit{u}"), kind)
        except DiagnosticError as err:
            return Classification(
                "bug",
                bug="round-trip",
                problems=tuple(f"printed mutant does not parse: {d.code}: {d.message}" for d in err.diagnostics),
            )
        parsed = source.items[0] if len(source.items) == 1 else None
        if parsed != unit:
            return Classification("bug", bug="round-trip", problems=("printed mutant parses to a different AST",))
        assert parsed is not None
        return parsed

    def judge(self, diags: Sequence[Diagnostic], *, by: str = "checker") -> Classification:
        """Rejected, accepted, or a bug (E-INTERNAL, an unregistered code, a rejection without span)."""
        errors = [d for d in diags if d.severity is Severity.ERROR]
        internal = [d for d in errors if d.code == Code.E_INTERNAL]
        if internal:
            return Classification("bug", bug="internal", by=by, problems=_internal_problems(internal))
        malformed = [d for d in errors if d.code not in self.registered or not d.labels]
        if malformed:
            return Classification(
                "bug",
                bug="diagnostic",
                by=by,
                problems=tuple(
                    f"{d.code}: {d.message}: " + ("unregistered code" if d.code not in self.registered else "no span")
                    for d in malformed
                ),
            )
        if errors:
            return Classification("rejected", codes=_error_codes(errors), by=by)
        return Classification("accepted")


@dataclass(frozen=True)
class _Printed:
    """An unmutated unit printed and parsed back, with the lines each of its items spans.

    A mutant's unit prints the same lines as this one but for the items an edit changed
    (most edits rewrite a line in place). :meth:`reparse` parses those items' lines alone,
    at their places (every other item's lines left blank), and takes the other items from
    this parse: the same text at the same place parses to the same nodes and spans, so the
    result is the unit the whole printed text parses to — and the round trip is still
    checked on every item the mutant changed.
    """

    unit: A.Stage | A.Pipeline
    parsed: A.Stage | A.Pipeline
    lines: tuple[str, ...]
    spans: tuple[range, ...]
    path: str
    kind: Literal["contract", "pipeline"]

    @classmethod
    def of(cls, unit: A.Stage | A.Pipeline, path: str, kind: Literal["contract", "pipeline"]) -> _Printed | None:
        text = print_node(unit)
        try:
            source = parse_text(text, path, kind)
        except DiagnosticError:
            return None
        parsed = source.items[0] if len(source.items) == 1 else None
        if parsed is None or parsed != unit or any(not it.span.line for it in parsed.items):
            return None
        spans = tuple(range(it.span.line - 1, it.span.end_line) for it in parsed.items)
        return cls(unit, parsed, tuple(text.split("\n")), spans, path, kind)

    def reparse(self, unit: A.Stage | A.Pipeline, text: str) -> A.Stage | A.Pipeline | None:
        """What ``text`` (``unit`` printed) parses to, from its changed items' lines alone;
        None when the lines moved or anything is unexpected (then the whole text is parsed)."""
        lines = text.split("\n")
        base = self.unit
        if type(unit) is not type(base) or len(lines) != len(self.lines) or len(unit.items) != len(base.items):
            return None
        changed = [i for i, (a, b) in enumerate(zip(unit.items, base.items, strict=True)) if a != b]
        if not changed:
            return self.parsed if unit == base else None
        kept = {k for i in changed for k in self.spans[i]}
        blank = {k for r in self.spans for k in r} - kept
        if any(lines[k] != self.lines[k] for k in range(len(lines)) if k not in kept):
            return None
        try:
            source = parse_text("\n".join("" if k in blank else t for k, t in enumerate(lines)), self.path, self.kind)
        except DiagnosticError:
            return None
        part = source.items[0] if len(source.items) == 1 else None
        if part is None or type(part) is not type(unit) or len(part.items) != len(changed):
            return None
        items = list(self.parsed.items)
        for i, item in zip(changed, part.items, strict=True):
            items[i] = item
        found = dataclasses.replace(part, items=tuple(items))  # type: ignore[arg-type]
        return found if found == unit else None


_CLAUSE_FAILED = re.compile(r"^clause `(?P<code>[^`]+)` failed with (?P<what>.*)$", re.S)


class _Downstreams:
    """Placements and routes by what they read: the placement problem, the tensor connections and
    the protocol decided at the placed depths."""

    def __init__(self) -> None:
        self._found: dict[object, Downstream] = {}

    def get(self, comp: Composition, compute: Callable[[], Downstream]) -> Downstream:
        from placement.adapter import problem_from

        key = (
            problem_from(comp),
            tuple(o.item for o in comp.items(A.ExportTensor)),
            tuple(o.item for o in comp.tensor_imports),
            _protocol_key(comp),
        )
        found = self._found.get(key)
        if found is None:
            if len(self._found) >= PARSE_CACHE:
                self._found.clear()
            found = self._found[key] = compute()
        return found


def _protocol_key(comp: Composition) -> object:
    """What the protocol decided at the placed depths reads: its meaning at the deepest checked depths."""
    from checker.protocol.build import build
    from checker.protocol.check import canonical
    from checker.protocol.depths import depth_choices

    protocol = build(comp, depth_choices(comp)[-1])
    return None if protocol is None else canonical(protocol)[0]


def _internal_problems(internal: Sequence[Diagnostic]) -> tuple[str, ...]:
    """E-INTERNAL messages, one line per distinct failure (the clauses that hit it listed together)."""
    failures: dict[str, list[str]] = {}
    for diag in internal:
        where = next((n for n in diag.notes if n.startswith("raised at")), "")
        match = _CLAUSE_FAILED.match(diag.message)
        what = f"{match['what']} ({where})" if match else f"{diag.message} ({where})"
        failures.setdefault(what, []).append(match["code"] if match else "")
    out = []
    for what, codes in failures.items():
        named = ", ".join(f"`{c}`" for c in codes if c)
        out.append(f"{'clauses' if len(codes) > 1 else 'clause'} {named} failed with {what}" if named else what)
    return tuple(out)


def mutant_name(source: str) -> str:
    """The file name diagnostics of a mutated block point at."""
    return f"{source}~mutant"
