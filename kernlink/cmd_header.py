"""`kernlink header STAGE.kc [--peer OTHER.kc …] [-o kl_<stage>.h]`: the device header a component includes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from diagnostics.model import DiagnosticError
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("header", help="write the device header (handles, params struct, helpers) of a stage")
    p.add_argument("contract", help="the stage's contract (.kc)")
    p.add_argument("--stage", help="the stage, when the contract holds several")
    p.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="OTHER.kc",
        help="another stage of the composition (names the per-slot storage its rings carry)",
    )
    p.add_argument("-o", "--output", help="the header to write (default: stdout)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_header)


def cmd_header(args: argparse.Namespace) -> int:
    from contract_lang.parser import parse_text
    from diagnostics.files import atomic_write_text, read_source
    from kernlink.exit_codes import EXIT_OK, EXIT_USAGE
    from kernlink.output import emit
    from linker.header import device_header

    sources = SourceMap()
    try:
        texts = {}
        for path in (args.contract, *args.peer):
            texts[path] = read_source(path)
            sources.add(path, texts[path])
        stages = parse_text(texts[args.contract], args.contract, "contract").stages
        peers = [s for p in args.peer for s in parse_text(texts[p], p, "contract").stages]
    except DiagnosticError as err:
        emit(err.diagnostics, sources, "text", color=None)
        return EXIT_USAGE if any(d.code == Code.E_IO for d in err.diagnostics) else 1
    chosen = [s for s in stages if args.stage in (None, s.name)]
    if len(chosen) != 1:
        names = ", ".join(f"`{s.name}`" for s in stages)
        why = f"no stage `{args.stage}`" if args.stage else "several stages"
        print(f"error: {why} in {args.contract} ({names}); choose one with --stage", file=sys.stderr)
        return EXIT_USAGE
    if args.output == "":
        print("error: -o needs a file name", file=sys.stderr)
        return EXIT_USAGE
    header = device_header(
        chosen[0], texts[args.contract], Path(args.contract).name, [p for p in peers if p.name != chosen[0].name]
    )
    if args.output:
        atomic_write_text(args.output, header.text)
    else:
        sys.stdout.write(header.text)
    return EXIT_OK
