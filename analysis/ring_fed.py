"""What a ring-fed tensor hand-off reads of the contract (linker/ring_fed.py generates it).

For each ring-fed export of an accepted composition, :func:`ring_fed` decides whether the
linker generates its hand-off and how each side runs the ring (:class:`RingSide`: the
barrier it waits on and its first parity, its fence, its arrival unit), or the first reason
it does not (an ``E-UNSUPPORTED`` worded by ``l_link``). What is refused: a side whose steps
are not one wait and one arrive of the generated shape (copies, ``tx``, ``lag``, ``once``, ``prearm``,
``remote``, ``multicast``, ``on``, reads placed or asynchronous, ``restart``), an arrive
counted otherwise than per thread, per warp or per warpgroup of its own role (no one thread
arrives once for a fixed group of the role's threads), per warpgroup by a role that is not
whole warpgroups, a cluster-scoped ring, asynchronous-proxy slots, an export several imports
or none read, and an import that leaves out ``generation ring R`` (its stage's handle is then
the one-generation one). The refusals that need the route and the placement are the
linker's (linker/ring_fed.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from checker.clauses import l_link
from checker.composition import Composition, Owned
from contract_lang import ast as A
from contract_lang.printer import count_text
from diagnostics.span import Span

#: The arrival units a generated hand-off arrives with, by what orders the side's moves first.
ARRIVE_UNITS = ("per_thread", "per_warp", "per_warpgroup")


@dataclass(frozen=True)
class RingSide:
    """What one side of the hand-off does on the ring: wait on ``wait`` (first parity ``parity``,
    stated at ``wait_span``), fence when ``fence``, arrive on the other barrier once per thread, per
    warp or per warpgroup."""

    wait: A.BarrierKind
    parity: int
    fence: bool
    unit: str  # per_thread | per_warp | per_warpgroup
    arrive_text: str  # the contract's arrive line, for comments
    wait_span: Span  # the side's `wait` step (the watchdog's site names it)


@dataclass(frozen=True)
class RingFedHandOff:
    """A ring-fed export the linker generates: its ring and how each side runs it."""

    export_stage: str
    export: str
    ring: str
    producer: RingSide
    consumer: RingSide


@dataclass(frozen=True)
class RingFed:
    """Every ring-fed export of a composition: the hand-offs the linker generates, and the ones it
    refuses with their first reason (module docstring)."""

    hand_offs: tuple[RingFedHandOff, ...] = ()
    refusals: tuple[l_link.Unsupported, ...] = ()

    def hand_off(self, stage: str, export: str) -> RingFedHandOff | None:
        return next((h for h in self.hand_offs if (h.export_stage, h.export) == (stage, export)), None)


def ring_fed(comp: Composition) -> RingFed:
    """The ring-fed exports of ``comp`` (an accepted composition), each generated or refused."""
    hand_offs, refused = [], []
    for export in comp.items(A.ExportTensor):
        ring = export.item.ring
        if ring is None:
            continue
        found = _hand_off(comp, export, ring)
        if isinstance(found, RingFedHandOff):
            hand_offs.append(found)
            continue
        refused.append(
            l_link.Unsupported(
                "ring-fed-export", export.stage_name, export.item.name, export.item.span, ring, why=found
            )
        )
    return RingFed(tuple(hand_offs), tuple(refused))


def _hand_off(comp: Composition, export: Owned[A.ExportTensor], ring: str) -> RingFedHandOff | str:
    """The hand-off of ``export``, or why the linker does not generate it."""
    imports = [i for i in comp.tensor_imports if i.item.export == export.item.name]
    if len(imports) != 1:
        return (
            f"a generated hand-off serves one import, and {len(imports)} import it "
            "(each import would stage its own copy of every generation, released on one `empty` barrier)"
        )
    if imports[0].item.ring is None:
        return (
            f"import `{imports[0].item.name}` of `{imports[0].stage_name}` leaves out its generation: a stage's "
            "handles follow its own contract, so its import handle is the one-generation one; write "
            f"`generation ring {ring}` in the import"
        )
    sides = comp.rings.get(ring, ())
    producer = next((s for s in sides if s.item.side == "produce" and s.item.role == export.item.role), None)
    consumer = next((s for s in sides if s.item.side == "consume" and s.item.role == imports[0].item.role), None)
    if producer is None or consumer is None:
        return f"ring `{ring}` has no side of the exporting or the importing role"
    shapes = []
    for side in (producer, consumer):
        found = _shape(side.item)
        if isinstance(found, str):
            return found
        info = comp.roles.get(side.item.role)
        if found.unit == "per_warpgroup" and (info is None or info.warps % 4):
            return (
                f"role `{side.item.role}` arrives on ring `{ring}` once per warpgroup, and its "
                f"{info.warps if info is not None else 0} warps are not whole warpgroups"
            )
        shapes.append(found)
    return RingFedHandOff(export.stage_name, export.item.name, ring, shapes[0], shapes[1])


def _shape(side: A.Ring) -> RingSide | str:
    """A side as the hand-off runs it: the producer waits `empty` and arrives `full`, a consumer the reverse."""
    return side_shape(side, "empty", "full") if side.side == "produce" else side_shape(side, "full", "empty")


def side_shape(ring: A.Ring, wait: A.BarrierKind, arrive: A.BarrierKind) -> RingSide | str:
    """The side as the hand-off runs it, or why it cannot: one ``WAIT wait`` then one ``ARRIVE arrive``."""
    who = f"the {ring.side} side of ring `{ring.name}`"
    if ring.scope not in (None, "cta"):
        return f"{who} is scoped `{ring.scope}`; the hand-off waits and arrives on this CTA's barriers"
    if ring.restart is not None:
        return f"{who} restarts its slot index; a generation's slot is its ordinal modulo the depth"
    if any(isinstance(item, A.RingOnce) for item in ring.items):
        return f"{who} runs `once`; the hand-off runs one generation per tile, in the loop"
    for item in ring.items:
        if isinstance(item, (A.RingCopy, A.RingRead, A.RingReadWait)):
            return f"{who} copies or places its reads; the hand-off moves the tile with shared-memory stores and loads"
        if isinstance(item, A.RingProxy) and item.proxy != "generic":
            return f"{who} {item.access} the slots through the async proxy; the hand-off's stores and loads are generic"
    steps = ring.steps
    shape = [(type(s).__name__, s.barrier) for s in steps]
    if shape != [("RingWait", wait), ("RingArrive", arrive)]:
        return f"{who} must run `{wait} wait` then `{arrive} arrive`, the steps the hand-off generates"
    first, last = steps
    assert isinstance(first, A.RingWait) and isinstance(last, A.RingArrive)
    if first.on is not None:
        return f"{who} waits on part of the grid only (`on {first.on}`)"
    extras = [
        word
        for word, present in (
            (f"tx {last.tx}", last.tx is not None),
            (f"lag {last.lag}", last.lag is not None),
            ("prearm", last.prearm),
            ("remote", last.remote),
            ("multicast", last.multicast),
            (f"on {last.on}", last.on is not None),
        )
        if present
    ]
    if extras:
        return f"{who} arrives with `{' '.join(extras)}`; the hand-off arrives once per generation on this CTA"
    terms = last.count.terms
    if len(terms) != 1 or terms[0].unit not in ARRIVE_UNITS or terms[0].coef != 1 or terms[0].role != ring.role:
        return (
            f"{who} arrives `{count_text(last.count)}`; the hand-off arrives `per_thread({ring.role})` (each thread "
            f"after its own moves), `per_warp({ring.role})` (lane 0 after `__syncwarp`) or "
            f"`per_warpgroup({ring.role})` (thread 0 of each warpgroup after a named barrier of the warpgroup). "
            "Other counts (a constant, a sum, another role's width) have no one thread that arrives once for a "
            "fixed group of the role's threads"
        )
    parity = first.parity if first.parity is not None else (1 if wait == "empty" else 0)
    fence = any(isinstance(item, A.RingFence) for item in ring.items)
    return RingSide(wait, parity, fence, terms[0].unit, f"{arrive} arrive {count_text(last.count)}", first.span)
