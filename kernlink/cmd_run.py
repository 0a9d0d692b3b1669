"""`kernlink run DIR --args ARGS.json`: run a linked kernel on the GPU (runtime/run.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnostics.model import DiagnosticError
from diagnostics.sources import SourceMap
from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED
from kernlink.output import color, emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run a linked kernel on the GPU with arguments from a JSON file")
    p.add_argument("directory", help="the output directory of `kernlink link`")
    p.add_argument(
        "--args",
        required=True,
        metavar="FILE",
        help='{"grid": N, "values": {...}, "buffers": {"name": {"input"|"bytes"|"output": ...}}}',
    )
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from runtime.run import run_command

    try:
        run_command(Path(args.directory), Path(args.args))
    except DiagnosticError as err:
        emit(err.diagnostics, SourceMap(), "text", color=color(args.color))
        return EXIT_REJECTED
    return EXIT_OK
