"""L-OWNER: a fact has no owner, or more than one.

## What it checks
Every fact a stage depends on — through `uses fact`, `assumes fact`, a name in a
`requires fact` constraint, or a params field written `= fact NAME` — must be owned
(`owns fact NAME: TYPE …`) by exactly one stage of the pipeline. A fact owned twice
is rejected even when both owners state the same value. A name in a constraint that
no stage owns is reported here (it may be a typo of a fact); L-ASSUME then skips
that constraint.

## Why it matters
A fact is the single source of truth for a constant several components are
compiled or scheduled against (a tile size, a block count). Without an owner the
linker has no value to write into the consumers' parameters; with two owners it
has two, and the components that read one or the other disagree about the tile
they exchange — a silent wrong result, not a crash.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    owns fact tile_n: u32 = 256
}
stage "swiglu.epilogue" version "1.0.3" {
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    requires fact tile_k % 16 == 0
}
```

## Fix
Add `owns fact NAME: TYPE = VALUE` to the one stage that decides the value (or fix
the name's spelling); turn every other owner into a consumer (`uses fact … as param`).
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.facts import FactConsumer, consumers, describe_value
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code

_HOW = {
    "uses": "uses it as a parameter",
    "assumes": "assumes its value",
    "requires": "constrains it",
    "param": "writes it into a params field",
}


class OwnerClause(Clause):
    code = Code.L_OWNER
    name = "fact-owner"
    summary = "a fact has no owner or more than one"
    category = "facts"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for fact, users in sorted(consumers(comp).items()):
            if fact not in comp.owners:
                yield self._unowned(comp, fact, users)
        for fact, owners in sorted(comp.owners.items()):
            if len(owners) > 1:
                yield self._several(fact, owners)

    def _unowned(self, comp: Composition, fact: str, users: tuple[FactConsumer, ...]) -> Diagnostic:
        owned = sorted(comp.owners)
        guess = did_you_mean(fact, owned)
        first, *others = users
        secondary = [(u.span, f"`{u.stage_name}` {_HOW[u.kind]} too") for u in others]
        secondary += [(o.span, f"`{o.stage_name}` owns `{guess}`") for o in comp.owners.get(guess or "", ())]
        helps = [f"did you mean `{guess}`?"] if guess else []
        helps.append(f"add `owns fact {fact}: TYPE = VALUE` to the stage that decides `{fact}`")
        return seam(
            self.code,
            f"fact `{fact}` has no owner",
            (first.span, f"`{first.stage_name}` {_HOW[first.kind]}"),
            secondary,
            notes=(
                f"facts owned in this pipeline: {', '.join(f'`{o}`' for o in owned)}"
                if owned
                else "no stage of the pipeline owns a fact",
            ),
            helps=helps,
            data={"fact": fact, "suggestion": guess or ""},
        )

    def _several(self, fact: str, owners: tuple[Owned[A.OwnsFact], ...]) -> Diagnostic:
        first, second, *rest = owners
        stages = ", ".join(f"`{o.stage_name}`" for o in owners)
        return seam(
            self.code,
            f"fact `{fact}` has {len(owners)} owners: {stages}",
            (second.span, f"`{second.stage_name}` owns `{fact} {describe_value(second.item.value)}`"),
            [(first.span, f"`{first.stage_name}` owns `{fact} {describe_value(first.item.value)}`")]
            + [(o.span, f"`{o.stage_name}` owns it too") for o in rest],
            notes=("the linker writes one owner's value into every consumer; two owners leave it two",),
            helps=(
                f"keep `owns fact {fact}` in one stage; the others consume it with "
                f"`uses fact {fact}: {first.item.type} as param …`",
            ),
            data={"fact": fact, "owners": ",".join(o.stage_name for o in owners)},
        )
