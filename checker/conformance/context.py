"""What every conformance check shares: the typed finding and the stage seen through its handles."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from checker.handles import HandleSpec, classify_handle, expected_handles
from contract_lang import ast as A
from package.codefacts.facts import Fact, Operand


@dataclass(frozen=True)
class Finding:
    """A disagreement between code and contract (``decided``) or a site the analysis cannot decide.

    ``check`` is the conformance check, ``problem`` the case within it (the clause words
    each: ``l_conform.describe``), ``facts`` the values its message names, ``node`` the
    contract item the code disagrees with (for its span), if any.
    """

    check: str
    problem: str
    fact: Fact
    node: A.Node | None = field(default=None, compare=False, repr=False)
    facts: tuple[tuple[str, str], ...] = ()
    decided: bool = True
    sites: int = 1  # the instructions of one source line it stands for (an unrolled loop, an inlined helper)

    def value(self, key: str) -> str:
        return dict(self.facts)[key]


def found(check: str, problem: str, fact: Fact, node: A.Node | None, **facts: object) -> Finding:
    return Finding(check, problem, fact, node, tuple((k, str(v)) for k, v in facts.items()))


def unknown(check: str, fact: Fact, what: str, node: A.Node | None) -> Finding:
    """An undecided site: ``what`` names what the analysis could not trace (``l_conform.UNDECIDED`` words it)."""
    return Finding(check, "undecided", fact, node, (("what", what),), decided=False)


@dataclass(frozen=True)
class Ctx:
    stage: A.Stage
    roles: dict[str, A.Role]  # entry symbol -> role
    inits: dict[str, A.Ring]  # init hook symbol -> ring

    @functools.cached_property
    def expected(self) -> Mapping[str, HandleSpec]:
        return expected_handles(self.stage)

    def handle(self, symbol: str) -> HandleSpec | None:
        return classify_handle(self.stage, symbol, self.expected)

    def handles_of(self, op: Operand | None, *kinds: str) -> list[HandleSpec]:
        if op is None:
            return []
        found = [self.handle(h) for h in op.handles]
        return [s for s in found if s is not None and (not kinds or s.kind in kinds)]

    def ring_barrier(self, op: Operand | None) -> tuple[A.Ring, str] | None:
        """The ring and barrier (``full``/``empty``) an address comes from, through its handle."""
        for spec in self.handles_of(op, "ring_full_bar", "ring_empty_bar"):
            ring = next((r for r in self.stage.rings if r.name == spec.item), None)
            if ring is not None:
                return ring, "full" if spec.kind == "ring_full_bar" else "empty"
        return None

    def count_value(self, count: A.Count) -> int | None:
        """An arrival count in arrivals, where the stage knows the width of every role it names."""
        widths = {r.name: r.warps for r in self.stage.roles}
        total = 0
        for term in count.terms:
            if term.unit == "one":
                total += term.coef
                continue
            warps = widths.get(term.role or "")
            if warps is None:
                return None
            per = {"per_warp": warps, "per_thread": 32 * warps, "per_warpgroup": max(warps // 4, 0)}[term.unit]
            total += term.coef * per
        return total

    def private_barrier(self, op: Operand | None) -> bool:
        """An address in one of the stage's own claims that holds mbarriers (``use mbarrier``)."""
        return self.private_claim(op) is not None

    def private_claim(self, op: Operand | None) -> A.SmemClaim | None:
        """The stage's own claim holding mbarriers (``use mbarrier``) an address comes from, through its handle."""
        for s in self.handles_of(op, "smem"):
            if isinstance(s.node, A.SmemClaim) and "mbarrier" in s.node.uses:
                return s.node
        return None
