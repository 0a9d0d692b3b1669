"""The `kernlink` command line.

Exit codes (kernlink/exit_codes.py): 0 accepted (or nothing to report), 1 rejected
(any error diagnostic), 2 usage or I/O error, 3 internal error (E-INTERNAL), 130
interrupted. No command prints a traceback: an escaping exception is E-INTERNAL.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from diagnostics.files import atomic_write_text
from diagnostics.model import Diagnostic, DiagnosticError
from diagnostics.sources import SourceMap
from kernlink import __version__
from kernlink.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, epilog, exit_for

if TYPE_CHECKING:
    from diagnostics.rules import RuleInfo

# Every verb and the module that registers it: only the verb being run is registered (and its
# module imported), so `kernlink check` does not pay for importing fuzzing, the GPU launcher
# or the language server; `--help` and an unknown verb register them all.
_VERBS = {"check": "cli", "fmt": "cli", "explain": "cli", "clauses": "cli",
          **dict.fromkeys(("pack", "inspect", "link", "run", "place", "fuzz", "parity", "header", "build", "lsp"),
                          "commands"),
          "fit": "cmd_fit", "audit": "cmd_audit"}

__all__ = ["EXIT_INTERNAL", "EXIT_OK", "EXIT_REJECTED", "EXIT_USAGE", "build_parser", "emit", "main"]


def _rules() -> list[RuleInfo]:
    from checker.engine import registry
    from diagnostics.codes import CODES
    from diagnostics.rules import RuleInfo

    clauses = [RuleInfo(code=c.code, name=c.name, summary=c.summary, help_uri=None,
                        full_description=c.docs().sections.get("What it checks", c.summary))
               for c in registry()]
    return clauses + [RuleInfo(code=c.code, name=c.name, summary=c.summary, help_uri=None,
                               full_description=c.what) for c in CODES]


def emit(diags: Sequence[Diagnostic], sources: SourceMap, fmt: str, *, color: bool | None,
         summary: str | None = None, output: str | None = None) -> None:
    """Render diagnostics in the chosen format to stdout (or a file, written atomically)."""
    from diagnostics.render_json import render_json
    from diagnostics.render_sarif import render_sarif
    from diagnostics.render_text import render_text

    if fmt == "json":
        text = render_json(diags, tool_version=__version__)
    elif fmt == "sarif":
        text = render_sarif(diags, tool_version=__version__, rules=_rules())
    else:
        text = render_text(diags, sources, color=color, summary=summary) if diags or summary else ""
    if output is not None:
        atomic_write_text(output, text)
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _exit_for(diags: Sequence[Diagnostic]) -> int:
    return exit_for(diags)


def _color(choice: str) -> bool | None:
    return {"always": True, "never": False}.get(choice)


def _codes(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


# ----------------------------------------------------------------- commands

def cmd_check(args: argparse.Namespace) -> int:
    from checker import conformance
    from checker.engine import ModelOptions
    from kernlink.api import check
    from kernlink.loader import UsageError

    try:
        options = ModelOptions(args.rlimit if args.rlimit is not None else ModelOptions.rlimit, args.bound)
    except ValueError as err:
        raise UsageError(str(err)) from err
    result = check(args.paths, target=args.target, select=_codes(args.select), ignore=_codes(args.ignore),
                   strict=args.strict, options=options)
    diags = conformance.strict(result.diagnostics) if args.strict else result.diagnostics
    n_err = sum(1 for d in diags if d.is_error)
    summary = "composition rejected" if n_err else "composition accepted"
    if any(d.code == "E-INTERNAL" for d in diags):
        summary = "composition not decided: kernlink failed (exit 3)"
    emit(diags, result.sources, args.format, color=_color(args.color), summary=summary, output=args.output)
    return _exit_for(diags)


def cmd_watch(args: argparse.Namespace) -> int:
    """`check`, once or (``--watch``) again after every change of an input (kernlink/watch.py)."""
    if not args.watch:
        return cmd_check(args)
    from kernlink.watch import watch

    return watch(args.paths, lambda: cmd_check(args), say=lambda line: print(line, flush=True))


def cmd_fmt(args: argparse.Namespace) -> int:
    from contract_lang.parser import FileKind
    from contract_lang.printer import format_text
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
            emit(err.diagnostics, sources, "text", color=_color(args.color))
            status = max(status, _exit_for(err.diagnostics))
            continue
        if formatted == text:
            continue
        if args.check:
            print(f"would reformat {path}")
            status = max(status, EXIT_REJECTED)
        else:
            atomic_write_text(path, formatted)
            print(f"reformatted {path}")
    return status


def cmd_explain(args: argparse.Namespace) -> int:
    from diagnostics.suggestions import did_you_mean
    from kernlink.docs import explain_json, explain_text, known_codes

    code = args.code.upper()
    if code not in known_codes():
        guess = did_you_mean(code, known_codes())
        hint = f"; did you mean `{guess}`?" if guess else ""
        print(f"error: unknown code `{args.code}`{hint} (`kernlink clauses` lists the clauses, specs/codes.md "
              "the other codes)", file=sys.stderr)
        return EXIT_USAGE
    print(explain_json(code) if args.format == "json" else explain_text(code), end="")
    return EXIT_OK


def cmd_clauses(args: argparse.Namespace) -> int:
    from kernlink.docs import catalogue_json, catalogue_markdown, catalogue_table

    if args.format == "json":
        print(catalogue_json(), end="")
    elif args.format == "markdown":
        print(catalogue_markdown(), end="")
    else:
        catalogue_table(color=_color(args.color))
    return EXIT_OK


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``verb``, only that verb's subcommand is registered (module note on ``_VERBS``)."""
    from kernlink.paths import output_path

    only = verb if verb in _VERBS else None

    parser = argparse.ArgumentParser(prog="kernlink",
                                     description="Verification-first contracts for GPU kernel components",
                                     epilog=epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kernlink {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="check a composition: accept, or name every violated clause")
    p.add_argument("paths", nargs="+", help="a pipeline (.kp) and optionally contracts (.kc) or packages (.kpkg)")
    p.add_argument("--target", help="re-check for another target (sm_90a, sm_100a, sm_120a)")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--select", help="only these clause codes (comma-separated)")
    p.add_argument("--ignore", help="skip these clause codes (comma-separated)")
    p.add_argument("--strict", action="store_true",
                   help="warnings about the inputs are errors (a `.kc` that differs from its package's contract) "
                        "and so are code sites the conformance analysis cannot decide")
    p.add_argument("--rlimit", type=int, metavar="N",
                   help="Z3 resource budget of each protocol-model query (default 400000000)")
    p.add_argument("--bound", type=int, metavar="K",
                   help="iterations each role runs in the protocol model (default: 2 x ring depth + 1)")
    p.add_argument("-o", "--output", type=output_path, help="write the report to a file instead of stdout")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--watch", action="store_true",
                   help="check again whenever the pipeline, a contract beside it or one of its packages changes")
    p.set_defaults(run=cmd_watch)

    p = sub.add_parser("fmt", help="rewrite contracts in canonical form")
    p.add_argument("files", nargs="+")
    p.add_argument("--check", action="store_true", help="exit 1 when a file is not canonical; change nothing")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_fmt)

    p = sub.add_parser("explain", help="print a code's documentation (every L-, E-, W- and I- code)")
    p.add_argument("code")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_explain)

    p = sub.add_parser("clauses", help="the catalogue of clauses")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(run=cmd_clauses)
    if _VERBS.get(only or "", "commands") == "commands":
        from kernlink.commands import add_commands

        add_commands(sub, only)
    if only in (None, "fit"):
        from kernlink import cmd_fit

        cmd_fit.register(sub)
    if only in (None, "audit"):
        from kernlink.cmd_audit import register as add_audit

        add_audit(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    if words in (["--version"], ["-V"]):  # answered before anything is imported
        print(f"kernlink {__version__}")
        return EXIT_OK
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(argv)
    from checker.engine import SelectionError
    from kernlink.loader import UsageError

    try:
        code: int = args.run(args)
    except (UsageError, SelectionError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except DiagnosticError as err:
        emit(err.diagnostics, SourceMap(), "text", color=None)
        return _exit_for(err.diagnostics) or EXIT_REJECTED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a kernlink bug: never a traceback, never the rejected code
        from diagnostics.internal import internal_error

        argv_list = list(argv) if argv is not None else sys.argv[1:]
        emit([internal_error(exc, f"`kernlink {args.command}`", argv_list)], SourceMap(), "text", color=None)
        return EXIT_INTERNAL
    return code


def write_json(path: str | Path, value: object) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, sort_keys=True) + "\n")
