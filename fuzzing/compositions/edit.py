"""One realistic edit of one line of a composition, and mutations made of edits."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang import ast as A
from fuzzing.compositions.bundle import Bundle


@dataclass(frozen=True)
class Edit:
    """One realistic edit: replace (or, with ``item=None``, drop) item ``index`` of unit ``unit``.

    ``index == -1`` edits the block's header: ``item`` is then the unit with its new name
    or version (its items are ignored). ``before``/``after`` are the edited line's text
    (``after`` is empty for a dropped line) and ``where`` the block line holding it
    (``ring kv produce by load``), empty for a line of the stage itself.
    """

    kind: str
    unit: int
    index: int
    item: A.Node | None
    before: str
    after: str
    where: str = ""

    def describe(self, bundle: Bundle) -> str:
        unit = bundle.units[self.unit]
        head = f"stage `{unit.name}`" if isinstance(unit, A.Stage) else f"pipeline `{unit.name}`"
        if self.where:
            head += f", {self.where}"
        return f"{head}: `{self.before}` → `{self.after}`" if self.after else f"{head}: drop `{self.before}`"


@dataclass(frozen=True)
class Mutation:
    """One or more edits of one composition, applied together (later edits of one item win)."""

    edits: tuple[Edit, ...]

    @property
    def kind(self) -> str:
        """The kind of the first edit: how the campaign tables a mutant."""
        return self.edits[0].kind if self.edits else "none"

    def apply(self, bundle: Bundle) -> Bundle:
        return Bundle.of(apply_edits(bundle.units, self.edits))

    def changed_units(self) -> tuple[int, ...]:
        return tuple(sorted({e.unit for e in self.edits}))

    def describe(self, bundle: Bundle) -> str:
        return "; ".join(e.describe(bundle) for e in self.edits)


def apply_edits(units: Sequence[A.Stage | A.Pipeline], chosen: Sequence[Edit]) -> tuple[A.Stage | A.Pipeline, ...]:
    """The units with the edits applied; edits address the original items' indices."""
    out = list(units)
    for u in sorted({e.unit for e in chosen}):
        unit = units[u]
        items: list[object] = list(unit.items)
        header: A.Stage | A.Pipeline = unit
        for edit in chosen:
            if edit.unit != u:
                continue
            if edit.index < 0:
                assert isinstance(edit.item, (A.Stage, A.Pipeline))
                header = edit.item
            else:
                items[edit.index] = edit.item
        kept = tuple(it for it in items if it is not None)
        out[u] = dataclasses.replace(header, items=kept)  # type: ignore[arg-type]
    return tuple(out)
