"""``E-INTERNAL``: an exception kernlink did not expect, turned into a diagnostic to report.

It names what failed, where it was raised and the inputs that trigger it, so the
report can be filed as is; it never carries the rejected exit code (exit_codes.py).
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence

from diagnostics.model import Diagnostic, Severity
from diagnostics.symbols import Code


def raised_at(exc: BaseException) -> str:
    """``file:line`` of the innermost frame that raised ``exc``."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "unknown location"


def internal_error(exc: BaseException, what: str, inputs: Sequence[str] = ()) -> Diagnostic:
    """The diagnostic for ``exc`` escaping ``what`` (a command or a step) run on ``inputs``."""
    shown = " ".join(inputs) if inputs else "(none)"
    return Diagnostic(
        Code.E_INTERNAL,
        f"{what} failed with {type(exc).__name__}: {exc}".rstrip(" .:") or "internal error",
        severity=Severity.ERROR,
        notes=(
            f"raised at {raised_at(exc)}",
            f"inputs: {shown}",
            "nothing was decided about these inputs; this is a kernlink bug",
        ),
        helps=("report it with the inputs listed above and `kernlink --version`",),
        data=(("exception", type(exc).__name__), ("inputs", shown)),
    )
