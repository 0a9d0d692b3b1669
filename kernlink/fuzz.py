"""Mutation campaigns against a user's composition (``kernlink fuzz PIPELINE.kp``).

A campaign loads the composition as ``kernlink check`` does, checks it (it must be
accepted), then checks mutants of it: each mutant applies one or more edits of the
catalogue in :mod:`contract_lang.compositions` to the ASTs of the stages and the
pipeline, prints every edited block, parses the text back and checks the result the
way ``kernlink check`` checks a user's files (packages keep what they captured):
resolution, every selected clause, then, on acceptance, the joint placement
(:func:`analysis.pipeline.analyse`, the pipeline ``kernlink check`` runs). Each mutant
ends in one of three states:

- **rejected** by one or more clauses, or by placement (the report counts the codes
  per mutation kind, placement's marked as such);
- **accepted**, then re-verified by the independent checks (:class:`Oracle`): the
  placement verifier and the explicit-state protocol explorer, where they apply;
- a **checker bug**: the checker raised or reported ``E-INTERNAL``, a rejection carries
  an unregistered code or no source span, a printed edit did not parse back, or an
  independent check refuted an accepted mutant. Bugs are shrunk (delta debugging over
  the edits) and reported with the mutated contract text.

Mutant ``i`` of seed ``s`` is always the same mutation: the first mutants walk every
single edit of the catalogue in an order fixed by the seed; later ones stack 2 to
``max_edits`` edits drawn from ``random.Random(f"{s}:{i}")``. A budget of seconds stops
after a prefix of that sequence, so ``--seed s --examples n`` replays it.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from analysis.downstream import Downstream
from analysis.pipeline import AnalysisContext, analyse
from checker.clause import Clause
from checker.composition import Composition
from checker.engine import by_code, selected
from checker.memo import Memo
from checker.resolve import select_stages
from contract_lang import ast as A
from contract_lang.compositions.bundle import Bundle
from contract_lang.compositions.catalogue import MUTATION_KINDS, edits
from contract_lang.compositions.draw import random_mutation
from contract_lang.compositions.edit import Edit, Mutation, apply_edits
from contract_lang.parser import parse_text
from contract_lang.printer import print_node
from diagnostics.model import Diagnostic, DiagnosticError, Severity
from package.loader import Inputs, StageEntry, UsageError, load
from placement.adapter import Placed

Status = Literal["accepted", "rejected", "bug"]

#: Codes a rejection may carry besides the clauses' own: a solver that could not decide.
UNDECIDED_CODES = frozenset({"E-SOLVER-UNKNOWN", "E-SOLVER-BUDGET"})

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


# ============================================================================ independent checks

@dataclass(frozen=True)
class OracleResult:
    """What an independent check says about an accepted composition.

    ``applicable`` is False when the check has nothing to say (no protocol to explore);
    ``problems`` are the ways it refutes the checker's acceptance: each is a checker bug.
    """

    applicable: bool
    problems: tuple[str, ...] = ()


class Oracle(Protocol):
    """An independent re-verification of an accepted composition."""

    @property
    def name(self) -> str: ...

    def check(self, comp: Composition, placed: Placed | None, clauses: frozenset[str]) -> OracleResult:
        """Re-verify ``comp``, which the clauses ``clauses`` accepted and placement placed as ``placed``."""
        ...


@dataclass
class PlacementOracle:
    """Verify an accepted composition's placement with the independent verifier.

    :func:`placement.verify` recomputes every size, alignment, range, warp and register
    budget in plain Python (no Z3); any violation is a checker bug: the joint placement
    of an accepted composition is wrong.
    """

    name: str = "placement"

    def check(self, comp: Composition, placed: Placed | None, clauses: frozenset[str]) -> OracleResult:
        from placement import verify

        if placed is None:
            return OracleResult(False)
        problems = tuple(f"placement verifier: {v}" for v in verify(placed.problem, placed.placement))
        return OracleResult(True, problems=problems)


@dataclass
class ProtocolOracle:
    """Explore every interleaving of an accepted composition's protocol, read from its contracts.

    :mod:`kernlink.contract_oracle` builds its own model from the contracts (no adapter,
    no solver, no channel left out) and runs it at the ring depths placement chose — the
    configuration that is linked. A deadlock, a race or a violated declaration (arrival
    counts, transaction bytes, parity) it finds is a checker bug when the clause deciding
    it ran and accepted. Runs with more than ``max_states`` states are skipped. Cached by
    the contracts' channel items and the depths.
    """

    name: str = "protocol"
    max_states: int = 200_000
    _cache: dict[Any, tuple[str, ...] | None] = field(default_factory=dict, repr=False)

    def check(self, comp: Composition, placed: Placed | None, clauses: frozenset[str]) -> OracleResult:
        from kernlink.contract_oracle import TooLarge, problems_of

        if placed is None or not (comp.rings or comp.counters or comp.rendezvous):
            return OracleResult(False)
        depths = {r.name: r.depth for r in placed.placement.rings}
        key = (tuple(sorted(depths.items())), tuple(o.item for o in comp.items(A.Ring)),
               tuple(o.item for o in comp.items(A.Counter)), tuple(o.item for o in comp.items(A.Rendezvous)),
               tuple(sorted((r, i.warps) for r, i in comp.roles.items())),
               tuple((e.stage.name, tuple(type(i).__name__ for i in e.stage.items)) for e in comp.stages))
        if key not in self._cache:
            if len(self._cache) >= PARSE_CACHE:
                self._cache.clear()
            try:
                self._cache[key] = problems_of(comp, depths, max_states=self.max_states)
            except TooLarge:
                self._cache[key] = None
        found = self._cache[key]
        if found is None:
            return OracleResult(False)
        at = ", ".join(f"{ring} at depth {d}" for ring, d in sorted(depths.items())) or "no ring"
        problems = [f"contract oracle ({at}): {p}" for p in found if p.split(":", 1)[0] in clauses]
        return OracleResult(True, tuple(dict.fromkeys(problems)))


_REGISTERED_ORACLES: list[Oracle] = [PlacementOracle(), ProtocolOracle()]


def default_oracles() -> list[Oracle]:
    """The independent checks every campaign runs unless told otherwise.

    The placement verifier and the protocol explorer. Plug in another with one call,
    :func:`register_oracle`, or pass ``oracles=`` to :class:`Campaign`.
    """
    return list(_REGISTERED_ORACLES)


def register_oracle(oracle: Oracle) -> None:
    """Add an independent check to every campaign that uses :func:`default_oracles`."""
    if all(o.name != oracle.name for o in _REGISTERED_ORACLES):
        _REGISTERED_ORACLES.append(oracle)


def _error_codes(diags: Sequence[Diagnostic]) -> tuple[str, ...]:
    return tuple(sorted({d.code for d in diags if d.severity is Severity.ERROR}))


# ============================================================================ the subject

@dataclass(frozen=True)
class Subject:
    """The composition under test: its loaded inputs and the stages its pipeline selected."""

    inputs: Inputs
    bundle: Bundle
    entries: tuple[StageEntry, ...]
    slots: tuple[int, ...]
    """For each stage of the bundle, its index in ``inputs.candidates``."""
    target: str | None = None

    @property
    def name(self) -> str:
        return self.inputs.pipeline_source


def load_subject(paths: Sequence[str], *, target: str | None = None) -> Subject:
    """Load a composition for fuzzing; raises UsageError when no pipeline can be formed."""
    inputs = load(paths)
    if inputs.pipeline is None:
        raise UsageError("no composition to fuzz: " + "; ".join(d.message for d in inputs.diagnostics[:3]))
    chosen, _ = select_stages(inputs.pipeline, inputs.candidates)
    slots: list[int] = []
    for entry in chosen:
        slots.append(next(i for i, c in enumerate(inputs.candidates)
                          if c.stage is entry.stage and c.source == entry.source and c.package == entry.package))
    bundle = Bundle(inputs.pipeline, tuple(e.stage for e in chosen))
    return Subject(inputs, bundle, tuple(chosen), tuple(slots), target)


def bundle_subject(bundle: Bundle, name: str = "<bundle>", *, target: str | None = None) -> Subject:
    """A subject from ASTs alone (a generated composition), as if read from one file."""
    entries = tuple(StageEntry(s, name, None) for s in bundle.stages)
    inputs = Inputs(pipeline=bundle.pipeline, pipeline_source=name, candidates=list(entries))
    chosen, _ = select_stages(bundle.pipeline, entries)
    slots = tuple(next(i for i, c in enumerate(entries) if c.stage is e.stage) for e in chosen)
    stages = tuple(e.stage for e in chosen)
    return Subject(inputs, Bundle(bundle.pipeline, stages), tuple(chosen), slots, target)


# ============================================================================ checking one mutant

@dataclass(frozen=True)
class Verdict:
    status: Status
    codes: tuple[str, ...] = ()
    by: str = "checker"
    bug: str | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """One checked mutant."""

    index: int
    mutation: Mutation
    verdict: Verdict
    seconds: float

    @property
    def kind(self) -> str:
        n = len(self.mutation.edits)
        return self.mutation.kind if n == 1 else f"{n} edits"


PARSE_CACHE = 4096


class Checker:
    """Checks mutants of one subject with one clause selection and a set of oracles."""

    def __init__(self, subject: Subject, clauses: Sequence[type[Clause]] | None = None,
                 oracles: Sequence[Oracle] | None = None) -> None:
        self.subject = subject
        self.clauses = list(clauses) if clauses is not None else selected()
        self.codes = frozenset(c.code for c in self.clauses)
        self.registered = registered_codes()
        self.oracles = list(oracles) if oracles is not None else default_oracles()
        # Printing and parsing are deterministic: an edited block seen before parses the same.
        self._parsed: dict[tuple[int, A.Stage | A.Pipeline], A.Stage | A.Pipeline | Verdict] = {}
        # One context for every mutant's check: protocol verdicts (on their meaning) and PTX facts
        # in its memo; placement is deterministic (the same problem gets the same placement): each
        # is solved once.
        self.context = AnalysisContext(subject.target, tuple(self.clauses), memo=Memo(),
                                       downstreams=_Downstreams())

    def units(self, mutation: Mutation) -> tuple[A.Stage | A.Pipeline, ...]:
        return apply_edits(self.subject.bundle.units, mutation.edits)

    def check(self, mutation: Mutation) -> Verdict:
        """The verdict on one mutant; never raises."""
        try:
            return self._check(mutation)
        except Exception as err:  # anything escaping resolution, the clauses or an oracle is a bug
            return Verdict("bug", bug="raised", problems=(f"{type(err).__name__}: {err}",))

    def _check(self, mutation: Mutation) -> Verdict:
        subject = self.subject
        units = self.units(mutation)
        candidates = list(subject.inputs.candidates)
        pipeline = subject.inputs.pipeline
        assert pipeline is not None
        n_stages = len(subject.bundle.stages)
        for u in mutation.changed_units():
            parsed = self._reparse(units[u], u)
            if isinstance(parsed, Verdict):
                return parsed
            if u == n_stages:
                assert isinstance(parsed, A.Pipeline)
                pipeline = parsed
            else:
                assert isinstance(parsed, A.Stage)
                old = candidates[subject.slots[u]]
                candidates[subject.slots[u]] = StageEntry(parsed, mutant_name(old.source), old.use,
                                                          old.package, old.captured)
        mutant = dataclasses.replace(subject.inputs, pipeline=pipeline, candidates=candidates, diagnostics=[])
        analysis = analyse(mutant, self.context)
        comp = analysis.composition
        assert comp is not None
        if analysis.downstream is None:
            return self.judge(analysis.diagnostics)
        verdict = self.judge(analysis.later, by="placement")
        if verdict.status != "accepted":
            return verdict
        for oracle in self.oracles:
            result = oracle.check(comp, analysis.placed, self.codes)
            if result.problems:
                return Verdict("bug", bug="oracle", by=oracle.name, problems=result.problems)
        return verdict

    def _reparse(self, unit: A.Stage | A.Pipeline, u: int) -> A.Stage | A.Pipeline | Verdict:
        key = (u, unit)
        found = self._parsed.get(key)
        if found is None:
            if len(self._parsed) >= PARSE_CACHE:
                self._parsed.clear()
            found = self._parsed[key] = self._print_and_parse(unit, u)
        return found

    def _print_and_parse(self, unit: A.Stage | A.Pipeline, u: int) -> A.Stage | A.Pipeline | Verdict:
        text = print_node(unit)
        kind: Literal["contract", "pipeline"] = "pipeline" if isinstance(unit, A.Pipeline) else "contract"
        try:
            source = parse_text(text, mutant_name(f"unit{u}"), kind)
        except DiagnosticError as err:
            return Verdict("bug", bug="round-trip", problems=tuple(
                f"printed mutant does not parse: {d.code}: {d.message}" for d in err.diagnostics))
        parsed = source.items[0] if len(source.items) == 1 else None
        if parsed != unit:
            return Verdict("bug", bug="round-trip", problems=("printed mutant parses to a different AST",))
        assert parsed is not None
        return parsed

    def judge(self, diags: Sequence[Diagnostic], *, by: str = "checker") -> Verdict:
        """Rejected, accepted, or a bug (E-INTERNAL, an unregistered code, a rejection without span)."""
        errors = [d for d in diags if d.severity is Severity.ERROR]
        internal = [d for d in errors if d.code == "E-INTERNAL"]
        if internal:
            return Verdict("bug", bug="internal", by=by, problems=_internal_problems(internal))
        malformed = [d for d in errors if d.code not in self.registered or not d.labels]
        if malformed:
            return Verdict("bug", bug="diagnostic", by=by, problems=tuple(
                f"{d.code}: {d.message}: " + ("unregistered code" if d.code not in self.registered else "no span")
                for d in malformed))
        if errors:
            return Verdict("rejected", codes=_error_codes(errors), by=by)
        return Verdict("accepted")


_CLAUSE_FAILED = re.compile(r"^clause `(?P<code>[^`]+)` failed with (?P<what>.*)$", re.S)


class _Downstreams:
    """Placements and routes by what they read: the placement problem, the tensor connections and
    the protocol decided at the placed depths."""

    def __init__(self) -> None:
        self._found: dict[object, Downstream] = {}

    def get(self, comp: Composition, compute: Callable[[], Downstream]) -> Downstream:
        from placement.adapter import problem_from

        key = (problem_from(comp), tuple(o.item for o in comp.items(A.ExportTensor)),
               tuple(o.item for o in comp.tensor_imports), _protocol_key(comp))
        found = self._found.get(key)
        if found is None:
            if len(self._found) >= PARSE_CACHE:
                self._found.clear()
            found = self._found[key] = compute()
        return found


def _protocol_key(comp: Composition) -> object:
    """What the protocol decided at the placed depths reads: its meaning at the deepest checked depths."""
    from checker.protocol.adapter import build, canonical, depth_choices

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


# ============================================================================ shrinking

def shrink(checker: Checker, mutation: Mutation, verdict: Verdict) -> Mutation:
    """The smallest sub-list of the edits that still shows the same kind of bug (ddmin)."""
    def still(candidate: Sequence[Edit]) -> bool:
        if not candidate:
            return False
        found = checker.check(Mutation(tuple(candidate)))
        return found.status == "bug" and found.bug == verdict.bug

    current = list(mutation.edits)
    chunks = 2
    while len(current) >= 2:
        size = -(-len(current) // chunks)
        parts = [current[i:i + size] for i in range(0, len(current), size)]
        reduced = False
        for i in range(len(parts)):
            complement = [e for j, p in enumerate(parts) if j != i for e in p]
            if still(parts[i]):
                current, chunks, reduced = parts[i], 2, True
                break
            if still(complement):
                current, chunks, reduced = complement, max(chunks - 1, 2), True
                break
        if not reduced:
            if chunks >= len(current):
                break
            chunks = min(len(current), chunks * 2)
    return Mutation(tuple(current))


def reproducer(checker: Checker, mutation: Mutation) -> str:
    """The mutated blocks' text, each after a comment naming the edits."""
    units = checker.units(mutation)
    base = checker.subject.bundle
    parts = [f"# {e.describe(base)}" for e in mutation.edits]
    for u in mutation.changed_units():
        parts.append(print_node(units[u]).rstrip("\n"))
    return "\n".join(parts) + "\n"


# ============================================================================ campaigns

@dataclass(frozen=True)
class Plan:
    """Which mutation is mutant ``i``: a seeded walk over single edits, then stacked edits."""

    bundle: Bundle
    catalogue: tuple[Edit, ...]
    order: tuple[int, ...]
    seed: int
    max_edits: int
    kinds: tuple[str, ...] | None

    @classmethod
    def make(cls, bundle: Bundle, seed: int, *, max_edits: int = 2,
             kinds: Sequence[str] | None = None) -> Plan:
        catalogue = tuple(e for e in edits(bundle) if kinds is None or e.kind in kinds)
        order = list(range(len(catalogue)))
        random.Random(f"{seed}:order").shuffle(order)
        return cls(bundle, catalogue, tuple(order), seed, max_edits, tuple(kinds) if kinds else None)

    @property
    def singles(self) -> int:
        return len(self.catalogue)

    def size(self) -> int | None:
        """How many mutants the plan has (None: unbounded, stacked edits go on)."""
        return self.singles if self.max_edits < 2 or self.singles < 2 else None

    def mutation(self, index: int) -> Mutation | None:
        if index < self.singles:
            return Mutation((self.catalogue[self.order[index]],))
        if self.max_edits < 2 or self.singles < 2:
            return None
        rng = random.Random(f"{self.seed}:{index}")
        return random_mutation(self.bundle, rng, min_edits=2, max_edits=self.max_edits,
                               catalogue=self.catalogue)


@dataclass
class Report:
    """A finished campaign: every outcome in index order, with the figures the tables show."""

    subject: str
    seed: int
    outcomes: list[Outcome]
    seconds: float
    jobs: int
    plan_singles: int
    oracles: tuple[str, ...]
    bugs: list[tuple[Outcome, Mutation, str]] = field(default_factory=list)
    """Distinct bugs: the first mutant showing each, its shrunk mutation and reproducer."""
    duplicates: int = 0
    """Buggy mutants that shrank to a bug already listed."""
    stopped: str = ""

    @property
    def rate(self) -> float:
        return len(self.outcomes) / self.seconds if self.seconds > 0 else 0.0

    def by_kind(self) -> list[dict[str, Any]]:
        """Rows of the summary table: one per mutation kind (and one per stacked size)."""
        rows: dict[str, dict[str, Any]] = {}
        for out in self.outcomes:
            row = rows.setdefault(out.kind, {"kind": out.kind, "mutants": 0, "rejected": 0, "accepted": 0,
                                             "bugs": 0, "by_clause": Counter()})
            row["mutants"] += 1
            v = out.verdict
            if v.status == "rejected":
                row["rejected"] += 1
                for code in v.codes:
                    row["by_clause"][code if v.by == "checker" else f"{code} ({v.by})"] += 1
            elif v.status == "accepted":
                row["accepted"] += 1
            else:
                row["bugs"] += 1
        order = {k: i for i, k in enumerate(MUTATION_KINDS)}
        return sorted(rows.values(), key=lambda r: (order.get(r["kind"], len(order)), r["kind"]))

    def accepted(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.verdict.status == "accepted"]

    def to_json(self, bundle: Bundle) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "seed": self.seed,
            "mutants": len(self.outcomes),
            "seconds": round(self.seconds, 3),
            "mutants_per_second": round(self.rate, 1),
            "jobs": self.jobs,
            "single_edits": self.plan_singles,
            "stopped": self.stopped,
            "oracles": list(self.oracles),
            "duplicate_bugs": self.duplicates,
            "kinds": [{**r, "by_clause": dict(sorted(r["by_clause"].items()))} for r in self.by_kind()],
            "accepted": [{"index": o.index, "kind": o.kind, "mutation": o.mutation.describe(bundle)}
                         for o in self.accepted()],
            "bugs": [{"index": o.index, "kind": o.kind, "bug": o.verdict.bug, "by": o.verdict.by,
                      "problems": list(o.verdict.problems), "mutation": o.mutation.describe(bundle),
                      "shrunk": shrunk.describe(bundle), "reproducer": text}
                     for o, shrunk, text in self.bugs],
        }


@dataclass
class Campaign:
    """A mutation campaign over one subject."""

    subject: Subject
    seed: int
    max_edits: int = 2
    kinds: Sequence[str] | None = None
    clauses: Sequence[type[Clause]] | None = None
    oracles: Sequence[Oracle] | None = None

    def __post_init__(self) -> None:
        self.checker = Checker(self.subject, self.clauses, self.oracles)
        self.plan = Plan.make(self.subject.bundle, self.seed, max_edits=self.max_edits, kinds=self.kinds)

    def baseline(self) -> list[Diagnostic]:
        """The unmutated composition's error diagnostics (a campaign needs none)."""
        return [d for d in analyse(self.subject.inputs, self.checker.context).diagnostics
                if d.severity is Severity.ERROR]

    def run_one(self, index: int) -> Outcome | None:
        mutation = self.plan.mutation(index)
        if mutation is None:
            return None
        start = time.perf_counter()
        verdict = self.checker.check(mutation)
        return Outcome(index, mutation, verdict, time.perf_counter() - start)

    def run(self, *, examples: int | None = None, seconds: float | None = None, jobs: int = 1,
            progress: Callable[[int], None] | None = None) -> Report:
        """Check mutants ``0, 1, …`` until ``examples`` are done, ``seconds`` have passed or the plan ends."""
        if examples is None and seconds is None:
            examples = 1000
        size = self.plan.size()
        limit = min(x for x in (examples, size) if x is not None) if (examples, size) != (None, None) else None
        start = time.perf_counter()
        deadline = start + seconds if seconds is not None else None
        if jobs > 1:
            outcomes = _run_pool(self, limit, deadline, jobs, progress)
        else:
            outcomes = []
            for out in _run_serial(self, limit, deadline):
                outcomes.append(out)
                if progress is not None:
                    progress(1)
        elapsed = time.perf_counter() - start
        stopped = ("plan exhausted" if size is not None and len(outcomes) >= size
                   else "time budget" if deadline is not None and (limit is None or len(outcomes) < limit)
                   else "example budget")
        report = Report(self.subject.name, self.seed, outcomes, elapsed, jobs, self.plan.singles,
                        tuple(o.name for o in self.checker.oracles), stopped=stopped)
        seen: set[tuple[str | None, Mutation]] = set()
        for out in outcomes:
            if out.verdict.status != "bug":
                continue
            small = shrink(self.checker, out.mutation, out.verdict)
            if (out.verdict.bug, small) in seen:
                report.duplicates += 1
                continue
            seen.add((out.verdict.bug, small))
            report.bugs.append((out, small, reproducer(self.checker, small)))
        return report


def _run_serial(campaign: Campaign, limit: int | None, deadline: float | None) -> Iterator[Outcome]:
    index = 0
    while (limit is None or index < limit) and (deadline is None or time.perf_counter() < deadline):
        out = campaign.run_one(index)
        if out is None:
            return
        yield out
        index += 1


_WORKER: Campaign | None = None
CHUNK = 16


def _work(indices: range) -> list[Outcome]:
    assert _WORKER is not None
    found = []
    for i in indices:
        out = _WORKER.run_one(i)
        if out is None:
            break
        found.append(out)
    return found


def _run_pool(campaign: Campaign, limit: int | None, deadline: float | None, jobs: int,
              progress: Callable[[int], None] | None) -> list[Outcome]:
    """Check chunks of consecutive indices in worker processes; the result is a prefix of the plan."""
    global _WORKER
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    _WORKER = campaign
    try:
        ctx = multiprocessing.get_context(method)
        with ctx.Pool(jobs, initializer=_init_worker, initargs=(campaign,) if method == "spawn" else ()) as pool:
            return _drive(pool, limit, deadline, jobs, progress)
    finally:
        _WORKER = None


def _init_worker(campaign: Campaign | None = None) -> None:
    global _WORKER
    if campaign is not None:
        _WORKER = campaign


def _drive(pool: Any, limit: int | None, deadline: float | None, jobs: int,
           progress: Callable[[int], None] | None) -> list[Outcome]:
    pending: dict[int, Any] = {}
    done: dict[int, list[Outcome]] = {}
    next_start = 0
    exhausted = False

    def more() -> bool:
        return (not exhausted and (limit is None or next_start < limit)
                and (deadline is None or time.perf_counter() < deadline))

    while True:
        while len(pending) < 2 * jobs and more():
            stop = next_start + CHUNK if limit is None else min(next_start + CHUNK, limit)
            pending[next_start] = pool.apply_async(_work, (range(next_start, stop),))
            next_start = stop
        if not pending:
            break
        first = min(pending)
        found: list[Outcome] = pending.pop(first).get()
        done[first] = found
        if progress is not None:
            progress(len(found))
        if len(found) < CHUNK and (limit is None or first + len(found) < limit):
            exhausted = True
    outcomes: list[Outcome] = []
    for start in sorted(done):
        if outcomes and outcomes[-1].index + 1 != start:
            break
        outcomes += done[start]
        if len(done[start]) < CHUNK:
            break
    return outcomes


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def new_seed() -> int:
    return random.SystemRandom().randrange(1 << 32)


def replace_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """Validate mutation-kind names (for ``--kinds``)."""
    unknown = [k for k in kinds if k not in MUTATION_KINDS]
    if unknown:
        raise UsageError(f"unknown mutation kind: {', '.join(unknown)} (known: {', '.join(MUTATION_KINDS)})")
    return tuple(kinds)


__all__ = [
    "BUG_KINDS",
    "Campaign",
    "Checker",
    "Oracle",
    "OracleResult",
    "Outcome",
    "PlacementOracle",
    "Plan",
    "ProtocolOracle",
    "Report",
    "Subject",
    "Verdict",
    "bundle_subject",
    "default_oracles",
    "load_subject",
    "register_oracle",
    "reproducer",
    "shrink",
]
