"""What a compiler saw in a packed component: its symbols, their PTX shapes, its params layouts.

``kernlink pack`` records these facts in the package manifest (:mod:`package.manifest`);
the checker's clauses read them (L-SYMBOL, L-PARAMS, L-HANDLE…), and a stage checked from
its `.kc` alone has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

SymbolKind = Literal["func", "entry", "var"]


@dataclass(frozen=True)
class Prototype:
    """A symbol's PTX shape: what it is, and the PTX types of its return and parameter slots."""

    kind: SymbolKind
    params: tuple[str, ...] = ()
    returns: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "var":
            return "variable"
        ret = f" -> {', '.join(self.returns)}" if self.returns else ""
        return f".{self.kind} ({', '.join(self.params)}){ret}"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": list(self.params), "returns": list(self.returns)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Prototype:
        kind = value["kind"]
        if kind not in ("func", "entry", "var"):
            raise ValueError(f"unknown symbol kind {kind!r}")
        return cls(kind, tuple(str(p) for p in value["params"]), tuple(str(r) for r in value["returns"]))


@dataclass(frozen=True)
class Captured:
    """What a compiler saw in a packed component (absent for contract-only checks).

    ``prototypes`` holds the PTX shape of each captured symbol, sorted by name (packages
    that predate prototypes have none, and the signature checks then stay silent).
    """

    defined_symbols: frozenset[str]
    needed_symbols: frozenset[str]
    params_layouts: tuple[CapturedParams, ...] = ()
    toolkit: str | None = None
    target: str | None = None
    prototypes: tuple[tuple[str, Prototype], ...] = ()
    # The package's PTX payload, for L-CONFORM (checker/conformance); not part of equality:
    # it is derived from the same compile as the captured symbols.
    ptx: str | None = field(default=None, compare=False, repr=False)

    @property
    def prototype_map(self) -> dict[str, Prototype]:
        return dict(self.prototypes)


@dataclass(frozen=True)
class CapturedParams:
    """A params struct as laid out by the compiler: size, alignment, field offsets and sizes."""

    name: str
    size: int
    align: int
    fields: tuple[tuple[str, int, int], ...]  # (field, offset, size)


__all__ = ["Captured", "CapturedParams", "Prototype", "SymbolKind"]
