"""L-ASSUME: a consumer's constraint on facts fails for a value the owner allows.

## What it checks
A `requires fact EXPR` constraint (integer and boolean operators over facts:
`tile_k % 16 == 0 and tile_k <= 256`) must hold for every value the owners allow:
an exact value, every value of a range (`in 16..128`), every member of a set; with
several facts, every combination. A fact whose owner states several values and whose
assumers pin one of them (L-FACT) takes only that value. This is decided exactly with Z3 over the owners'
values, with the semantics of the language's evaluator: integer arithmetic, `/` and
`%` rounding toward negative infinity, comparisons and `not` giving 0 or 1, `and`
and `or` evaluating their right side only when needed. A constraint that divides by
zero for some value fails for that value. The message gives the smallest failing
value. Constraints naming a fact without exactly one owner are skipped (L-OWNER
reports the fact); if the solver cannot decide within its resource limit the result
is an `E-SOLVER-UNKNOWN` error, never a pass.

## Why it matters
An owner that states a range lets the linker pick any value in it (to fit shared
memory, say). A consumer written for `tile_k % 16 == 0` — its `wgmma` k-steps of 16 —
silently drops the remainder of the tile for a `tile_k` of 72: the result is wrong,
not rejected by any compiler.

## Example
```kernlink
stage "gemm.mainloop" version "2.1.0" {
    target sm_90a
    role mma entry gemm_mma_main warps 8
    owns fact tile_k: u32 in 16..128
}
stage "gemm.mma" version "1.0.0" {
    target sm_90a
    role math entry mma_main warps 4
    requires fact tile_k % 16 == 0
}
```

## Fix
Narrow the owner's values to those the consumer supports (`owns fact tile_k: u32 in
{16, 32, 64, 128}`), or generalise the consumer and relax its constraint.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.context import CheckContext
from checker.facts import Pin, counterexample, describe_value, effective_value, pins, sole_owner
from checker.memo import Memo
from checker.report import seam
from contract_lang import ast as A
from contract_lang.expr import EvalError, evaluate, names, to_text
from diagnostics.model import Diagnostic, Label
from diagnostics.symbols import Code
from solver import unknown_diagnostic


class AssumeClause(Clause):
    code = Code.L_ASSUME
    name = "fact-constraint"
    summary = "a consumer's constraint on facts fails for a value the owner allows"
    category = "facts"
    decided_by = "smt"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        return self._check(comp, Memo())

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return self._check(comp, ctx.memo)  # a question decided once per memo

    def _check(self, comp: Composition, memo: Memo) -> Iterator[Diagnostic]:
        pinned = pins(comp)
        for req in comp.items(A.RequiresFact):
            owners: dict[str, Owned[A.OwnsFact]] = {}
            for fact in sorted(names(req.item.expr)):
                owner = sole_owner(comp, fact)
                if owner is None:
                    break
                owners[fact] = owner
            else:
                yield from self._decide(req, owners, pinned, memo)

    def _decide(
        self,
        req: Owned[A.RequiresFact],
        owners: dict[str, Owned[A.OwnsFact]],
        pinned: dict[str, Pin],
        memo: Memo,
    ) -> Iterator[Diagnostic]:
        expr = req.item.expr
        text = to_text(expr)
        values = {name: effective_value(owner, pinned) for name, owner in owners.items()}
        found = counterexample(expr, values, memo=memo)
        if found.verdict.unsat:
            return  # no value of its facts makes the constraint fail
        secondary = [
            (
                o.item.value.span,
                f"`{o.stage_name}` owns `{n} {describe_value(o.item.value)}`"
                + (f", {pinned[n].why}" if n in pinned else ""),
            )
            for n, o in sorted(owners.items())
        ]
        if found.verdict.unknown:
            yield unknown_diagnostic(
                self.code,
                f"cannot decide whether `{text}` holds for every value of its facts",
                (Label(req.span, "undecided constraint"), *(Label(span, label, False) for span, label in secondary)),
                notes=(
                    f"Z3 gave up: {found.verdict.reason or 'unknown'}",
                    "the constraint was not checked: this is not a pass",
                ),
                helps=("simplify the constraint (avoid products of facts), or narrow the owners' values",),
                data=(("constraint", text),),
            )
            return
        witness = dict(found.witness)
        shown = ", ".join(f"`{n} = {v}`" for n, v in found.witness) or "every value"
        try:
            why = "it is false" if not evaluate(expr, witness) else None
        except EvalError as err:
            why = f"evaluating it fails: {err}"
        if why is None:
            raise AssertionError(f"solver counterexample {witness} satisfies `{text}`")
        yield seam(
            self.code,
            f"constraint `{text}` of `{req.stage_name}` fails for {shown}",
            (req.span, f"{why} for {shown}"),
            secondary,
            notes=(
                (f"an assumption pins `{', '.join(sorted(set(owners) & set(pinned)))}` to this value (L-FACT)",)
                if set(owners) & set(pinned)
                else ("the owners' values may be chosen at link time; a constraint must hold for every one",)
            ),
            helps=(f"narrow the owner's values to those meeting `{text}`, or relax the constraint",),
            data={"constraint": text, "counterexample": ",".join(f"{n}={v}" for n, v in found.witness)},
        )
