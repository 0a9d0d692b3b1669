"""L-SCOPE: a barrier or counter is used across a wider scope than it declares.

## What it checks
- A ring with a `remote` or `multicast` arrive or copy (a cluster peer arriving, or
  completing bytes, through `.shared::cluster`) must be `scope cluster` (or wider); a
  ring without `scope` is CTA-scoped.
- A counter synchronizes across CTAs, so its scope is wider than `cta`.
- A counter that crosses GPUs or reaches the host — it names a communication
  `domain`, or lives in `space peer` or `space host` — is `scope sys`.

Endpoints of one channel that state different scopes are L-PAIR's; this clause
checks the scope they agree on against how the channel is used.

## Why it matters
PTX orders a release and an acquire only when each one's scope includes the other
thread (PTX ISA §8.7). A remote arrive on a barrier whose waits are `.cta`-scoped
does not synchronize with the waiting CTA; a `.gpu`-scoped flag read by another
GPU is a data race: the consumer may see the flag before the data it guards.
`.sys` is the only scope that includes other GPUs and the host (PTX ISA §8.5).

## Example
```kernlink
stage "cp.push" version "1.0.0" {
    target sm_90a
    role push entry push_main warps 1
    counter ready produce by push scope gpu domain "cp" space peer
}
stage "cp.load" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    counter ready consume by load scope gpu domain "cp" space peer
}
```

## Fix
Declare the scope of the widest party on every endpoint: `scope cluster` on a ring
with remote arrivals, `scope sys` on a counter another GPU or the host reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

_RANK = {"cta": 0, "cluster": 1, "gpu": 2, "sys": 3}


class ScopeClause(Clause):
    code = Code.L_SCOPE
    name = "scope-too-narrow"
    summary = "a barrier or counter is used across a wider scope than it declares"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for name, sides in sorted(comp.rings.items()):
            yield from self._ring(name, sides)
        for name, ends in sorted(comp.counters.items()):
            yield from self._counter(name, ends)

    def _ring(self, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        scopes = {s.item.scope or "cta" for s in sides}
        if len(scopes) != 1:
            return  # the sides disagree: L-PAIR
        scope = scopes.pop()
        if _RANK[scope] >= _RANK["cluster"]:
            return
        for side in sides:
            remote = next(
                (
                    it
                    for it in side.item.items
                    if isinstance(it, (A.RingArrive, A.RingCopy)) and (it.remote or it.multicast)
                ),
                None,
            )
            if remote is None:
                continue
            stated = next((it for s in sides for it in s.item.items if isinstance(it, A.RingScope)), None)
            what = "arrives on it" if isinstance(remote, A.RingArrive) else "completes copies on it"
            kind = "multicast" if remote.multicast else "remote"
            yield seam(
                self.code,
                f"ring `{name}` is `{scope}`-scoped, but `{side.item.role}` {what} from a cluster peer",
                (remote.span, f"{kind} {'arrive' if isinstance(remote, A.RingArrive) else 'copy'}"),
                [
                    (stated.span, f"`scope {scope}`")
                    if stated is not None
                    else (side.span, "no `scope`: the ring is CTA-scoped")
                ],
                notes=(
                    "a remote `mbarrier.arrive` through `.shared::cluster` synchronizes with the waiting CTA "
                    "only at `.cluster` scope (PTX ISA §9.7.13.15.16, §8.7)",
                ),
                helps=(f"write `scope cluster` on every side of `{name}`",),
                data={"channel": name, "scope": scope, "needed": "cluster"},
            )
            return

    def _counter(self, name: str, ends: Sequence[Owned[A.Counter]]) -> Iterator[Diagnostic]:
        scopes = {e.item.scope for e in ends}
        if len(scopes) != 1:
            return  # the endpoints disagree: L-PAIR
        scope = scopes.pop()
        crossing = [e for e in ends if e.item.domain is not None or e.item.space in ("peer", "host")]
        if crossing and scope != "sys":
            why = _crossing(crossing[0].item)
            shown = f"`{scope}` scope" if scope is not None else "no scope"
            yield seam(
                self.code,
                f"counter `{name}` {why} but is released and acquired at {shown}",
                (crossing[0].span, f"{why}, at {shown}"),
                [(e.span, f"at {shown}") for e in ends if e is not crossing[0]],
                notes=(
                    "`.sys` is the only scope that includes threads of other GPUs and the host; a narrower "
                    "flag between them is a data race (PTX ISA §8.5, §8.7)",
                ),
                helps=(f"write `scope sys` on every endpoint of `{name}`",),
                data={"channel": name, "scope": scope, "needed": "sys"},
            )
            return
        if scope == "cta":
            yield seam(
                self.code,
                f"counter `{name}` is `cta`-scoped, but a counter signals other CTAs",
                (ends[0].span, "`scope cta`"),
                [(e.span, "`scope cta`") for e in ends[1:]],
                notes=(
                    "a `.cta`-scoped release is not ordered with an acquire in another CTA (PTX ISA §8.7); "
                    "synchronize within a CTA with a named barrier or an mbarrier ring",
                ),
                helps=(
                    f"write `scope gpu` (or `cluster` when every reader is in the writer's cluster) on "
                    f"every endpoint of `{name}`",
                ),
                data={"channel": name, "scope": scope, "needed": "cluster"},
            )


def _crossing(end: A.Counter) -> str:
    if end.domain is not None:
        return f"crosses GPUs (domain `{end.domain}`)"
    return "lives in peer memory" if end.space == "peer" else "lives in host memory"
