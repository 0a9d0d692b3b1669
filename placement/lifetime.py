"""Lifetimes of claims and the rule deciding which claims may share storage.

A claim lives for the whole kernel (:data:`KERNEL`), for one interpreter phase
(:class:`Phase`), or between two events of one tensor connection
(:class:`Interval`; ``None`` for the kernel's start or end). The
:class:`Timeline` holds what the composition declares about time: the phases,
which of them are mutually exclusive, and each connection's events in the order
they happen.

Two lifetimes are **co-live** (they may be live at the same instant, so their
claims must not overlap) unless the timeline proves otherwise:

- a kernel lifetime is co-live with every lifetime;
- two phases are co-live unless they differ and one exclusive group holds both
  (a phase is always co-live with itself);
- two intervals of one connection are half-open ranges of event positions,
  ``[start, end)`` with the kernel's start below and its end above every event,
  and are co-live when the ranges intersect: ``until acc.ready`` and
  ``between acc.ready acc.done`` are not;
- anything else (intervals of different connections, a phase against an
  interval) is co-live: nothing orders them against each other.

Placement only ever lets two claims overlap when they are *not* co-live, so every
"co-live" answer here is the safe one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from diagnostics.span import UNKNOWN_SPAN, Span


@dataclass(frozen=True)
class Whole:
    """Live for the whole kernel."""

    def text(self) -> str:
        return "kernel"


@dataclass(frozen=True)
class Phase:
    """Live while the interpreter runs phase ``name``."""

    name: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a phase lifetime needs a phase name")

    def text(self) -> str:
        return f"phase {self.name}"


@dataclass(frozen=True)
class Interval:
    """Live from event ``start`` to event ``end`` of ``connection`` (half-open).

    ``start=None`` means from the kernel's start (``until end``), ``end=None`` to the
    kernel's end (``from start``); at least one of them is an event.
    """

    connection: str
    start: str | None
    end: str | None

    def __post_init__(self) -> None:
        if not self.connection:
            raise ValueError("an event lifetime needs a connection")
        if self.start is None and self.end is None:
            raise ValueError("an event lifetime needs a start or an end event")

    def text(self) -> str:
        if self.start is None:
            return f"until {self.connection}.{self.end}"
        if self.end is None:
            return f"from {self.connection}.{self.start}"
        return f"between {self.connection}.{self.start} {self.connection}.{self.end}"


Lifetime = Whole | Phase | Interval
KERNEL = Whole()


def lifetime_key(life: Lifetime) -> tuple[int, str, str, str]:
    """A total, deterministic order on lifetimes: kernel, then phases, then intervals."""
    if isinstance(life, Whole):
        return (0, "", "", "")
    if isinstance(life, Phase):
        return (1, life.name, "", "")
    return (2, life.connection, life.start or "", life.end or "")


@dataclass(frozen=True)
class Connection:
    """A tensor connection and its events in the order they happen (``ready`` before ``done``)."""

    name: str
    events: tuple[str, ...]
    span: Span = field(default=UNKNOWN_SPAN, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a connection needs a name")
        if not self.events:
            raise ValueError(f"connection `{self.name}` has no events")
        if len(set(self.events)) != len(self.events):
            raise ValueError(f"connection `{self.name}` repeats an event")


@dataclass(frozen=True)
class Timeline:
    """What the composition declares about time.

    Invariants: phase names are unique; every exclusive group has at least two
    distinct declared phases; connection names are unique.
    """

    phases: tuple[str, ...] = ()
    exclusive: tuple[tuple[str, ...], ...] = ()
    connections: tuple[Connection, ...] = ()

    def __post_init__(self) -> None:
        if len(set(self.phases)) != len(self.phases):
            raise ValueError("a phase is declared twice")
        for group in self.exclusive:
            if len(set(group)) < 2:
                raise ValueError(f"an exclusive group needs two distinct phases: {group}")
            unknown = [p for p in group if p not in self.phases]
            if unknown:
                raise ValueError(f"exclusive group names undeclared phase `{unknown[0]}`")
        names = [c.name for c in self.connections]
        if len(set(names)) != len(names):
            raise ValueError("a connection is declared twice")

    def connection(self, name: str) -> Connection | None:
        return next((c for c in self.connections if c.name == name), None)

    def validate(self, life: Lifetime) -> None:
        """Raise ValueError unless the lifetime names declared phases and ordered events."""
        if isinstance(life, Phase) and life.name not in self.phases:
            raise ValueError(f"lifetime names undeclared phase `{life.name}`")
        if isinstance(life, Interval):
            conn = self.connection(life.connection)
            if conn is None:
                raise ValueError(f"lifetime names undeclared connection `{life.connection}`")
            for event in (life.start, life.end):
                if event is not None and event not in conn.events:
                    raise ValueError(f"connection `{conn.name}` has no event `{event}`")
            start, end = self._range(life)
            if start >= end:
                raise ValueError(f"lifetime `{life.text()}` ends before it starts")

    @cached_property
    def _groups_of(self) -> dict[str, frozenset[int]]:
        """Phase → the indices of the exclusive groups that hold it (linear in the groups' size)."""
        found: dict[str, set[int]] = {}
        for k, group in enumerate(self.exclusive):
            for phase in group:
                found.setdefault(phase, set()).add(k)
        return {phase: frozenset(ks) for phase, ks in found.items()}

    def exclusive_phases(self, a: str, b: str) -> bool:
        """Whether one declared exclusive group holds both (distinct) phases."""
        if a == b:
            return False
        ga, gb = self._groups_of.get(a), self._groups_of.get(b)
        return ga is not None and gb is not None and not ga.isdisjoint(gb)

    def co_live_pairs(self, lifetimes: Sequence[Lifetime]) -> list[tuple[int, int]]:
        """Every co-live pair ``(x, y)``, ``x <= y``, of positions in ``lifetimes`` (distinct lifetimes).

        The same answer as :meth:`co_live` on every pair, in time linear in the pairs found
        plus the size of the exclusive groups: phases are paired through the complement of
        their exclusive groups, event intervals through their connection.
        """
        out: list[tuple[int, int]] = []
        phases: dict[str, int] = {}
        intervals: dict[str, list[int]] = {}
        for x, life in enumerate(lifetimes):
            if isinstance(life, Phase):
                phases[life.name] = x
            elif isinstance(life, Interval):
                intervals.setdefault(life.connection, []).append(x)
        for x, life in enumerate(lifetimes):
            if isinstance(life, Whole):  # at most one: the lifetimes are distinct
                out.extend((min(x, y), max(x, y)) for y in range(len(lifetimes)))
        phase_at = set(phases.values())
        interval_at = [x for xs in intervals.values() for x in xs]
        members: dict[int, set[int]] = {}  # exclusive group → the positions of its phases here
        for name, x in phases.items():
            excluded: set[int] = set()
            for k in self._groups_of.get(name, ()):
                if k not in members:
                    members[k] = {phases[p] for p in self.exclusive[k] if p in phases}
                excluded |= members[k]
            out.extend((x, y) for y in (phase_at - excluded) | {x} if y >= x)
            out.extend((min(x, y), max(x, y)) for y in interval_at)
        connections = sorted(intervals)
        for c, name in enumerate(connections):
            xs = intervals[name]
            ranges = {x: self._range(lifetimes[x]) for x in xs}  # type: ignore[arg-type]
            for a in xs:
                sa, ea = ranges[a]
                out.extend((a, b) for b in xs if b >= a and sa < ranges[b][1] and ranges[b][0] < ea)
                for other in connections[c + 1 :]:
                    out.extend((min(a, b), max(a, b)) for b in intervals[other])
        out.sort()
        return out

    def co_live(self, a: Lifetime, b: Lifetime) -> bool:
        """Whether claims with these lifetimes may be live at the same instant (module rules)."""
        return self.disjoint_reason(a, b) is None

    def disjoint_reason(self, a: Lifetime, b: Lifetime) -> str | None:
        """Why two lifetimes are never live together, or None when they may be."""
        if isinstance(a, Phase) and isinstance(b, Phase):
            if self.exclusive_phases(a.name, b.name):
                return f"phases `{a.name}` and `{b.name}` are exclusive"
            return None
        if isinstance(a, Interval) and isinstance(b, Interval) and a.connection == b.connection:
            sa, ea = self._range(a)
            sb, eb = self._range(b)
            if sa < eb and sb < ea:
                return None
            first, second = (a, b) if ea <= sb else (b, a)
            return f"`{first.text()}` ends before `{second.text()}` starts"
        return None

    def co_live_reason(self, a: Lifetime, b: Lifetime) -> str:
        """Why two co-live lifetimes may be live together (for diagnostics)."""
        if isinstance(a, Whole) or isinstance(b, Whole):
            if a == b:
                return "both live for the whole kernel"
            other = b if isinstance(a, Whole) else a
            return f"a kernel lifetime is live during `{other.text()}`"
        if a == b:
            return f"both live during `{a.text()}`"
        if isinstance(a, Phase) and isinstance(b, Phase):
            return f"phases `{a.name}` and `{b.name}` are not declared exclusive"
        if isinstance(a, Interval) and isinstance(b, Interval):
            if a.connection == b.connection:
                return f"`{a.text()}` and `{b.text()}` overlap on connection `{a.connection}`"
            return f"events of `{a.connection}` and `{b.connection}` are not ordered"
        phase, interval = (a, b) if isinstance(a, Phase) else (b, a)
        assert isinstance(phase, Phase) and isinstance(interval, Interval)
        return f"phase `{phase.name}` is not ordered against connection `{interval.connection}`"

    def _range(self, life: Interval) -> tuple[int, int]:
        conn = self.connection(life.connection)
        events = conn.events if conn is not None else ()
        start = -1 if life.start is None else events.index(life.start)
        end = len(events) if life.end is None else events.index(life.end)
        return start, end
