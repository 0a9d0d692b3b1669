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
from diagnostics.model import Diagnostic, Label
from diagnostics.span import Span
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


# ----------------------------------------------------------------- the generator's findings, worded here

CODE = Code.L_LINK


def unfixed_fact(symbol: str, stage: str, fact: str, span: Span, why: str) -> Diagnostic:
    """A handle reads a fact that has no value the link can fold."""
    return Diagnostic(
        CODE,
        f"handle `{symbol}` of `{stage}` reads fact `{fact}`, which has no fixed value to fold",
        labels=(Label(span, "the fact"),),
        notes=(why,),
        helps=(
            f"take the value at launch with `uses fact {fact}: T as param FIELD`, or fix it "
            f"in its owner with `owns fact {fact}: T = VALUE`",
        ),
    )


def handle_read_twice(symbol: str, first_stage: str, first: int, stage: str, value: int, span: Span) -> Diagnostic:
    """Two stages read one handle name with different values: the linker defines one function per name."""
    return Diagnostic(
        CODE,
        f"handle `{symbol}` is read by `{first_stage}` as {first} and by `{stage}` as {value}",
        labels=(Label(span, "bound here"),),
        helps=("give one item another name with `handle NAME`",),
    )


def zero_count(ring: str, barrier: str, count: int, span: Span, counted: str) -> Diagnostic:
    """An mbarrier initialised with no arrivals completes no phase: refused, never generated."""
    return Diagnostic(
        CODE,
        f"the `{barrier}` barrier of ring `{ring}` would be initialised with {count} arrivals",
        labels=(Label(span, f"{counted} is {count} with these roles"),),
        notes=(
            "`mbarrier.init` with a count of 0 is undefined: the phase never completes, and nvJitLink has been "
            "seen to crash on such code",
        ),
        helps=(
            "count units of roles with at least that many warps (`per_warpgroup(r)` needs 4 warps per "
            "warpgroup), or state the count in warps or threads",
        ),
        data=(("ring", ring), ("barrier", barrier), ("count", str(count))),
    )


def call_types(call: str, stage: str, export_symbol: str, why: str, call_span: Span, export_span: Span) -> Diagnostic:
    """A call whose types the trampoline cannot pass between the two components' C types."""
    return Diagnostic(
        CODE,
        f"call `{call}` of `{stage}` cannot be linked to `{export_symbol}`: {why}",
        labels=(Label(call_span, "this call"), Label(export_span, "the export")),
        helps=(
            "pass a 16-bit float as `unsigned short` bits or as a 2-byte struct such as `__nv_bfloat16` / `__half`",
        ),
    )


def trampoline_twice(
    symbol: str, first_caller: str, first_export: str, caller: str, export: str, span: Span
) -> Diagnostic:
    """One trampoline symbol asked to reach two exports."""
    return Diagnostic(
        CODE,
        f"trampoline `{symbol}` is called by {first_caller} for `{first_export}` and by {caller} for `{export}`",
        labels=(Label(span, "this call site"),),
        notes=("the linker defines one function per symbol",),
        helps=("give one of the call sites another symbol with `as NAME`",),
    )


def no_role(pipeline: str, span: Span) -> Diagnostic:
    """A pipeline without roles: the dispatch kernel would run no code."""
    return Diagnostic(
        CODE,
        f"pipeline `{pipeline}` has no role: the dispatch kernel would run no code",
        labels=(Label(span, "no stage of this pipeline declares a role"),),
        notes=("a kernel of 0 threads (`__launch_bounds__(0)`) cannot be launched",),
        helps=("declare the roles that run the stages' code: `role NAME entry FUNCTION warps N`",),
    )


def no_tmem_slot(used: int, limit: int, slot: int, span: Span) -> Diagnostic:
    """No shared memory left for the word `tcgen05.alloc` writes."""
    return Diagnostic(
        CODE,
        f"no shared memory is left for the word tcgen05.alloc writes: the claims use {used} B "
        f"of the {limit} B a block may have",
        labels=(Label(span, "this pipeline"),),
        helps=(f"leave {slot} B of shared memory free (a shallower ring, a smaller claim)",),
    )


def export_without_claim(name: str, stage: str, memory: str, span: Span, declare: str) -> Diagnostic:
    """An export placed in tensor or shared memory whose stage claims no storage of its name."""
    short = "tmem" if memory == "tensor" else "smem"
    reads = (
        "loads the tile from that claim's columns"
        if short == "tmem"
        else "reads the tile from that claim's placed address"
    )
    return Diagnostic(
        CODE,
        f"export `{name}` of `{stage}` is placed in {memory} memory, but the stage claims no {memory} memory "
        f"named `{name}`",
        labels=(Label(span, f"placed in {memory} memory here"),),
        notes=(
            f"an export placed in {memory} memory lives in the producing stage's claim of the export's name; "
            f"the route {reads}",
        ),
        helps=(f"declare `{declare}` in `{stage}`",),
    )


def export_past_claim(name: str, stage: str, reach: str, holds: str, need: str, span: Span, claim: Span) -> Diagnostic:
    """An export placed beyond the storage its claim holds (``reach``/``holds``/``need`` carry their units)."""
    return Diagnostic(
        CODE,
        f"export `{name}` of `{stage}` places elements up to {reach}, which holds {holds}",
        labels=(Label(span, "placed here"), Label(claim, "the claim")),
        helps=(f"claim at least {need} for `{name}`",),
    )


def kernel_missing(message: str, found: str, inputs: str, arch: str, missing: str) -> Diagnostic:
    """The linked cubin lacks the kernel the link asked for (``message`` says which)."""
    return Diagnostic(
        CODE,
        message,
        notes=(f"kernels in the cubin: {found}", f"inputs: {inputs}"),
        helps=(
            'add the input that defines the kernel, and declare it `extern "C" __global__` so its name is not mangled',
        ),
        data=(("arch", arch), ("missing", missing)),
    )


def linker_crashed(
    inputs: str, arch: str, how: str, exitcode: str, notes: tuple[str, ...], helps: tuple[str, ...]
) -> Diagnostic:
    """nvJitLink died in its child process (a native crash, not kernlink's)."""
    return Diagnostic(
        CODE,
        f"nvJitLink crashed linking {inputs} for `{arch}`: the linker process {how}",
        notes=notes,
        helps=helps,
        data=(("result", "crashed"), ("exitcode", exitcode)),
    )


def linker_failed(inputs: str, arch: str, result: str, error_log: str, help_text: str | None) -> Diagnostic:
    """nvJitLink refused the inputs: its result code and its error log, line by line."""
    return Diagnostic(
        CODE,
        f"nvJitLink could not link {inputs} for `{arch}` ({result})",
        notes=tuple(line for line in error_log.splitlines() if line.strip()),
        helps=(help_text,) if help_text else (),
        data=(("result", result), ("arch", arch), ("error_log", error_log)),
    )


def counter_ambiguous(counter: str, stage: str, owners: list[str], span: Span) -> Diagnostic:
    """A counter endpoint whose name several stages claim."""
    return Diagnostic(
        CODE,
        f"counter `{counter}` of `{stage}` could be any of {len(owners)} claims",
        labels=(Label(span, "this endpoint"),),
        notes=(f"`{'`, `'.join(owners)}` each claim a counter `{counter}`",),
        helps=("give the claims distinct names, so each endpoint names one",),
    )


def provider_missing(package: str, stage: str, library: str, span: Span) -> Diagnostic:
    """A package that does not carry the source of a host provider its contract calls."""
    return Diagnostic(
        CODE,
        f"package `{package}` of `{stage}` does not carry the source of its host provider `{library}`",
        labels=(Label(span, "this provider"),) if span.line > 0 else (),
        notes=("`kernlink pack` carries every called provider's C source as a payload",),
        helps=("repack the stage with `kernlink pack`",),
    )


def static_shared(
    listed: str, labels: tuple[Label, ...], size_note: str, data: tuple[tuple[str, str], ...]
) -> Diagnostic:
    """Components that declare `__shared__` variables: static shared memory moves every handle's base."""
    return Diagnostic(
        CODE,
        f"{listed or 'a package declares `__shared__` variables'}: shared memory no contract claims",
        labels=labels,
        notes=(
            size_note,
            "static shared memory comes before the dynamic shared memory, so it moves the base every "
            "shared-memory handle counts from",
        ),
        helps=(
            "declare no `__shared__` variables in components: claim shared memory in the contract "
            "(`claim smem NAME bytes N`) and reach it through its handle",
        ),
        data=data,
    )


def not_a_record(path: str) -> Diagnostic:
    return Diagnostic(CODE, f"`{path}` is not a link record")


def not_linked(root: str, status: str) -> Diagnostic:
    return Diagnostic(CODE, f"the link in `{root}` did not succeed (status `{status}`): there is nothing to audit")
