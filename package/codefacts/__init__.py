"""The code facts of a package's PTX payload: contract-free, recorded by `kernlink pack`, derived again on reading.

:mod:`.ptx` reads the module, :mod:`.values` classifies every register, :mod:`.facts`
lists what the conformance checks read. A package records them in its manifest (key
``conformance``) beside the ``code.ptx`` payload they come from; reading the package
(:mod:`package.manifest`) derives them again and compares. The checks that judge them
against a contract are the checker's (:mod:`checker.conformance`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from package.codefacts.facts import FACTS_VERSION, CodeFacts, Fact, derive

PTX_PAYLOAD = "code.ptx"
MANIFEST_KEY = "conformance"


def recorded(manifest_value: Any) -> CodeFacts | None:
    """The facts a manifest records (None when absent or of another facts version); raises on malformed."""
    if not isinstance(manifest_value, Mapping):
        raise TypeError("`conformance` is not an object")
    if manifest_value.get("version") != FACTS_VERSION:
        return None
    return CodeFacts.from_json(manifest_value)


__all__ = ["FACTS_VERSION", "MANIFEST_KEY", "PTX_PAYLOAD", "CodeFacts", "Fact", "derive", "recorded"]
