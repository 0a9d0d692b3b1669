"""L-PAIR: paired endpoints disagree on memory space, scope or kind.

## What it checks
Endpoints of one channel are paired by name. A counter's producer and consumer must
state the same scope (`cta`, `cluster`, `gpu`, `sys`), the same memory space and the
same communication domain; the two sides of an mbarrier ring must state the same
scope.

## Why it matters
The PTX memory model orders a release and an acquire only when each is *morally
strong* with respect to the other: each must be qualified with a scope that
includes the other thread (PTX §8.7). A `sys`-scope release observed by a
`gpu`-scope acquire on another GPU is a data race: the consumer may read a block
before the peer's data is visible. A ring whose sides disagree on `cta` vs
`cluster` scope waits on a barrier its peer never arrives on.

## Example
```kernlink
stage "cp.push" version "1.0.0" {
    target sm_90a
    role push entry push_main warps 1
    counter ready produce by push scope sys domain "cp"
}
stage "cp.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    counter ready consume by load scope gpu domain "cp"
}
```

## Fix
Give both endpoints the scope of the widest party: a counter read by another GPU
is released and acquired at `sys` scope on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class PairClause(Clause):
    code = Code.L_PAIR
    name = "endpoint-mismatch"
    summary = "paired endpoints disagree on memory space, scope or kind"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for name, ends in sorted(comp.counters.items()):
            yield from self._counters(name, ends)
        for name, sides in sorted(comp.rings.items()):
            yield from self._rings(name, sides)

    def _counters(self, name: str, ends: tuple[Owned[A.Counter], ...]) -> Iterator[Diagnostic]:
        producers = [e for e in ends if e.item.side == "produce"]
        consumers = [e for e in ends if e.item.side == "consume"]
        for prod in producers[:1]:
            for cons in consumers:
                for attr, what in (("scope", "scope"), ("space", "memory space"), ("domain", "domain")):
                    p, c = getattr(prod.item, attr), getattr(cons.item, attr)
                    if p == c:
                        continue
                    yield seam(
                        self.code,
                        f"counter `{name}` pairs a producer of {what} {_show(p)} with a consumer of {what} {_show(c)}",
                        (cons.span, f"`{cons.stage_name}` acquires at {what} {_show(c)}"),
                        [(prod.span, f"`{prod.stage_name}` releases at {what} {_show(p)}")],
                        notes=(
                            "a release and an acquire synchronise only when each one's scope "
                            "includes the other thread (PTX ISA §8.7)",
                        )
                        if attr == "scope"
                        else (),
                        data={"channel": name, "attribute": attr, "producer": p, "consumer": c},
                        helps=(f"state the same {what} on both endpoints of `{name}`",),
                    )

    def _rings(self, name: str, sides: tuple[Owned[A.Ring], ...]) -> Iterator[Diagnostic]:
        producers = [s for s in sides if s.item.side == "produce"]
        consumers = [s for s in sides if s.item.side == "consume"]
        for prod in producers[:1]:
            for cons in consumers:
                p, c = prod.item.scope or "cta", cons.item.scope or "cta"
                if p != c:
                    yield seam(
                        self.code,
                        f"ring `{name}` is `{p}`-scoped on the producer side but `{c}`-scoped on the consumer side",
                        (cons.span, f"consumer side at `{c}` scope"),
                        [(prod.span, f"producer side at `{p}` scope")],
                        data={"channel": name, "attribute": "scope", "producer": p, "consumer": c},
                        helps=(f"state one `scope` on both sides of ring `{name}`",),
                    )


def _show(value: str | None) -> str:
    return f"`{value}`" if value is not None else "(unstated)"
