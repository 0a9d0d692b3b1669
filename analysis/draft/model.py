"""What a draft is made of: the drafted stage, the values it could not decide, and the compiler's layouts.

A draft is a contract (:class:`contract_lang.ast.Stage`) whose every value comes from the
compiled code, plus one :class:`Undecided` per value the code does not decide. Where the
contract's syntax needs a value that is undecided (the stage's name, a ring's arrival
count), the stage holds a placeholder and the undecided record names its key, so that
the comparison (:mod:`analysis.draft.tally`) never counts a placeholder as drafted.
"""

from __future__ import annotations

from dataclasses import dataclass

from contract_lang import ast as A

#: The word every undecided value's comment starts with (``# undecided: … (code.ptx:LINE)``).
MARKER = "undecided"
#: The word every composition-decided value's comment starts with (``# composed: … (ring.kp:5)``).
COMPOSED = "composed"

#: A value's key: the item (its kind and name) and the attribute, e.g. ``("role", "load", "warps")``.
Key = tuple[str, ...]


@dataclass(frozen=True)
class FieldLayout:
    """A params struct member as the compiler laid it out; ``type`` is a contract scalar type or None."""

    name: str
    offset: int
    size: int
    type: str | None


@dataclass(frozen=True)
class StructLayout:
    """A params struct from the compiler's debug information."""

    name: str
    size: int
    align: int
    fields: tuple[FieldLayout, ...]


@dataclass(frozen=True)
class Layouts:
    """The compiler's answer for the params: each entry's params struct, by entry symbol."""

    structs: tuple[StructLayout, ...] = ()
    entries: tuple[tuple[str, str], ...] = ()  # (entry symbol, struct name)

    def of_entry(self, entry: str) -> StructLayout | None:
        name = dict(self.entries).get(entry)
        return next((s for s in self.structs if s.name == name), None)


@dataclass(frozen=True)
class Undecided:
    """A value the code does not decide: which (``key``), why, and the PTX line that shows it.

    ``anchor`` is the index of the stage item the comment is printed above (None: above the
    stage's first item).
    """

    key: Key
    why: str
    line: int
    anchor: int | None = None

    def comment(self, ptx_name: str) -> str:
        where = f" ({ptx_name}:{self.line})" if self.line > 0 else ""
        return f"# {MARKER}: {self.why}{where}"


@dataclass(frozen=True)
class Composed:
    """A value the composition, not the code, decides: which (``key``), how, and the line it comes from."""

    key: Key
    why: str
    where: str  # ``file:line`` of the pipeline or the other stage's contract
    anchor: int | None = None

    def comment(self) -> str:
        return f"# {COMPOSED}: {self.why} ({self.where})"


@dataclass(frozen=True)
class Draft:
    """A drafted stage, its undecided values, and the values its composition decided."""

    stage: A.Stage
    undecided: tuple[Undecided, ...]
    composed: tuple[Composed, ...] = ()

    def undecided_keys(self) -> frozenset[Key]:
        return frozenset(u.key for u in self.undecided)
