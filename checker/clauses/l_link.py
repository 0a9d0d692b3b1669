"""L-LINK: the device link fails, or its result is not the kernel the composition describes.

## What it checks
Decided by `kernlink link`, after every other clause accepted the composition and
the placement succeeded. The generated code (handle stubs, call trampolines, the
params block and the dispatch kernel `kl_dispatch`) and every package's LTO IR are
linked with nvJitLink (`-lto`). The link is rejected when:

- nvJitLink fails: an undefined symbol (`ptxas fatal : Unresolved extern function`),
  a symbol defined twice (`multiply defined`), LTO IR for a newer architecture than
  the target, an input that is not LTO IR; the diagnostic carries nvJitLink's error
  log and result name (`ERROR_PTX_COMPILE`, …);
- the linked cubin lacks `kl_dispatch` (nvJitLink reports success for a link without
  a kernel);
- the kernel has static shared memory: a component declared `__shared__` storage,
  which moves the dynamic shared memory base and every placed offset with it;
- two call sites share a trampoline symbol but are served by different exports.

The clause's own check reports nothing; the linker reports these with its link map.

## Why it matters
Everything before the link reasons about contracts and captured symbols; the link is
where the objects meet. A symbol the capture missed (a package made by another tool,
a manifest that lies), a helper two components both define, or static shared memory
that shifts the placement would make a cubin that does not run what was checked —
or no cubin at all, with an error that names no contract.

## Example
Illustrative: the verdict comes from the device link. Two packages whose objects
both define an `extern "C" __device__` helper `demo_clamp` (not declared in either
contract) link into `multiply defined`:

```kernlink
pipeline "demo" {
    target sm_90a
    use "demo.loader" version ^1.0 from "loader.kpkg"
    use "demo.store" version ^1.0 from "store.kpkg"
}
```

## Fix
Read nvJitLink's log in the diagnostic (and `link.map`, written even when the link
fails): give helpers internal linkage (`static`, an anonymous namespace) or declare
them in exactly one component, declare every undefined symbol in the contract,
build every package for the pipeline's target, keep shared memory in claims, and
repack.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code


class LinkClause(Clause):
    code = Code.L_LINK
    name = "device-link"
    summary = "the device link fails, or its result is not the kernel the composition describes"
    category = "link"
    decided_by = "link"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        """Nothing: the linker decides (module docstring)."""
        yield from ()
