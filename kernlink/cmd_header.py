"""`kernlink header STAGE.kc [--peer OTHER.kc …] [-o kl_<stage>.h]`: the device header a component includes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.model import DiagnosticError
from diagnostics.sources import SourceMap
from diagnostics.symbols import Code

if TYPE_CHECKING:
    from contract_lang import ast as A


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
    from checker.header import device_header, unreached_slots
    from contract_lang.parser import parse_text
    from diagnostics.files import atomic_write_text, read_source
    from kernlink.exit_codes import EXIT_OK, EXIT_USAGE
    from kernlink.output import emit

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
    stage = chosen[0]
    peers = [p for p in peers if p.name != stage.name]
    if not args.peer:
        beside = _peers_beside(stage, Path(args.contract))
        several = {ring: paths for ring, paths in _producers(stage, beside).items() if len(paths) > 1}
        if several:
            for ring, paths in sorted(several.items()):
                print(
                    f"error: ring `{ring}` of `{stage.name}` is produced by {len(paths)} contracts beside "
                    f"{args.contract} ({', '.join(paths)}), which claim its slots differently; "
                    "choose the one this component runs with: --peer PRODUCER.kc",
                    file=sys.stderr,
                )
            return EXIT_USAGE
        peers += [other for other, _ in beside]
    for ring in unreached_slots(stage, peers):
        print(
            f"warning: ring `{ring}` is consumed by `{stage.name}`, and no contract given or beside "
            f"{args.contract} produces it: its slot-storage handles are not declared (pass --peer PRODUCER.kc)",
            file=sys.stderr,
        )
    header = device_header(stage, texts[args.contract], Path(args.contract).name, peers)
    if args.output:
        atomic_write_text(args.output, header.text)
    else:
        sys.stdout.write(header.text)
    return EXIT_OK


def _peers_beside(stage: A.Stage, contract: Path) -> list[tuple[A.Stage, str]]:
    """The stages (and their files) in `.kc` files beside the contract that produce a ring this stage
    consumes and whose slot storage it cannot name alone (as a pipeline's `use` without `from` finds contracts)."""
    from checker.header import unreached_slots
    from contract_lang.parser import parse_text
    from diagnostics.files import read_source

    wanted = set(unreached_slots(stage))
    found: list[tuple[A.Stage, str]] = []
    if not wanted:
        return found
    for path in sorted(contract.parent.glob("*.kc")):
        if path.resolve() == contract.resolve():
            continue
        try:
            others = parse_text(read_source(str(path)), str(path), "contract").stages
        except DiagnosticError:
            continue  # a contract beside this one that does not parse names no peer; `check` reports it
        for other in others:
            if other.name != stage.name and any(r.side == "produce" and r.name in wanted for r in other.rings):
                print(
                    f"note: ring slot handles from `{other.name}` in {path.name} (beside the contract)", file=sys.stderr
                )
                found.append((other, path.name))
    return found


def _producers(stage: A.Stage, beside: list[tuple[A.Stage, str]]) -> dict[str, list[str]]:
    """For each ring ``stage`` consumes, the files beside it that claim its slots, one per distinct claim set."""
    from checker.header import slot_claims

    claims: dict[str, dict[tuple[str, ...], str]] = {}
    for other, path in beside:
        pairs = slot_claims(stage, [other])
        for ring in sorted({r.name for r, _ in pairs}):
            names = tuple(sorted(c.name for r, c in pairs if r.name == ring))
            claims.setdefault(ring, {}).setdefault(names, path)
    return {ring: sorted(set(by.values())) for ring, by in claims.items()}
