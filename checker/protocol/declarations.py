"""The declarations' findings, before any model: counts no mbarrier takes, copies no slot holds.

L-ARRIVE and L-TXBYTES word them (``checker/clauses/l_arrive.py``, ``l_txbytes.py``); they
belong to the first tier (``checker/policy.py``). A ring they are about is left out of the
model (:func:`excluded`), as is one whose sides allow no common depth or whose every depth
overflows shared memory: those are rejected first, by L-DEPTH and by placement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from checker.composition import Composition, Owned
from checker.protocol.build import Unbuildable, count_problem, count_value, launch_cluster_size, synchronized
from checker.protocol.model import MBAR_MAX_COUNT
from checker.storage import agreed_depth, crowded_rings, overflowing_rings, per_slot_claims
from contract_lang import ast as A
from contract_lang.printer import ring_item_line
from diagnostics.span import Span
from diagnostics.symbols import Code


@dataclass(frozen=True)
class CountFinding:
    """An arrival count no mbarrier can take, found from the declarations (L-ARRIVE words it).

    ``no-init``: no side states the barrier's `init` count (``span``: the producer side;
    ``role``: a consumer role, for the example); ``not-whole``: a `per_warpgroup` count over
    ``role``, which has ``warps`` warps; ``out-of-range``: ``count`` arrivals, outside
    1 … :data:`MBAR_MAX_COUNT`. ``initializes``: the count is the barrier's `init` (else an
    arrive's); ``line``: the item as written.
    """

    code: ClassVar[str] = Code.L_ARRIVE
    case: Literal["no-init", "not-whole", "out-of-range"]
    ring: str
    barrier: str
    span: Span
    line: str = ""
    initializes: bool = True
    role: str = ""
    warps: int = 0
    count: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells two findings apart, their locus aside: one report per barrier, side of it and count."""
        return (self.code, self.case, self.ring, self.barrier, self.initializes, self.count)


@dataclass(frozen=True)
class CopyFinding:
    """Copies that move what no slot holds, found from the declarations (L-TXBYTES words it).

    ``copies`` are the copies at fault as (span, the line as written), the first the locus.
    ``unknown-claim``: a copy fills ``claim``, which is none of the ring's per-slot
    ``claims``; ``over-claim``: the copies into ``claim`` move ``moved`` bytes per phase, a
    slot of it holds ``room``; ``over-slot``: the ring's copies move ``moved`` bytes, its
    per-slot claims (``slots``: span and bytes each) hold ``room``; ``no-bytes``: a copy of
    ``moved`` (< 1) bytes.
    """

    code: ClassVar[str] = Code.L_TXBYTES
    case: Literal["unknown-claim", "over-claim", "over-slot", "no-bytes"]
    ring: str
    copies: tuple[tuple[Span, str], ...]
    claim: str = ""
    claims: tuple[str, ...] = ()
    slots: tuple[tuple[Span, int], ...] = ()
    moved: int = 0
    room: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells two findings apart, their locus aside: one report per ring, claim and amounts."""
        return (self.code, self.case, self.ring, self.claim, self.moved, self.room)


Declared = CountFinding | CopyFinding
"""A finding of the declarations, before any model: the first tier's."""


def _missing_inits(comp: Composition) -> list[CountFinding]:
    """Rings with both sides whose `full` or `empty` barrier has no `init` count on any side."""
    out = []
    for name, sides in sorted(comp.rings.items()):
        producers = [s for s in sides if s.item.side == "produce"]
        if not producers or not any(s.item.side == "consume" for s in sides):
            continue  # a ring missing a side is L-UNPAIRED's
        if not synchronized(sides):
            continue  # a ring without barriers counts nothing
        stated = {it.barrier for s in sides for it in s.item.items if isinstance(it, A.RingBarrierInit)}
        for kind in ("full", "empty"):
            if kind not in stated:
                out.append(CountFinding("no-init", name, kind, producers[0].span, role=_consumer_role(sides)))
    return out


def _lands(item: A.RingCopy | A.RingArrive, rank: int, cluster: int) -> int:
    """How many copies of ``item`` (a copy, or the one a `tx` implies) land in the slot of cluster
    rank ``rank`` per phase: its issuer's own, or one from every CTA that issues it when multicast."""

    def issues(r: int) -> bool:
        return {"leader": r == 0, "peer": r != 0}.get(item.on or "", True)

    if item.multicast:
        return sum(1 for r in range(cluster) if issues(r))
    return 1 if issues(rank) else 0


def slot_overruns(comp: Composition) -> list[CopyFinding]:
    """Copies that move more bytes per phase than the slot storage they fill (L-TXBYTES).

    A copy with ``into C`` fills the per-slot claim ``C`` of its ring; the copies of a
    phase (stated, or the one a `tx` implies) fill the ring's per-slot claims together.
    Each CTA of a cluster has its own slot: a copy lands in its issuer's (a `remote` one
    too: it completes on the peer's barrier, a 2-CTA pair's copy), a `multicast` one in
    every CTA's, and `on leader` / `on peer` say which CTAs issue it. A CTA's slot is
    overrun when the copies landing in it move more than it holds.
    """
    out: list[CopyFinding] = []
    cluster = launch_cluster_size(comp)
    for name, sides in sorted(comp.rings.items()):
        claims = {c.item.name: c for c in per_slot_claims(comp, name) if c.item.bytes is not None}
        for side in (s for s in sides if s.item.side == "produce"):
            copies = [it for it in side.item.items if isinstance(it, A.RingCopy) and it.barrier == "full"]
            for copy in copies:
                if copy.into is not None and copy.into not in claims:
                    out.append(
                        CopyFinding(
                            "unknown-claim", name, _lines([copy]), claim=copy.into, claims=tuple(sorted(claims))
                        )
                    )
            over = False
            for cname, claim in sorted(claims.items()):
                into = [c for c in copies if c.into == cname]
                moved, rank = max((sum(_lands(c, r, cluster) * c.bytes for c in into), r) for r in range(cluster))
                if moved > (claim.item.bytes or 0):
                    over = True
                    slot = ((claim.span, claim.item.bytes or 0),)
                    landing = [c for c in into if _lands(c, rank, cluster)]
                    out.append(
                        CopyFinding(
                            "over-claim", name, _lines(landing), cname, slots=slot, moved=moved, room=slot[0][1]
                        )
                    )
            if over or not claims:
                continue
            implied = [it for it in side.item.items if isinstance(it, A.RingArrive) and it.barrier == "full" and it.tx]
            moving: list[A.RingCopy] | list[A.RingArrive] = copies or implied
            moved, rank = max(
                (
                    sum(_lands(c, r, cluster) * c.bytes for c in copies)
                    if copies
                    else sum(_lands(a, r, cluster) * (a.tx or 0) for a in implied),
                    r,
                )
                for r in range(cluster)
            )
            room = sum(c.item.bytes or 0 for c in claims.values())
            if moving and moved > room:
                slots = tuple((c.span, c.item.bytes or 0) for c in claims.values())
                landed: list[A.RingCopy | A.RingArrive] = [m for m in moving if _lands(m, rank, cluster)]
                out.append(CopyFinding("over-slot", name, _lines(landed), slots=slots, moved=moved, room=room))
    return out


def _lines(items: Sequence[A.RingItem]) -> tuple[tuple[Span, str], ...]:
    return tuple((it.span, ring_item_line(it)) for it in items)


def _consumer_role(sides: tuple[Owned[A.Ring], ...]) -> str:
    return next((s.item.role for s in sides if s.item.side == "consume"), "ROLE")


def declaration_problems(comp: Composition) -> list[Declared]:
    """Counts and byte amounts no mbarrier can take, found before any model is built.

    ``mbarrier.init`` takes an arrival count in 1 … 2^20 − 1 and an arrive a count that
    keeps the pending count in range (PTX ISA §9.7.13.15.9, §9.7.13.15.13); a copy of
    no bytes completes nothing.
    """
    out: list[Declared] = [*_missing_inits(comp)]
    for side in comp.items(A.Ring):
        ring = side.item.name
        for item in side.item.items:
            text = ring_item_line(item)
            if isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                initializes = isinstance(item, A.RingBarrierInit)
                problem = count_problem(comp, item.count)
                if problem is not None:
                    role, warps = problem
                    out.append(CountFinding("not-whole", ring, item.barrier, item.span, text, initializes, role, warps))
                    continue
                try:
                    count = count_value(comp, item.count)
                except Unbuildable:
                    continue  # a count over an unknown role: L-ROLE
                if not 1 <= count <= MBAR_MAX_COUNT:
                    out.append(
                        CountFinding("out-of-range", ring, item.barrier, item.span, text, initializes, count=count)
                    )
            elif isinstance(item, A.RingCopy) and item.bytes < 1:
                out.append(CopyFinding("no-bytes", ring, ((item.span, text),), moved=item.bytes))
    return out


# -- what the model leaves out --------------------------------------------------------------


def _declared_rings(comp: Composition) -> dict[str, str]:
    """Rings with a count or byte amount no mbarrier takes (reported before any model)."""
    out: dict[str, str] = {f.ring: "a barrier has no `init` count" for f in _missing_inits(comp)}
    for side in comp.items(A.Ring):
        for item in side.item.items:
            if isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                if count_problem(comp, item.count) is not None:
                    out.setdefault(side.item.name, "a count has no whole, positive value")
                    continue
                try:
                    count = count_value(comp, item.count)
                except Unbuildable:
                    continue
                if not 1 <= count <= MBAR_MAX_COUNT:
                    out.setdefault(side.item.name, f"a count of {count} is outside 1..{MBAR_MAX_COUNT}")
            elif isinstance(item, A.RingCopy) and item.bytes < 1:
                out.setdefault(side.item.name, "a copy moves no bytes")
    return out


#: Why a ring whose every depth overflows shared memory (alone, or beside the other claims) is
#: left out. Placement rejects it (L-OVERLAP) whatever the selection, so the model's silence on
#: it is never an accept.
NO_DEPTH_FITS = "no depth of it fits shared memory"


def excluded(comp: Composition) -> dict[str, str]:
    """Rings the model leaves out, and why: their depths or declarations are rejected first."""
    out = _declared_rings(comp)
    for name in sorted(comp.rings):
        if agreed_depth(comp, name) is None:
            out.setdefault(name, "its sides allow no common depth")
    for name in (*overflowing_rings(comp), *crowded_rings(comp)):
        out.setdefault(name, NO_DEPTH_FITS)
    return out
