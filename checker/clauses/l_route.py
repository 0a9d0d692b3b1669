"""L-ROUTE: no route on the ladder delivers every element exactly, race-free and in order.

## What it checks
For every tensor connection, the linker tries the rungs of the route ladder in order
of cost — tensor-memory load (sm_100a, tensor-memory placements), direct register
copy (the same thread holds the element in the matching register), warp shuffle
(each demanded element lives in the same warp, one 32-bit register per shuffle),
shared-memory staging (stores to scratch the consumer lends, a named barrier over
exactly the participating threads, loads). Each rung is checked on an SMT model for
exact delivery of every element, freedom from races (no scratch address written
twice before it is read; reads after the barrier) and order (the import runs after
the export's ready event). The first rung that passes is the route; when none
passes, this clause reports each rung's failing check with a witness element.
Decided by the transfer model after placement (a role's threads depend on its warps).

A register fragment passed to a callable (language.md §10.1) has one rung only: the
callable reads the caller's register array as it lies, so every element it demands at
thread `t`, register `p` must be the caller's element at thread `t`, register `p` (the
register-copy rung with the register index fixed); a witness element is reported with
both threads and registers, on the demand's and the placement's lines. A pair the
solver cannot decide within its budget is `E-SOLVER-UNKNOWN` of this clause on the same
two lines: undecided, never reported as refuted, and never accepted.

## Why it matters
A hand-off between components is only as correct as the moves the linker generates.
With no proven route the linker would have to guess; kernlink refuses instead.

## Example
```kernlink
stage "gemm.mainloop" version "1.0.0" {
    target sm_90a
    requires feature wgmma
    role mma entry mma_main warps 8 warpgroup
    export tensor accumulator from role mma {
        elem f32
        tile m 128 n 256
        generation once
        placement library wgmma_m64nNk16_f32(n: 256, warpgroups: 2)
        ready event acc.ready
    }
}

stage "demo.epilogue" version "1.0.0" {
    target sm_90a
    role epilogue entry epi_main warps 4 warpgroup
    import tensor acc from accumulator into role epilogue {
        elem f32
        tile m 128 n 256
        chunk n 32
        demand regs(t: 128, p: 32, c: 8) -> (m, n) {
            m = t
            n = 32 * c + p
        }
        done event acc.done
    }
}
```

## Fix
Lend the import shared memory for staging (`lends smem scratch` with a claim live
`between c.ready c.done`), or change the demand so that a cheaper rung applies
(the same threads and registers as the export for a copy; the same warps for a
shuffle).
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

CODE = Code.L_ROUTE


class RouteClause(Clause):
    code = CODE
    name = "no-route"
    summary = "no route on the ladder delivers every element exactly, race-free and in order"
    category = "tensors"
    decided_by = "transfer"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Decided downstream by the transfer model (transfer_model.routes), on the placed roles."""
        return iter(())


def no_route(export: str, export_role: str, imp: str, import_role: str) -> str:
    """The one wording of a seam no rung of the ladder delivers (the rungs' reasons follow as notes)."""
    return f"no route delivers `{export}` from role `{export_role}` to `{imp}` of role `{import_role}`"
