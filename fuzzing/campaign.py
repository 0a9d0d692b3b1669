"""A mutation campaign over one subject: mutants ``0, 1, …`` checked serially or in worker processes."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.pipeline import analyse
from checker.clause import Clause
from diagnostics.model import Diagnostic, Severity
from fuzzing.check import Checker, Outcome
from fuzzing.compositions.catalogue import MUTATION_KINDS
from fuzzing.compositions.edit import Mutation
from fuzzing.mutation import Plan, reproducer, shrink
from fuzzing.oracles import Oracle
from fuzzing.report import Report
from fuzzing.subject import Subject
from package.loader import UsageError


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
        return [
            d for d in analyse(self.subject.inputs, self.checker.context).diagnostics if d.severity is Severity.ERROR
        ]

    def run_one(self, index: int) -> Outcome | None:
        mutation = self.plan.mutation(index)
        if mutation is None:
            return None
        start = time.perf_counter()
        classified = self.checker.check(mutation)
        return Outcome(index, mutation, classified, time.perf_counter() - start)

    def run(
        self,
        *,
        examples: int | None = None,
        seconds: float | None = None,
        jobs: int = 1,
        progress: Callable[[int], None] | None = None,
    ) -> Report:
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
        stopped = (
            "plan exhausted"
            if size is not None and len(outcomes) >= size
            else "time budget"
            if deadline is not None and (limit is None or len(outcomes) < limit)
            else "example budget"
        )
        report = Report(
            self.subject.name,
            self.seed,
            outcomes,
            elapsed,
            jobs,
            self.plan.singles,
            tuple(o.name for o in self.checker.oracles),
            stopped=stopped,
        )
        seen: set[tuple[str | None, Mutation]] = set()
        for out in outcomes:
            if out.classification.status != "bug":
                continue
            small = shrink(self.checker, out.mutation, out.classification)
            if (out.classification.bug, small) in seen:
                report.duplicates += 1
                continue
            seen.add((out.classification.bug, small))
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


def _run_pool(
    campaign: Campaign, limit: int | None, deadline: float | None, jobs: int, progress: Callable[[int], None] | None
) -> list[Outcome]:
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


def _drive(
    pool: Any, limit: int | None, deadline: float | None, jobs: int, progress: Callable[[int], None] | None
) -> list[Outcome]:
    pending: dict[int, Any] = {}
    done: dict[int, list[Outcome]] = {}
    next_start = 0
    exhausted = False

    def more() -> bool:
        return (
            not exhausted
            and (limit is None or next_start < limit)
            and (deadline is None or time.perf_counter() < deadline)
        )

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
