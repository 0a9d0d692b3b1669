"""What every verb prints: diagnostics as text, JSON or SARIF, and the exit code they call for.

Printing a verdict commits the command (:func:`say`, diagnostics/interrupts.py): an interrupt
that came first, even one a finalizer swallowed, ends the command with exit 130 instead.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from diagnostics import interrupts
from diagnostics.files import atomic_write_text
from diagnostics.model import Diagnostic
from diagnostics.sources import SourceMap
from kernlink import __version__
from kernlink.exit_codes import EXIT_REJECTED, exit_for

if TYPE_CHECKING:
    from diagnostics.rules import RuleInfo
    from solver import Deadline

PROGRESS_AFTER = 2.0
"""Seconds a command runs silently before it shows that it is alive (on a terminal)."""


def color(choice: str) -> bool | None:
    """``--color``: always, never, or None (auto: colour when stdout is a terminal)."""
    return {"always": True, "never": False}.get(choice)


def emit(
    diags: Sequence[Diagnostic],
    sources: SourceMap,
    fmt: str,
    *,
    color: bool | None,
    summary: str | None = None,
    output: str | None = None,
) -> None:
    """Render diagnostics in the chosen format to stdout (or a file, written atomically)."""
    if fmt == "json":
        text = diagnostics_json(diags)
    elif fmt == "sarif":
        from diagnostics.render_sarif import render_sarif

        text = render_sarif(diags, tool_version=__version__, rules=_rules())
    elif diags or summary:
        from diagnostics.render_text import render_text  # rich: only when there is text to print

        text = render_text(diags, sources, color=color, summary=summary)
    else:
        text = ""
    if output is not None:
        interrupts.commit()
        atomic_write_text(output, text)
    elif text:
        say(text)


def say(text: str) -> None:
    """Print a verdict (or a line of one) on stdout, committing the command first."""
    interrupts.commit()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def diagnostics_json(diags: Sequence[Diagnostic]) -> str:
    from diagnostics.render_json import render_json

    return render_json(diags, tool_version=__version__)


def report(diags: Sequence[Diagnostic], sources: SourceMap, args: argparse.Namespace) -> int:
    """Print a failed command's diagnostics (``--format`` and ``--color`` from ``args``); its exit code."""
    if args.format == "json":
        say(diagnostics_json(diags))
    else:
        emit(diags, sources, "text", color=color(args.color))
    return exit_for(diags) or EXIT_REJECTED


def _rules() -> list[RuleInfo]:
    from checker.engine import registry
    from diagnostics.codes import CODES
    from diagnostics.rules import RuleInfo

    clauses = [
        RuleInfo(
            code=c.code,
            name=c.name,
            summary=c.summary,
            help_uri=None,
            full_description=c.docs().sections.get("What it checks", c.summary),
        )
        for c in registry()
    ]
    return clauses + [
        RuleInfo(code=c.code, name=c.name, summary=c.summary, help_uri=None, full_description=c.what) for c in CODES
    ]


@contextlib.contextmanager
def progress(deadline: Deadline, doing: str) -> Iterator[None]:
    """After :data:`PROGRESS_AFTER` seconds, a line on stderr (a terminal only, rich, erased at the
    end) with the time spent, the solver queries answered and the budget left: a long check is
    never a silent minute."""
    if not sys.stderr.isatty():
        yield
        return
    stop = threading.Event()
    shown = threading.Thread(target=_show, args=(deadline, doing, stop), daemon=True)
    shown.start()
    try:
        yield
    finally:
        stop.set()
        shown.join()


def _show(deadline: Deadline, doing: str, stop: threading.Event) -> None:
    if stop.wait(PROGRESS_AFTER):
        return
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

    spinner = Spinner("dots")

    def line() -> Spinner:
        budget = f"; stops at {deadline.seconds:g} s (--time-budget)" if deadline.seconds else ""
        spinner.text = f"{doing}: {deadline.elapsed:.0f} s, {deadline.steps} solver queries answered{budget}"
        return spinner

    console = Console(stderr=True)
    with Live(get_renderable=line, console=console, transient=True, redirect_stdout=False, redirect_stderr=False):
        stop.wait()
