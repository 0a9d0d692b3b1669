"""L-FACT: a consumer's type or compiled-in assumption disagrees with the fact's owner.

## What it checks
For each fact with exactly one owner (L-OWNER reports the rest):

- a consumer's declared type (`uses fact x: u32 …`, `assumes fact x: u32 …`) is the
  owner's type, and so is the type of a params field written `= fact x`;
- a compiled-in assumption (`assumes fact x: u32 == 512`) equals the owner's value
  when the owner states one value;
- when the owner states a range or a set (`in {128, 256}`), an assumption **pins** the
  linker's choice to the assumed value: the value must be one the owner allows, and
  every assumer of the fact must assume the same one (each is compiled for its value;
  the linker can pick one). The pinned value is then the fact's value everywhere in the
  link: L-ASSUME decides `requires fact` at it, a params field `= fact x` is written with
  it, a fact handle folds to it, and the link map says who pinned it;
- the owner's value fits the owner's integer type (`u8` holds 0..255).

And within each consuming stage, `uses fact x: T as param F` names a field `F` of one
of the stage's params blocks, of type `T`, not written from another fact.

## Why it matters
A consumer either reads the owner's value from its kernel parameters (the linker
writes it, so a change reaches it without recompiling) or assumes it compiled-in.
A compiled-in value that differs from the owner's is a stale component: an epilogue
built for 128-column tiles stores half of a 256-column accumulator. A parameter
declared `u64` but written as a `u32` reads four bytes of its neighbour.

## Example
```kernlink
stage "gemm.mainloop" version "2.2.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    owns fact tile_n: u32 = 256
}
stage "swiglu.epilogue" version "1.0.3" {
    target sm_90a
    role epilogue entry swiglu_epilogue_main warps 4
    assumes fact tile_n: u32 == 128
}
```

An owner of `tile_n in {128, 256}` with one epilogue assuming 128 and another 256 is
rejected the same way, with both assumptions: the linker cannot pick both.

## Fix
Rebuild the stale component for the owner's value (or, for an owner of several values,
for the value the other assumers pinned), or make it read the fact as a parameter
(`uses fact tile_n: u32 as param tile_n`); declare the owner's type.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.facts import INT_RANGES, allows, describe_value, single_value, sole_owner
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code
from package.loader import StageEntry


class FactClause(Clause):
    code = Code.L_FACT
    name = "fact-mismatch"
    summary = "a consumer's type or compiled-in assumption disagrees with the fact's owner"
    category = "facts"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for owners in comp.owners.values():
            for owner in owners:
                yield from self._fits(owner)
        for entry in comp.stages:
            fields = {f.name: f for p in entry.stage.items if isinstance(p, A.Params) for f in p.fields}
            for item in entry.stage.items:
                if isinstance(item, A.UsesFact):
                    yield from self._typed(comp, entry, item, "uses")
                    yield from self._param(entry, item, fields)
                elif isinstance(item, A.AssumesFact):
                    yield from self._typed(comp, entry, item, "assumes")
                    yield from self._assumed(comp, entry, item)
                elif isinstance(item, A.Params):
                    for field in item.fields:
                        yield from self._field(comp, entry, field)

    def _fits(self, owner: Owned[A.OwnsFact]) -> Iterator[Diagnostic]:
        fact = owner.item
        bounds = INT_RANGES.get(fact.type)
        if bounds is None:
            return
        bad = [v for v in fact.value.values if not bounds[0] <= v <= bounds[1]]
        if bad:
            yield seam(
                self.code,
                f"fact `{fact.name}` is `{fact.type}`, which cannot hold {bad[0]}",
                (fact.value.span, f"`{fact.type}` holds {bounds[0]}..{bounds[1]}"),
                helps=(f"declare a wider type or a value in {bounds[0]}..{bounds[1]}",),
                data={"fact": fact.name, "type": fact.type, "value": bad[0]},
            )

    def _typed(
        self, comp: Composition, entry: StageEntry, item: A.UsesFact | A.AssumesFact, kind: str
    ) -> Iterator[Diagnostic]:
        owner = sole_owner(comp, item.name)
        if owner is None or owner.item.type == item.type:
            return
        yield seam(
            self.code,
            f"`{entry.name}` {kind} fact `{item.name}` as `{item.type}`, but `{owner.stage_name}` "
            f"owns it as `{owner.item.type}`",
            (item.span, f"declared `{item.type}` here"),
            [(owner.span, f"owned as `{owner.item.type}`")],
            notes=("the linker writes the owner's bytes; a different type reads them differently",),
            helps=(f"declare `{item.name}: {owner.item.type}`",),
            data={"fact": item.name, "consumer_type": item.type, "owner_type": owner.item.type},
        )

    def _assumed(self, comp: Composition, entry: StageEntry, item: A.AssumesFact) -> Iterator[Diagnostic]:
        owner = sole_owner(comp, item.name)
        if owner is None:
            return
        value = owner.item.value
        only = single_value(value)
        if only is None:
            yield from self._pinning(comp, entry, item, owner)
        elif only != item.value:
            yield seam(
                self.code,
                f"`{entry.name}` is compiled assuming `{item.name} == {item.value}`, but "
                f"`{owner.stage_name}` owns `{item.name} = {only}`",
                (item.span, f"assumes {item.value}"),
                [(value.span, f"owned value {only}")],
                notes=(f"`{entry.name}` is stale: it was built against another value of `{item.name}`",),
                helps=(
                    f"rebuild `{entry.name}` for `{item.name} == {only}`, or read it as a parameter: "
                    f"`uses fact {item.name}: {item.type} as param …`",
                ),
                data={"fact": item.name, "assumed": item.value, "owned": only},
            )

    def _pinning(
        self, comp: Composition, entry: StageEntry, item: A.AssumesFact, owner: Owned[A.OwnsFact]
    ) -> Iterator[Diagnostic]:
        """An assumption of a fact its owner states as a range or set pins the linker's choice
        (checker.facts.pins): it must be a member, and every assumer must pin the same one."""
        value = owner.item.value
        owned = f"`{item.name} {describe_value(value)}`"
        if not allows(value, item.value):
            yield seam(
                self.code,
                f"`{entry.name}` is compiled assuming `{item.name} == {item.value}`, but "
                f"`{owner.stage_name}` owns {owned}, which does not allow {item.value}",
                (item.span, f"assumes {item.value}"),
                [(value.span, "the values the owner allows")],
                notes=("an assumption pins the linker's choice among the owner's values only to one of them",),
                helps=(
                    f"rebuild `{entry.name}` for one of the owner's values, or read it as a parameter: "
                    f"`uses fact {item.name}: {item.type} as param …`",
                ),
                data={"fact": item.name, "assumed": item.value, "owned": describe_value(value)},
            )
            return
        first = next(a for a in comp.items(A.AssumesFact) if a.item.name == item.name and allows(value, a.item.value))
        if first.item.value == item.value:
            return  # the pin (or agrees with it)
        yield seam(
            self.code,
            f"`{entry.name}` is compiled assuming `{item.name} == {item.value}`, but `{first.stage_name}` "
            f"assumes `{item.name} == {first.item.value}`: the linker can pick one of `{owner.stage_name}`'s "
            "values, not both",
            (item.span, f"assumes {item.value}"),
            [(first.span, f"assumes {first.item.value}"), (value.span, f"`{owner.stage_name}` owns {owned}")],
            notes=("each assumption is compiled into its stage; two of them pin the owner's choice twice",),
            helps=(
                f"rebuild `{entry.name}` for `{item.name} == {first.item.value}` (or `{first.stage_name}` for "
                f"{item.value}), or read it as a parameter: `uses fact {item.name}: {item.type} as param …`",
            ),
            data={"fact": item.name, "assumed": item.value, "pinned": first.item.value},
        )

    def _param(self, entry: StageEntry, item: A.UsesFact, fields: dict[str, A.ParamField]) -> Iterator[Diagnostic]:
        field = fields.get(item.param)
        if field is None:
            guess = did_you_mean(item.param, sorted(fields))
            helps = [f"did you mean `{guess}`?"] if guess else []
            helps.append(f"add `{item.param}: {item.type} @ OFFSET = fact {item.name}` to a params block")
            yield seam(
                self.code,
                f"`{entry.name}` takes fact `{item.name}` as param `{item.param}`, but none of its "
                "params blocks has that field",
                (item.span, f"no field `{item.param}`"),
                notes=(f"fields: {', '.join(f'`{f}`' for f in fields)}" if fields else "the stage has no params",),
                helps=helps,
                data={"fact": item.name, "param": item.param},
            )
        elif field.fact is not None and field.fact != item.name:
            yield seam(
                self.code,
                f"param `{field.name}` of `{entry.name}` is written from fact `{field.fact}`, but "
                f"`uses fact {item.name}` also names it",
                (item.span, f"takes `{item.name}` as `{field.name}`"),
                [(field.span, f"written from `{field.fact}`")],
                helps=(f"give `{item.name}` its own params field",),
                data={"param": field.name, "facts": f"{field.fact},{item.name}"},
            )
        elif field.fact is None and field.type != item.type:
            yield seam(
                self.code,
                f"`{entry.name}` takes fact `{item.name}: {item.type}` as param `{field.name}`, "
                f"which is `{field.type}`",
                (field.span, f"`{field.type}` field"),
                [(item.span, f"a `{item.type}` fact")],
                helps=(f"declare the field `{field.name}: {item.type}`",),
                data={"param": field.name, "field_type": field.type, "fact_type": item.type},
            )

    def _field(self, comp: Composition, entry: StageEntry, field: A.ParamField) -> Iterator[Diagnostic]:
        owner = sole_owner(comp, field.fact) if field.fact is not None else None
        if owner is None or owner.item.type == field.type:
            return
        yield seam(
            self.code,
            f"param `{field.name}` of `{entry.name}` is `{field.type}`, but the linker writes "
            f"fact `{field.fact}`, a `{owner.item.type}`, into it",
            (field.span, f"`{field.type}` field"),
            [(owner.span, f"owned as `{owner.item.type}`")],
            helps=(f"declare the field `{field.name}: {owner.item.type}` (and check its offset)",),
            data={"param": field.name, "fact": owner.item.name, "field_type": field.type, "fact_type": owner.item.type},
        )
