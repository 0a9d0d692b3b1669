"""L-CONFORM: a component's compiled code disagrees with its own contract.

## What it checks
Decided from the PTX a package carries (`kernlink pack` compiles it beside the LTO
IR, with the same front end and flags plus `-lineinfo`; `checker/conformance/`).
A small abstract interpretation classifies every value as a constant, a handle's
result, a params load, arithmetic on them, or unknown, and these checks judge the
code against its stage's contract (the diagnostic's `check` datum names the check):

- `barrier-id`: a named barrier (`bar.sync`/`bar.arrive`/`barrier.*`) whose ID is a
  literal, not a barrier handle;
- `barrier-threads`: a named barrier's literal thread count differs from the
  contract's participants;
- `block-barrier`: barrier 0 (`__syncthreads`) in a role narrower than the block,
  or in a ring's init hook (one thread runs it);
- `mbarrier-init`: a ring mbarrier initialised with a count other than the ring's
  `init` (or with the other barrier's count handle);
- `expect-tx`: expect-tx bytes other than the ring's `full arrive … tx`;
- `copy-bytes`: bulk copies completing on a ring barrier, together with the bytes
  the code completes on it itself (`mbarrier.complete_tx`), whose bytes differ from the
  ring's `full copy` (a `complete_tx` count the analysis cannot trace is a note);
- `setmaxnreg`: a component that runs its own `setmaxnreg` (the dispatch kernel sets
  every warpgroup's budget);
- `static-shared`: a static `__shared__` variable (named, with its size);
- `smem-literal`: a dynamic shared-memory address from the `smem` base at an offset
  no claim or ring handle gives;
- `scope`: an atomic on a counter, or a fence, at a scope other than the declared one;
- `proxy-fence`: shared memory written by the generic proxy, then read by the async
  proxy (bulk store, TMA store, `wgmma`) without `fence.proxy.async` between;
- `launch-directive`: `.maxntid`/`.reqntid`/cluster directives that disagree with the
  contract's launch and cluster;
- `tmem-columns`: `tcgen05.alloc` of a column count no `claim tmem` declares;
- `tid-index`: a role indexing or electing by absolute `%tid` instead of relative to
  its first-warp handle.

Each diagnostic has two sides: the contract line, and the PTX line (the CUDA line is
named in a note). A site the analysis cannot decide is an `I-CONFORM` note naming the
instruction (an error with `--strict`), never a pass. `kernlink pack` reports the
same findings as warnings when it writes the package.

## Why it matters
The other clauses check contracts against each other and trust that the code keeps
its own. The defects reported most in warp-specialized kernels are code that
disagrees with what its author believes: an mbarrier initialised for 1 arrival while
128 threads arrive, expect-tx bytes that differ from the bytes the copies deliver, a
hard-coded barrier ID that collides with another role's, a `__syncthreads` inside
one role, a second `setmaxnreg` that overflows the register pool. Each hangs or
corrupts the kernel at run time, input by input.

## Example
Illustrative: the verdict comes from the package's code. This pipeline is rejected
when `build/loader.kpkg` was packed from code that expects 16 KiB on `kv` while the
contract declares `full arrive 1 tx 32KiB`:

```kernlink
pipeline "demo" {
    target sm_90a
    use "demo.loader" version ^1.0 from "build/loader.kpkg"
}
```

## Fix
Read every placement through its handle (barrier IDs, thread counts, arrival counts,
shared-memory offsets, the role's first warp), leave register budgets to `regs N`,
claim all shared memory, and make the contract's byte counts and scopes say what the
code does. The help line of each diagnostic names the handle or the contract item.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.context import CheckContext
from checker.memo import Memo
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.symbols import Code


class ConformClause(Clause):
    code = Code.L_CONFORM
    name = "code-conformance"
    summary = "a component's compiled code disagrees with its own contract"
    category = "composition"
    decided_by = "package"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        return self._check(comp, Memo())

    def check_in(self, comp: Composition, ctx: CheckContext) -> Iterator[Diagnostic]:
        return self._check(comp, ctx.memo)  # a payload's facts are derived once per memo

    def _check(self, comp: Composition, memo: Memo) -> Iterator[Diagnostic]:
        for entry in comp.stages:
            captured = entry.captured
            if captured is None:
                continue
            if captured.ptx is None and entry.package is not None:
                labels = (Label(entry.use.span, "package named here"),) if entry.use is not None else ()
                yield Diagnostic(
                    Code.I_CONFORM,
                    f"package `{entry.package}` carries no PTX: its code was not checked against its contract",
                    severity=Severity.NOTE,
                    labels=labels,
                    notes=("packages written before the conformance analysis have no `code.ptx`",),
                    helps=("rebuild the package with `kernlink pack`",),
                )
                continue
            if captured.ptx is None:
                continue
            # The PTX analysis (a parser, a value analysis, the checks) only for a package that carries PTX
            from checker.conformance import derive, diagnostics, ptx_display, source_display

            origin = entry.package or entry.source
            ptx = captured.ptx
            facts = memo.code_facts.get(ptx, functools.partial(derive, ptx))
            yield from diagnostics(
                entry.stage,
                facts,
                ptx_name=ptx_display(origin),
                source_name=source_display(origin),
                ptx_text=captured.ptx,
            )
