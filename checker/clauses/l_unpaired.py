"""L-UNPAIRED: a channel endpoint (ring, counter, rendezvous) has no partner.

## What it checks
Every ring side, counter endpoint and rendezvous side is paired by its channel name
with at least one endpoint of the other side in another role: a producer needs a
consumer and a consumer needs a producer; a rendezvous `arrive` needs a `sync`, and a
`sync` needs another side (an `arrive`, or a `sync` of another role: a rendezvous every
side syncs on is a block-wide meeting point, which the protocol model steps through).
A ring with barriers whose producer and consumer are one and the same role is unpaired
too: nothing hands its slots to another role. A counter's partner may be the same role:
a counter signals other CTAs (or GPUs), so the role that raises it in one CTA is the
partner of the same role awaiting it in another (a stream-K fix-up flag, serial split-K's
semaphore, a grid barrier); only a counter nobody raises or nobody awaits is unpaired. A
ring without barriers that one role writes and reads is that role's own staging buffer
(`read async`, `read wait`), which program order orders.
A name used by two kinds of channel, or a channel whose only endpoints are several
producers (several `arrive`s), is L-PROTO's: the partner is there, on the wrong side.

## Why it matters
A consumer waiting on a full barrier that no producer ever arrives on hangs the
kernel; a producer filling a ring nobody drains stalls on its first wrap. Neither
fails at compile or link time — the GPU simply never finishes.

## Example
```kernlink
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    ring kv consume by mma {
        full wait
        empty arrive per_warp(mma)
    }
}
```

## Fix
Add the missing stage to the pipeline, or correct the channel name so both sides
agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from checker.channels import kinds_clash, writers_only
from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.protocol.build import synchronized
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

_OTHER = {"produce": "consume", "consume": "produce", "arrive": "sync", "sync": "arrive"}
_WORD = {"produce": "producer", "consume": "consumer", "arrive": "arriving side", "sync": "synchronising side"}


class UnpairedClause(Clause):
    code = Code.L_UNPAIRED
    name = "unpaired-endpoint"
    summary = "a channel endpoint has no partner"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        known = {*comp.rings, *comp.counters, *comp.rendezvous}
        tables: tuple[tuple[str, Mapping[str, Sequence[Owned[Any]]], str], ...] = (
            ("ring", comp.rings, "side"),
            ("counter", comp.counters, "side"),
            ("rendezvous", comp.rendezvous, "mode"),
        )
        protocol = set(kinds_clash(comp))
        for kind, table, attr in tables:
            for name, ends in sorted(table.items()):
                if name in protocol or writers_only(comp, kind, name):
                    continue
                yield from self._unpaired(kind, name, list(ends), attr, known)

    def _same_role(self, kind: str, name: str, ends: Sequence[Owned[A.Node]], role: str) -> Diagnostic:
        consumer = next(e for e in ends if getattr(e.item, "side", None) == "consume")
        producer = next(e for e in ends if getattr(e.item, "side", None) == "produce")
        return seam(
            self.code,
            f"{kind} `{name}` is produced and consumed by the same role `{role}`",
            (consumer.span, f"consumer `{role}`"),
            [(producer.span, f"producer `{role}`")],
            notes=(
                f"a channel hands data from one role to another: `{role}` would wait on a `full` barrier "
                "that only its own later arrives can complete",
            ),
            helps=(
                f"consume `{name}` in the role that reads the data, or produce it in the role that writes "
                "it (a role's own staging needs no channel)",
            ),
            data={"channel": name, "kind": kind, "role": role},
        )

    def _unpaired(
        self, kind: str, name: str, ends: Sequence[Owned[A.Node]], attr: str, known: set[str]
    ) -> Iterator[Diagnostic]:
        sides = {getattr(e.item, attr) for e in ends}
        roles = {getattr(e.item, "role", None) for e in ends}
        staging = kind == "ring" and not synchronized(ends)  # type: ignore[arg-type]
        if kind == "ring" and sides == {"produce", "consume"} and len(roles) == 1 and not staging:
            yield self._same_role(kind, name, ends, str(roles.pop()))
            return
        for end in ends:
            side = getattr(end.item, attr)
            if _OTHER[side] in sides or (side == "sync" and len(roles) > 1):
                continue  # an all-`sync` rendezvous of several roles is a rendezvous: each waits for the others
            from diagnostics.suggestions import did_you_mean

            guess = did_you_mean(name, sorted(known - {name}))
            yield seam(
                self.code,
                f"{kind} `{name}` has a {_WORD[side]} but no {_WORD[_OTHER[side]]}",
                (end.span, f"{_WORD[side]} in `{end.stage_name}`"),
                notes=(f"no stage of the pipeline declares the {_WORD[_OTHER[side]]} of `{name}`",),
                helps=((f"did you mean `{guess}`?",) if guess else ())
                + (f"add the stage that {_OTHER[side]}s `{name}` to the pipeline",),
                data={"channel": name, "kind": kind, "side": side},
            )
            return
