"""kernlink: verification-first contracts for GPU kernel components.

The public API lives in :mod:`kernlink.api`; the command line in :mod:`kernlink.cli`;
``kernlink.Session`` (:mod:`runtime.session`) runs a linked kernel many times from Python and
``kernlink.run_linked`` (:mod:`runtime.run`) runs it once. Nothing heavy is imported until it is used.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Session":
        from runtime.session import Session

        return Session
    if name == "run_linked":
        from runtime.run import run_linked

        return run_linked
    raise AttributeError(f"module 'kernlink' has no attribute {name!r}")
