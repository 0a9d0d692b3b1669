"""`kernlink build PIPELINE.kp -o DIR`: pack the components that changed, then link, in one process.

``--watch`` keeps the process: it builds, then builds again whenever an input changes
(kernlink/builder/incremental.py ``inputs_of``), reusing its imports, the parsed grammar, the check's
verdicts (a :class:`checker.memo.Memo`), the binding verdicts and the native worker that
runs NVRTC and nvJitLink (toolchain/cuda.py; a crash there is a diagnostic, and the next
build starts a new worker). A build that fails prints its diagnostics and the watch goes on.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from checker.memo import Memo
    from diagnostics.model import Diagnostic
    from diagnostics.sources import SourceMap


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kernlink.options import add_policy_arguments

    p = sub.add_parser(
        "build", help="pack every component whose source, headers, contract, flags or toolkit changed, then link"
    )
    p.add_argument(
        "pipeline",
        help='the pipeline (.kp); its `use … from "build/<stem>.kpkg"` lines name the '
        "packages, built from <stem>.cu and <stem>.kc beside build/, with the flags of <stem>.flags",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the link's output directory")
    p.add_argument("--compiler", choices=("nvrtc", "nvcc"), default="nvrtc")
    p.add_argument("--target", help="link for another target than the pipeline's")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    add_policy_arguments(p)
    p.add_argument(
        "--watch",
        action="store_true",
        help="stay resident: build again whenever the pipeline, a contract, a flags file, a source or a file "
        "its compile opened changes",
    )
    p.add_argument(
        "--no-server",
        action="store_true",
        help="build in this process even when a build server (`kernlink serve`) is running",
    )
    p.set_defaults(run=cmd_watch)


def cmd_build(args: argparse.Namespace, memo: Memo | None = None) -> int:
    from diagnostics.escape import escape_controls
    from diagnostics.sources import SourceMap
    from diagnostics.symbols import Code
    from kernlink.builder.incremental import build, summary
    from kernlink.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE
    from kernlink.output import emit, say

    if not args.output:
        print("error: -o needs a directory name", file=sys.stderr)
        return EXIT_USAGE
    result, linked = build(
        args.pipeline,
        args.output,
        compiler=args.compiler,
        target=args.target,
        memo=memo,
        host_code=not args.no_host_code,
        strict=args.strict,
        require_binding=args.require_binding,
    )
    if result.steps:
        say(escape_controls(summary(result.steps)))
    color = {"always": True, "never": False}.get(args.color)
    if result.diagnostics:
        sources = linked.sources if linked is not None else SourceMap()
        for name, text in result.sources.texts.items():
            sources.add(name, text)
        _quoted(result.diagnostics, sources)
        failed = any(d.is_error for d in result.diagnostics)
        emit(result.diagnostics, sources, "text", color=color, summary="build rejected" if failed else None)
    if not result.ok:
        return EXIT_USAGE if any(d.code == Code.E_IO for d in result.diagnostics) else EXIT_REJECTED
    say(escape_controls(f"built `{args.pipeline}` -> {args.output}/kernel.cubin"))
    if linked is not None and linked.output is not None and linked.output.record.providers:
        from linker.providers import announce  # a provider's names are the package's text: escaped

        for line in announce(linked.output.record.providers, args.output):
            say(escape_controls(line))
    return EXIT_OK


def _quoted(diags: Sequence[Diagnostic], sources: SourceMap) -> None:
    """Add to ``sources`` each user's file a diagnostic points into that the build did not keep (a
    contract that did not parse, a source that did not compile), so its line and caret are shown."""
    from diagnostics.files import read_source
    from diagnostics.model import DiagnosticError

    for name in sorted({lab.span.file for d in diags for lab in d.labels}):
        if name in sources.texts or "!" in name or name.startswith("<"):
            continue
        try:
            sources.add(name, read_source(name))
        except DiagnosticError:
            continue


def cmd_watch(args: argparse.Namespace) -> int:
    """`build`, once (in a running build server when there is one) or (``--watch``) again after every
    change of an input."""
    resident = getattr(args, "resident", None)
    if not args.watch and resident is None and not args.no_server:
        from kernlink.builder import server

        served = server.build(_server_argv(args))
        if served is not None:
            return served
    if not args.watch:
        return cmd_build(args, resident)
    from pathlib import Path

    from checker.memo import Memo
    from kernlink.builder.incremental import inputs_of
    from kernlink.builder.watch import watch

    memo = Memo()

    def once() -> int:
        start = time.perf_counter()
        status = _survive(args, memo)
        print(f"--- build finished (exit {status}) in {time.perf_counter() - start:.3f} s; watching", flush=True)
        return status

    return watch(
        [args.pipeline],
        once,
        say=lambda line: print(line, flush=True),
        files=lambda paths: inputs_of(Path(paths[0])),
        verb="building",
    )


def _server_argv(args: argparse.Namespace) -> list[str]:
    """``args`` as the server's `kernlink build` takes them; ``--color auto`` decided here, where the
    terminal is."""
    import os

    color = args.color
    if color == "auto":
        color = "always" if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else "never"
    policy = [flag for flag, on in (("--strict", args.strict), ("--require-binding", args.require_binding)) if on]
    argv = [args.pipeline, "-o", args.output, "--compiler", args.compiler, *policy, "--color", color]
    if args.no_host_code:
        argv.append("--no-host-code")
    return [*argv, "--target", args.target] if args.target else argv


def _survive(args: argparse.Namespace, memo: Memo) -> int:
    """One build of the watch: whatever goes wrong is reported, and the watch goes on."""
    from diagnostics.model import DiagnosticError
    from diagnostics.sources import SourceMap
    from kernlink.exit_codes import EXIT_INTERNAL, EXIT_REJECTED, EXIT_USAGE, exit_for
    from kernlink.output import emit
    from package.loader import UsageError

    color = {"always": True, "never": False}.get(args.color)
    try:
        return cmd_build(args, memo)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except DiagnosticError as err:
        emit(err.diagnostics, SourceMap(), "text", color=color)
        return exit_for(err.diagnostics) or EXIT_REJECTED
    except Exception as exc:  # a kernlink bug: reported as E-INTERNAL, never a traceback; the watch goes on
        from diagnostics.internal import internal_error

        emit([internal_error(exc, "`kernlink build --watch`", sys.argv[1:])], SourceMap(), "text", color=color)
        return EXIT_INTERNAL
