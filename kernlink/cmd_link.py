"""`kernlink link`: check, generate and device-link a pipeline into one cubin with a link map."""

from __future__ import annotations

import argparse

from kernlink.exit_codes import EXIT_OK
from kernlink.output import color, diagnostics_json, emit, report, say


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kernlink.options import add_policy_arguments
    from kernlink.paths import output_path
    from linker.watchdog import add_watchdog_argument

    p = sub.add_parser("link", help="check, generate and device-link a pipeline into one cubin with a link map")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) whose stages come from packages")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        type=output_path,
        help="the directory for kernel.cubin, generated.cu, link.map and link.json",
    )
    p.add_argument("--target", help="link for another target than the pipeline's")
    p.add_argument("--ptx", action="store_true", help="also write the linked PTX (kernel.ptx)")
    add_policy_arguments(p)
    add_watchdog_argument(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="how to print diagnostics")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_link)


def cmd_link(args: argparse.Namespace) -> int:
    from diagnostics.escape import escape_controls
    from kernlink.api import link
    from linker.providers import announce

    result = link(
        args.paths,
        args.output,
        target=args.target,
        emit_ptx=args.ptx,
        strict=args.strict,
        watchdog=args.watchdog,
        host_code=not args.no_host_code,
        require_binding=args.require_binding,
    )
    if not result.ok:
        return report(result.diagnostics, result.sources, args)
    if args.format == "json":
        say(diagnostics_json(result.diagnostics))
        return EXIT_OK
    if result.diagnostics:
        emit(result.diagnostics, result.sources, "text", color=color(args.color))
    assert result.output is not None and result.output.cubin is not None
    record, size = result.output.record, len(result.output.cubin)
    say(
        escape_controls(
            f"linked `{record.pipeline}` for {record.target} -> {args.output}/kernel.cubin "
            f"({size} bytes); map in {args.output}/link.map"
        )
    )
    for line in announce(record.providers, str(args.output)):
        say(escape_controls(line))
    return EXIT_OK
