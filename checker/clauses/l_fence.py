"""L-FENCE: a slot changes proxy (generic to async, or back) unfenced, or an mbarrier init is not fenced.

## What it checks
The bytes of a ring's slot are reused across the generic proxy (ordinary loads and
stores) and the async proxy (TMA, bulk copies, wgmma and tcgen05 operands). Both
directions need `fence proxy_async` on the side whose generic accesses come first:

- generic writes, async reads: a ring whose producer side `writes generic` and whose
  consumer side `reads async` needs `fence proxy_async` on the producer side: the
  writing threads fence after their stores, before they arrive on `full`;
- generic reads, async writes: a ring whose producer side `writes async` (its copies
  refill the released slot) and whose consumer side `reads generic` needs `fence
  proxy_async` on that consumer side: the reading threads fence after their loads,
  before they arrive on `empty`.

Conformance (L-CONFORM `ring-fence`) checks the code side: a side that states `fence
proxy_async` runs `fence.proxy.async` after its slot accesses and before that arrive.

And for the barriers themselves:
- a ring's `init by R` must be `fenced` when the async proxy or another CTA
  observes the barriers: its producer side `writes async` (TMA completes its
  transactions on the barrier), or its scope is `cluster` (peers arrive remotely).

## Why it matters
The generic and async proxies are not ordered with each other without a proxy fence
(PTX ISA §8.6): wgmma can read a slot's old contents even after the consumer has
observed the `full` barrier, and a TMA copy into a slot a consumer has just released
can land before that consumer's ordinary loads of the old tile have completed.
Likewise an `mbarrier.init` not made visible to the async proxy
(`fence.proxy.async.shared::cta`) or to the cluster (`fence.mbarrier_init.release.cluster`)
can be overtaken by the first TMA completion or remote arrive, which then lands on an
uninitialized barrier. All of these fail intermittently, not on every run.

## Example
```kernlink
stage "demo.smem_writer" version "1.0.0" {
    target sm_90a
    role fill entry fill_main warps 4 warpgroup
    claim smem tiles bytes 16KiB align 1024 per_slot kv use swizzle128, wgmma
    ring kv produce by fill {
        depth 2
        full init per_warp(fill)
        empty init per_warpgroup(mma)
        empty wait
        writes generic
        full arrive per_warp(fill)
        init by fill
    }
}
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4 warpgroup
    ring kv consume by mma {
        full wait
        reads async
        empty arrive per_warpgroup(mma)
    }
}
```

## Fix
Add `fence proxy_async` to the side whose generic accesses come first: the producer
of generic writes (emit `fence.proxy.async.shared::cta` after the stores, before the
`full` arrive), the consumer of generic reads of async-filled slots (after the loads,
before the `empty` arrive). Write `init by R fenced` (emit the init fence, then a
barrier of matching scope, before the first use).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class FenceClause(Clause):
    code = Code.L_FENCE
    name = "missing-fence"
    summary = (
        "a slot is reused between the generic and the async proxy, either way, without a proxy fence, "
        "or an mbarrier init is not fenced"
    )
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for name, sides in sorted(comp.rings.items()):
            yield from self._proxy(name, sides)
            yield from self._reuse(name, sides)
            yield from self._init(name, sides)

    def _proxy(self, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        producers = [s for s in sides if s.item.side == "produce"]
        for prod in producers[:1]:
            write = _proxy(prod.item, "writes", "generic")
            if write is None or any(isinstance(it, A.RingFence) for it in prod.item.items):
                return
            readers = [
                (s, r) for s in sides if s.item.side == "consume" if (r := _proxy(s.item, "reads", "async")) is not None
            ]
            if not readers:
                return
            yield seam(
                self.code,
                f"ring `{name}` is written through the generic proxy and read through the async proxy "
                "without a proxy fence",
                (write.span, f"`{prod.item.role}` writes the slots with generic stores"),
                [(r.span, f"`{s.item.role}` reads them through the async proxy") for s, r in readers],
                notes=(
                    "generic-proxy writes are not ordered with async-proxy reads (wgmma, TMA, bulk copies) "
                    "without `fence.proxy.async` (PTX ISA §8.6, §9.7.13.4)",
                ),
                helps=(
                    f"add `fence proxy_async` to the producer side of `{name}`: the writers fence after "
                    "their stores, before they arrive on `full`",
                ),
                data={"ring": name, "producer": prod.item.role},
            )

    def _reuse(self, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        """Generic reads of a slot, then the async proxy refills it: each reading side fences before it releases."""
        writer = next(
            ((p, w) for p in sides if p.item.side == "produce" if (w := _proxy(p.item, "writes", "async")) is not None),
            None,
        )
        if writer is None:
            return
        prod, write = writer
        for side in sides:
            read = _proxy(side.item, "reads", "generic") if side.item.side == "consume" else None
            if read is None or any(isinstance(it, A.RingFence) for it in side.item.items):
                continue
            yield seam(
                self.code,
                f"ring `{name}` is read through the generic proxy by `{side.item.role}` and refilled through the "
                "async proxy without a proxy fence",
                (read.span, f"`{side.item.role}` reads the slots with generic loads, then releases them"),
                [(write.span, f"`{prod.item.role}` refills them through the async proxy (TMA, bulk copies)")],
                notes=(
                    "generic-proxy reads are not ordered with later async-proxy writes to the same bytes without "
                    "`fence.proxy.async` (PTX ISA §8.6): a copy into the released slot can overtake the reads",
                ),
                helps=(
                    f"add `fence proxy_async` to the consumer side of `{name}` by `{side.item.role}`: the readers "
                    "fence after their loads, before they arrive on `empty`",
                ),
                data={"ring": name, "consumer": side.item.role},
            )

    def _init(self, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        inits = [it for s in sides for it in s.item.items if isinstance(it, A.RingInitBy)]
        if not inits or any(it.fenced for it in inits):
            return
        producers = [s for s in sides if s.item.side == "produce"]
        async_write = next((w for p in producers if (w := _proxy(p.item, "writes", "async")) is not None), None)
        scopes = {s.item.scope or "cta" for s in sides}
        cluster = scopes == {"cluster"}
        if async_write is None and not cluster:
            return
        init = inits[0]
        if async_write is not None:
            why = "async copies complete their bytes on its barriers"
            other = (async_write.span, "the producer writes through the async proxy (TMA, bulk copies)")
            fence = "`fence.proxy.async.shared::cta`"
        else:
            why = "cluster peers arrive on the ring's barriers remotely"
            scope_item = next(it for s in sides for it in s.item.items if isinstance(it, A.RingScope))
            other = (scope_item.span, "`scope cluster`")
            fence = "`fence.mbarrier_init.release.cluster`"
        yield seam(
            self.code,
            f"the barrier init of ring `{name}` is not fenced, but {why}",
            (init.span, f"`init by {init.role}` without `fenced`"),
            [other],
            notes=(
                f"the init must be made visible with {fence} and a barrier of matching scope before the "
                'first use (specs/hardware.md §5, "Making the init visible")',
            ),
            helps=(f"write `init by {init.role} fenced`",),
            data={"ring": name, "role": init.role},
        )


def _proxy(ring: A.Ring, access: str, proxy: str) -> A.RingProxy | None:
    return next(
        (it for it in ring.items if isinstance(it, A.RingProxy) and it.access == access and it.proxy == proxy), None
    )
