"""Run a ``kernlink`` command on hostile input in a bounded child process.

The child is forked from the test process (kernlink is already imported, so a case
costs its own work, not an interpreter start), gets an address-space limit of the
parent's size plus ``memory`` and its own working directory, and is killed past
``seconds``. The outcome records the exit status, the output, the wall time and the
child's peak resident memory beyond what it inherited.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Imported once here, not again in every child.
import checker.clauses  # noqa: F401
import kernlink.api
import kernlink.cli
import linker.link  # noqa: F401
import placement  # noqa: F401
from contract_lang.parser import _lark, parse_text
from diagnostics.model import DiagnosticError
from diagnostics.render_text import render_text
from diagnostics.sources import SourceMap

# Warm what every child would otherwise build again: every verb's module, the parser tables, the renderer.
kernlink.cli.build_parser()
_lark()
try:
    parse_text("stage {", "<warm-up>")
except DiagnosticError as _warm:
    render_text(_warm.diagnostics, SourceMap(), color=False)

MiB = 1 << 20
CRASHED = 99  # the child's status when `main` raised instead of returning


@dataclass(frozen=True)
class Outcome:
    status: int  # the exit status; -N when killed by signal N
    output: str  # stdout and stderr together
    seconds: float
    peak_rss: int  # bytes of resident memory the command added to what it inherited
    timed_out: bool

    def codes(self) -> list[str]:
        """The diagnostic codes of the text output, in order (`error[E-IO]: …` → `E-IO`)."""
        return [
            line.split("[", 1)[1].split("]", 1)[0]
            for line in self.output.splitlines()
            if line.startswith(("error[", "warning[", "note["))
        ]

    def assert_clean(self, *, status: int, seconds: float = 10.0, memory: int = 256 * MiB) -> None:
        """Ended by itself with ``status``, within the time and memory bounds, without a traceback."""
        assert not self.timed_out, f"still running after {self.seconds:.1f} s:\n{self.output[-2000:]}"
        assert "Traceback" not in self.output, self.output[-4000:]
        assert self.status == status, f"exit {self.status}, expected {status}:\n{self.output[-2000:]}"
        assert self.seconds <= seconds, f"took {self.seconds:.1f} s (bound {seconds} s)"
        assert self.peak_rss <= memory, f"added {self.peak_rss // MiB} MiB of memory (bound {memory // MiB} MiB)"


def _resident() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _virtual() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_cli(argv: Sequence[str], *, cwd: Path, seconds: float = 20.0, memory: int = 1024 * MiB) -> Outcome:
    """``kernlink <argv>`` in a forked child limited to ``memory`` more address space and
    ``seconds`` of wall time."""
    sink = tempfile.TemporaryFile()  # noqa: SIM115 (the child writes to it by descriptor)
    inherited = _resident()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = CRASHED
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            out = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", write_through=True)
            sys.stdout = sys.stderr = out
            limit = _virtual() + memory
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            os.chdir(cwd)
            status = kernlink.cli.main(list(argv))
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(status)
    timed_out = False
    while True:
        done, wait_status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > seconds:
            os.kill(pid, signal.SIGKILL)
            _, wait_status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    sink.seek(0)
    output = sink.read().decode("utf-8", errors="replace")
    sink.close()
    status = os.waitstatus_to_exitcode(wait_status)
    peak = usage.ru_maxrss * 1024 - inherited
    return Outcome(status, output, elapsed, max(peak, 0), timed_out)
