"""Independent re-verification of an accepted mutant: the placement verifier and the contract oracle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from checker.composition import Composition
from contract_lang import ast as A
from placement.adapter import Placed

#: Entries each of fuzzing's caches holds before it is cleared.
PARSE_CACHE = 4096


@dataclass(frozen=True)
class OracleResult:
    """What an independent check says about an accepted composition.

    ``applicable`` is False when the check has nothing to say (no protocol to explore);
    ``problems`` are the ways it refutes the checker's acceptance: each is a checker bug.
    """

    applicable: bool
    problems: tuple[str, ...] = ()
    skipped: str = ""
    """Why the check did not run on a composition it had something to say about (too many states, a
    construct it does not model): the campaign reports the mutants left unverified, never as agreement."""


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

    :mod:`fuzzing.contract_oracle` builds its own model from the contracts (no adapter,
    no solver, no channel left out) and runs it at the ring depths placement chose — the
    configuration that is linked. A deadlock, a race or a violated declaration (arrival
    counts, transaction bytes, parity) it finds is a checker bug when the clause deciding
    it ran and accepted. Runs with more than ``max_states`` states, and compositions using a construct
    the explorer does not run (:func:`fuzzing.contract_oracle.unmodelled`), are skipped. Cached by
    the contracts' channel items and the depths.
    """

    name: str = "protocol"
    max_states: int = 200_000
    _cache: dict[Any, tuple[str, ...] | None] = field(default_factory=dict, repr=False)

    def check(self, comp: Composition, placed: Placed | None, clauses: frozenset[str]) -> OracleResult:
        from fuzzing.contract_oracle import TooLarge, problems_of, unmodelled

        if placed is None or not (comp.rings or comp.counters or comp.rendezvous):
            return OracleResult(False)
        why = unmodelled(comp)
        if why is not None:
            return OracleResult(False, skipped=f"does not run {why}")
        depths = {r.name: r.depth for r in placed.placement.rings}
        key = (
            tuple(sorted(depths.items())),
            tuple(o.item for o in comp.items(A.Ring)),
            tuple(o.item for o in comp.items(A.Counter)),
            tuple(o.item for o in comp.items(A.Rendezvous)),
            tuple(sorted((r, i.warps) for r, i in comp.roles.items())),
            tuple((e.stage.name, tuple(type(i).__name__ for i in e.stage.items)) for e in comp.stages),
        )
        if key not in self._cache:
            if len(self._cache) >= PARSE_CACHE:
                self._cache.clear()
            try:
                self._cache[key] = problems_of(comp, depths, max_states=self.max_states)
            except TooLarge:
                self._cache[key] = None
        found = self._cache[key]
        if found is None:
            return OracleResult(False, skipped=f"more than {self.max_states} states")
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
