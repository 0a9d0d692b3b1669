"""L-ROLE: role names collide, a role has no warps or no entry, or an item names an unknown or foreign role.

## What it checks
Roles are one namespace across the whole composition: two `role` lines with the
same name, in one stage or in two, collide (the later one is reported, the first
one labelled). Every role states its width, `warps N` with N ≥ 1, and its entry
function, `entry NAME`. Every item that names a role must name a declared one:
ring sides (`produce by`, `consume by`, `init by`, `per_warp(x)` and the other
count units), counters, rendezvous sides, calls made `from role`, tensor exports
and imports, named-barrier participants, tensor-memory `read by` lines and a claim's
`signal by`. An
unknown name gets a did-you-mean over the declared roles. The role that *runs* an
item — a ring side's `produce by`/`consume by`, a counter or rendezvous side, a call
`from role`, a tensor export's `from role`, an import's `into role` and a claim's
`signal by` — must be a
role of the stage that declares the item: its code is that stage's.

## Why it matters
The linker's dispatcher gives every role a warp range and calls its entry
function on exactly those warps; arrival counts, barrier thread counts and tensor
routes are all computed from the widths of the roles they name. Two roles with
one name would make every such reference ambiguous, a role without a width has no
warps to run on, a role without an entry has no code, and a reference to a role
that does not exist leaves an arrival count or a participant list that no warp
will ever satisfy. A ring side or tensor import written for another stage's role
promises code that the other stage's package does not contain.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 1
    role mma entry mma_main warps 8 warpgroup regs 232
}
stage "gemm.epilogue" version "1.0.0" {
    target sm_90a
    role mma entry epi_main warps 4 warpgroup
}
```

## Fix
Give every role a name unique in the pipeline (prefix it with the stage's job:
`epi`, `load`, `mma`), a width (`warps 1` for a producer warp, `warps 4
warpgroup` for a warpgroup) and its entry function; correct the spelling of a
reference to match the role's declaration. A side that another stage's role runs
belongs in that stage's contract.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.suggestions import did_you_mean
from diagnostics.symbols import Code
from package.loader import StageEntry


class RoleClause(Clause):
    code = Code.L_ROLE
    name = "bad-role"
    summary = "role names collide, a role has no warps or no entry, or an item names an unknown or foreign role"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        first: dict[str, Owned[A.Role]] = {}
        for owned in comp.items(A.Role):
            name = owned.item.name
            if name in first:
                yield self._collision(first[name], owned)
            else:
                first[name] = owned
            yield from self._shape(owned)
        seen: set[tuple[Span, str]] = set()
        for stage, what, ref, span in _references(comp):
            if ref in comp.roles or (span, ref) in seen:
                continue
            seen.add((span, ref))
            yield self._unknown(comp, stage, what, ref, span)
        for stage, what, ref, span in _runners(comp):
            info = comp.roles.get(ref)
            if info is not None and info.stage.name != stage.name:
                yield self._foreign(stage, what, ref, span, info.stage.name, info.role.span)

    def _collision(self, first: Owned[A.Role], again: Owned[A.Role]) -> Diagnostic:
        name = again.item.name
        where = (
            f"twice in `{again.stage_name}`"
            if first.stage_name == again.stage_name
            else f"in `{first.stage_name}` and in `{again.stage_name}`"
        )
        return seam(
            self.code,
            f"role `{name}` is declared {where}",
            (again.span, f"`{name}` declared again in `{again.stage_name}`"),
            [(first.span, f"`{name}` first declared in `{first.stage_name}`")],
            notes=(
                "roles are one namespace across the pipeline: arrival counts, barriers and tensor "
                "routes name roles without their stage",
            ),
            helps=(f"rename one of them, e.g. after its stage's job (`{again.stage_name.rsplit('.', 1)[-1]}_{name}`)",),
            data={"role": name, "first": first.stage_name, "second": again.stage_name},
        )

    def _shape(self, owned: Owned[A.Role]) -> Iterator[Diagnostic]:
        role = owned.item
        if role.warps is None or role.warps == 0:
            stated = "no `warps`" if role.warps is None else "`warps 0`"
            yield seam(
                self.code,
                f"role `{role.name}` has {stated}",
                (owned.span, "a role needs at least one warp"),
                notes=(
                    "a role's width decides its threads (32 per warp), its place in the block and every "
                    "arrival count computed from it",
                ),
                helps=("give it a width: `warps 1` for a producer warp, `warps 4 warpgroup` for a warpgroup",),
                data={"role": role.name, "stage": owned.stage_name, "warps": role.warps},
            )
        if role.entry is None:
            yield seam(
                self.code,
                f"role `{role.name}` has no `entry`",
                (owned.span, "no entry function"),
                notes=("the linker's dispatcher calls each role's entry function on the role's warps",),
                helps=(f"name its entry function: `entry {role.name}_main`",),
                data={"role": role.name, "stage": owned.stage_name},
            )

    def _unknown(self, comp: Composition, stage: StageEntry, what: str, role: str, span: Span) -> Diagnostic:
        known = list(comp.roles)
        guess = did_you_mean(role, known)
        return seam(
            self.code,
            f"{what} names role `{role}`, which no stage declares",
            (span, f"no role `{role}` in the pipeline"),
            notes=(
                f"roles declared: {', '.join(f'`{k}`' for k in known)}" if known else "the pipeline declares no roles",
            ),
            helps=(f"did you mean `{guess}`?",)
            if guess
            else (f"declare `role {role}` in the stage that runs it, or name a declared role",),
            data={"role": role, "stage": stage.name, "item": what},
        )

    def _foreign(self, stage: StageEntry, what: str, role: str, span: Span, owner: str, declared: Span) -> Diagnostic:
        return seam(
            self.code,
            f"{what} of `{stage.name}` runs on role `{role}`, which stage `{owner}` declares",
            (span, f"`{role}` is not a role of `{stage.name}`"),
            [(declared, f"`{role}` declared in `{owner}`")],
            notes=(
                f"the role that runs an item executes its stage's code: `{role}` runs `{owner}`'s entry "
                "function, which does not contain this side",
            ),
            helps=(f"move this side into `{owner}`'s contract, or run it on a role of `{stage.name}`",),
            data={"role": role, "stage": stage.name, "owner": owner, "item": what},
        )


def _runners(comp: Composition) -> Iterator[tuple[StageEntry, str, str, Span]]:
    """Every (stage, item, role, span) where the role runs the item's code: it must be the stage's own."""
    for ring in comp.items(A.Ring):
        yield ring.stage, f"the {ring.item.side} side of ring `{ring.item.name}`", ring.item.role, ring.span
    for counter in comp.items(A.Counter):
        yield counter.stage, f"counter `{counter.item.name}`", counter.item.role, counter.span
    for rdv in comp.items(A.Rendezvous):
        yield rdv.stage, f"rendezvous `{rdv.item.name}`", rdv.item.role, rdv.span
    for call in comp.items(A.Call):
        if call.item.caller_kind == "role":
            yield call.stage, f"call `{call.item.name}`", call.item.caller, call.span
    for exp in comp.items(A.ExportTensor):
        yield exp.stage, f"tensor export `{exp.item.name}`", exp.item.role, exp.span
    for imp in comp.items(A.ImportTensor):
        yield imp.stage, f"tensor import `{imp.item.name}`", imp.item.role, imp.span
    for smem in comp.items(A.SmemClaim):
        if smem.item.signal is not None:
            yield smem.stage, f"claim `{smem.item.name}`'s signal", smem.item.signal.role, smem.item.signal.span


def _references(comp: Composition) -> Iterator[tuple[StageEntry, str, str, Span]]:
    """Every (stage, item description, role name, span) where an item names a role."""
    for ring in comp.items(A.Ring):
        what = f"ring `{ring.item.name}`"
        yield ring.stage, what, ring.item.role, ring.span
        for item in ring.item.items:
            if isinstance(item, A.RingInitBy):
                yield ring.stage, what, item.role, item.span
            elif isinstance(item, (A.RingBarrierInit, A.RingArrive)):
                for term in item.count.terms:
                    if term.role is not None:
                        yield ring.stage, what, term.role, term.span
    for counter in comp.items(A.Counter):
        yield counter.stage, f"counter `{counter.item.name}`", counter.item.role, counter.span
    for rdv in comp.items(A.Rendezvous):
        yield rdv.stage, f"rendezvous `{rdv.item.name}`", rdv.item.role, rdv.span
    for call in comp.items(A.Call):
        if call.item.caller_kind == "role":
            yield call.stage, f"call `{call.item.name}`", call.item.caller, call.span
    for exp in comp.items(A.ExportTensor):
        yield exp.stage, f"tensor export `{exp.item.name}`", exp.item.role, exp.span
    for imp in comp.items(A.ImportTensor):
        yield imp.stage, f"tensor import `{imp.item.name}`", imp.item.role, imp.span
    for bar in comp.items(A.BarrierClaim):
        for name in bar.item.participants:
            yield bar.stage, f"named barrier `{bar.item.name}`", name, bar.span
    for tmem in comp.items(A.TmemClaim):
        for read in tmem.item.reads:
            yield tmem.stage, f"tensor-memory claim `{tmem.item.name}`", read.role, read.span
    for smem in comp.items(A.SmemClaim):
        if smem.item.signal is not None:
            yield smem.stage, f"claim `{smem.item.name}`'s signal", smem.item.signal.role, smem.item.signal.span
