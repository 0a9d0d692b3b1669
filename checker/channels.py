"""Channel structure shared by L-UNPAIRED and L-PROTO, so that one mistake yields one code.

A channel name used by more than one kind of channel, or a channel whose only
endpoints are two or more writers of a single-writer side (ring or counter
producers, rendezvous `arrive`s), is a protocol mismatch (L-PROTO) rather than a
missing partner (L-UNPAIRED).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checker.composition import Composition, Owned

SINGLE_WRITER = {"ring": "produce", "counter": "produce", "rendezvous": "arrive"}
"""The side of each channel kind that only one endpoint may take (or, for a rendezvous,
that cannot be the only one taken)."""


def kinds_clash(comp: Composition) -> list[str]:
    """Channel names used by more than one kind of channel (ring, counter, rendezvous)."""
    tables = (comp.rings, comp.counters, comp.rendezvous)
    names = sorted({n for t in tables for n in t})
    return [n for n in names if sum(n in t for t in tables) > 1]


def writers_only(comp: Composition, kind: str, name: str) -> bool:
    """Whether the channel's endpoints are all, and at least two, of its single-writer side."""
    tables: dict[str, Mapping[str, tuple[Owned[Any], ...]]] = {
        "ring": comp.rings,
        "counter": comp.counters,
        "rendezvous": comp.rendezvous,
    }
    ends = tables[kind].get(name, ())
    attr = "mode" if kind == "rendezvous" else "side"
    return len(ends) >= 2 and all(getattr(e.item, attr) == SINGLE_WRITER[kind] for e in ends)
