"""L-LIFETIME: a lifetime names an unknown event, or ends before it starts.

## What it checks
A claim's `lifetime between s e`, `until e` or `from s` names events of tensor
connections: `acc.ready` is declared by the export that publishes connection `acc`
(`ready event acc.ready`), `acc.done` by the import that consumes it (`done event
acc.done`). Every named event must be declared by some tensor export or import; both
events of a `between` must belong to one connection; and on a connection the ready
event comes before the done event, so `between acc.done acc.ready` ends before it
starts. (A `lifetime phase P` with an undeclared phase is L-PHASE's.)

## Why it matters
Lifetimes let placement give two claims the same bytes when they are never live
together. An unknown event would silently make a claim's live range empty or
unbounded, and a reversed interval would let placement overlap storage that is in
use: the epilogue's staging buffer would be reused while the accumulator hand-off
still reads it.

## Example
```kernlink
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    export tensor accumulator from role mma {
        elem f32
        tile m 64 n 64
        generation once
        ready event acc.ready
    }
}
stage "demo.epilogue" version "1.0.0" {
    target sm_90a
    role epilogue entry epilogue_main warps 4 warpgroup
    claim smem staging bytes 16KiB align 128 lifetime between acc.done acc.ready
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 64 n 64
        done event acc.done
    }
}
```

## Fix
Name events that a tensor export (`ready event`) or import (`done event`) declares,
both of one connection, and write the interval in order: `between acc.ready acc.done`.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code


class LifetimeClause(Clause):
    code = Code.L_LIFETIME
    name = "bad-lifetime"
    summary = "a lifetime names an unknown event or ends before it starts"
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        claims: list[Owned[A.SmemClaim] | Owned[A.TmemClaim]] = [*comp.items(A.SmemClaim), *comp.items(A.TmemClaim)]
        claims.sort(key=lambda c: (c.span.file, c.span.line, c.span.col))
        for claim in claims:
            yield from self._lifetime(comp, claim.item.name, claim.item.lifetime)

    def _lifetime(self, comp: Composition, claim: str, life: A.Lifetime) -> Iterator[Diagnostic]:
        events = [e for e in (life.start, life.end) if e is not None]
        # `c.done` of an import `c` that declares no done event is L-RENDEZVOUS's: the
        # connection exists, its end is what is missing.
        undeclared_ends = {imp.item.name for imp in comp.tensor_imports if imp.item.done is None}
        unknown = [
            e
            for e in events
            if str(e) not in comp.events and not (e.event == "done" and e.connection in undeclared_ends)
        ]
        if unknown:
            yield self._unknown(comp, claim, unknown)
        if unknown or life.kind != "between" or life.start is None or life.end is None:
            return
        start, end = life.start, life.end
        if start.connection != end.connection:
            yield seam(
                self.code,
                f"the lifetime of `{claim}` runs from an event of `{start.connection}` to an event of "
                f"`{end.connection}`",
                (end.span, f"an event of `{end.connection}`"),
                [(start.span, f"an event of `{start.connection}`")],
                notes=("events of different tensor connections are not ordered with each other",),
                helps=(
                    f"use two events of one connection, such as `between {start.connection}.ready "
                    f"{start.connection}.done`",
                ),
                data={"claim": claim, "start": str(start), "end": str(end)},
            )
            return
        first, last = _position(comp, start), _position(comp, end)
        if first < last:
            return
        word = "ends where it starts" if str(start) == str(end) else "ends before it starts"
        yield seam(
            self.code,
            f"the lifetime of `{claim}` {word}: `{start}` does not come before `{end}`",
            (life.span, f"`{start}` … `{end}`"),
            _declared(comp, start) + (_declared(comp, end) if str(start) != str(end) else []),
            notes=(
                f"on connection `{start.connection}` the export's ready event comes before the import's done event",
            ),
            helps=(f"write `between {end} {start}`",)
            if first > last
            else ("a lifetime between one event and itself is empty; name the interval's two ends",),
            data={"claim": claim, "start": str(start), "end": str(end)},
        )

    def _unknown(self, comp: Composition, claim: str, unknown: list[A.EventRef]) -> Diagnostic:
        from diagnostics.suggestions import did_you_mean

        known = sorted(comp.events)
        guesses = [(e, g) for e in unknown if (g := did_you_mean(str(e), known)) is not None]
        if guesses:
            helps: tuple[str, ...] = tuple(
                f"did you mean `{g}` for `{e}`?" if len(unknown) > 1 else f"did you mean `{g}`?" for e, g in guesses
            )
        elif known:
            helps = (f"known events: {', '.join(f'`{k}`' for k in known)}",)
        else:
            helps = ("declare it with `ready event` on a tensor export or `done event` on an import",)
        names = " and ".join(f"`{e}`" for e in unknown)
        first, *rest = unknown
        return seam(
            self.code,
            f"the lifetime of `{claim}` names {'event' if len(unknown) == 1 else 'events'} {names}, which no "
            "tensor connection declares",
            (first.span, "unknown event"),
            [(e.span, "unknown event") for e in rest],
            notes=(
                "events come from `ready event` lines of tensor exports and `done event` lines of "
                "tensor imports, named `<connection>.<event>` after the import",
            ),
            helps=helps,
            data={"claim": claim, "events": ",".join(str(e) for e in unknown), "absent": "connection"},
        )


def _position(comp: Composition, event: A.EventRef) -> int:
    owner = comp.events[str(event)]
    return 0 if isinstance(owner.item, A.ExportTensor) else 1


def _declared(comp: Composition, event: A.EventRef) -> list[tuple[Span, str]]:
    owner = comp.events[str(event)]
    item = owner.item
    ref = item.ready if isinstance(item, A.ExportTensor) else getattr(item, "done", None)
    span = ref.span if isinstance(ref, A.EventRef) else owner.span
    word = "published" if isinstance(item, A.ExportTensor) else "released"
    return [(span, f"`{event}`: the tensor is {word} here")]
