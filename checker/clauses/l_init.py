"""L-INIT: a barrier is initialized by no role, by several, or by a role that does not participate.

## What it checks
Every ring whose sides are all present states, on one side or on both, `init by R`:
the one role whose thread runs `mbarrier.init` on the ring's full and empty barriers.
Both sides may state it only if they name the same role, and `R` must take part in
the ring (its producer role or one of its consumer roles) — or be another role of the
composition whose init is `fenced`: the generated dispatch kernel runs every ring's init
and then a block-wide barrier (`__syncthreads()`) before any role starts, so a fenced
init by any warp of the block is ordered before every wait and arrival. `R` is a role of
the stage that states `init by`: that stage defines the ring's init hook
(`<stage>_<ring>_init`), which the dispatch runs in one of the stage's own roles.

## Why it matters
An mbarrier must be initialized exactly once per lifetime: waiting on an
uninitialized barrier is undefined, and `mbarrier.init` on a location that already
holds a valid mbarrier is undefined behaviour too (PTX ISA §9.7.13.15.9). A role that
does not take part in the ring is not ordered with its first waits and arrivals by
anything the ring's protocol states.

## Example
```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    ring kv produce by load {
        full init 1
        empty init per_warp(mma)
        empty wait
        full arrive 1
    }
}
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
State `init by` once, naming the producer role (the usual choice: it issues the
first copies) or a consumer role, and fence the init where L-FENCE asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.clause import Clause
from checker.composition import Composition, Owned, RoleInfo
from checker.protocol.build import synchronized
from checker.protocol.model import init_fault
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from package.abi import init_hook_symbol


class InitClause(Clause):
    code = Code.L_INIT
    name = "barrier-init"
    summary = "a barrier is initialized by no role, by several, or by a role that does not participate"
    category = "protocol"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for name, sides in sorted(comp.rings.items()):
            kinds = {s.item.side for s in sides}
            if kinds != {"produce", "consume"}:
                continue  # a ring missing a side is L-UNPAIRED's (or L-PROTO's)
            if not synchronized(sides):
                continue  # no barriers to initialize: a role's staging buffer
            yield from self._ring(comp, name, sides)

    def _ring(self, comp: Composition, name: str, sides: Sequence[Owned[A.Ring]]) -> Iterator[Diagnostic]:
        inits = [(s, it) for s in sides for it in s.item.items if isinstance(it, A.RingInitBy)]
        producer = next(s for s in sides if s.item.side == "produce")
        participants = list(dict.fromkeys(s.item.role for s in sides))
        if inits and len({it.role for _, it in inits}) == 1:
            owner, init = inits[0]
            other = comp.roles.get(init.role)
            if other is not None and other.stage is not owner.stage:
                yield self._foreign(name, owner, init, other)
                return
        fault = init_fault([(it.role, it.fenced) for _, it in inits], participants, comp.roles)
        if fault == "none":
            yield seam(
                self.code,
                f"no role initializes the barriers of ring `{name}`",
                (producer.span, f"producer side in `{producer.stage_name}`: no `init by`"),
                [
                    (s.span, f"consumer side in `{s.stage_name}`: no `init by`")
                    for s in sides
                    if s.item.side == "consume"
                ],
                notes=(
                    "one thread must run `mbarrier.init` on each full and empty barrier before any "
                    "side waits or arrives on it (PTX ISA §9.7.13.15.9)",
                ),
                helps=(f"add `init by {producer.item.role} fenced` to the producer side of `{name}`",),
                data={"ring": name},
            )
        elif fault == "several":
            roles = list(dict.fromkeys(it.role for _, it in inits))
            first = inits[0]
            second = next((s, it) for s, it in inits if it.role != first[1].role)
            yield seam(
                self.code,
                f"the barriers of ring `{name}` are initialized by both `{first[1].role}` and `{second[1].role}`",
                (second[1].span, f"`{second[0].stage_name}` initializes them by `{second[1].role}`"),
                [(first[1].span, f"`{first[0].stage_name}` initializes them by `{first[1].role}`")],
                notes=(
                    "`mbarrier.init` on a barrier that is already valid is undefined behaviour (PTX ISA §9.7.13.15.9)",
                ),
                helps=("keep one `init by`, or name the same role on both sides",),
                data={"ring": name, "roles": ",".join(roles)},
            )
        elif fault == "outsider":
            init = inits[0][1]
            yield seam(
                self.code,
                f"ring `{name}` is initialized by `{init.role}`, which takes no part in it",
                (init.span, f"`init by {init.role}`"),
                [(s.span, f"{'producer' if s.item.side == 'produce' else 'consumer'} `{s.item.role}`") for s in sides],
                notes=(
                    f"the roles of `{name}` are {', '.join(f'`{r}`' for r in participants)}; another role's init "
                    "is ordered before their first waits and arrivals only when it is `fenced` (the dispatch's "
                    "fence and block-wide barrier)",
                ),
                helps=(
                    f"write `init by {producer.item.role}{' fenced' if init.fenced else ''}`"
                    + (f", or `init by {init.role} fenced`" if init.role in comp.roles else ""),
                ),
                data={"ring": name, "role": init.role},
            )

    def _foreign(self, name: str, owner: Owned[A.Ring], init: A.RingInitBy, other: RoleInfo) -> Diagnostic:
        """`init by` a role of another stage: the stating stage defines the init hook, which the dispatch
        runs in one of that stage's own roles (a decision about the hook, not the protocol model's)."""
        own = [r.name for r in owner.stage.stage.roles]
        return seam(
            self.code,
            f"ring `{name}` is initialized by `{init.role}`, a role of `{other.stage.name}`, but `init by` "
            f"is stated in `{owner.stage_name}`",
            (init.span, f"`{owner.stage_name}` states `init by {init.role}`"),
            [(other.role.span, f"`{init.role}` is a role of `{other.stage.name}`")],
            notes=(
                f"the init hook `{init_hook_symbol(owner.stage_name, name)}` is `{owner.stage_name}`'s, and the "
                "dispatch runs it in one of that stage's roles: named for another stage's role, it never runs "
                "and the ring's barriers stay uninitialized",
            ),
            helps=(
                f"name a role of `{owner.stage_name}` ({', '.join(f'`{r}`' for r in own)}), or state `init by` "
                f"on `{other.stage.name}`'s side of `{name}` (which then defines the hook)",
            ),
            data={"ring": name, "role": init.role, "stage": owner.stage_name},
        )
