"""The `kernlink` command line: the verbs' registry and ``main``.

Each verb lives in its own module ``kernlink/cmd_<verb>.py`` with ``register(sub)`` (its
arguments) and the function that runs it. Exit codes (kernlink/exit_codes.py): 0 accepted
(or nothing to report), 1 rejected (any error diagnostic), 2 usage or I/O error, 3 internal
error (E-INTERNAL), 130 interrupted. No command prints a traceback: an escaping exception is
E-INTERNAL.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kernlink import __version__

if TYPE_CHECKING:
    from checker.memo import Memo

# Every verb, in the order `--help` lists them; `kernlink/cmd_<verb>.py` registers it. Only the
# verb being run is registered (and its module imported), so `kernlink check` does not pay for
# importing fuzzing, the GPU launcher or the language server; `--help` and an unknown verb
# register them all.
VERBS = (
    "check",
    "fmt",
    "explain",
    "clauses",
    "pack",
    "draft",
    "inspect",
    "link",
    "run",
    "place",
    "fuzz",
    "parity",
    "header",
    "build",
    "serve",
    "lsp",
    "fit",
    "audit",
)

__all__ = ["VERBS", "build_parser", "main"]


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``verb``, only that verb's subcommand is registered (module note on ``VERBS``)."""
    from kernlink.exit_codes import epilog

    parser = argparse.ArgumentParser(
        prog="kernlink",
        description="Verification-first contracts for GPU kernel components",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kernlink {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in (verb,) if verb in VERBS else VERBS:
        importlib.import_module(f"kernlink.cmd_{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, resident: Memo | None = None) -> int:
    """Run one command; ``resident``: the check verdicts a build server keeps across its builds.

    Called without ``argv`` it is the process entry: SIGINT is recorded from its first line
    (diagnostics/interrupts.py), so Ctrl-C at any moment, start-up and a finalizer included,
    is exit 130 and no verdict.
    """
    from diagnostics import interrupts

    code = interrupts.run(lambda: _main(argv, resident), entry=argv is None)
    return 130 if code is None else code  # EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None, resident: Memo | None) -> int:
    from diagnostics import interrupts

    words = list(argv) if argv is not None else sys.argv[1:]
    if words in (["--version"], ["-V"]):  # answered before anything is imported
        print(f"kernlink {__version__}")
        return 0  # EXIT_OK
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(argv)
    args.resident = resident
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        code = _failed(exc, args, argv)
    interrupts.checkpoint()  # a verb that committed nothing still ends 130 after an interrupt a finalizer dropped
    return code


def _failed(exc: Exception, args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """The exit code (and the report) of a command that raised; imported only then, so that a verb
    that succeeds (a `kernlink build` a server runs) pays for none of it."""
    from checker.engine import SelectionError
    from diagnostics.model import DiagnosticError
    from diagnostics.sources import SourceMap
    from kernlink.exit_codes import EXIT_INTERNAL, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, exit_for
    from kernlink.output import emit
    from package.loader import UsageError

    if isinstance(exc, (UsageError, SelectionError)):
        from diagnostics.escape import escape_controls

        print(escape_controls(f"error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, DiagnosticError):
        emit(exc.diagnostics, SourceMap(), "text", color=None)
        return exit_for(exc.diagnostics) or EXIT_REJECTED
    if isinstance(exc, BrokenPipeError):
        return EXIT_OK
    # a kernlink bug: never a traceback, never the rejected code
    from diagnostics.internal import internal_error

    argv_list = list(argv) if argv is not None else sys.argv[1:]
    emit([internal_error(exc, f"`kernlink {args.command}`", argv_list)], SourceMap(), "text", color=None)
    return EXIT_INTERNAL
