"""`kernlink lsp`: the language server on stdio (for editors)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("lsp", help="run the language server on stdio: kernlink's diagnostics in an editor")
    p.set_defaults(run=cmd_lsp)


def cmd_lsp(args: argparse.Namespace) -> int:
    from kernlink.lsp import serve

    serve()
    return 0
