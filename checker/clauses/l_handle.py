"""L-HANDLE: a handle a component reads is bound by no item, bound twice, or read as the wrong kind.

## What it checks
For every stage that comes from a package, each `kl_…` handle function its object
needs (specs/handles.md) against the items of its contract:

- the handle is bound: its name is derived from an item of the stage
  (`kl_<stage>_<item>_smem` for a shared-memory claim, `…_bar_id` for a named
  barrier or a rendezvous, `…_depth` for a ring, `…_warp0` for a role, …) or is an
  item's explicit `handle NAME`; a ring's slot handle
  `kl_<stage>_<ring>_<claim>_smem` names a claim that some stage of the
  composition declares `per_slot <ring>`;
- it reads the kind of value its item has (`P_stage_bar_id` where `stage` is a
  shared-memory claim is a barrier ID read from a buffer);
- conditional handles exist: a stride needs a `per_slot` claim, `regs` a role
  with a `regs` budget, arrival counts a ring this stage initialises;
- it is declared `unsigned NAME()` (PTX `.func (.param .b32) NAME ()`);
- no two items, of one stage or of two stages, bind the same name.

## Why it matters
The linker defines each handle to return its solved constant, and LTO folds it
into the code. A handle no item binds has no value: the link fails on an undefined
function, or, where a similarly named item exists, the component reads a number
of another kind — a barrier ID used as a shared-memory offset writes into another
component's buffer. Two bindings of one name give one function two values.

## Example
Illustrative: the verdict comes from what a package captured. A package of this
stage whose object reads `kl_demo_mma_stage_bar_id()` — a barrier ID of `stage`,
which is a shared-memory claim — is rejected:

```kernlink
stage "demo.mma" version "1.0.0" {
    target sm_90a
    role mma entry mma_main warps 4
    claim smem stage bytes 4KiB align 128
}
```

## Fix
Read the handles the contract binds (`kernlink inspect PKG` lists what each needed
symbol means), declare them `extern "C" __device__ unsigned NAME();`, give colliding
items distinct names with `handle NAME`, and repack.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.clauses.l_symbol import finding_diagnostic
from checker.composition import Composition
from checker.handles import Finding, HandleSpec, call_symbols, handle_bindings, handle_problems, resolve_handles
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label
from diagnostics.symbols import Code
from package.loader import StageEntry


class HandleClause(Clause):
    code = Code.L_HANDLE
    name = "handle-binding"
    summary = "a handle a component reads is bound by no item, bound twice, or read as the wrong kind"
    category = "composition"
    decided_by = "package"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        slot_claims = {(o.item.per_slot, o.item.name) for o in comp.items(A.SmemClaim) if o.item.per_slot}
        readers: dict[str, list[tuple[StageEntry, HandleSpec]]] = {}
        for entry in comp.stages:
            if entry.captured is None:
                continue
            for found in handle_problems(entry.stage, entry.captured, entry.captured.prototype_map):
                yield finding_diagnostic(entry, found, *describe(found))
            for symbol, spec in resolve_handles(entry.stage, entry.captured.needed_symbols).items():
                readers.setdefault(symbol, []).append((entry, spec))
                if spec.claim is not None and (spec.item, spec.claim) not in slot_claims:
                    known = ", ".join(f"`{c}`" for r, c in sorted(slot_claims) if r == spec.item)
                    found = Finding(
                        Code.L_HANDLE,
                        "unbound",
                        symbol,
                        (("slots", spec.claim), ("known", known)),
                        spec.item,
                        spec.node,
                    )
                    yield finding_diagnostic(entry, found, *describe(found))
        yield from self._across_stages(comp, readers)

    def _across_stages(
        self, comp: Composition, readers: dict[str, list[tuple[StageEntry, HandleSpec]]]
    ) -> Iterator[Diagnostic]:
        """A handle name read by one stage and bound, or called, by another."""
        for symbol, reads in sorted(readers.items()):
            entry, spec = reads[0]
            others = [(e, s.node) for e, s in reads[1:] if e is not entry]
            for other in comp.stages:
                if other is entry or any(e is other for e, _ in others):
                    continue
                bound = next((b for b in handle_bindings(other.stage) if b.symbol == symbol), None)
                if bound is not None:
                    others.append((other, bound.node))
                elif symbol in call_symbols(other.stage):
                    others.append((other, call_symbols(other.stage)[symbol]))
            if not others:
                continue
            labels = [Label((spec.node or entry.stage).span, f"`{entry.name}` binds `{symbol}` here")]
            labels.extend(
                Label((node or o.stage).span, f"`{o.name}` binds it too", primary=False) for o, node in others
            )
            names = ", ".join(f"`{o.name}`" for o, _ in others)
            yield Diagnostic(
                self.code,
                f"handle `{symbol}` is bound by `{entry.name}` and by {names}",
                labels=tuple(labels),
                notes=("the linker defines one function per name; it cannot return two values",),
                helps=(
                    "give one of the items another name with `handle NAME`, or rename a stage whose name "
                    "sanitises to the same prefix",
                ),
                data=(("problem", "bound-twice"), ("stage", entry.name), ("symbol", symbol)),
            )


def describe(found: Finding) -> tuple[str, str]:
    """An L-HANDLE finding's message and help: the one wording of each problem."""
    symbol, item, facts = found.symbol, found.item, dict(found.facts)
    if found.problem == "bound-twice":
        return (
            f"handle `{symbol}` is bound by both `{facts['first']}` and `{item}`",
            "give one of them another name with `handle NAME`",
        )
    if found.problem == "signature":
        return (
            f"handle `{symbol}` is declared as `{facts['object']}`; {facts['what']} `{facts['shape']}`",
            f'declare `extern "C" __device__ {facts["shape"]};`',
        )
    if found.problem == "wrong-kind":
        return (
            f"handle `{symbol}` reads {facts['reads']} of `{item}`, which is {facts['is']}",
            f"read one of the handles `{item}` binds: {facts['binds']}",
        )
    if found.problem != "unbound":
        raise ValueError(f"L-HANDLE has no wording for problem {found.problem!r}")
    if "slots" in facts:
        claim, known = facts["slots"], facts["known"]
        return (
            f"handle `{symbol}` reads the slots of `{claim}` in ring `{item}`, but no stage "
            f"claims `{claim}` per slot of `{item}`",
            f"read a per-slot claim of `{item}`: {known}"
            if known
            else f"claim the slot storage with `per_slot {item}` in the producing stage",
        )
    if "renamed" in facts:
        return (
            f"handle `{symbol}` is bound by no item: `{item}` names its handle `{facts['renamed']}`",
            f"read `{facts['renamed']}` instead",
        )
    if "lacks" in facts:
        return (
            f"handle `{symbol}` is bound by no item: `{item}` {facts['lacks']}",
            "change the contract so the item binds it, or stop reading it",
        )
    return (
        f"handle `{symbol}` is bound by no contract item",
        f"claim the resource it reads, or name the claim's handle with `handle {symbol}`; "
        "specs/handles.md lists the names",
    )
