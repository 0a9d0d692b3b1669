"""Which mutation is mutant ``i`` of a campaign, and shrinking a buggy mutant to its fewest edits."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang.printer import print_node
from fuzzing.check import Checker, Classification
from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.catalogue import edits
from fuzzing.compositions.draw import random_mutation
from fuzzing.compositions.edit import Edit, Mutation


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
    def make(cls, bundle: Bundle, seed: int, *, max_edits: int = 2, kinds: Sequence[str] | None = None) -> Plan:
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
        return random_mutation(self.bundle, rng, min_edits=2, max_edits=self.max_edits, catalogue=self.catalogue)


def shrink(checker: Checker, mutation: Mutation, classified: Classification) -> Mutation:
    """The smallest sub-list of the edits that still shows the same kind of bug (ddmin)."""

    def still(candidate: Sequence[Edit]) -> bool:
        if not candidate:
            return False
        found = checker.check(Mutation(tuple(candidate)))
        return found.status == "bug" and found.bug == classified.bug

    current = list(mutation.edits)
    chunks = 2
    while len(current) >= 2:
        size = -(-len(current) // chunks)
        parts = [current[i : i + size] for i in range(0, len(current), size)]
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
