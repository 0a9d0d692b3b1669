"""L-REGRANGE: a register budget is outside the setmaxnreg range or not a multiple of its step.

## What it checks
A role's `regs N` is the `setmaxnreg` budget its warpgroup runs with, so N must be
an operand `setmaxnreg` accepts: within [`setmaxnreg_min`, `setmaxnreg_max`] and a
multiple of `setmaxnreg_step` — [24, 256] in steps of 8 on every target kernlink
knows (PTX ISA §9.7.19.5; ptxas rejects 16, 264 and 28).

`regs 256` is accepted. Compiled code uses at most 255 registers per thread
(`max_regs_per_thread`), but registers are allocated 8 at a time, so 255 registers
occupy 256 and `setmaxnreg 256` is the budget that holds them; no budget above 256
can be used. `regs 255` is rejected as not a multiple of 8.

Whether `setmaxnreg` exists at all on the target is L-FEATURE's question (plain
`sm_90` lacks it); whether the budgets fit the register file together is L-REGS'.

## Why it matters
The linker emits `setmaxnreg.inc/.dec.sync.aligned.u32 N` with the declared budget
as an immediate. ptxas rejects an operand outside the range or off the step, so
the composed kernel would fail to assemble long after the contracts were accepted.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    role load entry load_main warps 4 warpgroup regs 28
    role mma entry mma_main warps 8 warpgroup regs 232
}
```

## Fix
Round the budget to a multiple of 8 within [24, 256]. Producer warpgroups that
only issue TMA usually take 24 or 40; consumer warpgroups take what is left
(CUTLASS uses 40 / 232 / 232 for one producer and two consumers at 384 threads).
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.report import seam
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code
from hardware.residency import reg_unit


class RegrangeClause(Clause):
    code = Code.L_REGRANGE
    name = "register-budget-range"
    summary = "a register budget is outside the setmaxnreg range or not a multiple of its step"
    category = "roles"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        target = comp.target
        if target is None:
            return
        lo, hi, step = target.setmaxnreg_min, target.setmaxnreg_max, target.setmaxnreg_step
        unit = reg_unit(target)
        occupied = -(-target.max_regs_per_thread // unit) * unit
        for owned in comp.items(A.Role):
            regs = owned.item.regs
            if regs is None or (lo <= regs <= hi and regs % step == 0):
                continue
            if regs < lo:
                problem, label, fix = f"below the minimum {lo}", f"below {lo}", f"use at least `regs {lo}`"
            elif regs > hi:
                problem, label, fix = f"above the maximum {hi}", f"above {hi}", f"use at most `regs {hi}`"
            else:
                down, up = regs // step * step, regs // step * step + step
                choices = " or ".join(f"`regs {v}`" for v in (down, up) if lo <= v <= hi)
                problem, label = f"not a multiple of {step}", f"{regs} % {step} = {regs % step}"
                fix = f"use {choices}"
            yield seam(
                self.code,
                f"role `{owned.item.name}` asks for a register budget of {regs}, {problem}",
                (owned.span, label),
                notes=(
                    f"`setmaxnreg` on `{target.name}` takes a multiple of {step} in [{lo}, {hi}] "
                    f"({target.sources['setmaxnreg_max']})",
                    f"compiled code uses at most {target.max_regs_per_thread} registers per thread; "
                    f"allocated {unit} at a time, they occupy {occupied}",
                ),
                helps=(fix,),
                data={"role": owned.item.name, "regs": regs, "min": lo, "max": hi, "step": step},
            )
