"""kernlink: verification-first contracts for GPU kernel components.

The public API lives in :mod:`kernlink.api`; the command line in :mod:`kernlink.cli`;
``kernlink.Session`` (:mod:`kernlink.session`) runs a linked kernel many times from Python.
Nothing heavy is imported until it is used.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Session":
        from kernlink.session import Session

        return Session
    raise AttributeError(f"module 'kernlink' has no attribute {name!r}")
