"""Ctrl-C wins over any verdict: an interrupt before a command's result is committed is exit 130.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be when SIGINT
arrives; inside a finalizer (a Z3 object's ``__del__``) the exception is printed and
dropped, and the command would go on to print "accepted". So the process entry
(:func:`install`, the first thing ``kernlink`` runs) records the signal itself before
raising, and every place that commits a result — prints a verdict, writes a report,
swaps a link into its directory — calls :func:`commit` first, which raises
``KeyboardInterrupt`` when an interrupt was recorded, even one a finalizer swallowed.

After a commit the result stands: a later SIGINT is ignored until the command ends (the
handler checks the flag before it raises, both in the main thread, so no interrupt falls
between the check and the commit). A nested command (each run of ``--watch``, a build a
server runs in-process) is a :func:`command` scope of its own and gives the outer one back
its state. Only the main thread commits: the signal is delivered there.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


class _State:
    installed = False
    interrupted = False
    committed = False
    depth = 0


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.committed:
        return
    _state.interrupted = True
    raise KeyboardInterrupt


def _unraisable(hook: Any) -> Any:
    """``sys.unraisablehook`` that keeps quiet once an interrupt was recorded: about the interrupt a
    finalizer dropped, and about the finalizers of objects whose construction it cut short (a
    ``z3.Context`` without its ``owner``). Nothing is decided after an interrupt anyway."""

    def quiet(info: Any) -> None:
        if _state.interrupted:
            return
        hook(info)

    return quiet


def install() -> None:
    """Record SIGINT from now on (the process entry; a no-op outside the main thread).

    A SIGINT ignored by the parent (a background job of a script) stays ignored. One held
    back (blocked) since the process started is delivered here, to this handler: before
    this point the interpreter's own start-up would have handled it.
    """
    if _state.installed or threading.current_thread() is not threading.main_thread():
        return
    _state.installed = True
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return
    signal.signal(signal.SIGINT, _handler)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def interrupted() -> bool:
    """Whether SIGINT arrived (and was recorded) before this command committed."""
    return _state.interrupted and not _state.committed


def checkpoint() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was recorded (one a finalizer swallowed included)."""
    if interrupted():
        raise KeyboardInterrupt


def commit() -> None:
    """From here on the command's result stands; ``KeyboardInterrupt`` if an interrupt came first.

    The flag is set before it is read: an interrupt before the assignment was recorded and
    raises here, one after it is ignored by the handler.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    _state.committed = True
    if _state.interrupted:
        _state.committed = False
        raise KeyboardInterrupt


def run(work: Callable[[], int], *, entry: bool) -> int | None:
    """Run one command: its exit code, or None when Ctrl-C came before it committed.

    ``entry``: the process's own command (``kernlink …`` itself): SIGINT is recorded from
    here on, the code stands once ``work`` returns (a later Ctrl-C is ignored while the
    process exits), and the exit is never turned into a kill (:func:`settle`). Otherwise (a
    build a server runs in-process) only the command's scope is its own.
    """
    try:
        if entry:
            install()
        with command():
            code = work()
            if entry:
                commit()
    except KeyboardInterrupt:
        if entry:
            _state.committed = True  # no call before this line: no signal handler runs in between
        code = None
    if entry:
        settle()
    return code


def settle() -> None:
    """Let the process exit with the command's code (130 included), never be killed by SIGINT.

    The interpreter's shutdown puts SIGINT back to its default action (a kill) unless it is
    ignored, so from here on it is. And CPython remembers a ``KeyboardInterrupt`` that left
    code run by ``exec`` of a string (a dataclass's generated methods, while a module is
    imported) as unhandled, even once it is caught, and at exit kills the process with SIGINT
    instead of returning the exit code (``-2`` to the parent); every ``exec`` of a string
    clears that memory first: this one is the last.
    """
    if _state.installed and signal.getsignal(signal.SIGINT) is _handler:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    exec("None")


@contextlib.contextmanager
def command() -> Iterator[None]:
    """One command's scope: uncommitted on entry; a nested scope restores the outer state on exit
    (the outermost keeps its commit until the process ends)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _state.committed
    _state.committed = False
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth:
            _state.committed = outer
