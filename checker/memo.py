"""Results shared between checks, keyed on what they read: owned by whoever runs the checks.

A check (:class:`checker.context.CheckContext`) holds one :class:`Memo`; a caller that
checks many compositions (a fuzz campaign, the language server) keeps one and passes it to
every check, so a protocol decided once (keyed on its meaning, not its spans) or a PTX
payload analysed once is not decided again. Nothing here is module-level state: a fresh
memo is a cold check.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from checker.protocol.model import Protocol
    from checker.protocol.parametric import ParametricResult
    from checker.protocol.smt import Query
    from checker.protocol.verdict import ProtocolVerdict
    from contract_lang.expr import Expr
    from package.codefacts.facts import CodeFacts
    from solver import Witnessed

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Entries a table keeps before it starts again (a campaign checks many thousands of mutants).
LIMIT = 1024


@dataclass
class Table(Generic[K, V]):
    """A bounded map from a key to the value computed for it."""

    limit: int = LIMIT
    _found: dict[K, V] = field(default_factory=dict, repr=False)

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The value for ``key``, computed (and kept) on first use."""
        if key in self._found:
            return self._found[key]
        value = compute()
        if len(self._found) >= self.limit:
            self._found.clear()
        self._found[key] = value
        return value

    def __len__(self) -> int:
        return len(self._found)


@dataclass
class Memo:
    """The tables one series of checks shares."""

    #: canonical protocol, bound, rlimit → its verdict (checker/protocol/check.py)
    verdicts: Table[tuple[Protocol, int | None, int], ProtocolVerdict] = field(default_factory=Table)
    #: a protocol as built (spans, text and all), bound, rlimit → its verdict, mapped back: a
    #: protocol met again (a mutant that left its channels' lines alone) skips canonicalising
    worded: Table[tuple[Protocol, int | None, int], ProtocolVerdict] = field(default_factory=Table)
    #: canonical protocol, its rings' depth ranges, rlimit → the parametric argument's result
    #: (checker/protocol/parametric.py)
    proofs: Table[tuple[Protocol, tuple[tuple[str, int, int | None], ...], int], ParametricResult] = field(
        default_factory=Table
    )
    #: a ring's slice (without spans), bound, rlimit → the race queries it proves impossible
    slices: Table[tuple[Protocol, int, int], frozenset[Query]] = field(default_factory=Table)
    #: a fact constraint, its facts' domains, rlimit → its counterexample, if any (L-ASSUME; checker/facts.py)
    fact_verdicts: Table[tuple[Expr, tuple[tuple[str, str, tuple[int, ...]], ...], int], Witnessed] = field(
        default_factory=lambda: Table(4096)
    )
    #: what a warp layout reads (capacities, roles' widths and register minimums, block warps,
    #: budget) → the layout and the rlimit units, checks and unknowns it spent (placement/_warps.py)
    warps: Table[Hashable, tuple[object, int, int, int]] = field(default_factory=Table)
    #: a package's PTX payload → the code facts derived from it (L-CONFORM)
    code_facts: Table[str, CodeFacts] = field(default_factory=lambda: Table(64))


__all__ = ["Memo", "Table"]
