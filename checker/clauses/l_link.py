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
- two call sites share a trampoline symbol but are served by different exports;
- the link audit (`linker/audit.py`, on every link and in `kernlink audit DIR`) finds
  the linked code or its launcher disagreeing with the map: a named barrier, a
  `setmaxnreg` budget, a ring barrier or its arrival count, a constant shared-memory
  offset outside the placed claims, a bulk copy larger than the piece of shared
  memory it lands in (32 KiB copies into 1 KiB slots), a params load that does not
  read whole fields of the map's layout, one fact with two values, a `kernel.h` that
  writes other offsets or values than `link.json`, or a cubin that is not the map's;
  and a `link.json` that is not a link record kernlink wrote.

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
from dataclasses import dataclass
from typing import Literal

from checker.clause import Clause
from checker.composition import Composition
from diagnostics.model import Diagnostic, Label, Severity
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


@dataclass(frozen=True)
class Unsupported:
    """A part of an accepted composition the role-entry ABI cannot express yet (``E-UNSUPPORTED``),
    as the generator's planning finds it (linker/generate.py ``unsupported``).

    ``name`` is the item's (the buffer or domain, the call, the export, the counter) or, for
    ``cluster-shape``, the pipeline's; ``detail`` is the call's value type, the export's ring, or
    the counter's space or domain; ``passable`` the types trampolines pass.
    """

    kind: Literal["shared-buffer", "call-type", "ring-fed-export", "counter-space", "counter-domain", "cluster-shape"]
    stage: str
    name: str
    span: Span
    detail: str = ""
    passable: tuple[str, ...] = ()
    why: str = ""


def unsupported(f: Unsupported) -> Diagnostic:
    """``E-UNSUPPORTED``: what `kernlink link` cannot link yet, and why."""
    if f.kind == "cluster-shape":
        return Diagnostic(
            Code.E_UNSUPPORTED,
            f"`kernlink link` cannot choose the cluster shape of `{f.name}`",
            labels=(Label(f.span, "this pipeline"),),
            notes=("the stages accept several cluster shapes in common, and none is 1x1x1",),
            helps=("state the launch's shape in the pipeline: `cluster 2x1x1`",),
            data=(("stage", f.name), ("what", "cluster shape")),
        )
    if f.kind in ("counter-space", "counter-domain"):
        what = f"counter `{f.name}`"
        why = (
            f"a counter in `space {f.detail}` lives in another GPU's or the host's memory, which the "
            "launch helper does not allocate or map"
            if f.kind == "counter-space"
            else f"a counter of domain `{f.detail}` spans several GPUs, and the launch runs on one"
        )
        fix = "keep the counter in this GPU's global memory (no `space`, no `domain`) to link it"
    elif f.kind == "shared-buffer":
        what = f"symmetric buffer or domain `{f.name}`"
        why = "multi-GPU buffers need host-side allocation that the launch helper does not do"
        fix = "check the composition with `kernlink check`; link it once the linker supports this"
    elif f.kind == "call-type":
        what = f"call `{f.name}` with a `{f.detail}` value"
        why = f"trampolines pass {', '.join(f.passable)}"
        fix = "check the composition with `kernlink check`; link it once the linker supports this"
    else:
        what = f"the ring-fed export `{f.name}` (one generation per tile through ring `{f.detail}`)"
        why = f"the linker generates a ring-fed hand-off of one shape (specs/handles.md), and {f.why}"
        fix = (
            "write the ring's sides as the hand-off runs them: the producer `empty wait` then `full arrive` "
            "counted `per_thread`, `per_warp` or `per_warpgroup` of its role, the consumer `full wait` then "
            "`empty arrive` likewise"
        )
    return Diagnostic(
        Code.E_UNSUPPORTED,
        f"`kernlink link` cannot link {what} of `{f.stage}` yet",
        labels=(Label(f.span, "declared here"),),
        notes=(why,),
        helps=(fix,),
        data=(("stage", f.stage), ("what", what)),
    )


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


def not_a_record(path: str, why: Literal["json", "deep", "shape", "depth"], detail: str = "") -> Diagnostic:
    """``kernlink audit``: a ``link.json`` that is not a record kernlink wrote: not JSON (``detail``: the
    parser's words), nested too deep, of another shape (``detail``: the first field that breaks it), or
    with a ring deeper than any ring (``detail``: the depth)."""
    said = {
        "json": f"it is not JSON ({detail[:200]})",
        "deep": "it nests deeper than a record does",
        "shape": detail,
        "depth": f"it gives a ring depth of {detail}, deeper than any ring",
    }[why]
    return Diagnostic(
        CODE,
        f"`{path}` is not a link record kernlink wrote: {said}",
        notes=("the audit reads only a record of the shape `kernlink link` writes",),
        helps=("relink with `kernlink link`: the record was edited or damaged",),
    )


def not_linked(root: str, status: str) -> Diagnostic:
    return Diagnostic(CODE, f"the link in `{root}` did not succeed (status `{status}`): there is nothing to audit")


# ----------------------------------------------------------------- the link audit's findings, worded here

AuditCase = Literal[
    "no-kernel",  # kernel
    "block-size",  # directive, values, threads
    "barrier-id-unknown",  # opcode (undecided)
    "barrier-unassigned",  # id, assigned
    "barrier-threads",  # count, id, want
    "barrier-threads-unknown",  # opcode, id (undecided)
    "setmaxnreg-unknown",  # opcode
    "setmaxnreg-unmapped",  # op, value, listed
    "setmaxnreg-missing",  # op, budget
    "mbarrier-unknown",  # opcode (undecided)
    "mbarrier-unmapped",  # offset; optionally slot, which, ring, depth (the ring slot it would be)
    "mbarrier-count",  # which, slot, depth, offset, count, want
    "mbarrier-missing",  # which, slot, depth, offset
    "smem-bounds",  # offset, size
    "smem-unclaimed",  # offset, width
    "copy-size",  # bytes, largest, claim
    "copy-overrun",  # bytes, offset, claim, end
    "params-load",  # offset, width
    "params-layout",  # field, stage, start, end, size, problem (past / region / overlap, with other)
    "params-size",  # cubin, size
    "fact-disagrees",  # fact, value, kind, name, stage; other_value, other_kind, other_name, other_stage
    "header",  # line, has, want
    "header-missing",  # (undecided)
    "header-unreadable",  # error (undecided)
    "cubin-hash",  # got, want
    "cubin-unreadable",  # error
    "cubin-no-kernel",  # kernel, found
    "cubin-threads",  # kernel, bound, threads
    "cubin-static-smem",  # kernel, bytes
]

#: What each part of the audit proves, as `kernlink audit` lists it when everything agrees.
AUDIT_PROVED = {
    "block-size": "block size",
    "barriers": "named-barrier IDs and thread counts",
    "setmaxnreg": "register budgets (setmaxnreg operands)",
    "mbarriers": "ring barrier offsets, depths and arrival counts (other mbarriers: at a claim's first byte)",
    "smem": "dynamic shared-memory size and the claims every constant offset falls in",
    "copies": "bulk-copy sizes against the pieces of shared memory the map places",
    "params": "the params layout the kernel reads and the fact values the map writes",
    "header": "the params layout and values kernel.h writes",
    "cubin": "cubin hash, kernel, thread bound, params size and static shared memory",
}


@dataclass(frozen=True)
class AuditFinding:
    """One way the linked code (or its launcher, ``kernel.h``) disagrees with its link map.

    ``at``: (file, line, width) of the site, in the linked PTX or ``kernel.h``; ``undecided``: a
    site the audit could not prove (``I-AUDIT``, an ``L-LINK`` error under ``strict``).
    """

    case: AuditCase
    facts: tuple[tuple[str, str], ...] = ()
    at: tuple[str, int, int] | None = None
    undecided: bool = False

    def fact(self, name: str) -> str:
        return dict(self.facts).get(name, "")


def _slot(f: AuditFinding) -> str:
    return f"{f.fact('which')} barrier of slot {f.fact('slot')} (depth {f.fact('depth')})"


def _audit_message(f: AuditFinding) -> str:
    v = f.fact
    match f.case:
        case "no-kernel":
            return f"the linked PTX defines no kernel `{v('kernel')}`"
        case "block-size":
            return (
                f"the linked kernel carries `.{v('directive')} {v('values')}`; the map launches {v('threads')} threads"
            )
        case "barrier-id-unknown":
            return f"the ID of `{v('opcode')}` in the linked code is not a constant"
        case "barrier-unassigned":
            return f"the linked code syncs on named barrier {v('id')}; the map assigns {v('assigned')}"
        case "barrier-threads":
            return f"the linked code syncs {v('count')} threads on barrier {v('id')}; the map says {v('want')}"
        case "barrier-threads-unknown":
            return f"the thread count of `{v('opcode')}` on barrier {v('id')} is not a constant"
        case "setmaxnreg-unknown":
            return f"`{v('opcode')}` in the linked code has no constant operand"
        case "setmaxnreg-unmapped":
            return f"the linked code runs `setmaxnreg.{v('op')} {v('value')}`; the map's budgets are {v('listed')}"
        case "setmaxnreg-missing":
            return (
                f"the map sets a warpgroup's budget with `setmaxnreg.{v('op')} {v('budget')}`; "
                "the linked code never does"
            )
        case "mbarrier-unknown":
            return f"`{v('opcode')}` initialises a barrier whose offset is not a constant"
        case "mbarrier-unmapped":
            beyond = (
                f" (it is the {v('which')} barrier of slot {v('slot')} of ring `{v('ring')}`: the code runs at "
                f"least depth {int(v('slot')) + 1}, the map's depth is {v('depth')})"
                if v("ring")
                else ""
            )
            return (
                f"the linked code initialises an mbarrier at offset {v('offset')}; the map places no ring "
                f"barrier there{beyond}"
            )
        case "mbarrier-count":
            return (
                f"the linked code initialises the {_slot(f)} at offset {v('offset')} with {v('count')} arrivals; "
                f"the map says {v('want')}"
            )
        case "mbarrier-missing":
            return f"the map places the {_slot(f)} at offset {v('offset')}; the linked code never initialises it"
        case "smem-bounds":
            return (
                f"the linked code addresses shared memory at offset {v('offset')}; the map's dynamic shared "
                f"memory is {v('size')} bytes"
            )
        case "smem-unclaimed":
            return (
                f"the linked code addresses {v('width')} B of shared memory at offset {v('offset')}, "
                "which no claim of the map holds"
            )
        case "copy-size":
            return (
                f"the linked code copies {v('bytes')} B into shared memory in one bulk copy; the largest piece "
                f"the map places is {v('largest')} B (`{v('claim')}`)"
            )
        case "copy-overrun":
            return (
                f"the linked code copies {v('bytes')} B to shared memory at offset {v('offset')}; "
                f"the map's `{v('claim')}` ends at offset {v('end')}"
            )
        case "params-load":
            return (
                f"the linked kernel reads {v('width')} B of its params at +{v('offset')}; the map has no field "
                "that starts and ends there"
            )
        case "params-layout":
            problem = {
                "past": f"ends at +{v('end')}, past the params block ({v('size')} B)",
                "region": f"at +{v('start')}..{v('end')} lies in no stage's region",
                "overlap": f"at +{v('start')}..{v('end')} overlaps `{v('other')}`",
            }.get(v("problem"), v("problem"))
            return f"the map's params field `{v('field')}` of `{v('stage')}` {problem}"
        case "params-size":
            return f"the cubin's kernel takes {v('cubin')} B of params; the map's params block is {v('size')} B"
        case "fact-disagrees":
            return (
                f"the map gives fact `{v('fact')}` the value {v('value')} in {v('kind')} `{v('name')}` of "
                f"`{v('stage')}` and {v('other_value')} in {v('other_kind')} `{v('other_name')}` of "
                f"`{v('other_stage')}`"
            )
        case "header":
            return f"`kernel.h` line {v('line')} is `{v('has')}`; the map gives `{v('want')}`"
        case "header-missing":
            return "the directory holds no `kernel.h`: the values its C launcher writes were not compared with the map"
        case "header-unreadable":
            return f"`kernel.h` cannot be compared with the map: the map lacks what the header needs ({v('error')})"
        case "cubin-hash":
            return f"`kernel.cubin` has SHA-256 {v('got')}…; the map records {v('want')}…"
        case "cubin-unreadable":
            return f"`kernel.cubin` cannot be read: {v('error')}"
        case "cubin-no-kernel":
            return f"`kernel.cubin` has no kernel `{v('kernel')}`; it has {v('found')}"
        case "cubin-threads":
            return f"the cubin bounds `{v('kernel')}` to {v('bound')} threads; the map launches {v('threads')}"
        case "cubin-static-smem":
            return f"the cubin gives `{v('kernel')}` {v('bytes')} B of static shared memory; the map has none"


_AUDIT_NOTES: dict[str, str] = {
    "copy-size": "a bulk copy larger than the slot it lands in overwrites the next slot and the ring's mbarriers",
    "copy-overrun": "a bulk copy past its claim overwrites the memory placed after it",
    "smem-unclaimed": "every shared-memory byte the code touches must lie in a claim the placement made",
    "params-load": "the launch helpers write each field where the map says; the kernel reads it elsewhere",
    "params-layout": "the launch helpers write each field where the map says",
    "fact-disagrees": "one fact has one value: the launch helpers would write two",
    "header": "`kernel.h` (the C launcher) and `link.json` (what `Session` and `kernlink run` read) must be one link's",
}


def audit_diagnostic(f: AuditFinding, *, map_name: str, strict: bool = False) -> Diagnostic:
    """The diagnostic of one audit finding: L-LINK, or an I-AUDIT note for an undecided site (not with ``strict``)."""
    error = not f.undecided or strict
    labels: tuple[Label, ...] = ()
    if f.at is not None:
        file, line, width = f.at
        where = "in kernel.h" if file.endswith("kernel.h") else "in the linked code"
        labels = (Label(Span(file, line, 1, line, max(width, 1) + 1), where),)
    notes = tuple(n for n in (_AUDIT_NOTES.get(f.case),) if n)
    if f.undecided:
        notes += ("the audit could not prove this site; it is not a pass",)
    return Diagnostic(
        CODE if error else Code.I_AUDIT,
        _audit_message(f),
        severity=Severity.ERROR if error else Severity.NOTE,
        labels=labels,
        notes=(*notes, f"the link map: `{map_name}`"),
        helps=(
            "relink with `kernlink link`; if the audit still fails, report it: the linked code and the map disagree",
        )
        if error
        else (),
    )
