"""A finished campaign: every outcome, the figures of its tables, and its JSON."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fuzzing.check import Outcome
from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.catalogue import MUTATION_KINDS
from fuzzing.compositions.edit import Mutation


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
            row = rows.setdefault(
                out.kind,
                {"kind": out.kind, "mutants": 0, "rejected": 0, "accepted": 0, "bugs": 0, "by_clause": Counter()},
            )
            row["mutants"] += 1
            v = out.classification
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
        return [o for o in self.outcomes if o.classification.status == "accepted"]

    def unverified(self) -> dict[str, int]:
        """How many accepted mutants each oracle did not re-verify, by ``"oracle: why"``."""
        return dict(sorted(Counter(why for o in self.accepted() for why in o.classification.unverified).items()))

    def verified(self) -> int:
        """How many accepted mutants every oracle re-verified (none of them skipped it)."""
        return sum(1 for o in self.accepted() if not o.classification.unverified)

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
            "verified": self.verified(),
            "unverified": self.unverified(),
            "duplicate_bugs": self.duplicates,
            "kinds": [{**r, "by_clause": dict(sorted(r["by_clause"].items()))} for r in self.by_kind()],
            "accepted": [
                {"index": o.index, "kind": o.kind, "mutation": o.mutation.describe(bundle)} for o in self.accepted()
            ],
            "bugs": [
                {
                    "index": o.index,
                    "kind": o.kind,
                    "bug": o.classification.bug,
                    "by": o.classification.by,
                    "problems": list(o.classification.problems),
                    "mutation": o.mutation.describe(bundle),
                    "shrunk": shrunk.describe(bundle),
                    "reproducer": text,
                }
                for o, shrunk, text in self.bugs
            ],
        }
