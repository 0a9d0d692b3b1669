"""`kernlink fmt`: rewrite contracts in canonical form (``--check``: only say which are not)."""

from __future__ import annotations

import argparse

from diagnostics.files import atomic_write_text
from diagnostics.model import DiagnosticError
from diagnostics.sources import SourceMap
from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, exit_for
from kernlink.output import color, emit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fmt", help="rewrite contracts in canonical form")
    p.add_argument("files", nargs="+")
    p.add_argument("--check", action="store_true", help="exit 1 when a file is not canonical; change nothing")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_fmt)


def cmd_fmt(args: argparse.Namespace) -> int:
    from contract_lang.parser import FileKind
    from contract_lang.printer import format_text
    from diagnostics.escape import escape_controls
    from diagnostics.files import read_source

    status = EXIT_OK
    sources = SourceMap()
    for path in args.files:
        try:
            text = read_source(path)
            sources.add(path, text)
            kind: FileKind = "contract" if path.endswith(".kc") else "pipeline" if path.endswith(".kp") else "any"
            formatted = format_text(text, path, kind)
        except DiagnosticError as err:
            emit(err.diagnostics, sources, "text", color=color(args.color))
            status = max(status, exit_for(err.diagnostics))
            continue
        if formatted == text:
            continue
        if args.check:
            print(escape_controls(f"would reformat {path}"))
            status = max(status, EXIT_REJECTED)
        else:
            atomic_write_text(path, formatted)
            print(escape_controls(f"reformatted {path}"))
    return status
