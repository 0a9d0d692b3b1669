"""Facts pinned by their assumers (specs/language.md §12; L-FACT, L-ASSUME, the link inputs).

An owner may state a range or a set of values (``owns fact block_n: u32 in {128, 256}``) and
let the linker choose. A stage compiled for one of them says so (``assumes fact block_n: u32 ==
128``): that **pins** the choice. When every assumer of the fact assumes the same member, the
fact's value in the composition is that member, as if the owner had written it exact; a
non-member or two assumers of different values pin nothing and are L-FACT. No solver here: the
link inputs read this module on the fast path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from checker.composition import Composition, Owned
from contract_lang import ast as A


def sole_owner(comp: Composition, fact: str) -> Owned[A.OwnsFact] | None:
    """The owner of a fact when there is exactly one (L-OWNER reports the other cases)."""
    owners = comp.owners.get(fact, ())
    return owners[0] if len(owners) == 1 else None


def single_value(value: A.FactValue) -> int | None:
    """The one value a fact can take, or None when it can take several."""
    if value.kind == "exact":
        return value.values[0]
    if value.kind == "range" and value.values[0] == value.values[1]:
        return value.values[0]
    if value.kind == "set" and len(set(value.values)) == 1:
        return value.values[0]
    return None


def allows(value: A.FactValue, v: int) -> bool:
    """Whether the owner's value lets the fact take ``v``."""
    if value.kind == "range":
        return value.values[0] <= v <= value.values[1]
    return v in value.values


@dataclass(frozen=True)
class Pin:
    """A fact its owner states as a range or set (``owns fact block_n: u32 in {128, 256}``) that the
    composition's assumers fix to one member (``assumes fact block_n: u32 == 128``): the linker's
    choice is that member, as if the owner had written it exact."""

    fact: str
    value: int
    owner: Owned[A.OwnsFact]
    assumers: tuple[Owned[A.AssumesFact], ...]

    @property
    def pinned(self) -> A.FactValue:
        """The owner's value narrowed to the pinned member (its span: the owner's)."""
        return A.FactValue("exact", (self.value,), span=self.owner.item.value.span)

    @property
    def why(self) -> str:
        """``pinned by `T` (assumes block_n == 128)``, every assumer named."""
        by = ", ".join(f"`{a.stage_name}`" for a in self.assumers)
        return f"pinned by {by} (assumes {self.fact} == {self.value})"


def pins(comp: Composition) -> dict[str, Pin]:
    """Fact → its pin: one owner stating several values, at least one assumer, every assumer of one
    value, a member. Anything else pins nothing (L-FACT reports a non-member or a disagreement)."""
    assumed: dict[str, list[Owned[A.AssumesFact]]] = defaultdict(list)
    for a in comp.items(A.AssumesFact):
        assumed[a.item.name].append(a)
    out: dict[str, Pin] = {}
    for name, assumers in assumed.items():
        owner = sole_owner(comp, name)
        if owner is None or single_value(owner.item.value) is not None:
            continue
        values = {a.item.value for a in assumers}
        if len(values) == 1 and allows(owner.item.value, next(iter(values))):
            out[name] = Pin(name, next(iter(values)), owner, tuple(assumers))
    return out


def effective_value(owner: Owned[A.OwnsFact], pinned: Mapping[str, Pin]) -> A.FactValue:
    """The values a fact takes in this composition: the owner's, or its pin."""
    pin = pinned.get(owner.item.name)
    return pin.pinned if pin is not None else owner.item.value
