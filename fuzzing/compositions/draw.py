"""Drawing mutations from the catalogue: with Hypothesis (shrinking) or a seeded ``random.Random``."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from fuzzing.compositions.bundle import Bundle
from fuzzing.compositions.catalogue import edits
from fuzzing.compositions.edit import Edit, Mutation
from fuzzing.compositions.generate import TargetLimits, compositions


def _by_kind(catalogue: Sequence[Edit]) -> dict[str, list[Edit]]:
    found: dict[str, list[Edit]] = {}
    for edit in catalogue:
        found.setdefault(edit.kind, []).append(edit)
    return found


def random_mutation(
    bundle: Bundle,
    rng: random.Random,
    *,
    min_edits: int = 1,
    max_edits: int = 1,
    kinds: Sequence[str] | None = None,
    catalogue: Sequence[Edit] | None = None,
) -> Mutation:
    """Draw a mutation from the catalogue with ``rng``: a kind uniformly, then one of its edits.

    ``min_edits`` to ``max_edits`` edits, each of a different line. ``catalogue`` may pass
    ``edits(bundle)`` computed once; ``kinds`` restricts the kinds drawn.
    """
    table = _by_kind(catalogue if catalogue is not None else edits(bundle))
    names = sorted(k for k in table if kinds is None or k in kinds)
    if not names:
        return Mutation(())
    chosen: list[Edit] = []
    used: set[tuple[int, int]] = set()
    for _ in range(rng.randint(min_edits, max(min_edits, max_edits))):
        pool = [e for e in table[rng.choice(names)] if (e.unit, e.index) not in used]
        if not pool:
            continue
        edit = rng.choice(pool)
        used.add((edit.unit, edit.index))
        chosen.append(edit)
    return Mutation(tuple(chosen))


def mutations(bundle: Bundle, *, max_edits: int = 1, kinds: Sequence[str] | None = None) -> st.SearchStrategy[Mutation]:
    """Mutations of ``bundle`` drawn from the catalogue: a kind, then one of its edits (shrinks to
    earlier kinds and edits, and to fewer edits)."""
    table = _by_kind(edits(bundle))
    names = sorted(k for k in table if kinds is None or k in kinds)
    if not names:
        return st.just(Mutation(()))
    one = st.sampled_from(names).flatmap(lambda k: st.sampled_from(table[k]))
    return st.lists(one, min_size=1, max_size=max_edits, unique_by=lambda e: (e.unit, e.index)).map(
        lambda es: Mutation(tuple(es))
    )


def mutated_compositions(
    target: TargetLimits, *, max_edits: int = 1, max_stages: int = 3, launch: bool | None = None
) -> st.SearchStrategy[tuple[Bundle, Mutation]]:
    """A valid composition (see :func:`compositions`) and a mutation of it."""
    return compositions(target, max_stages=max_stages, launch=launch).flatmap(
        lambda b: st.tuples(st.just(b), mutations(b, max_edits=max_edits))
    )
