"""L-PROTO: paired endpoints follow different protocols or take incompatible sides.

## What it checks
Endpoints pair by channel name, and a name means one protocol:

- a name is not used as a ring in one place and as a counter or rendezvous elsewhere;
- a ring has one producer side (rings are single-producer), and each side arrives
  only on its own barrier: the producer on `full`, consumers on `empty` (an
  asynchronous `copy` completes bytes on `full`, so it too is the producer's);
- a counter has one producer;
- a rendezvous with several sides has a `sync` side (someone must wait).

A lone endpoint without a partner is L-UNPAIRED's.

## Why it matters
An mbarrier ring, a named barrier and a global counter are different hardware
objects with different handles: stages that disagree on which one a channel is wait
on an object their partner never signals. Two producers on a single-producer ring
both fill slot 0 of the first phase; a consumer arriving on `full` completes a phase
the producer has not filled, and the kernel reads garbage or hangs.

## Example
```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    ring kv produce by load {
        empty wait
        full arrive 1
        init by load
    }
}
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    # copied from the loader: `produce` where the consumer was meant
    ring kv produce by mma {
        full wait
        empty arrive per_warp(mma)
    }
}
```

## Fix
Use one protocol per channel name (rename one of the channels); give a ring and a
counter one producer, with the other endpoints `consume`; arrive on `full` from the
producer side and on `empty` from the consumer side; make at least one side of a
rendezvous `sync`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from checker.channels import kinds_clash
from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code

_OWN_BARRIER = {"produce": "full", "consume": "empty"}
_WORD = {"produce": "producer", "consume": "consumer"}


class ProtoClause(Clause):
    code = Code.L_PROTO
    name = "protocol-mismatch"
    summary = "paired endpoints follow different protocols or take incompatible sides"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        clashing = set(kinds_clash(comp))
        yield from self._kinds(comp, clashing)
        for name, sides in sorted(comp.rings.items()):
            if name in clashing:
                continue
            yield from self._single_writer("ring", name, sides)
            if sum(s.item.side == "produce" for s in sides) < 2:  # else the extra producer is the mistake
                yield from self._wrong_side(name, sides)
        for name, ends in sorted(comp.counters.items()):
            if name not in clashing:
                yield from self._single_writer("counter", name, ends)
        for name, rdv in sorted(comp.rendezvous.items()):
            if name not in clashing:
                yield from self._rendezvous(name, rdv)

    def _kinds(self, comp: Composition, clashing: set[str]) -> Iterator[Diagnostic]:
        for name in sorted(clashing):
            ends: list[tuple[str, Owned[Any]]] = [
                *(("ring", e) for e in comp.rings.get(name, ())),
                *(("counter", e) for e in comp.counters.get(name, ())),
                *(("rendezvous", e) for e in comp.rendezvous.get(name, ())),
            ]
            ends.sort(key=lambda e: _where(e[1].span))
            first_kind = ends[0][0]
            other_kind, other = next(e for e in ends if e[0] != first_kind)
            yield seam(
                self.code,
                f"`{name}` is a {first_kind} in `{ends[0][1].stage_name}` but a {other_kind} in `{other.stage_name}`",
                (other.span, f"used as a {other_kind}"),
                [(e.span, f"used as a {k}") for k, e in ends if e is not other],
                notes=(
                    "an mbarrier ring, a counter and a rendezvous (named barrier) are different objects; "
                    "each side would wait on one its partner never signals",
                ),
                helps=(f"use one protocol for `{name}` on every endpoint, or rename one of the channels",),
                data={"channel": name, "kinds": ",".join(sorted({k for k, _ in ends}))},
            )

    def _single_writer(
        self, kind: str, name: str, ends: Sequence[Owned[A.Ring] | Owned[A.Counter]]
    ) -> Iterator[Diagnostic]:
        producers = [e for e in ends if e.item.side == "produce"]
        if len(producers) < 2:
            return
        first, second = producers[0], producers[1]
        yield seam(
            self.code,
            f"{kind} `{name}` has {len(producers)} producers; {kind}s are single-producer",
            (second.span, f"producer `{second.item.role}` in `{second.stage_name}`"),
            [(p.span, f"producer `{p.item.role}` in `{p.stage_name}`") for p in producers if p is not second],
            notes=(
                ("both producers fill the same slots and arrive on the same `full` barrier",)
                if kind == "ring"
                else ("both producers add to the same counter; a consumer's `wait ge` cannot tell whose data is ready",)
            ),
            helps=(f"make `{second.item.role}` `consume` `{name}`, or give it a channel of its own",),
            data={
                "channel": name,
                "kind": kind,
                "producers": ",".join(p.item.role for p in producers),
                "first": first.item.role,
            },
        )

    def _wrong_side(self, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        for side in sides:
            own = _OWN_BARRIER[side.item.side]
            for step in side.item.items:
                if not isinstance(step, (A.RingArrive, A.RingCopy)) or step.barrier == own:
                    continue
                verb = "arrives" if isinstance(step, A.RingArrive) else "completes a copy"
                who = _WORD[side.item.side]
                yield seam(
                    self.code,
                    f"the {who} side of ring `{name}` {verb} on `{step.barrier}`, the "
                    f"{_WORD['consume' if side.item.side == 'produce' else 'produce']}'s barrier",
                    (step.span, f"{who} `{side.item.role}` signals `{step.barrier}`"),
                    notes=(
                        "the producer signals `full` when a slot is filled; consumers signal `empty` when "
                        "they release it",
                    ),
                    helps=(f"signal `{own}` from the {who} side",),
                    data={"channel": name, "side": side.item.side, "barrier": step.barrier},
                )

    def _rendezvous(self, name: str, sides: Sequence[Owned[A.Rendezvous]]) -> Iterator[Diagnostic]:
        if len(sides) < 2 or any(s.item.mode == "sync" for s in sides):
            return
        first, *others = sides
        yield seam(
            self.code,
            f"every side of rendezvous `{name}` only arrives; none waits",
            (others[0].span, f"`{others[0].item.role}` arrives"),
            [(s.span, f"`{s.item.role}` arrives") for s in [first, *others[1:]]],
            notes=("`bar.arrive` signals without waiting; the hand-off needs a side that waits with `bar.sync`",),
            helps=("make the side that consumes the hand-off `sync`",),
            data={"channel": name},
        )


def _where(span: Span) -> tuple[str, int, int]:
    return (span.file, span.line, span.col)
