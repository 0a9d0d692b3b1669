"""The wall-clock budget of one check, and the cancellation of a check nobody waits for any more.

A check runs :func:`within` a :class:`Deadline` (``kernlink check --time-budget``, the
language server's checks). Every solver verdict counts as a step and looks at it: past the
deadline it raises :class:`TimeBudgetSpent`, which the caller reports as
``E-SOLVER-BUDGET``; once cancelled (a newer edit made the check stale) it raises
:class:`Cancelled`. Both are ``BaseException``: no clause catches them as a failure of its
own, and nothing a check decided is kept from a check that stopped half-way (a memo stores
only finished verdicts). The deadline is the only budget that is time: every answer given
within it is the same on every machine, and running out is never read as a verdict.

The deadline belongs to the thread that runs the check: the language server checks on a
worker thread while its message loop goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


class TimeBudgetSpent(BaseException):
    """The check's wall-clock budget ran out before a verdict."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"not decided within {seconds:g} s")
        self.seconds = seconds


class Cancelled(BaseException):
    """The check was cancelled: nobody waits for its verdict any more."""


class Deadline:
    """``seconds`` of wall-clock time from its creation (None: no limit), and a cancel switch.

    ``steps`` counts the solver verdicts given under it (the progress display shows them).
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds if seconds else None
        self.start = time.monotonic()
        self.steps = 0
        self._cancelled = threading.Event()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def cancel(self) -> None:
        """Stop the check at its next step (from any thread)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def step(self) -> None:
        """One solver verdict: raise if the check is cancelled or past its deadline."""
        self.steps += 1
        if self._cancelled.is_set():
            raise Cancelled
        if self.seconds is not None and self.elapsed > self.seconds:
            raise TimeBudgetSpent(self.seconds)


_local = threading.local()


@contextlib.contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Run the block under ``deadline`` (in this thread; the previous one is restored after)."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = deadline
    try:
        yield deadline
    finally:
        _local.deadline = previous


def step() -> None:
    """A step of whatever check runs in this thread (nothing outside a check)."""
    deadline: Deadline | None = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.step()
