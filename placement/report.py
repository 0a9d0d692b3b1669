"""The placement map, as text for people (lld ``-Map`` style) and JSON for tools.

Both are pure functions of the placement, so equal placements give byte-identical
output. The text map opens with a comment header explaining every field, then has
one section per storage domain (claims grouped by component, in address order,
with the system's reserved bytes and IDs shown as ``<reserved>``), the ring depths,
the warps (idle warps shown as ``<idle>``) and the register groups.
"""

from __future__ import annotations

import json
from typing import Any

from placement.lifetime import Interval, Lifetime, Phase
from placement.problem import DOMAINS, Domain
from placement.result import Placement, Slot

FORMAT = "kernlink-placement/1"

_HEADER = """\
# kernlink placement map ({format})
# target {target}; placed by {method}; objective {optimal}; tie-break {canonical}
# objective, in priority order: ring depths {o.ring_depths}; role registers {o.role_registers}; \
register headroom {o.register_headroom}; smem {o.smem_bytes} B; tmem {o.tmem_columns} columns; \
barrier IDs {o.barrier_ids}; counter slots {o.counter_slots}; block warps {o.block_warps}
# Offset, Size: in the domain's unit (smem bytes at absolute shared addresses, tmem columns,
#   named-barrier IDs, counter slots, warps); Align: the address alignment
# Lifetime: kernel | phase P | until C.E | from C.E | between C.E C.F (events of connection C)
# Symbol: a component, then its claims indented; <reserved> and <idle> are the system's
# Why: what decided the size and place (ring depth, power-of-two allocation, sharing with a
#   claim that is never live at the same time, the canonical tie-break)"""

_COLUMNS = f"{'Offset':>10} {'Size':>10} {'Align':>6}  {'Lifetime':<30} {'Symbol':<36} Why"


def _row(offset: int | str, size: int | str, align: int | str, lifetime: str, symbol: str, why: str) -> str:
    return f"{offset:>10} {size:>10} {align:>6}  {lifetime:<30} {symbol:<36} {why}".rstrip()


def _yes(flag: bool, word: str) -> str:
    return f"proven {word}" if flag else f"not proven {word}"


def render_map(placement: Placement) -> str:
    """The text map, ending with a newline."""
    p = placement
    lines = [
        _HEADER.format(
            format=FORMAT,
            target=p.target,
            method=p.method,
            optimal=_yes(p.optimal, "optimal"),
            canonical=_yes(p.canonical, "canonical"),
            o=p.objective,
        ),
        "",
        _COLUMNS,
    ]
    for domain in DOMAINS:
        lines.extend(_domain_lines(p, domain))
    lines.append("")
    lines.append("rings")
    lines.append(_row("", "Depth", "", "Range; one slot", "Symbol", "Why"))
    for ring in p.rings:
        lines.append(
            _row(
                "",
                ring.depth,
                "",
                f"{ring.depth_min}..{ring.depth_max}; {ring.slot_bytes} B",
                f"{ring.owner}.{ring.name}",
                ring.why,
            )
        )
    lines.append("")
    lines.append(
        f"warps  block {p.block_warps} warps; idle "
        f"{len(p.idle_warps)}; entry {p.entry_regs} registers per thread; "
        f"register pool {p.register_pool}"
    )
    lines.append(_row("First", "Warps", "Align", "Budget", "Symbol", "Why"))
    entries: list[tuple[int, str, str]] = []
    for r in p.roles:
        entries.append(
            (
                r.first_warp,
                r.display,
                _row(
                    r.first_warp,
                    r.warps,
                    4 if r.warpgroup else 1,
                    f"budget {r.budget} (min {r.minimum})",
                    f"    {r.name}",
                    r.why,
                ),
            )
        )
    for w in p.idle_warps:
        entries.append((w, "", _row(w, 1, 1, "", "    <idle>", "padding the linker fills")))
    owners = sorted({r.owner for r in p.roles})
    for owner in owners:
        lines.append(_row("", "", "", "", owner, ""))
        lines.extend(e[2] for e in sorted(entries) if e[1].startswith(owner + "."))
    lines.extend(e[2] for e in sorted(entries) if not e[1])
    lines.append("")
    lines.append("registers")
    lines.append(_row("First", "Warps", "Budget", "Roles", "Symbol", "Why"))
    for grp in p.groups:
        lines.append(
            _row(grp.first_warp, grp.warps, grp.budget, ", ".join(grp.roles) or "<idle>", f"group {grp.index}", grp.why)
        )
    if p.notes:
        lines.append("")
        lines.extend(f"note: {n.code}: {n.message}" for n in p.notes)
    return "\n".join(lines) + "\n"


def _domain_lines(p: Placement, domain: Domain) -> list[str]:
    use = p.use(domain)
    proven = "proven" if use.proven else "not proven"
    lines = [
        "",
        f"{domain.value}  [{use.start}, {use.limit}) used {use.used} {domain.unit} "
        f"(end {use.end}); lower bound {use.lower_bound - use.start} ({proven} minimal)",
    ]
    if domain is Domain.SMEM and use.start > 0:
        lines.append(_row(0, use.start, "", "kernel", "<reserved>", "system bytes of every block"))
    if domain is Domain.BARRIER and use.start > 0:
        lines.append(_row(0, use.start, "", "kernel", "<reserved>", "the block-wide barrier"))
    slots = p.in_domain(domain)
    for owner in sorted({s.owner for s in slots}):
        lines.append(_row("", "", "", "", owner, ""))
        for s in sorted((s for s in slots if s.owner == owner), key=lambda s: (s.offset, s.name)):
            lines.append(_row(s.offset, s.size, s.align, s.lifetime.text(), f"    {s.name}", s.why))
    return lines


def _lifetime(life: Lifetime) -> dict[str, Any]:
    if isinstance(life, Phase):
        return {"kind": "phase", "phase": life.name}
    if isinstance(life, Interval):
        return {"kind": "interval", "connection": life.connection, "start": life.start, "end": life.end}
    return {"kind": "kernel"}


def _slot(s: Slot) -> dict[str, Any]:
    return {
        "owner": s.owner,
        "name": s.name,
        "offset": s.offset,
        "size": s.size,
        "align": s.align,
        "lifetime": _lifetime(s.lifetime),
        "kind": s.kind,
        "ring": s.ring,
        "demand": s.demand,
        "why": s.why,
        "span": str(s.span),
    }


def to_jsonable(placement: Placement) -> dict[str, Any]:
    """The placement as plain JSON values (lists in the placement's fixed order)."""
    p = placement
    domains = {}
    for domain in DOMAINS:
        use = p.use(domain)
        domains[domain.value] = {
            "unit": domain.unit,
            "start": use.start,
            "end": use.end,
            "limit": use.limit,
            "used": use.used,
            "lower_bound": use.lower_bound,
            "proven": use.proven,
            "claims": [_slot(s) for s in p.in_domain(domain)],
        }
    o = p.objective
    return {
        "format": FORMAT,
        "target": p.target,
        "method": p.method,
        "optimal": p.optimal,
        "canonical": p.canonical,
        "objective": {
            "ring_depths": o.ring_depths,
            "role_registers": o.role_registers,
            "register_headroom": o.register_headroom,
            "smem_bytes": o.smem_bytes,
            "tmem_columns": o.tmem_columns,
            "barrier_ids": o.barrier_ids,
            "counter_slots": o.counter_slots,
            "block_warps": o.block_warps,
        },
        "domains": domains,
        "rings": [
            {
                "owner": r.owner,
                "name": r.name,
                "depth": r.depth,
                "depth_min": r.depth_min,
                "depth_max": r.depth_max,
                "slot_bytes": r.slot_bytes,
                "why": r.why,
                "span": str(r.span),
            }
            for r in p.rings
        ],
        "warps": {
            "block_warps": p.block_warps,
            "idle": list(p.idle_warps),
            "entry_regs": p.entry_regs,
            "register_pool": p.register_pool,
            "roles": [
                {
                    "owner": r.owner,
                    "name": r.name,
                    "first_warp": r.first_warp,
                    "warps": r.warps,
                    "warpgroup": r.warpgroup,
                    "minimum": r.minimum,
                    "budget": r.budget,
                    "groups": list(r.groups),
                    "why": r.why,
                    "span": str(r.span),
                }
                for r in p.roles
            ],
            "groups": [
                {
                    "index": g.index,
                    "first_warp": g.first_warp,
                    "warps": g.warps,
                    "budget": g.budget,
                    "roles": list(g.roles),
                    "idle": list(g.idle_warps),
                    "why": g.why,
                }
                for g in p.groups
            ],
        },
        "notes": [{"code": n.code, "message": n.message, "notes": list(n.notes)} for n in p.notes],
    }


def to_json(placement: Placement) -> str:
    """Deterministic JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(to_jsonable(placement), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
