"""The exit codes of every `kernlink` command, in one place.

====  ==========================================================================
code  meaning
====  ==========================================================================
0     accepted, linked, or nothing to report
1     rejected: at least one error diagnostic about the inputs
2     usage or I/O error: bad arguments, an unreadable or unwritable file
3     internal error (``E-INTERNAL``): a kernlink bug; the report names the inputs
130   interrupted (Ctrl-C): no verdict
====  ==========================================================================

A crash never shares the rejected code: an exception that escapes a command is
reported as ``E-INTERNAL`` and exits 3, so a script can tell "your kernel is wrong"
from "kernlink is wrong".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the diagnostics are imported by `exit_for` alone: `--help` and a served build need none
    from diagnostics.model import Diagnostic

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

#: (code, meaning) for help texts and the README.
TABLE: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "accepted, linked, or nothing to report"),
    (EXIT_REJECTED, "rejected: an error diagnostic about the inputs"),
    (EXIT_USAGE, "usage or I/O error"),
    (EXIT_INTERNAL, "internal error (E-INTERNAL): a kernlink bug, report it with the inputs"),
    (EXIT_INTERRUPTED, "interrupted: no verdict"),
)


def epilog() -> str:
    """The exit-code table as the CLI's help epilog."""
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in TABLE)


def exit_for(diags: Iterable[Diagnostic]) -> int:
    """The exit code a command's diagnostics call for: internal > usage > rejected > ok (E-IO: the
    inputs could not be read, not that they are wrong, is usage)."""
    from diagnostics.model import Severity
    from diagnostics.symbols import Code

    found = list(diags)
    if any(d.code == Code.E_INTERNAL for d in found):
        return EXIT_INTERNAL
    if any(d.code == Code.E_IO for d in found):
        return EXIT_USAGE
    return EXIT_REJECTED if any(d.severity is Severity.ERROR for d in found) else EXIT_OK
