"""L-BARRIER: a named barrier counts threads other than its participants' whole warps, or barrier IDs run out.

## What it checks
Named barriers (`bar.sync` / `bar.arrive`) come from `claim barrier` lines and from
rendezvous channels (each channel is one barrier).

- A `claim barrier` names its participants, every one a role of the composition;
  a stated `threads` is a multiple of the warp size and equals the participants'
  threads (32 × warps, summed); what it `orders` are `claim smem` or `claim counter` lines of its
  stage (conformance checks that the participants' code puts it between their accesses).
- The sides of a rendezvous state one `threads`, a multiple of the warp size, equal
  to the threads of the roles on all its sides when those are known.
- The composition needs no more IDs than the CTA has besides `__syncthreads`'s: 16
  barriers per CTA, ID 0 taken, so 15 on sm_90a.

## Why it matters
A named barrier completes when its thread count has arrived, counted in whole warps;
ptxas rejects a count that is not a multiple of 32. A count larger than the threads
that arrive never completes (the kernel hangs); a smaller one releases before every
participant has arrived (a race). Barrier IDs are a fixed per-CTA resource: a 16th
barrier needs ID 16, which does not exist, and components written separately will
collide on an ID unless one placement hands them out.

## Example
```kernlink
stage "demo.epilogue" version "1.0.0" {
    target sm_90a
    role epilogue entry epilogue_main warps 4 warpgroup
    role store entry store_main warps 1
    # 4 + 1 warps = 160 threads take part, but the claim says 128
    claim barrier staged participants epilogue, store threads 128
}
```

## Fix
Drop `threads` (it is computed from the participants' widths) or make it equal to
32 × their warps. Share barriers between hand-offs that are never live together, or
merge rendezvous channels, when the IDs run out.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses._core import Core
from checker.composition import Composition, Owned
from checker.report import plural, seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code
from hardware.targets import TargetSpec

CODE = Code.L_BARRIER
CORE_HELP = (
    "give barriers that are not used together exclusive phases or event lifetimes, "
    "or merge barriers with the same participants"
)


def placement_core(core: Core, target: str, first: int, last: int) -> Diagnostic:
    """Named barriers whose IDs placement cannot all give (``first..last`` are the IDs on offer)."""
    what = (
        f"named barriers need {core.needs_text} IDs, {target} offers {core.offers} "
        f"(IDs {first}..{last}; ID 0 is the block-wide barrier)"
    )
    return Diagnostic(
        CODE,
        what,
        Severity.ERROR,
        core.labels(),
        (*core.notes("IDs"), *core.budget_notes()),
        (CORE_HELP,),
        core.data("barrier"),
    )


class BarrierClause(Clause):
    code = CODE
    name = "bad-named-barrier"
    summary = (
        "a named barrier's thread count is not a multiple of 32 or differs from its participants' "
        "widths, or barrier IDs run out"
    )
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None:
            return
        for claim in comp.items(A.BarrierClaim):
            yield from self._claim(comp, claim, target)
        for name, sides in sorted(comp.rendezvous.items()):
            yield from self._rendezvous(comp, name, sides, target)
        yield from self._ids(comp, target)

    def _claim(self, comp: Composition, claim: Owned[A.BarrierClaim], target: TargetSpec) -> Iterator[Diagnostic]:
        item, warp = claim.item, target.warp_size
        data: dict[str, object] = {"barrier": item.name, "threads": item.threads}
        if item.threads is not None and (item.threads <= 0 or item.threads % warp):
            yield seam(
                self.code,
                f"named barrier `{item.name}` counts {item.threads} threads, not a multiple of {warp}",
                (claim.span, f"`threads {item.threads}`"),
                notes=(
                    f"`bar.sync`/`bar.arrive` count whole warps; ptxas rejects a count that is not a "
                    f"multiple of the warp size ({warp}) (PTX ISA §9.7.13.1)",
                ),
                helps=("drop `threads` to count the participants' warps",),
                data=data,
            )
            return
        if not item.participants:
            yield seam(
                self.code,
                f"named barrier `{item.name}` names no participants",
                (claim.span, "no `participants`"),
                helps=("list the roles that synchronise on it: `participants producer, consumer`",),
                data=data,
            )
            return
        missing = [p for p in item.participants if comp.role(p) is None]
        if missing:
            from diagnostics.suggestions import did_you_mean

            guess = did_you_mean(missing[0], sorted(comp.roles))
            yield seam(
                self.code,
                f"named barrier `{item.name}` has participant `{missing[0]}`, which no stage declares as a role",
                (claim.span, f"`{missing[0]}` is not a role"),
                helps=(f"did you mean `{guess}`?",) if guess else ("name roles of the composition",),
                data={**data, "participant": missing[0]},
            )
            return
        smem = {i.name for i in claim.stage.stage.items if isinstance(i, (A.SmemClaim, A.CounterClaim))}
        unknown = [c for c in item.orders if c not in smem]
        if unknown:
            from diagnostics.suggestions import did_you_mean

            guess = did_you_mean(unknown[0], sorted(smem))
            yield seam(
                self.code,
                f"named barrier `{item.name}` orders `{unknown[0]}`, which is no shared-memory or counter claim "
                "of its stage",
                (claim.span, f"`{unknown[0]}` is not a `claim smem` or `claim counter` here"),
                helps=(f"did you mean `{guess}`?",)
                if guess
                else ("name `claim smem` or `claim counter` lines of this stage",),
                data={**data, "claim": unknown[0]},
            )
            return
        roles = [comp.roles[p] for p in item.participants]
        total = sum(r.warps for r in roles) * warp
        if item.threads is None or item.threads == total:
            return
        yield seam(
            self.code,
            f"named barrier `{item.name}` counts {item.threads} threads, but its participants have {total}",
            (claim.span, f"`threads {item.threads}`"),
            [(r.role.span, f"`{r.name}`: {plural(r.warps, 'warp')} = {r.threads} threads") for r in roles],
            notes=(_WAITS_OR_RACES,),
            helps=(f"write `threads {total}`, or drop `threads` to count the participants' warps",),
            data={**data, "participants": total},
        )

    def _rendezvous(
        self, comp: Composition, name: str, sides: tuple[Owned[A.Rendezvous], ...], target: TargetSpec
    ) -> Iterator[Diagnostic]:
        warp = target.warp_size
        stated = [s for s in sides if s.item.threads is not None]
        for side in stated:
            threads = side.item.threads or 0
            if threads <= 0 or threads % warp:
                yield seam(
                    self.code,
                    f"rendezvous `{name}` counts {threads} threads, not a multiple of {warp}",
                    (side.span, f"`threads {threads}`"),
                    notes=("named barriers count whole warps (PTX ISA §9.7.13.1)",),
                    helps=(f"use a multiple of {warp}",),
                    data={"channel": name, "threads": threads},
                )
                return
        counts = sorted({s.item.threads for s in stated if s.item.threads is not None})
        roles = {s.item.role: comp.role(s.item.role) for s in sides}
        known = all(r is not None for r in roles.values())
        total = sum(r.warps for r in roles.values() if r is not None) * warp
        if len(counts) > 1:
            first = stated[0]
            other = next(s for s in stated if s.item.threads != first.item.threads)
            parts = " + ".join(f"`{r.name}` {r.threads}" for r in roles.values() if r is not None)
            yield seam(
                self.code,
                f"the sides of rendezvous `{name}` count {other.item.threads} and {first.item.threads} threads",
                (other.span, f"{other.item.threads} threads"),
                [(first.span, f"{first.item.threads} threads")],
                notes=(_WAITS_OR_RACES,),
                helps=(
                    (
                        f"write `threads {total}` on every side: the threads of all the roles that arrive or "
                        f"sync ({parts})",
                    )
                    if known
                    else ("state one count on every side: the threads of all the roles that arrive or sync",)
                ),
                data={"channel": name, "counts": ",".join(str(c) for c in counts)},
            )
            return
        if not counts or not known:
            return
        if counts[0] == total:
            return
        yield seam(
            self.code,
            f"rendezvous `{name}` counts {counts[0]} threads, but the roles on its sides have {total}",
            (stated[0].span, f"`threads {counts[0]}`"),
            [
                (r.role.span, f"`{r.name}`: {plural(r.warps, 'warp')} = {r.threads} threads")
                for r in roles.values()
                if r is not None
            ],
            notes=(_WAITS_OR_RACES,),
            helps=(f"write `threads {total}` on every side of `{name}`",),
            data={"channel": name, "threads": counts[0], "roles": total},
        )

    def _ids(self, comp: Composition, target: TargetSpec) -> Iterator[Diagnostic]:
        barriers: list[tuple[Span, str]] = [
            (c.span, f"named barrier `{c.item.name}`") for c in comp.items(A.BarrierClaim)
        ]
        barriers += [(sides[0].span, f"rendezvous `{name}`") for name, sides in comp.rendezvous.items()]
        barriers.sort(key=lambda b: (b[0].file, b[0].line, b[0].col))
        usable = target.named_barriers_per_cta - 1
        if len(barriers) <= usable:
            return
        first_id = 1 if target.syncthreads_barrier_id == 0 else 0
        last_id = first_id + usable - 1
        over = barriers[usable]
        labels = [
            (span, f"{what}: ID {first_id + i}" if i < usable else f"{what}: no ID left")
            for i, (span, what) in enumerate(barriers)
            if i != usable
        ]
        yield seam(
            self.code,
            f"the composition needs {len(barriers)} named barrier IDs, {target.name} offers {usable} "
            f"(IDs {first_id}–{last_id})",
            (over[0], f"{over[1]}: no ID left"),
            labels,
            notes=(
                f"a CTA has {target.named_barriers_per_cta} named barriers; ID "
                f"{target.syncthreads_barrier_id} is `__syncthreads` (PTX ISA §9.7.13.1)",
            ),
            helps=(
                f"free {plural(len(barriers) - usable, 'ID')}: share one barrier between hand-offs that never "
                "overlap, or synchronise through an mbarrier instead",
            ),
            data={"needed": len(barriers), "available": usable},
        )


_WAITS_OR_RACES = (
    "a named barrier completes when its count of threads has arrived: a count above the "
    "arriving threads never completes, one below releases before every participant arrives"
)
