"""The one escape of user text for a terminal: every control character written out, never sent.

Contracts, paths, package names and tool logs come from others; a raw ESC in them would
retitle or clear the reader's terminal, and a bidi override would reorder what it shows.
Every text renderer (diagnostics, `fit`, `place`, `inspect`, `link`, `build`, the CLI's
error lines) prints user text through :func:`escape_controls`. JSON and SARIF keep the
data as it is: their encoders escape it.
"""

from __future__ import annotations

import re

# Characters a terminal would act on rather than show: C0/C1 controls (ESC starts the
# sequences that retitle a terminal or clear it), DEL, line separators and bidi overrides.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``);
    line breaks and tabs are kept."""
    return _CONTROL.sub(_escape_one, text) if _CONTROL.search(text) else text


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
