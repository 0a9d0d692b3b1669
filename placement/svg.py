"""An SVG picture of a placement, written by hand (no dependency), byte-deterministic.

Panel 1, shared memory: address on the x axis (the reserved bytes first), one lane
per lifetime on the y axis (kernel, phases, event intervals); a kernel-lifetime
claim spans every lane, so bytes that two lanes share show as overlapping boxes.
Panel 2, warps: one cell per warp coloured by role (idle warps hatched grey), and
under it the register groups with their setmaxnreg budgets.
"""

from __future__ import annotations

from placement.lifetime import Whole, lifetime_key
from placement.problem import Domain
from placement.result import Placement

WIDTH = 960
LEFT = 180
PLOT = WIDTH - LEFT - 20
LANE = 26
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


def _escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as entities, as ``xml.sax.saxutils.escape`` does (which pulls in
    urllib, http, email and ssl: ~20 ms on every build that places)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _colour(owners: list[str], owner: str) -> str:
    return PALETTE[owners.index(owner) % len(PALETTE)]


def _text(x: float, y: float, body: str, size: int = 11, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">{_escape(body)}</text>'


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str, extra: str = "") -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" '
        f'fill="{fill}" stroke="#222" stroke-width="0.5"{extra}>'
        f"<title>{_escape(title)}</title></rect>"
    )


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
        parts.append(
            _rect(
                LEFT + s.offset * scale,
                y + 2,
                s.size * scale,
                h - 4,
                _colour(owners, s.owner),
                title,
                ' fill-opacity="0.75"',
            )
        )
        if s.size * scale >= 7 * len(s.name):
            parts.append(_text(LEFT + (s.offset + s.size / 2) * scale, y + LANE * 0.65, s.name, 10, "middle"))
    axis = y0 + height + 14
    for k in range(5):
        addr = top * k // 4
        parts.append(_text(LEFT + addr * scale, axis, str(addr), 10, "middle"))
    parts.append(_text(LEFT - 6, axis, "address (B)", 10, "end"))
    y1 = axis + 36
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
