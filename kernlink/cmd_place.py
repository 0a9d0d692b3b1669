"""`kernlink place`: place every claim of an accepted composition and print the map (with the named
barriers its staging routes take: the check placed them, analysis/downstream.py, as the link does)."""

from __future__ import annotations

import argparse
import sys

from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, exit_for
from kernlink.output import color, emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kernlink.paths import output_path

    p = sub.add_parser("place", help="place every claim of an accepted composition and print the map")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) and optionally contracts or packages")
    p.add_argument("--target", help="place for another target (sm_90a, sm_100a, sm_120a)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="the map on stdout")
    p.add_argument("--json", dest="json_out", metavar="FILE", type=output_path, help="also write the map as JSON")
    p.add_argument("--svg", metavar="FILE", type=output_path, help="also draw shared memory and warps as SVG")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_place)


def cmd_place(args: argparse.Namespace) -> int:
    """Check, then place; the map is written only for an accepted composition."""
    from diagnostics.escape import escape_controls
    from diagnostics.files import atomic_write_text
    from kernlink.api import check
    from placement import render_map, render_svg, to_json

    result = check(args.paths, target=args.target)
    placed = result.downstream.placed if result.downstream is not None else None
    if not result.accepted or placed is None:
        emit(result.diagnostics, result.sources, "text", color=color(args.color), summary="composition rejected")
        return exit_for(result.diagnostics) or EXIT_REJECTED
    text_map, json_map = render_map(placed.placement), to_json(placed.placement)
    if args.json_out:
        atomic_write_text(args.json_out, json_map)
    if args.svg:
        atomic_write_text(args.svg, render_svg(placed.placement))
    sys.stdout.write(json_map if args.format == "json" else escape_controls(text_map))
    return EXIT_OK
