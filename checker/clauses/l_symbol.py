"""L-SYMBOL: a package's defined or needed device symbols disagree with its contract.

## What it checks
For every stage that comes from a package, the device symbols its compiler saw
(`captured.defined`, `captured.needed` and their PTX prototypes, recorded by
`kernlink pack`) against what the contract promises and needs (specs/handles.md):

- every role `entry`, every exported callable's symbol and every ring init hook
  (`<stage>_<ring>_init` for a ring `init by` one of the stage's roles) is defined,
  with the right shape: entries and init hooks are `.func (b64, b64)` (not
  `__global__` kernels), exports have the contract's signature;
- every undefined symbol the object needs is explained by the contract: a handle
  (`kl_…`), a call trampoline (`call … as S`, called with the contract's
  signature) or a toolkit function (`vprintf`, `__assertfail`, `malloc`, `free`);
- the object defines no `kl_` symbol, handle or trampoline: the linker defines those;
- no two packages define the same global, whether or not their contracts name it: a
  helper with external linkage or a `__device__` variable defined outside the
  contract collides at the device link (`multiply defined`).

A stage checked from its `.kc` alone has nothing captured, and the clause stays
silent for it.

## Why it matters
The linker generates a dispatch kernel that calls each role's entry and each ring's
init hook, and trampolines that call the exports; a missing or misshapen definition
fails the device link (`Unresolved extern function`) — or, worse, links a `__global__`
entry that the dispatch kernel cannot call. A needed symbol no contract item explains
is a dependency the composition does not declare: nothing guarantees another
component defines it. A component that defines a handle itself would collide with
the linker's definition (`multiply defined`).

## Example
Illustrative: the verdict comes from what a package captured. A package of this
stage whose object defines no `loader_main` (say the source misspells it
`loader_mian`) is rejected:

```kernlink
stage "demo.loader" version "1.0.0" {
    target sm_90a
    role load entry loader_main warps 1
}
```

## Fix
Define each symbol the contract names as `extern "C" __device__` with the ABI of
specs/handles.md (`void E(const Params*, unsigned char* smem)` for entries and init
hooks), declare every other undefined symbol in the contract (`call NAME (…) -> T as
SYMBOL from role R`), and repack.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker.clause import Clause
from checker.composition import Composition
from checker.handles import Finding, required_definitions, symbol_problems
from checker.report import seam
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
from diagnostics.symbols import Code
from package.loader import StageEntry


class SymbolClause(Clause):
    code = Code.L_SYMBOL
    name = "symbol-mismatch"
    summary = "a package's defined or needed device symbols disagree with its contract"
    category = "composition"
    decided_by = "package"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        for entry in comp.stages:
            if entry.captured is None:
                continue
            for found in symbol_problems(entry.stage, entry.captured, entry.captured.prototype_map):
                yield finding_diagnostic(entry, found, *describe(found))
        yield from self._collisions(comp)

    def _collisions(self, comp: Composition) -> Iterator[Diagnostic]:
        """A global two packages define (a helper, a `__device__` variable): `multiply defined` at the link."""
        definers: dict[str, list[StageEntry]] = {}
        for entry in comp.stages:
            if entry.captured is not None:
                for symbol in sorted(entry.captured.defined_symbols):
                    definers.setdefault(symbol, []).append(entry)
        for symbol, entries in sorted(definers.items()):
            if len(entries) < 2:
                continue
            sides = [_definition(e, symbol) for e in entries]
            sides.sort(key=lambda side: not side[2])  # one defined outside its contract first
            yield seam(
                self.code,
                f"device symbol `{symbol}` is defined by {len(entries)} packages: "
                + ", ".join(f"`{e.package or e.name}`" for e in entries),
                sides[0][:2],
                [side[:2] for side in sides[1:]],
                notes=(
                    "a global with external linkage (a non-`static` helper or `__device__` variable) is one "
                    "symbol across the kernel: the device link fails with `multiply defined`",
                ),
                helps=(
                    "give the helper internal linkage (`static`, or an anonymous namespace) in all but one "
                    "component, or rename it with the component's prefix",
                ),
                data={"symbol": symbol, "packages": ",".join(e.package or e.name for e in entries)},
            )


def _definition(entry: StageEntry, symbol: str) -> tuple[Span, str, bool]:
    """Where a package's definition of ``symbol`` shows, its label, and whether it is outside the contract."""
    named = required_definitions(entry.stage).get(symbol)
    if named is not None:
        return named[1].span, f"`{entry.name}` defines `{symbol}` as its {named[0]}", False
    span = entry.use.span if entry.use is not None else entry.stage.span
    return span, f"`{entry.package or entry.name}` defines `{symbol}` outside its contract", True


_ENTRY_HELP = 'define `extern "C" __device__ void {symbol}(const void* params, unsigned char* smem)`'


def describe(found: Finding) -> tuple[str, str]:
    """An L-SYMBOL finding's message and help: the one wording of each problem."""
    symbol, name, problem = found.symbol, found.item, found.problem
    if problem == "reserved-definition":
        return (
            f"the component defines `{symbol}`, a name the linker defines",
            'declare it `extern "C" __device__` without a body; the linker defines handles and call trampolines',
        )
    if problem == "call-signature":
        return (
            f"the component calls `{symbol}` as `{found.fact('object')}`, the contract's call `{name}` is "
            f"`{found.fact('contract')}`",
            "declare the trampoline with the contract's signature",
        )
    if problem == "unexplained-need":
        return (
            f"the component needs `{symbol}`, which no contract item explains",
            f"declare `call NAME (...) -> T as {symbol} from role R` if it is a callable of another "
            "component, or define it in the component",
        )
    if problem == "entry-missing":
        return (f"role `{name}`'s entry `{symbol}` is not defined by the component", _ENTRY_HELP.format(symbol=symbol))
    if problem == "export-missing":
        return (
            f"exported callable `{name}`'s symbol `{symbol}` is not defined by the component",
            f'define `extern "C" __device__` function `{symbol}`',
        )
    if problem.endswith("-missing"):
        return (
            f"ring `{name}` is initialised by this stage, but its init hook `{symbol}` is not defined",
            _ENTRY_HELP.format(symbol=symbol),
        )
    if problem == "export-signature":
        return (
            f"`{symbol}` is `{found.fact('object')}` in the object, the export `{name}` is `{found.fact('contract')}`",
            "make the definition match the contract's signature",
        )
    if problem.endswith("-signature"):
        return (
            f"{found.fact('definer')} `{symbol}` is {found.fact('object')}, not `.func (b64, b64)`",
            _ENTRY_HELP.format(symbol=symbol),
        )
    raise ValueError(f"L-SYMBOL has no wording for problem {problem!r}")


def finding_diagnostic(entry: StageEntry, found: Finding, message: str, help_text: str) -> Diagnostic:
    """A package finding as a diagnostic: at the contract item when there is one, else at the stage."""
    node = found.node if found.node is not None and found.node.span.line > 0 else entry.stage
    text = "in this contract item" if node is not entry.stage else f"in stage `{entry.name}`"
    note = (
        f"symbols captured when `{entry.package}` was packed"
        if entry.package
        else f"symbols as captured for `{entry.name}`"
    )
    return Diagnostic(
        found.clause,
        message,
        labels=(Label(node.span, text),),
        notes=(note,),
        helps=(help_text,) if help_text else (),
        data=(("problem", found.problem), ("stage", entry.name), ("symbol", found.symbol)),
    )
