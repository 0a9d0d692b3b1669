"""Stage versions and the requirements `use` lines state (`^1.0`, `~1.2`, `>=1.0`, `=1.0.0`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
_REQ = re.compile(r"^(\^|~|>=|<=|>|<|=)?(\d+(?:\.\d+){0,2})$")


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int = 0
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> Version | None:
        match = _VERSION.match(text.strip())
        if match is None:
            return None
        return cls(*(int(g) if g is not None else 0 for g in match.groups()))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


@dataclass(frozen=True)
class Requirement:
    """A version requirement; semantics follow Cargo's (caret is the default for `^`)."""

    op: str
    version: Version
    parts: int

    @classmethod
    def parse(cls, text: str) -> Requirement | None:
        match = _REQ.match(text.strip())
        if match is None:
            return None
        op, ver = match.group(1) or "=", match.group(2)
        parsed = Version.parse(ver)
        if parsed is None:
            return None
        return cls(op, parsed, ver.count(".") + 1)

    def matches(self, v: Version) -> bool:
        base = self.version
        match self.op:
            case "=":
                return v == base if self.parts == 3 else self._prefix_equal(v)
            case ">=":
                return v >= base
            case ">":
                return v > base
            case "<=":
                return v <= base
            case "<":
                return v < base
            case "~":
                upper = Version(base.major + 1) if self.parts == 1 else Version(base.major, base.minor + 1)
                return base <= v < upper
        # caret: the left-most non-zero component may not change
        if base.major > 0 or self.parts == 1:
            upper = Version(base.major + 1)
        elif base.minor > 0 or self.parts == 2:
            upper = Version(0, base.minor + 1)
        else:
            upper = Version(0, 0, base.patch + 1)
        return base <= v < upper

    def _prefix_equal(self, v: Version) -> bool:
        if self.parts == 1:
            return v.major == self.version.major
        return (v.major, v.minor) == (self.version.major, self.version.minor)

    def __str__(self) -> str:
        return f"{self.op}{self.version}"
