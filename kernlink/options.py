"""The policy options `check`, `link` and `build` share: one spelling and one help text each."""

from __future__ import annotations

import argparse

STRICT_AS_CHECK = (
    "as `check --strict`: a `.kc` that differs from its package's contract is an error, so are code "
    "sites the conformance analysis cannot decide, and a package that cannot be bound (as --require-binding)"
)
"""``--strict`` on the verbs that run the check: the check's own policy (analysis/pipeline.py)."""


def add_policy_arguments(parser: argparse.ArgumentParser, strict_help: str = STRICT_AS_CHECK) -> None:
    """``--strict``, ``--require-binding`` and ``--no-host-code`` (specs/security.md)."""
    parser.add_argument("--strict", action="store_true", help=strict_help)
    parser.add_argument(
        "--require-binding",
        action="store_true",
        help="refuse a package whose checked PTX is not shown to be its LTO IR's code (a CI policy)",
    )
    parser.add_argument(
        "--no-host-code",
        action="store_true",
        help="refuse a composition whose stages carry host code (`host provider`): E-HOST-CODE for each",
    )
