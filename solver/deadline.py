"""The wall-clock budget of one check, and the cancellation of a check nobody waits for any more.

A check runs :func:`within` a :class:`Deadline` (``kernlink check --time-budget``, the
language server's checks). When it expires or is cancelled, the Z3 queries running in the
contexts the check made (:func:`solver.context`) are interrupted, and every solver verdict
after that raises: :class:`TimeBudgetSpent` past the deadline, which the caller reports as
``E-SOLVER-BUDGET``, or :class:`Cancelled` (a newer edit made the check stale). On the main
thread an expired deadline also raises at the next line of Python (SIGALRM), so a check
spending its time outside the solver stops too. Both are ``BaseException``: no clause
catches them as a failure of its own, and nothing a check decided is kept from a check that
stopped half-way (a memo stores only finished verdicts). The deadline is the only budget
that is time: every answer given within it is the same on every machine, and running out
is never read as a verdict.

A deadline belongs to the thread that runs the check: the language server checks on a
worker thread while its message loop goes on (there, only the solver stops early).
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import z3


class TimeBudgetSpent(BaseException):
    """The check's wall-clock budget ran out before a verdict."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"not decided within {seconds:g} s")
        self.seconds = seconds


class Cancelled(BaseException):
    """The check was cancelled: nobody waits for its verdict any more."""


class Deadline:
    """``seconds`` of wall-clock time from its creation (None or 0: no limit), and a cancel switch.

    ``steps`` counts the solver verdicts given under it (the progress display shows them).
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds if seconds else None
        self.start = time.monotonic()
        self.steps = 0
        self.expired = False
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._contexts: weakref.WeakSet[z3.Context] = weakref.WeakSet()
        self._timer: threading.Timer | None = None
        self._alarm = False  # wake the main thread (its check) when it expires

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Stop the check at its next step (from any thread): running queries are interrupted."""
        self._cancelled.set()
        self._stop_solvers()

    def watch(self, ctx: z3.Context) -> None:
        """Interrupt the queries of ``ctx`` when the check must stop."""
        with self._lock:
            self._contexts.add(ctx)
        if self.cancelled or self.expired:
            ctx.interrupt()

    def step(self) -> None:
        """One solver verdict: raise if the check is cancelled or past its deadline."""
        self.steps += 1
        if self._cancelled.is_set():
            raise Cancelled
        if self.seconds is not None and (self.expired or self.elapsed > self.seconds):
            self.expired = True
            raise TimeBudgetSpent(self.seconds)

    def _stop_solvers(self) -> None:
        with self._lock:
            contexts = list(self._contexts)
        for ctx in contexts:
            ctx.interrupt()

    def _expire(self) -> None:
        with self._lock:
            if self._timer is None:  # disarmed: the check is over
                return
            self.expired = True
            alarm = self._alarm
        self._stop_solvers()
        if alarm:
            _thread.interrupt_main(signal.SIGALRM)  # as if SIGALRM arrived: no signal is sent

    def _arm(self) -> bool:
        """Start the timer; whether the main thread is to be woken (then SIGALRM needs a handler)."""
        if self.seconds is None or self._timer is not None:
            return False
        self._alarm = threading.current_thread() is threading.main_thread()
        self._timer = threading.Timer(max(0.0, self.seconds - self.elapsed), self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self._alarm

    def _disarm(self) -> None:
        with self._lock:
            timer, self._timer, self._alarm = self._timer, None, False
        if timer is not None:
            timer.cancel()


_local = threading.local()


def _quiet_unraisable() -> None:
    """A deadline raised in a finalizer is dropped there (and raised again at the next step): say nothing."""
    if getattr(sys.unraisablehook, "_deadline", False):
        return
    hook = sys.unraisablehook

    def quiet(info: Any) -> None:
        if not isinstance(info.exc_value, (TimeBudgetSpent, Cancelled)):
            hook(info)

    quiet._deadline = True  # type: ignore[attr-defined]
    sys.unraisablehook = quiet


def _alarm(signum: int, frame: object) -> None:
    """SIGALRM (simulated by the deadline's timer) on the main thread: its check's deadline expired."""
    deadline = current()
    if deadline is not None and deadline.expired and deadline.seconds is not None:
        raise TimeBudgetSpent(deadline.seconds)


@contextlib.contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Run the block under ``deadline`` (in this thread; the previous one is restored after)."""
    previous = current()
    _local.deadline = deadline
    outer = previous is deadline
    alarm = None
    if not outer and deadline._arm():
        _quiet_unraisable()
        alarm = signal.signal(signal.SIGALRM, _alarm)
    try:
        yield deadline
    finally:
        _local.deadline = previous  # first: a wake-up still pending now finds no expired check
        if not outer:
            deadline._disarm()  # no wake-up after this; one before it was handled on the call's return
            if alarm is not None:
                signal.signal(signal.SIGALRM, alarm)


def current() -> Deadline | None:
    """The deadline of the check running in this thread, if any."""
    found: Deadline | None = getattr(_local, "deadline", None)
    return found


def step() -> None:
    """A step of whatever check runs in this thread (nothing outside a check)."""
    deadline = current()
    if deadline is not None:
        deadline.step()
