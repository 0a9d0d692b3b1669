"""From a resolved composition to the abstract protocol, and its cached verdict.

Every ring with a producer side and at least one consumer side, every counter with both
endpoints and every rendezvous becomes part of one :class:`Protocol`. Each role's
per-iteration program is the concatenation of its sides' steps in stage and source order,
with the language's implied steps made explicit: the producer writes a slot just before
its `full arrive` (or, with `tx` bytes and no `copy` line, one async copy of those bytes
follows the arrive), and a consumer reads right after its `full wait` (or just before its
first `empty arrive` when it has no wait). A counter endpoint without steps adds 1 or waits
for 1 per iteration. Rings are checked at the least and the greatest depth the linker may
choose (an unbounded range at :data:`MAX_CHECKED_DEPTH`).

Pieces that cannot form a protocol (an unpaired endpoint, a missing count, an unknown role)
are left out: the structural clauses report them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from checker.composition import Composition, Owned, RoleInfo
from checker.protocol.check import ProtocolVerdict, check_protocol
from checker.protocol.model import (
    MBAR_MAX_COUNT,
    Barrier,
    BarrierKind,
    Counter,
    InitBy,
    NamedBarrier,
    Op,
    Protocol,
    Provenance,
    Ring,
    Role,
    Scope,
    Step,
)
from checker.protocol.report import verdict_diagnostics
from checker.report import seam
from checker.storage import agreed_depth, overflowing_rings
from contract_lang import ast as A
from contract_lang.printer import count_text, ring_item_line
from diagnostics.model import Diagnostic

MAX_CHECKED_DEPTH = 8
"""The deepest ring depth the model checks when a range is unbounded above."""

# Clause codes the protocol model decides (its L-INIT duplicates the structural clause),
# in tiers: a wrong declaration (count, bytes, parity) makes the protocol race or hang, so
# only the first tier that has findings is reported — one mistake, one clause.
TIERS = (("L-ARRIVE", "L-TXBYTES", "L-PARITY"), ("L-RACE",), ("L-DEADLOCK",))
MODEL_CODES = tuple(code for tier in TIERS for code in tier)


class _Skip(Exception):
    """A channel that cannot be modelled (the structural clauses report why)."""


def _prov(node: A.Node, text: str) -> Provenance:
    return Provenance(node.span, text)


def _count(comp: Composition, count: A.Count) -> int:
    total = 0
    for term in count.terms:
        if term.unit == "one":
            total += term.coef
            continue
        info = comp.roles.get(term.role or "")
        if info is None or not info.warps:
            raise _Skip
        per = {"per_thread": info.threads, "per_warp": info.warps,
               "per_warpgroup": info.warps // 4 if info.warps % 4 == 0 else 0}[term.unit]
        if per == 0:
            raise _Skip
        total += term.coef * per
    return total


@dataclass
class _Parts:
    roles: dict[str, Role]
    rings: list[Ring]
    counters: list[Counter]
    bars: list[NamedBarrier]
    programs: dict[str, list[Step]]


def _role(parts: _Parts, info: RoleInfo) -> None:
    if info.name not in parts.roles:
        parts.roles[info.name] = Role(info.name, info.warps, _prov(info.role, f"role {info.name} warps {info.warps}"))


def _ring(comp: Composition, parts: _Parts, name: str, sides: tuple[Owned[A.Ring], ...], depth: int) -> None:
    producers = [s for s in sides if s.item.side == "produce"]
    consumers = [s for s in sides if s.item.side == "consume"]
    if len(producers) != 1 or not consumers:
        raise _Skip
    inits: dict[str, A.RingBarrierInit] = {}
    init_by: list[InitBy] = []
    for side in sides:
        for item in side.item.items:
            if isinstance(item, A.RingBarrierInit):
                inits.setdefault(item.barrier, item)
            elif isinstance(item, A.RingInitBy):
                init_by.append(InitBy(item.role, _prov(item, ring_item_line(item))))
    if "full" not in inits or "empty" not in inits or len({i.role for i in init_by}) != 1:
        raise _Skip  # L-ARRIVE's structural part / L-INIT
    for side in sides:  # an arrive on the other side's barrier is L-PROTO's
        wrong = "empty" if side.item.side == "produce" else "full"
        if any(isinstance(it, A.RingArrive) and it.barrier == wrong for it in side.item.items):
            raise _Skip
    roles = [comp.roles.get(s.item.role) for s in sides]
    if any(r is None or not r.warps for r in roles) or any(i.role not in comp.roles for i in init_by):
        raise _Skip
    full_init, empty_init = (_count(comp, inits[k].count) for k in ("full", "empty"))
    if full_init < 1 or empty_init < 1:
        raise _Skip
    full = Barrier(BarrierKind.FULL, full_init, _prov(inits["full"], ring_item_line(inits["full"])),
                   inits["full"].expect_tx, tuple(init_by))
    empty = Barrier(BarrierKind.EMPTY, empty_init, _prov(inits["empty"], ring_item_line(inits["empty"])),
                    None, tuple(init_by))
    consumer_roles = tuple(dict.fromkeys(c.item.role for c in consumers))
    if producers[0].item.role in consumer_roles:
        raise _Skip
    header = f"ring {name} {producers[0].item.side} by {producers[0].item.role}"
    parts.rings.append(Ring(name, depth, producers[0].item.role, consumer_roles, full, empty,
                            _prov(producers[0].item, header)))
    for info in roles:
        assert info is not None
        _role(parts, info)


def _side_steps(comp: Composition, side: Owned[A.Ring]) -> list[Step]:
    ring, role = side.item, side.item.role
    steps: list[Step] = []
    producer = ring.side == "produce"
    copies = [it for it in ring.items if isinstance(it, A.RingCopy)]
    wrote = read = False
    for item in ring.items:
        text = ring_item_line(item)
        if isinstance(item, A.RingWait):
            kind = BarrierKind(item.barrier)
            parity = item.parity if item.parity is not None else (1 if kind is BarrierKind.EMPTY else 0)
            steps.append(Step(role, Op.WAIT, ring.name, _prov(item, text), kind, parity=parity))
            if not producer and kind is BarrierKind.FULL and not read:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`")))
                read = True
        elif isinstance(item, A.RingArrive):
            kind = BarrierKind(item.barrier)
            if _count(comp, item.count) < 1:
                continue  # an arrive of no threads: reported by declaration_problems
            if producer and kind is BarrierKind.FULL and not copies and not item.tx and not wrote:
                steps.append(Step(role, Op.WRITE, ring.name, _prov(item, f"write slot of `{ring.name}`")))
                wrote = True
            if not producer and kind is BarrierKind.EMPTY and not read and not item.prearm:
                steps.append(Step(role, Op.READ, ring.name, _prov(item, f"read slot of `{ring.name}`")))
                read = True
            steps.append(Step(role, Op.ARRIVE, ring.name, _prov(item, text), kind, count=_count(comp, item.count),
                              nbytes=item.tx or 0, lag=item.lag or 0, prearm=item.prearm))
            if producer and kind is BarrierKind.FULL and not copies and item.tx and not wrote:
                steps.append(Step(role, Op.COPY, ring.name, _prov(item, f"copy {item.tx} bytes (implied by `tx`)"),
                                  kind, nbytes=item.tx))
                wrote = True
        elif isinstance(item, A.RingCopy):
            if item.bytes < 1:
                continue  # a copy of no bytes: reported by declaration_problems
            steps.append(Step(role, Op.COPY, ring.name, _prov(item, text), BarrierKind(item.barrier),
                              nbytes=item.bytes))
            wrote = True
    return steps


def _counter(comp: Composition, parts: _Parts, name: str, ends: tuple[Owned[A.Counter], ...]) -> None:
    producers = [e for e in ends if e.item.side == "produce"]
    consumers = [e for e in ends if e.item.side == "consume"]
    if len(producers) != 1 or len(consumers) != 1:
        raise _Skip
    prod, cons = producers[0], consumers[0]
    infos = [comp.roles.get(prod.item.role), comp.roles.get(cons.item.role)]
    if any(i is None or not i.warps for i in infos) or prod.item.role == cons.item.role:
        raise _Skip
    scope = Scope(prod.item.scope) if prod.item.scope in {s.value for s in Scope} else Scope.CTA
    parts.counters.append(Counter(name, prod.item.role, cons.item.role,
                                  _prov(prod.item, f"counter {name} produce by {prod.item.role}"), scope))
    for info in infos:
        assert info is not None
        _role(parts, info)


def _counter_steps(end: Owned[A.Counter]) -> list[Step]:
    counter = end.item
    if counter.steps:
        return [Step(counter.role, Op.ADD if s.op == "add" else Op.WAIT_GE, counter.name,
                     _prov(s, f"add {s.amount}" if s.op == "add" else f"wait ge {s.amount}"), count=s.amount)
                for s in counter.steps]
    op, text = (Op.ADD, "add 1 (implied)") if counter.side == "produce" else (Op.WAIT_GE, "wait ge 1 (implied)")
    return [Step(counter.role, op, counter.name, _prov(counter, text), count=1)]


def build(comp: Composition, depths: dict[str, int]) -> Protocol | None:
    """The composition's protocol with the given ring depths, or None when it has no channels."""
    parts = _Parts({}, [], [], [], {})
    for name, sides in sorted(comp.rings.items()):
        try:
            _ring(comp, parts, name, sides, depths.get(name, 1))
        except _Skip:
            continue
    for name, ends in sorted(comp.counters.items()):
        try:
            _counter(comp, parts, name, ends)
        except _Skip:
            continue
    for name, rdv in sorted(comp.rendezvous.items()):
        infos = [comp.roles.get(s.item.role) for s in rdv]
        if any(i is None or not i.warps for i in infos):
            continue
        count = sum(i.threads for i in infos if i is not None)
        if count % 32 or not count or any(s.item.threads not in (None, count) for s in rdv):
            continue  # thread counts that disagree are L-BARRIER's
        parts.bars.append(NamedBarrier(name, count, _prov(rdv[0].item, f"rendezvous {name}")))
        for info in infos:
            assert info is not None
            _role(parts, info)
    modelled = {r.name for r in parts.rings} | {c.name for c in parts.counters} | {b.name for b in parts.bars}
    for entry in comp.stages:
        for item in entry.stage.items:
            owned = Owned(entry, item)
            try:
                if isinstance(item, A.Ring) and item.name in modelled:
                    parts.programs.setdefault(item.role, []).extend(_side_steps(comp, owned))  # type: ignore[arg-type]
                elif isinstance(item, A.Counter) and item.name in modelled:
                    parts.programs.setdefault(item.role, []).extend(_counter_steps(owned))  # type: ignore[arg-type]
                elif isinstance(item, A.Rendezvous) and item.name in modelled:
                    # each side arrives with its own role's threads (bar.sync/bar.arrive count whole warps)
                    op = Op.BAR_SYNC if item.mode == "sync" else Op.BAR_ARRIVE
                    parts.programs.setdefault(item.role, []).append(
                        Step(item.role, op, item.name, _prov(item, f"rendezvous {item.name} {item.mode}"),
                             count=comp.roles[item.role].threads))
            except _Skip:
                return None
    if not parts.roles:
        return None
    try:
        return Protocol(tuple(parts.roles.values()), tuple(parts.rings), tuple(parts.counters), tuple(parts.bars),
                        tuple((r, tuple(s)) for r, s in parts.programs.items()))
    except ValueError:
        return None  # a side without writes or reads: L-PROTO / L-UNPAIRED report the shape


def depth_choices(comp: Composition) -> list[dict[str, int]]:
    """The ring depths to check: every ring at its least, then at its greatest allowed depth."""
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    for name in comp.rings:
        agreed = agreed_depth(comp, name)
        lo, hi = (1, 1) if agreed is None else (agreed[0], agreed[1] if agreed[1] is not None else MAX_CHECKED_DEPTH)
        lows[name], highs[name] = lo, max(lo, min(hi, MAX_CHECKED_DEPTH))
    return [lows] if lows == highs else [lows, highs]


@functools.lru_cache(maxsize=512)
def _verdict(protocol: Protocol) -> ProtocolVerdict:
    return check_protocol(protocol)


_LAST: list[tuple[Composition, tuple[Diagnostic, ...]]] = []


def clear_protocol_cache() -> None:
    """Forget cached verdicts (benchmarks measure cold checks)."""
    _verdict.cache_clear()
    _LAST.clear()


def declaration_problems(comp: Composition) -> list[Diagnostic]:
    """Counts and byte amounts no mbarrier can take, found before any model is built.

    ``mbarrier.init`` takes an arrival count in 1 … 2^20 − 1 and an arrive a count that
    keeps the pending count in range (PTX ISA §9.7.13.15.9, §9.7.13.15.13); a copy of
    no bytes completes nothing.
    """
    out: list[Diagnostic] = []
    for side in comp.items(A.Ring):
        for item in side.item.items:
            text = ring_item_line(item)
            if isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                try:
                    count = _count(comp, item.count)
                except _Skip:
                    continue  # a count over an unknown or partial role: L-ROLE / L-WARPGROUP
                what = "initialized with" if isinstance(item, A.RingBarrierInit) else "arrived on"
                if not 1 <= count <= MBAR_MAX_COUNT:
                    out.append(seam("L-ARRIVE", f"`{side.item.name}.{item.barrier}` is {what} {count} arrivals, "
                                    f"outside 1..{MBAR_MAX_COUNT}", (item.span, f"`{text}`"),
                                    notes=("mbarrier arrival counts are 1 … 2^20 − 1 (PTX ISA §9.7.13.15.9)",),
                                    helps=("give the count of arrivals each phase really makes",)))
            elif isinstance(item, A.RingCopy) and item.bytes < 1:
                out.append(seam("L-TXBYTES", f"a copy of {item.bytes} bytes into `{side.item.name}` completes nothing",
                                (item.span, f"`{text}`"), helps=("state the bytes the copy moves, or drop the line",)))
    return out


def model_diagnostics(comp: Composition) -> tuple[Diagnostic, ...]:
    """Every diagnostic the protocol model gives for the composition (cached per composition)."""
    if _LAST and _LAST[0][0] is comp:
        return _LAST[0][1]
    if any(agreed_depth(comp, name) is None for name in comp.rings) or overflowing_rings(comp):
        _LAST[:] = [(comp, ())]
        return ()  # depths L-DEPTH rejects: the linker would never choose them, so nothing to model
    declared = declaration_problems(comp)
    if declared:
        _LAST[:] = [(comp, tuple(declared))]
        return tuple(declared)
    found: dict[tuple[object, ...], Diagnostic] = {}
    for depths in depth_choices(comp):
        protocol = build(comp, depths)
        if protocol is None:
            continue
        for diag in verdict_diagnostics(_verdict(protocol)):
            if diag.code in MODEL_CODES or not diag.code.startswith("L-"):
                found.setdefault((diag.code, diag.message), diag)
        if found:
            break  # report the least depth's findings; a deeper ring adds no new mistake
    tier = next((t for t in TIERS if any(d.code in t for d in found.values())), ())
    result = tuple(d for d in found.values() if d.code in tier or not d.code.startswith("L-"))
    _LAST[:] = [(comp, result)]
    return result


def diagnostics_for(comp: Composition, code: str) -> Iterator[Diagnostic]:
    """The model's diagnostics of one clause (undecided queries go with L-DEADLOCK)."""
    for diag in model_diagnostics(comp):
        if diag.code == code or (code == "L-DEADLOCK" and not diag.code.startswith("L-")):
            yield diag


__all__ = ["MODEL_CODES", "TIERS", "build", "clear_protocol_cache", "count_text", "depth_choices",
           "diagnostics_for", "model_diagnostics"]
