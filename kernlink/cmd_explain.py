"""`kernlink explain CODE`: a code's documentation (every L-, E-, W- and I- code)."""

from __future__ import annotations

import argparse
import sys

from kernlink.exit_codes import EXIT_OK, EXIT_USAGE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="print a code's documentation (every L-, E-, W- and I- code)")
    p.add_argument("code")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from diagnostics.suggestions import did_you_mean
    from kernlink.docs import explain_json, explain_text, known_codes

    code = args.code.upper()
    if code not in known_codes():
        guess = did_you_mean(code, known_codes())
        hint = f"; did you mean `{guess}`?" if guess else ""
        print(
            f"error: unknown code `{args.code}`{hint} (`kernlink clauses` lists the clauses, specs/codes.md "
            "the other codes)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(explain_json(code) if args.format == "json" else explain_text(code), end="")
    return EXIT_OK
