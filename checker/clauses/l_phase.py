"""L-PHASE: a claim's phase is undeclared, or a stage assumes exclusive phases the interpreter may run together.

## What it checks
A megakernel interpreter declares its phases: `phases exclusive attn, mlp, norm`
(never live together) or `phases concurrent …` (may run at once).

- A claim with `lifetime phase P` needs some stage to declare `P` in a `phases` line.
- A stage stating `assumes phases exclusive a, b` needs the interpreter to declare
  `a` and `b` in one `phases exclusive` line; phases it declares `concurrent`, or
  does not relate at all, fail.

## Why it matters
Placement overlaps the storage of claims whose phases are mutually exclusive. If the
interpreter actually runs those phases concurrently (two warpgroups on different
instructions at once), two components write the same shared-memory bytes at the
same time: a silent data race that depends on the instruction schedule.

## Example
```kernlink
stage "mk.interp" version "1.0.0" {
    target sm_90a
    role interp entry interp_main warps 4 warpgroup
    phases concurrent attn, mlp
}
stage "mk.attn" version "1.0.0" {
    target sm_90a
    role attn entry attn_main warps 4 warpgroup
    claim smem pages bytes 32KiB align 128 lifetime phase attn
    assumes phases exclusive attn, mlp
}
```

## Fix
Give the claim a phase the interpreter declares, or make the interpreter declare the
phases `exclusive` (if it really never runs them together). Otherwise drop the
assumption and give the claims storage of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.span import Span
from diagnostics.symbols import Code


class PhaseClause(Clause):
    code = Code.L_PHASE
    name = "phase-mismatch"
    summary = (
        "a claim's phase is not declared by the interpreter, or a stage treats as exclusive phases "
        "the interpreter runs concurrently"
    )
    category = "storage"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        claims: list[Owned[A.SmemClaim] | Owned[A.TmemClaim]] = [*comp.items(A.SmemClaim), *comp.items(A.TmemClaim)]
        for claim in claims:
            life = claim.item.lifetime
            if life.kind == "phase" and life.phase is not None and life.phase not in comp.interpreter_phases:
                yield self._unknown(comp, life.phase, life.span, f"claim `{claim.item.name}` lives in phase")
        for assumption in comp.items(A.AssumesPhases):
            yield from self._assumption(comp, assumption)

    def _unknown(self, comp: Composition, phase: str, span: Span, what: str) -> Diagnostic:
        from diagnostics.suggestions import did_you_mean

        known = sorted(comp.interpreter_phases)
        guess = did_you_mean(phase, known)
        if guess:
            helps: tuple[str, ...] = (f"did you mean `{guess}`?",)
        elif known:
            helps = (f"declared phases: {', '.join(f'`{k}`' for k in known)}",)
        else:
            helps = ("add the interpreter stage that declares its `phases` to the pipeline",)
        return seam(
            self.code,
            f"{what} `{phase}`, which no interpreter declares",
            (span, "undeclared phase"),
            notes=(("no stage of the pipeline has a `phases` line",) if not known else ()),
            helps=helps,
            data={"phase": phase, "absent": "interpreter"},
        )

    def _assumption(self, comp: Composition, assumption: Owned[A.AssumesPhases]) -> Iterator[Diagnostic]:
        declared = comp.interpreter_phases
        names = list(dict.fromkeys(assumption.item.names))
        for name in names:
            if name not in declared:
                yield self._unknown(
                    comp, name, assumption.span, f"`{assumption.stage_name}` assumes exclusive the phase"
                )
        for a, b in combinations([n for n in names if n in declared], 2):
            if comp.phase_exclusive(a, b):
                continue
            together = _concurrent(comp, a, b)
            if together is not None:
                problem = "the interpreter runs them concurrently"
                others = [(together.span, f"`{together.stage_name}` declares them concurrent")]
            else:
                problem = "the interpreter does not declare them exclusive"
                lines = {id(declared[n]): declared[n] for n in (a, b)}
                others = [
                    (d.span, f"`{d.stage_name}` declares {_listing(d.item, (a, b))} here") for d in lines.values()
                ]
            yield seam(
                self.code,
                f"`{assumption.stage_name}` assumes phases `{a}` and `{b}` exclusive, but {problem}",
                (assumption.span, "assumed exclusive here"),
                others,
                notes=(
                    "placement overlaps the storage of exclusive phases; phases that may run together "
                    "would share bytes while both are live",
                ),
                helps=(
                    f"declare `phases exclusive {a}, {b}` in the interpreter if it never runs them "
                    "together; otherwise drop the assumption",
                ),
                data={"stage": assumption.stage_name, "a": a, "b": b},
            )


def _concurrent(comp: Composition, a: str, b: str) -> Owned[A.Phases] | None:
    for decl in comp.items(A.Phases):
        if decl.item.mode == "concurrent" and a in decl.item.names and b in decl.item.names:
            return decl
    return None


def _listing(decl: A.Phases, names: tuple[str, str]) -> str:
    mine = [f"`{n}`" for n in names if n in decl.names]
    return f"{' and '.join(mine)} ({decl.mode})"
