"""`kernlink clauses`: the catalogue of clauses as a table, JSON or Markdown."""

from __future__ import annotations

import argparse

from kernlink.exit_codes import EXIT_OK
from kernlink.output import color


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("clauses", help="the catalogue of clauses")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_clauses)


def cmd_clauses(args: argparse.Namespace) -> int:
    from kernlink.docs import catalogue_json, catalogue_markdown, catalogue_table

    if args.format == "json":
        print(catalogue_json(), end="")
    elif args.format == "markdown":
        print(catalogue_markdown(), end="")
    else:
        catalogue_table(color=color(args.color))
    return EXIT_OK
