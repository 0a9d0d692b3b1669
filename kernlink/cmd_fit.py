"""``kernlink fit``: check and place one composition for several targets at once, and print
each target's resources and the repairs that make a failing one fit (analysis/fit.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.fit import DEFAULT_TARGETS, ROWS, TargetFit, fit, thousands
from diagnostics.escape import escape_controls
from diagnostics.symbols import Code
from hardware.targets import target

_RED, _GREEN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[1m", "\033[0m"


def _paint(text: str, style: str, on: bool) -> str:
    return f"{style}{text}{_RESET}" if on and text.strip() else text


def render_text(fits: Sequence[TargetFit], color: bool = False) -> str:
    """The table and each failing target's reasons; ``color``: an over-capacity cell and a failing
    verdict in red, a fitting one in green (ANSI)."""
    names = [f.target for f in fits]
    present = {row.resource for f in fits for row in f.rows}
    resources = [r for r in ROWS if r in present]
    width = max(len(r) for r in [*resources, "largest safe grid", "resource"]) + 2
    col = max(24, *(len(n) + 2 for n in names))
    lines = ["resource".ljust(width) + "".join(n.ljust(col) for n in names)]
    for resource in resources:
        cells = []
        for f in fits:
            row = next((r for r in f.rows if r.resource == resource), None)
            if row is None:
                cells.append("—")
            elif row.used is None:
                cells.append(f"— / {thousands(row.capacity)}")
            else:
                mark = "" if row.ok else "  over"
                cells.append(f"{thousands(row.used)} / {thousands(row.capacity)}{mark}")
        painted = [_paint(c.ljust(col), _RED, color and c.endswith("over")) for c in cells]
        lines.append(resource.ljust(width) + "".join(painted))
    lines.append(
        "largest safe grid".ljust(width)
        + "".join((f"{thousands(f.safe_grid)} blocks" if f.safe_grid is not None else "—").ljust(col) for f in fits)
    )
    lines.append(
        "verdict".ljust(width)
        + "".join(
            _paint(("fits" if f.fits else "fails").ljust(col), _GREEN if f.fits else _RED + _BOLD, color) for f in fits
        )
    )
    for f in fits:
        if f.fits:
            continue
        lines.append("")
        first = f.errors[0] if f.errors else None
        lines.append(
            _paint(f"{f.target}: fails", _RED + _BOLD, color)
            + (escape_controls(f": {first.code} {first.message}") if first else "")
        )
        if f.relaxed:
            lines.append(
                "  its resources above are its use at the minimum ring depths, placed without the target's limits"
            )
        if len(f.errors) > 1:
            lines.append(f"  and {len(f.errors) - 1} more error(s); run `kernlink check --target {f.target}`")
        if first is not None and first.code in (Code.L_FEATURE, Code.L_TARGET):
            lines.append("  the target lacks what a stage is built for: no resource edit of the contracts repairs it")
        elif f.repairs:
            lines.append(f"  repairs that make it fit (cheapest first, {f.tried} tried):")
            for e in f.repairs:
                lines.append(
                    escape_controls(f"    {e.span.file}:{e.span.line}: {e.what} — {e.detail}; cost {e.cost:.2f}")
                )
                if e.also:
                    lines.append(
                        escape_controls(
                            "      with "
                            + ", ".join(f"{a.span.file}:{a.span.line}: `{a.old}` → `{a.new}`" for a in e.also)
                        )
                    )
        else:
            lines.append(f"  no repair among {f.tried} candidate edits of its contracts makes it fit")
    return "\n".join(lines) + "\n"


def render_json(fits: Sequence[TargetFit]) -> str:
    return (
        json.dumps({"format": "kernlink-fit/1", "targets": [f.as_dict() for f in fits]}, indent=2, sort_keys=True)
        + "\n"
    )


def cmd_fit(args: argparse.Namespace) -> int:
    targets = [t.strip() for t in (args.targets or ",".join(DEFAULT_TARGETS)).split(",") if t.strip()]
    unknown = [t for t in targets if target(t) is None]
    if unknown or not targets:
        print(
            escape_controls(
                f"error: unknown target `{unknown[0] if unknown else ''}`; known: sm_90, sm_90a, sm_100a, sm_120a"
            ),
            file=sys.stderr,
        )
        return 2
    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(escape_controls(f"error: `{missing[0]}` does not exist"), file=sys.stderr)
        return 2
    fits = fit(paths, targets, repairs=not args.no_repairs)
    from kernlink.output import color

    paint = color(args.color)
    if paint is None:
        import os

        paint = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    text = render_json(fits) if args.format == "json" else render_text(fits, paint)
    sys.stdout.write(text)
    return 0 if all(f.fits for f in fits) else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``kernlink fit`` to the CLI."""
    p = sub.add_parser("fit", help="check and place a composition for several targets; suggest repairs")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) and optionally contracts (.kc) or packages (.kpkg)")
    p.add_argument("--targets", help=f"comma-separated targets (default: {','.join(DEFAULT_TARGETS)})")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--no-repairs", action="store_true", help="do not search repairs for failing targets")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_fit)
