"""An SVG picture of a placement, written by hand (no dependency), byte-deterministic.

A legend names each owner's colour. Panel 1, shared memory: address on the x axis (the
reserved bytes first; ticks at round byte values), one lane per lifetime on the y axis
(kernel, phases, event intervals); a kernel-lifetime claim spans every lane, so bytes that
two lanes share show as overlapping boxes. Each ring's mbarriers are drawn outlined, at least
:data:`MIN_MARK` wide however few bytes they take, and listed with their addresses under the
axis. Panel 2, named barriers: one cell per ID, coloured by owner, a route's barrier (the link
adds one per staging route, :func:`analysis.plan.place_route_barriers`) hatched. Panel 3,
warps: one cell per warp coloured by role (idle warps grey), and under it the register groups
with their setmaxnreg budgets.
"""

from __future__ import annotations

from placement.lifetime import Whole, lifetime_key
from placement.problem import Domain
from placement.result import Placement

WIDTH = 960
LEFT = 180
PLOT = WIDTH - LEFT - 20
LANE = 26
MIN_MARK = 4.0
"""The narrowest an mbarrier array is drawn, in pixels."""
ROUTE_PREFIX = "transfer."
"""The name of a route's named barrier in the placement (analysis/plan.py ``barrier_name``)."""
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


def _escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as entities, as ``xml.sax.saxutils.escape`` does (which pulls in
    urllib, http, email and ssl: ~20 ms on every build that places)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _colour(owners: list[str], owner: str) -> str:
    return PALETTE[owners.index(owner) % len(PALETTE)]


def _text(x: float, y: float, body: str, size: int = 11, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">{_escape(body)}</text>'


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str, extra: str = "", stroke: float = 0.5) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" '
        f'fill="{fill}" stroke="#222" stroke-width="{stroke}"{extra}>'
        f"<title>{_escape(title)}</title></rect>"
    )


def ticks(top: int, most: int = 8) -> list[int]:
    """Addresses for the axis of ``[0, top]``: multiples of the smallest round step (1, 2 or 5 × a
    power of ten bytes below 1 KiB; a power of two KiB from 1 KiB) that gives at most ``most`` + 1 ticks."""
    steps = [m * 10**e for e in range(4) for m in (1, 2, 5) if m * 10**e < 1024]
    steps += [1024 << k for k in range(40)]
    step = next(s for s in steps if top // s <= most)
    return list(range(0, top + 1, step))


def _bytes(n: int) -> str:
    """A tick's label: bytes, or KiB when a whole number of them."""
    return f"{n // 1024} KiB" if n and n % 1024 == 0 else f"{n}"


def _barriers(p: Placement, owners: list[str], y: float) -> list[str]:
    """The named-barrier panel: one cell per ID, the reserved first ones grey, a route's hatched."""
    use = p.use(Domain.BARRIER)
    cell = PLOT / max(use.limit, 1)
    parts = [
        _text(10, y - 12, f"named barriers: {use.used} of {use.limit - use.start} IDs used (IDs from {use.start})", 13),
        '<defs><pattern id="route" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#222" stroke-width="2"/>'
        "</pattern></defs>",
        _text(LEFT - 6, y + LANE * 0.65, "IDs", 11, "end"),
    ]
    for i in range(use.start):
        parts.append(_rect(LEFT + i * cell, y, cell, LANE, "#cccccc", f"ID {i}: reserved (the block-wide barrier)"))
    for s in p.in_domain(Domain.BARRIER):
        route = s.name.startswith(ROUTE_PREFIX)
        fill = "url(#route)" if route else _colour(owners, s.owner)
        what = "a route's barrier" if route else "claim"
        title = f"{s.display}: ID {s.offset} ({what}, {s.demand} threads)"
        parts.append(_rect(LEFT + s.offset * cell, y, s.size * cell, LANE, fill, title))
        parts.append(_text(LEFT + (s.offset + s.size / 2) * cell, y + LANE + 12, s.name, 9, "middle"))
    for i in range(0, use.limit + 1, 4 if use.limit > 8 else 1):
        parts.append(_text(LEFT + i * cell, y - 2, str(i), 9, "middle"))
    return parts


def render_svg(placement: Placement) -> str:
    """The SVG document, ending with a newline."""
    p = placement
    smem = p.in_domain(Domain.SMEM)
    owners = sorted({s.owner for s in p.slots} | {r.owner for r in p.roles})
    lanes = sorted({s.lifetime for s in smem if not isinstance(s.lifetime, Whole)}, key=lifetime_key)
    use = p.use(Domain.SMEM)
    top = max(use.end, use.start + 1)
    scale = PLOT / top
    parts: list[str] = []
    y0 = 40
    parts.append(
        _text(
            10,
            20,
            f"{p.target} placement: shared memory, address by lifetime ({use.used} of {use.limit - use.start} B used)",
            13,
        )
    )
    for k, owner in enumerate(owners):
        x = LEFT + (PLOT / max(len(owners), 1)) * k
        parts.append(_rect(x, y0 - 14, 10, 10, _colour(owners, owner), owner))
        parts.append(_text(x + 14, y0 - 5, owner, 10))
    y0 += 10
    rows = ["kernel", *(life.text() for life in lanes)]
    height = LANE * len(rows)
    for k, label in enumerate(rows):
        parts.append(_text(LEFT - 6, y0 + LANE * k + LANE * 0.65, label, 11, "end"))
        parts.append(f'<line x1="{LEFT}" y1="{y0 + LANE * k}" x2="{LEFT + PLOT}" y2="{y0 + LANE * k}" stroke="#ddd"/>')
    parts.append(_rect(LEFT, y0, use.start * scale, height, "#cccccc", f"<reserved> [0, {use.start})"))
    for s in smem:
        if isinstance(s.lifetime, Whole):
            y, h = y0, height
        else:
            y, h = y0 + LANE * (1 + lanes.index(s.lifetime)), LANE
        title = f"{s.display} [{s.offset}, {s.end}) {s.size} B align {s.align} {s.lifetime.text()}"
        mark = s.kind == "mbarriers"
        parts.append(
            _rect(
                LEFT + s.offset * scale,
                y + 2,
                max(s.size * scale, MIN_MARK) if mark else s.size * scale,
                h - 4,
                _colour(owners, s.owner),
                title,
                ' fill-opacity="0.95"' if mark else ' fill-opacity="0.75"',
                1.5 if mark else 0.5,
            )
        )
        if s.size * scale >= 7 * len(s.name):
            parts.append(_text(LEFT + (s.offset + s.size / 2) * scale, y + LANE * 0.65, s.name, 10, "middle"))
    axis = y0 + height + 14
    for addr in ticks(top):
        x = LEFT + addr * scale
        parts.append(f'<line x1="{x:.1f}" y1="{y0 + height}" x2="{x:.1f}" y2="{y0 + height + 4}" stroke="#222"/>')
        parts.append(_text(x, axis, _bytes(addr), 10, "middle"))
    parts.append(_text(LEFT - 6, axis, "address (B)", 10, "end"))
    marks = [s for s in smem if s.kind == "mbarriers"]
    for k, s in enumerate(marks):
        parts.append(
            _text(LEFT, axis + 14 * (k + 1), f"mbarriers of `{s.owner}.{s.ring}`: [{s.offset}, {s.end}) {s.size} B", 10)
        )
    y_bar = axis + 14 * len(marks) + 36
    parts.extend(_barriers(p, owners, y_bar))
    y1 = y_bar + LANE + 36
    parts.append(
        _text(
            10,
            y1 - 12,
            f"warps: {p.block_warps} warps, register pool {p.register_pool} ({p.entry_regs} per thread at entry)",
            13,
        )
    )
    cell = PLOT / max(p.block_warps, 1)
    for w in p.idle_warps:
        parts.append(_rect(LEFT + w * cell, y1, cell, LANE, "#eeeeee", f"warp {w}: idle"))
    for r in p.roles:
        title = f"{r.display}: warps [{r.first_warp}, {r.end}) budget {r.budget}"
        parts.append(_rect(LEFT + r.first_warp * cell, y1, r.warps * cell, LANE, _colour(owners, r.owner), title))
        parts.append(_text(LEFT + (r.first_warp + r.warps / 2) * cell, y1 + LANE * 0.65, r.name, 10, "middle"))
    parts.append(_text(LEFT - 6, y1 + LANE * 0.65, "roles", 11, "end"))
    y2 = y1 + LANE + 4
    parts.append(_text(LEFT - 6, y2 + LANE * 0.65, "register groups", 11, "end"))
    for g in p.groups:
        title = f"group {g.index}: warps [{g.first_warp}, {g.first_warp + g.warps}) budget {g.budget}"
        parts.append(_rect(LEFT + g.first_warp * cell, y2, g.warps * cell, LANE, "#ffffff", title))
        parts.append(
            _text(LEFT + (g.first_warp + g.warps / 2) * cell, y2 + LANE * 0.65, f"{g.budget} regs", 10, "middle")
        )
    total = y2 + LANE + 20
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total}" '
        f'viewBox="0 0 {WIDTH} {total}" font-family="monospace">'
    )
    return "\n".join([head, *parts, "</svg>"]) + "\n"
