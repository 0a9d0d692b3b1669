"""Why a package is not intact, as a typed finding (L-INTEGRITY's; the clause module words it).

The package readers (:mod:`package.kpkg`, :mod:`package.manifest`) raise
:class:`PackageDefect` holding an :class:`IntegrityFinding`: which defect, in which
package, with the values it found. This layer sits below the checker, so it states facts
only; the layer that reads a package (the loader's caller, the linker, the CLI) turns the
finding into its diagnostic through ``checker/clauses/l_integrity.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Defect = Literal[
    # the container (package/kpkg.py)
    "bad-magic",
    "short-header",  # facts: need, size
    "format-version",  # facts: version, supported
    "short-manifest",  # facts: need, size
    "manifest-too-large",  # facts: length, limit
    "manifest-cut",
    "manifest-hash",
    "manifest-deep",  # facts: depth
    "manifest-json",  # facts: error
    "manifest-not-object",
    "manifest-limits",  # facts: problem (what the generic limits found: "holds a non-finite number")
    "manifest-not-canonical",
    "no-payload-list",  # facts: key
    "payload-entry",  # facts: entry (its JSON, cut at 200 characters)
    "payload-name",  # facts: payload
    "payload-twice",  # facts: payload
    "payloads-unsorted",
    "payload-cut",  # facts: payload, need, offset, size
    "trailing-bytes",  # facts: count
    "payload-ended",  # facts: payload
    "payload-hash",  # facts: payload
    "grew",
    "unsafe-name",  # facts: payload (refused when unpacking; no package name)
    # the stage manifest (package/manifest.py)
    "malformed",  # facts: why
    "code-facts",  # facts: payload, difference (the first fact the manifest and the payload disagree on)
    "compile-option",  # facts: option (a recorded compile option kernlink does not replay)
    # the binding (packing/binding.py): the code checked is not shown to be the code linked
    "ptx-not-lowered",  # facts: payload, from, how, recorded, found (SHA-256 prefixes)
    "captured-not-code",  # facts: what (the captured facts its code does not declare)
    "not-rebuilt",  # facts: payload, source, how, recorded, found (SHA-256 prefixes)
    "unbound",  # facts: why (refused by --strict / --require-binding)
    "changed",  # the package's bytes differ between two reads of one link (another writer)
]


@dataclass(frozen=True)
class IntegrityFinding:
    """One defect of one package: ``package`` is its display name, ``facts`` the values of the case (as text)."""

    package: str
    defect: Defect
    facts: tuple[tuple[str, str], ...] = ()

    def fact(self, name: str) -> str:
        return dict(self.facts)[name]


class PackageDefect(Exception):
    """A package that is not intact: raised by the readers, worded by whoever catches it."""

    def __init__(self, finding: IntegrityFinding) -> None:
        super().__init__(f"{finding.defect} in {finding.package or 'a package'}")
        self.finding = finding


def defect(package: str, case: Defect, **facts: object) -> PackageDefect:
    """The exception for one defect of ``package``."""
    return PackageDefect(IntegrityFinding(package, case, tuple((k, str(v)) for k, v in facts.items())))


__all__ = ["Defect", "IntegrityFinding", "PackageDefect", "defect"]
