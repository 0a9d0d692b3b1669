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
  ring's `full copy` (a `complete_tx` count the analysis cannot trace is a note), added
  per fill (the sites after one `arrive.expect_tx` and before the next); a copy or
  credit under a condition its fill's `expect_tx` does not share (a params value, the
  block's index; a credit skipped only when 0 excepted) is a note: some fills may lack
  its bytes;
- `copy-count`: a fill whose bytes conform issues another number of copies than the ring
  states `full copy` lines (decided where the fill's `expect_tx` is in the same function);
- `setmaxnreg`: a component that runs its own `setmaxnreg` (the dispatch kernel sets
  every warpgroup's budget);
- `static-shared`: a static `__shared__` variable (named, with its size);
- `smem-literal`: a dynamic shared-memory address from the `smem` base at an offset
  no claim or ring handle gives, used or passed to a call (a callable or helper that
  addresses shared memory relative to its own argument is judged at the caller; one
  that passes its argument on to another callable, its own or another stage's, is
  followed along the chain to the call that makes the address; a pointer to the
  caller's own stack object, `&local`, is never shared memory; an address the code
  itself converts with `cvta.shared` is judged at `pack`, whatever the callee);
- `scope`: an atomic on a counter, or a fence, at a scope other than the declared one;
- `proxy-fence`: shared memory written by the generic proxy, then read by the async
  proxy (bulk store, TMA store, `wgmma`) without `fence.proxy.async` between;
- `launch-directive`: `.maxntid`/`.reqntid`/cluster directives that disagree with the
  contract's launch and cluster;
- `tmem-alloc`: a component that runs its own `tcgen05.alloc`, `dealloc` or
  `relinquish_alloc_permit` (the dispatch kernel allocates every `claim tmem`);
- `tid-index`: a role indexing or electing by absolute `%tid` instead of relative to
  its first-warp handle;
- `feature`: an instruction that needs a feature (`wgmma`, `tcgen05`, `tma`,
  `cp_async_bulk`, `mbarrier`, cluster and multicast instructions, `multimem`) the stage's
  `requires feature` line does not name;
- `params-read`: a read through the params pointer when the stage declares no params
  block, or past the end of its block.

Every protocol step of a role has its instruction in the role's code, and every
synchronisation instruction its step (`checker/conformance/steps.py`): for each side of
a ring the role takes, the analysis finds each step's instruction in the loop around the
side's first wait, through the barrier's handle, on every path it reads from the
branches (which threads run it: every lane, one elected lane per warp, one thread per
warpgroup, one thread):

- `ring-step`: a step with no instruction in that loop, an instruction on a ring barrier
  no step of the role states (or on the other barrier of the ring), or a step run more
  often per iteration than the others; a lagged side (`lag N`, software pipelining) runs
  each step once more after the loop, its peeled phase, where a wait is a step (a wait
  after the loop of a side with no `lag` is an unstated one), and a lagged side whose code
  peels nothing is one finding at its first step; when the side's loop sits in another
  loop (a persistent kernel's k-loop in its loop over units of work), each lagged step
  (a side's `lag N`, an arrive's own `lag L`) runs after the inner loop as often as it
  lags on every pass of the outer one (each unit's peeled phase: a release the lag held
  back), neither missing nor twice, or, released at the top of the next unit's loop (a
  release carried across units, as CUTLASS's persistent mainloops do: the loop's release
  addresses, on a unit's first iteration, the slot the previous unit left, not one reset
  per unit; neither shown is undecided), as often as it lags after the outer loop (the
  drain); a consume side whose role reads the slots with `wgmma` releases a slot only
  after a `wgmma.wait_group N` that retired the group that read it (`unretired`: `N` at
  most the release's lag minus 1, plus the group this k-step committed before the wait;
  `wgmma.wait_group 0` before a release after the loop; a side that states no lag is held
  to lag 1, since which slot an arrive addresses is not in the facts); a side of a ring
  that carries a ring-fed tensor of the role is run by the tensor handle the linker generates, so any instruction
  of the role on that ring's barriers is reported;
- `arrive-count`: the arrivals of an arrive (the threads its guard selects, times its
  count) differ from the step's count (`per_warp`, `per_warpgroup`, 1, …);
- `wait-parity`: the first wait uses another parity than the contract's (a consumer's
  `full wait` 0, a producer's `empty wait` 1, or `parity P`), or never flips; a copy of
  the step after `k` earlier waits on its barrier (an unrolled or peeled copy) uses
  another parity than the ring position's there, `P ^ ((k / depth) & 1)`, at a depth the
  stage's `depth` allows (every depth when it states none: a consumer's ring); or, in a
  loop nested in another (a persistent kernel's k-loop inside its loop over units of
  work), a side without `restart` whose slot or parity is reset on every outer pass
  instead of carried from the previous one (a ring cursor reset per unit of work);
- `step-order`: the steps run in another order than written;
- `ring-fence`: a side that states `fence proxy_async` releases its slots without a
  `fence.proxy.async` (covering shared memory) after its slot accesses;
- `read-proxy`: a consume side that says `reads async` while its role reads a slot with a
  generic load (`ld.shared`, `ldmatrix`), or `reads generic` while its role reads no slot
  generically and its slot readers are asynchronous (`wgmma`, `tcgen05.mma`, a TMA or bulk
  store from shared memory): the declared proxy decides which fence the reuse needs;
- `named-barrier`: a role that runs a claimed barrier or rendezvous it does not take
  part in, in the wrong mode (`bar.arrive` for `sync`), or not at all; the participants
  of a rendezvous that meet it a different number of times, or in other loops;
- `init-hook`: a ring's init hook that leaves a barrier uninitialised (or initialises
  one twice), does not fence a `fenced` init, or a role that initialises a ring barrier
  again.
- `private-mbarrier`: the mbarrier in a stage's own claim (`use mbarrier signal by R init
  N arrive commit wait parity P`) run otherwise than its `signal` states: role `R`'s
  entry initialises it once, by one thread, to `N` arrivals and fences the init
  (`fence.mbarrier_init.release.cluster`) before arriving; arrives after the init,
  outside any loop, with `N` arrivals in all, each a `tcgen05.commit` for `commit`; then
  waits once on parity `P`. A missing init, arrive or wait, or an instruction on it in
  another function, is reported; a claim holding mbarriers with no `signal` leaves every
  instruction on it undecided.
- `barrier-orders`: a named barrier that `orders` a claim (`claim barrier B participants R
  orders C`) missing between two accesses of `C` by role `R`, one a write: a write and
  an access after it, a read and a write after it, in one pass or across the passes of a
  loop around both (a `bar.sync` of a rendezvous the role syncs counts too); a TMA or bulk
  store from the claim is a read of it, `stmatrix` a write. For a counter claim (`orders C` of
  a `claim counter C`): a `bar.sync` on `B` missing between a global write of the role and a
  release of `C` (its `add` step: a `.release` store, reduction or atomic, an atomic's
  `.acq_rel`, to an address built on the counter's `_counter_ptr()` handle, a call of its
  `_counter_add()`, or a relaxed store of it after a gpu/sys `fence.sc`/`fence.acq_rel`/
  `membar` with no global access between, checked at the fence), or between an acquire of `C`
  (its `wait` step: an `.acquire` load, an `.acq_rel` atomic, `_counter_wait()`, or a relaxed
  load followed so by such a fence) and a later global read of the role (`counter-release`,
  `counter-acquire`), in one pass or across the passes of a loop around both (a write after
  the release in its body comes before the next pass's release, a read before the acquire
  after the previous pass's: a barrier in the loop's body after the first or before the second
  orders them); the global accesses of a function of the module the role calls are the call's;
  the accesses one call of a callable makes together with its own release or acquire are the
  callable's to order. A release or acquire whose address no counter handle can be bound to, a
  relaxed store of the counter that is neither a release nor a reset after an acquire (or one
  in a callable, whose summary shows no fences), or an access inside a callable whose summary
  is unknown, where no barrier stands, is undecided.

A ring without barriers whose slot one role writes and reads asynchronously (a staging
buffer: `read wait`, `read async`, `writes generic`, `fence proxy_async`) is checked against
the role's code (`checker/conformance/staging.py`): `ring-step` when the role never reads the
slot with a bulk store in its loop (`missing` `read async`), reads it without committing a
bulk group after it in the same iteration (`uncommitted`), reads it under a condition its writes
are not under (`conditional`), rewrites it without a `cp.async.bulk.wait_group[.read] N` before
the iteration's first write (`missing` `read wait`), with `N` above the ring's depth minus 1
(`groups`), run by fewer threads than write with no `bar.sync` of the role after it before the
writes (`unshared`), or ends without waiting for the last reads after its loop (`drain`);
`ring-fence` when generic writes of the slot reach the asynchronous read with no
`fence.proxy.async` (covering shared memory, run by the writing threads) between them.

**Through callables.** A role may run these steps, and the accesses a barrier `orders`, inside
another stage's callables. The composition (`kernlink check`, the link) splices each callable's
protocol summary (its synchronisation facts, recorded in its package with the rest of its code
facts) at the caller's calls, with the caller's arguments bound to the callable's parameters
(`checker/conformance/summary.py`), and runs the staging, ring-step, named-barrier and
`barrier-orders` checks on the result (an mbarrier arrive or wait, a `bar.sync` in a callable on a
barrier the caller passes it is the caller's step): a finding shows the caller's call and names the
callable's own PTX line. A wait's parity or a barrier ID the callable only computes from its
parameters is not bound to the caller's argument: undecided. A summary that
is unknown (an indirect call, a call of a synchronising function of its own module, a step in a
loop) where a step is missing is undecided (I-CONFORM, an error under `--strict`). At `kernlink
pack` of the caller alone, the staging steps of a role that calls another stage's callables are
left to the composed check, as are the missing steps of a ring or named barrier whose barrier or ID
the role passes to a callable, and so is what a barrier orders around a counter: each is an
`I-DEFERRED` note naming the check, the role and the claims (the ring or the barrier; the barrier
and the counter), never an error.

A TMA copy's bytes come from the box its tensor map's params field declares (`box 64,
128 elem bf16`); the copies and `complete_tx` credits of a fill add up to the ring's
`copy` bytes (`copy-bytes`). A box dimension may name a `u32` params field the host fills
(`box 64, a_box_rows elem bf16`): the box's bytes and a credit computed from params fields
(`16384 - 128 * a_box_rows`) are then added as expressions of those fields (32-bit, as the
code computes them), and the fill conforms when the fields cancel and the constant is the
declared bytes; a sum that still depends on a field, or a part that may wrap for a value
no trapping check excludes, is an undecided note. One mistake is one diagnostic: the
copies of one source line (an unrolled loop, a helper inlined at several call sites) are
one finding with their count.

A params field may state the only values the host writes (`page_size: i32 @ 396 in {16, 32,
64}`). A box sized by such a field, and copies that run under a condition computed from such
fields alone (an unrolled `for (j = 0; j < 8; ++j) if (j < 128 / page_size) copy(…)`), are
decided at each value: the copies whose conditions hold, each of its box's bytes at that
value, must add up to the ring's `copy` bytes (`copy-bytes`, naming the value), and the ring's
`copy` lines state the split of one of the values: at some value the fill issues one copy of
each line's bytes (`copy-count`). A condition that reads other values is an undecided note naming the value.

Each diagnostic has two sides: the contract line, and the PTX line (the CUDA line is
named in a note). A site the analysis cannot decide is an `I-CONFORM` note naming the
instruction (an error with `--strict`), never a pass. `kernlink pack` reports the
same findings as warnings when it writes the package. `kernlink fuzz PIPELINE.kp --code`
edits the PTX of every package, one synchronisation instruction at a time, and reports
every edit these checks miss.

The protocol model proves the contract, not the code: a decided finding of a check about
synchronisation (`barrier-id`, `barrier-threads`, `block-barrier`, `mbarrier-init`,
`expect-tx`, `copy-bytes`, `copy-count`, `scope`, `proxy-fence`, the step checks,
`private-mbarrier`, `barrier-orders`) means the code may hang or race where the contract
does not. Like a hang proof, it is reported whatever `--select`/`--ignore` say, with a note
saying so, and so is an undecided site of those checks (`I-CONFORM`, an error under
`--strict`) and a package whose code was not checked (no PTX); the other checks (`params-read`, `smem-literal`, …)
follow the selection.

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

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checker.clause import Clause
from checker.composition import Composition
from checker.context import CheckContext
from checker.memo import Memo
from contract_lang import ast as A
from diagnostics.model import Diagnostic, Label, Severity
from diagnostics.span import Span
from diagnostics.symbols import Code

if TYPE_CHECKING:
    from checker.conformance.context import Finding
    from checker.conformance.deferral import Deferred
    from package.codefacts import CodeFacts
    from package.loader import StageEntry


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
        coded: list[tuple[StageEntry, CodeFacts]] = []
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
            from checker.conformance import derive

            ptx = captured.ptx
            facts = memo.code_facts.get(ptx, functools.partial(derive, ptx))
            coded.append((entry, facts))
            yield from diagnostics(entry.stage, facts, **_names(entry))
        if not coded:
            return
        from checker.conformance.checks import callable_addresses, through_calls
        from checker.conformance.steps import across_stages

        # what only the composition decides: how each participant meets a rendezvous, what a role passes
        # another stage's callable as a shared-memory address
        parts = [(e.stage, f) for e, f in coded]
        for index, finding in (*across_stages(parts), *callable_addresses(parts), *through_calls(parts)):
            entry = coded[index][0]
            names = _names(entry)
            lines = (entry.captured.ptx or "").split("\n") if entry.captured else None
            yield _diagnostic(finding, names["ptx_name"], names["source_name"], lines, False, Severity.ERROR)


def _names(entry: StageEntry) -> dict[str, Any]:
    from checker.conformance import ptx_display, source_display

    origin = entry.package or entry.source
    ptx = entry.captured.ptx if entry.captured is not None else None
    return {"ptx_name": ptx_display(origin), "source_name": source_display(origin), "ptx_text": ptx}


def diagnostics(
    stage: A.Stage,
    code: CodeFacts,
    *,
    ptx_name: str,
    source_name: str | None,
    ptx_text: str | None = None,
    strict: bool = False,
    severity: Severity = Severity.ERROR,
) -> list[Diagnostic]:
    """The conformance findings of a component as diagnostics (``severity`` for violations; the
    undecided sites are notes, errors if ``strict``)."""
    from checker.conformance import check

    lines = ptx_text.split("\n") if ptx_text is not None else None
    return [_diagnostic(f, ptx_name, source_name, lines, strict, severity) for f in check(stage, code)]


def _diagnostic(
    f: Finding, ptx_name: str, source_name: str | None, lines: list[str] | None, strict: bool, severity: Severity
) -> Diagnostic:
    said = describe(f)
    if f.sites > 1:
        said = dataclasses.replace(said, message=f"{said.message} (×{f.sites} sites of one source line)")
    labels: list[Label] = []
    if f.node is not None and f.node.span.line > 0:
        labels.append(Label(f.node.span, said.contract))
    width = len(lines[f.fact.line - 1]) if lines and 0 < f.fact.line <= len(lines) else 1
    labels.append(Label(Span(ptx_name, f.fact.line, 1, f.fact.line, max(width, 1) + 1), said.code, primary=not labels))
    notes: list[str] = []
    if f.fact.src is not None and source_name is not None:
        file, line = f.fact.src
        own = file in ("#1", source_name.rsplit("!", 1)[-1].rsplit("/", 1)[-1])
        if own and line > 0:
            labels.append(Label(Span(source_name, line, 1, line, 2), "the CUDA line", primary=False))
        else:
            notes.append(f"CUDA source: {file}:{line}")
    if f.fact.via is not None:
        callee, line = f.fact.via
        notes.append(f"run by the callable `{callee}` this call reaches (its package's PTX line {line})")
    if not f.decided:
        notes.append("the conformance analysis could not decide this site; it is not a pass")
    code = Code.L_CONFORM if f.decided or strict else Code.I_CONFORM
    sev = severity if f.decided else (Severity.ERROR if strict else Severity.NOTE)
    return Diagnostic(
        code,
        said.message,
        severity=sev,
        labels=tuple(labels),
        notes=tuple(notes),
        helps=(said.help,) if said.help else (),
        data=(
            ("check", f.check),
            ("function", f.fact.function),
            ("ptx_line", str(f.fact.line)),
            ("instruction", f.fact.opcode),
        ),
    )


def strict(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """``--strict``: every undecided site (``I-CONFORM``) becomes an ``L-CONFORM`` error."""
    return [
        dataclasses.replace(d, code=Code.L_CONFORM, severity=Severity.ERROR) if d.code == Code.I_CONFORM else d
        for d in diags
    ]


@dataclass(frozen=True)
class Worded:
    """A finding in words: the message, the contract label, the code label and the help."""

    message: str
    contract: str
    code: str
    help: str = ""


#: What an undecided site could not trace, by the tag the check gives.
UNDECIDED = {
    "barrier-0-role": "which role runs barrier 0 (`__syncthreads`)",
    "barrier-id": "the barrier ID",
    "thread-count": "the thread count",
    "arrival-count": "the arrival count",
    "expected-bytes": "the expected bytes",
    "credit-barrier": "which ring barrier the bytes are completed on",
    "copy-barrier": "which ring barrier the copy completes on",
    "tensor-bytes": "the bytes (a tensor copy's size is in its tensor map, read from no params field)",
    "credit-bytes": "the completed bytes",
    "part-range": "the range of the bytes (a params field they are computed from is not bounded by a check that "
    "traps before them, so the count may wrap below 0 or past the barrier's 2^20 - 1)",
    "copy-bytes": "the copied bytes",
    "helper-address": "where a helper's shared-memory address comes from",
    "address-claim": "which claim the address comes from",
    "smem-address": "the shared-memory address",
    "ring-barrier": "which ring barrier",
    "arrivals": "how many threads run",
    "declared-count": "the arrivals the contract's count means (it names a role of another stage)",
    "first-parity": "the parity",
    "entry-position": "the ring position (slot and parity) its loop starts from",
    "helper": "what the called function synchronises",
    "params-offset": "which params field",
    "private-protocol": "the protocol (the claim holding this mbarrier states no `signal`)",
    "ordering-barrier": "whether the barrier between these accesses runs whenever they do (it sits under a branch "
    "or a thread guard that one of them is not under)",
    "summary": "what the called callable synchronises (its protocol summary is unknown)",
    "counter-step": "which counter this release or acquire is of (its address is built on no counter handle the "
    "analysis can bind), and so what the barrier that `orders` the counter must order around it",
    "groups": "how many bulk groups the read wait lets stay pending",
    "carried-release": "which slot it releases on each unit's first iteration (the one the previous unit held "
    "back, carried from it, as a release drained once after the loop over units needs) or one reset per unit",
    "retired": "whether the wgmma group that read the released slot has retired (a `wgmma.wait_group` before the "
    "release waits for a number of groups the analysis cannot read)",
    "counter-pattern": "whether this relaxed access of the counter releases or acquires it (a relaxed store needs a "
    "gpu- or system-scope `fence.sc`/`fence.acq_rel` before it, with no global access between, to be a release; "
    "in another stage's callable its fences are not in the summary), and so what the barrier that `orders` the "
    "counter must order around it",
    "helper-step": "what the called function of the module orders (it releases or acquires the counter, or fences a "
    "relaxed access of it, where its caller's barrier cannot be placed around it)",
}


def deferred_note(d: Deferred) -> Diagnostic:
    """``I-DEFERRED``: a side of a role its component's code alone cannot show (checker/conformance/deferral.py),
    at the contract item it is about; a note whatever ``--strict`` says, the composed check decides it."""
    labels = (Label(d.node.span, f"`{d.check}`: decided with the composition"),) if d.node is not None else ()
    return Diagnostic(
        Code.I_DEFERRED,
        f"{d.reason}: the composed check (`kernlink check`) decides {d.what}, through the callables' summaries",
        severity=Severity.NOTE,
        labels=labels,
        notes=("the component's own code cannot show it: neither accepted nor rejected by `kernlink pack`",),
        data=(("check", d.check), ("role", d.role), *d.claims),
    )


def describe(f: Finding) -> Worded:
    """An L-CONFORM finding in words: the one wording of each check's problems."""
    fn, op = f.fact.function, f.fact.opcode
    if not f.decided:
        what = f.value("what")
        facts = dict(f.facts)
        others = int(facts.get("others", "0"))
        also = f" (and {others} other size{'s' if others > 1 else ''} of this fill)" if others else ""
        if what == "tensor-box":
            field = f.value("field")
            return Worded(
                f"cannot decide the bytes of `{op}` in `{fn}`: its tensor map, params field `{field}`, declares "
                f"no box{also}",
                "the copy bytes it should complete",
                "this tensor copy",
                f"declare the map's box on the field (`{field}: ptr @ … box D0, D1 elem E`), as the host builds it",
            )
        if what == "sum-bytes":
            fields = f.value("fields")
            return Worded(
                f"cannot decide the bytes `{fn}` completes per fill: its copies and completed bytes (`{op}` "
                f"first) add up to an expression of params {fields}, not a constant",
                "the copy bytes it should complete",
                "the fill's first copy or credit",
                "complete the bytes a box sized by a params field leaves out (`mbarrier.complete_tx` of the "
                "declared bytes minus the box's), so the sum no longer depends on the field",
            )
        if what in ("value-cond", "assignments"):
            at = f.value("at")
            if what == "assignments":
                return Worded(
                    f"cannot decide the bytes `{fn}` completes per fill: its fields {at} state more than 4096 "
                    "combinations of values",
                    "the copy bytes every fill completes",
                    "the fill's first copy or credit",
                    "state fewer values for the fields a fill's copies depend on",
                )
            return Worded(
                f"cannot decide the bytes `{fn}` completes per fill when {at}: `{op}` runs only under a condition "
                f"({_cond_words(f.value('cond'))}) that is not computed from params fields with stated values",
                "the copy bytes every fill completes",
                "this copy or credit",
                "compute the copy's condition from the params fields whose values the contract states (`in {…}`), "
                "or issue it in every fill",
            )
        if what == "conditional":
            return Worded(
                f"cannot decide the bytes `{fn}` completes per fill: `{op}` runs only under a condition "
                f"({f.value('conds')}) the fill's `expect_tx` does not share, so some fills may lack its bytes",
                "the copy bytes every fill completes",
                "this copy or credit",
                "issue every copy and credit of a fill under the same conditions as its `expect_tx` (a credit may "
                "skip only a count of 0: `if (bytes != 0)`)",
            )
        if what == "entry-position":
            return Worded(
                f"cannot decide the ring position `{fn}` starts the loop around `{op}` from: the slot and parity "
                "the previous pass of the loop around that left (a side without `restart` carries them on), or "
                "ones reset on some pass (a cursor reset on some paths, or read from memory)",
                "the ring position carries across units of work (no `restart`)",
                "this wait",
                "keep the ring cursor (slot and phase) in registers, declared before the loop over units of work "
                "and moved on only by the loop inside it (or by a skip of the units another role takes), or "
                "review it by hand",
            )
        return Worded(
            f"cannot decide {UNDECIDED[what]} of `{op}` in `{fn}`{also}",
            "the contract item it should match",
            "this instruction",
            "pass the value from a handle or a literal the analysis can see, or review it by hand",
        )
    words = _WORDING.get(f.check)
    if words is None:
        raise ValueError(f"L-CONFORM has no wording for check {f.check!r}")
    return words(f, fn, op)


def _block_barrier(f: Finding, fn: str, op: str) -> Worded:
    if f.problem == "init-hook":
        return Worded(
            f"the init hook `{fn}` runs barrier 0 (`__syncthreads`), but the dispatch calls it from one thread",
            "the ring this hook initialises",
            "barrier 0 here",
            "remove the barrier: the dispatch's block-wide barrier follows every init",
        )
    role, warps, block = f.value("role"), int(f.value("warps")), int(f.value("block"))
    size = f"{block} threads" if block else "a block of several roles"
    return Worded(
        f"role `{role}` runs barrier 0 (`__syncthreads`), which waits for the whole block ({size}); "
        f"the role has {warps * 32} threads",
        f"role `{role}` ({warps} warps)",
        "barrier 0 here",
        "claim a named barrier (`claim barrier NAME participants ROLE`) and sync on its `_bar_id()`/`_threads()` "
        "handles",
    )


def _barrier_id(f: Finding, fn: str, op: str) -> Worded:
    ident = f.value("id")
    return Worded(
        f"`{fn}` names barrier {ident} by a literal ID",
        "the barrier the contract claims" if f.value("claimed") == "True" else "the role that runs it",
        f"literal barrier ID {ident}",
        "read the ID from the claim's `_bar_id()` handle: the linker chooses IDs so they do not collide",
    )


def _barrier_threads(f: Finding, fn: str, op: str) -> Worded:
    barrier, threads = f.value("barrier"), f.value("threads")
    if f.problem == "literal":
        return Worded(
            f"`{fn}` gives barrier `{barrier}` the literal thread count {threads}; the contract's count depends "
            "on the composition",
            "the barrier's participants",
            f"{threads} threads",
            f"read the count from `{f.value('handle')}()`",
        )
    want = f.value("want")
    return Worded(
        f"`{fn}` syncs {threads} threads on barrier `{barrier}`; the contract says {want}",
        f"{want} threads take part",
        f"{threads} threads here",
        "use the barrier's `_threads()` handle, or fix the participants",
    )


def _mbarrier_init(f: Finding, fn: str, op: str) -> Worded:
    ring, which = f.value("ring"), f.value("which")
    if f.problem == "other-count":
        return Worded(
            f"`{fn}` initialises a {which} barrier of ring `{ring}` with the {f.value('other')} barrier's count",
            f"`{which} init`",
            f"`{f.value('symbol')}()` here",
            f"use `{f.value('instead')}()`",
        )
    want, count = f.value("want"), f.value("count")
    said = want or "a count that depends on the composition"
    return Worded(
        f"`{fn}` initialises ring `{ring}`'s {which} barrier with {count} arrivals; the contract says {said}",
        f"`{which} init` declares {said}",
        f"count {count} here",
        f"initialise with the `{which}_count()` handle of ring `{ring}`",
    )


def _expect_tx(f: Finding, fn: str, op: str) -> Worded:
    want, nbytes = f.value("want"), f.value("bytes")
    said = f"{want} bytes" if want else "no transaction bytes"
    return Worded(
        f"`{fn}` expects {nbytes} transaction bytes on ring `{f.value('ring')}`; the contract declares {said}",
        f"declared: {said}",
        f"expect_tx {nbytes} here",
        "make the contract's `tx` and the code's expect_tx agree (in bytes)",
    )


def _copy_bytes(f: Finding, fn: str, op: str) -> Worded:
    if f.problem == "value":
        want, ring, total, at, copies = (f.value(k) for k in ("want", "ring", "total", "at", "copies"))
        said = f"{want} bytes" if want else "no `copy`"
        return Worded(
            f"`{fn}` completes {total} bytes per fill of ring `{ring}` when {at} ({copies} copies); the contract "
            f"declares {said}",
            f"declared: {said}, for every stated value",
            f"the fill's copies when {at}",
            "make every value the field states (`in {…}`) fill the ring's `full copy` bytes, or state only the "
            "values the code fills correctly",
        )
    want, ring, total, credited, here = (f.value(k) for k in ("want", "ring", "total", "credited", "here"))
    said = f"{want} bytes" if want else "no `copy`"
    if credited != "0":
        message = (
            f"`{fn}` completes {total} bytes per fill of ring `{ring}` ({credited} of them by "
            f"`mbarrier.complete_tx`); the contract declares {said}"
        )
    else:
        message = f"`{fn}` copies {total} bytes per fill of ring `{ring}`; the contract declares {said}"
    return Worded(
        message,
        f"declared: {said}",
        f"completes {here} bytes here" if f.problem == "credit" else f"copies {here} bytes here",
        "make the ring's `full copy` bytes and the code's copy sizes agree",
    )


def _copy_count(f: Finding, fn: str, op: str) -> Worded:
    ring, want, got = f.value("ring"), f.value("want"), f.value("got")
    lines = f"{want} `full copy` line{'s' if want != '1' else ''}"
    if f.problem == "values":
        return Worded(
            f"`{fn}` issues per fill of ring `{ring}` {got}; its {lines} state {f.value('said')}, the split of "
            "none of the stated values",
            f"ring `{ring}`: {lines}",
            "the fill's first copy",
            "state one `full copy` line per copy the code issues, with its bytes, for one of the field's stated values",
        )
    return Worded(
        f"`{fn}` issues {got} copies per fill of ring `{ring}`; the contract states {lines}",
        f"ring `{ring}`: {lines}",
        f"the first of {got} copies",
        "state one `full copy` line per copy the fill issues, with its bytes",
    )


def _cond_words(cond: str) -> str:
    """A condition (``Fact.conds``) in words."""
    if cond.startswith("@"):
        return f"guard `{cond[1:].split(':')[0]}`"
    line, _, taken = cond.partition(":")
    return f"the branch at PTX line {line} {'taken' if taken == 't' else 'not taken'}"


def _setmaxnreg(f: Finding, fn: str, op: str) -> Worded:
    mode, regs, budget = f.value("mode"), f.value("regs"), f.value("budget")
    shown = f"`setmaxnreg.{mode} {regs}`" if regs else f"`setmaxnreg.{mode}`"
    return Worded(
        f"`{fn}` runs its own {shown}; the dispatch kernel sets every warpgroup's register budget",
        f"the budget the dispatch sets (`regs {budget}`)" if budget else "the role the dispatch budgets",
        f"{shown} here",
        "remove the component's `setmaxnreg` and declare the budget with `regs N` on the role; "
        "two `setmaxnreg` per warpgroup can exceed the register pool and hang the kernel",
    )


def _static_shared(f: Finding, fn: str, op: str) -> Worded:
    name, nbytes = f.value("name"), f.value("bytes")
    return Worded(
        f"`{name}` is static shared memory ({nbytes} bytes) that no claim accounts for",
        "the stage's shared-memory claims",
        f"`__shared__ {name}` ({nbytes} bytes)",
        f"claim it (`claim smem {name} bytes {nbytes} align 16`) and address it through its `_smem()` handle "
        "from the entry's `smem` pointer",
    )


def _smem_literal(f: Finding, fn: str, op: str) -> Worded:
    offset = f.value("offset")
    at = f"at the fixed offset {offset}" if offset else "from the `smem` base"
    if f.fact.kind == "call-arg" and not offset:
        at = "computed without the `smem` base or any placement handle, where the callee addresses shared memory"
    passes = f.fact.kind in ("smem-arg", "call-arg")
    does = f"passes `{f.fact.detail}` a shared-memory address" if passes else "addresses shared memory"
    return Worded(
        f"`{fn}` {does} {at} without any claim's handle",
        "the stage's claims" if f.value("claimed") == "True" else "the role that runs it",
        f"`{op}` at a fixed offset",
        "add the claim's `_smem()` handle (or the ring's slot handle) to the `smem` pointer",
    )


def _scope(f: Finding, fn: str, op: str) -> Worded:
    scope, declared = f.value("scope"), f.value("declared")
    if f.problem == "atomic":
        return Worded(
            f"`{fn}` updates counter `{f.value('counter')}` at scope `{scope}`; the contract declares `{declared}`",
            f"scope `{declared}`",
            f"`{op}` (scope `{scope}`)",
            f"use the `.{declared}` form of the atomic",
        )
    return Worded(
        f"`{fn}` fences at scope `{scope}`; its counters declare `{declared}`",
        f"scope `{declared}`",
        f"`{op}`",
        f"fence at the counters' scope (`.{declared}`)",
    )


def _proxy_fence(f: Finding, fn: str, op: str) -> Worded:
    return Worded(
        f"`{fn}` writes shared memory with `{f.value('write')}` (PTX line {f.value('write_line')}) and then lets "
        f"the async proxy read it with `{op}`, with no `fence.proxy.async` between",
        "the declared proxy use",
        "async-proxy read without a fence",
        "add `fence.proxy.async.shared::cta` after the generic writes, in the same role",
    )


def _launch_directive(f: Finding, fn: str, op: str) -> Worded:
    directive, values = f.value("directive"), f.value("values")
    if f.problem == "block":
        threads = f.value("threads")
        said = f"{threads} threads" if threads else "no block size"
        return Worded(
            f"`{fn}` carries `.{directive} {values}` ({f.value('product')} threads); the contract launches {said}",
            f"launch: {said}",
            f"`.{directive}` here",
            "drop the launch bounds from the component: the dispatch kernel's are generated",
        )
    return Worded(
        f"`{fn}` carries `.{directive}` {values}; the contract declares "
        f"{'other cluster shapes' if f.value('shapes') == 'True' else 'no cluster'}",
        "the contract's launch",
        f"`.{directive}` here",
        "declare the cluster in the contract (`cluster X, Y, Z`) or drop the directive",
    )


def _tmem_alloc(f: Finding, fn: str, op: str) -> Worded:
    claimed = f.value("claimed")
    if f.problem == "alloc":
        cols = f.value("columns")
        what = f"`tcgen05.alloc` of {cols} columns" if cols else "`tcgen05.alloc`"
    else:
        what = f"`tcgen05.{f.problem}`"
    return Worded(
        f"`{fn}` runs its own {what}; the dispatch kernel allocates every `claim tmem` of the composition",
        f"the claims the dispatch allocates ({claimed} columns)" if claimed else "the role the dispatch runs",
        f"{what} here",
        "remove the component's tensor-memory allocation and read the claim's first column from its `_tmem()` "
        "handle; a second allocation gets other columns than the ones the composition placed",
    )


def _tid_index(f: Finding, fn: str, op: str) -> Worded:
    role = f.value("role")
    return Worded(
        f"role `{role}` indexes by absolute `threadIdx` in `{fn}`; the linker may place the role at any warp",
        f"role `{role}` (placed by the linker)",
        "absolute `%tid` here",
        f"subtract `32 * kl_..._{role}_warp0()` from `threadIdx.x` first",
    )


def _feature(f: Finding, fn: str, op: str) -> Worded:
    feature, declared = f.value("feature"), f.value("declared")
    said = f"requires {declared}" if declared else "requires no feature"
    return Worded(
        f"`{fn}` runs `{op}`, which needs the feature `{feature}`; the contract {said}",
        f"`requires feature`: {declared}" if declared else "the stage's target",
        f"`{feature}` instruction here",
        f"add `{feature}` to the stage's `requires feature` line: the checker then verifies every target has it",
    )


def _params_read(f: Finding, fn: str, op: str) -> Worded:
    stage = f.value("stage")
    if f.problem == "undeclared":
        return Worded(
            f"`{fn}` reads its params pointer, but stage `{stage}` declares no params block",
            "the role whose entry reads it",
            f"`{op}` through the params pointer",
            "declare the fields the component reads (`params NAME size N align A { … }`): without a block the "
            "dispatch passes the entry no params, and the read lands in other memory",
        )
    block, size, offset, width = (f.value(k) for k in ("block", "size", "offset", "width"))
    return Worded(
        f"`{fn}` reads {width} bytes at offset {offset} of params block `{block}` of stage `{stage}`, "
        f"which is {size} bytes",
        f"params `{block}`: {size} bytes",
        f"`{op}` at params offset {offset}",
        "declare the field in the params block (and its size), or read the field the contract declares",
    )


def _ring_step(f: Finding, fn: str, op: str) -> Worded:
    ring, role, step = f.value("ring"), f.value("role"), f.value("step")
    if f.problem == "missing":
        where = "before its loop (`prearm`)" if f.value("prearm") == "True" else "in its loop"
        peel = dict(f.facts).get("peeled")
        if peel is not None:
            where = f"after its loop (the peeled phase of `lag {peel}`)"
        if dict(f.facts).get("per_pass") == "True":
            where = (
                f"after its loop on each pass of the loop around it (the unit's peeled phase of `lag {peel}`), nor "
                "after the loop around it (the drain of a release carried into the next unit's loop)"
            )
        alternative = dict(f.facts).get("alternative")
        if alternative is not None:
            where += f" (the alternative loop of `loops N` whose first step is at PTX line {alternative})"
        return Worded(
            f"role `{role}` never runs `{step}` of ring `{ring}` {where}: the contract's step has no instruction "
            f"in `{fn}`",
            f"`{step}` declared here",
            f"`{fn}`: no matching instruction",
            _STEP_HELP.get(step, "run the step the contract states, on the ring's barrier handle"),
        )
    if f.problem == "extra":
        return Worded(
            f"`{fn}` runs `{op}` on the {step.split()[0]} barrier of ring `{ring}`, a step (`{step}`) its "
            f"{f.value('side')} side does not state",
            f"ring `{ring}`: the steps of role `{role}`",
            f"`{step}` with no step",
            "state the step in the contract, or remove the instruction: the other side counts only the steps "
            "the contract states",
        )
    if f.problem == "ring-fed":
        return Worded(
            f"`{fn}` runs `{op}` on the {step.split()[0]} barrier of ring `{ring}`, whose {f.value('side')} side "
            "the ring-fed tensor handle runs",
            f"ring `{ring}`: its slots carry a ring-fed tensor of role `{role}`",
            f"`{step}` outside the hand-off",
            "remove the instruction: the tensor handle the linker generates waits and arrives on the ring for the "
            "role (specs/handles.md), so this would count twice",
        )
    if f.problem == "barrier":
        got = f.value("got")
        which = step.split()[0]
        return Worded(
            f"`{fn}` runs `{got}` of ring `{ring}` where the contract's step is `{step}`",
            f"`{step}` declared here",
            f"`{op}` on the {got.split()[0]} barrier",
            f"address the {which} barrier (`_{which}_bar()` + 8 * slot)",
        )
    if f.problem == "uncommitted":
        return Worded(
            f"`{fn}` reads the slot of ring `{ring}` asynchronously with `{op}` and commits no bulk group after it in "
            "the same iteration: no read wait waits for this read",
            f"`{step}` declared here",
            f"`{op}` not committed",
            "run `cp.async.bulk.commit_group` after the iteration's last asynchronous read of the slot",
        )
    if f.problem == "conditional":
        return Worded(
            f"`{fn}` runs `{op}`, the `{step}` of ring `{ring}`, under a condition its slot's writes are not under: "
            "some iterations write the slot and never read it",
            f"`{step}` declared here: once per iteration",
            f"`{op}` under a condition",
            "read the slot in every iteration that writes it (or state the part that reads it, `on PART`)",
        )
    if f.problem == "drain":
        return Worded(
            f"`{fn}` does not wait for the last asynchronous reads of ring `{ring}`'s slot (`{op}`) after its loop: "
            "the role ends while they may still read shared memory",
            f"`{step}` declared here",
            f"`{op}`: its last iteration's read is never waited for",
            "run `cp.async.bulk.wait_group.read 0` (or `cp.async.bulk.wait_group 0`) after the loop",
        )
    if f.problem == "groups":
        return Worded(
            f"`{fn}` runs `{op}` allowing {f.value('groups')} bulk groups to stay pending before it rewrites the slot "
            f"of ring `{ring}` (depth {f.value('depth')}): the read of the slot it rewrites may still run",
            f"`{step}` declared here",
            f"`{op}` waits for too little",
            f"wait with at most {int(f.value('depth')) - 1} pending groups (one group per iteration)",
        )
    if f.problem == "unshared":
        return Worded(
            f"`{fn}` runs `{op}`, the `{step}` of ring `{ring}`, in some of role `{role}`'s threads, and no `bar.sync` "
            "of the role follows it before the slot's writes: the other threads write before the reads are done",
            f"`{step}` declared here",
            f"`{op}` in fewer threads than write",
            "sync the role's threads (a named barrier of the role) between the read wait and the writes",
        )
    if f.problem == "loops":
        got, want, parents = f.value("got"), f.value("want"), f.value("parents")
        where = f"in {got} loop(s)" if parents == "1" else f"in {got} loops that sit in {parents} different loops"
        return Worded(
            f"`{fn}` runs `{step}` of ring `{ring}` (its side's first step) {where}, where its {f.value('side')} "
            f"side states `loops {want}`: {want} alternative loops, one per unit of work, all in one loop over units",
            f"`loops {want}`: {want} alternative loops",
            f"`{op}`: the first step, in one of {got} loop(s)",
            f"state `loops {got}` when the role's code has {got} alternative loops of the side's steps, or none when "
            "it has one; alternatives sit side by side in the loop over units of work",
        )
    if f.problem == "sequence":
        return Worded(
            f"`{fn}` runs the loops of `{step}` of ring `{ring}` one after another within a unit of work, where "
            "`loops N` states alternatives (one loop per unit): two k-loops per unit are another protocol, the "
            "lagged steps' peeled phase running between them",
            "`loops`: one of the alternatives per unit of work",
            f"`{op}`: a second loop after the first",
            "choose one loop per unit (`if (…) mainloop<A>(…) else mainloop<B>(…)`), or split the side's work so "
            "that one loop runs per unit",
        )
    if f.problem == "unretired":
        lag = f.value("lag")
        return Worded(
            f"`{fn}` releases a slot of ring `{ring}` (`{step}`, lag {lag}) before a `wgmma.wait_group` retired the "
            "wgmma group that read it: the producer may refill the slot while the tensor cores still read it",
            f"`{step}`: released once its reads are done",
            f"`{op}`: the group reading the slot may be pending",
            f"run `wgmma.wait_group N` before the release, with N at most {max(int(lag) - 1, 0)} plus the groups "
            "committed since the slot's was (`wgmma.wait_group 1` after this k-step's commit for `lag 1`; "
            "`wgmma.wait_group 0` before a release after the loop)",
        )
    if f.problem == "foreign":
        return Worded(
            f"`{fn}` runs `{op}` on a barrier of ring `{ring}`, but role `{role}` takes no side of `{ring}`",
            f"ring `{ring}`",
            f"`{step}` here",
            f"add a `ring {ring} … by {role}` side that states the step, or remove the instruction",
        )
    times, per, base = _times(f.value("times")), _times(f.value("per")), f.value("base")
    if dict(f.facts).get("per_pass") == "True":
        return Worded(
            f"`{fn}` runs `{step}` of ring `{ring}` {times} after its loop on a pass of the loop around it, where "
            f"its lag calls for it {per} per pass",
            f"`{step}`: {per} after its loop per pass (its peeled phase)",
            f"`{op}` here",
            "release what the lag held back once per unit of work, after the unit's loop: a second arrive "
            "completes a phase early, a missing one leaves a slot unreleased and the other side stalls when it wraps",
        )
    return Worded(
        f"`{fn}` runs `{step}` of ring `{ring}` {times} per iteration, where it runs `{base}` {per}",
        f"`{step}`: once per iteration",
        f"`{op}` here",
        "run each step once per iteration of the ring's loop (a second arrive completes a phase early; a second "
        "wait waits for a phase that never comes)",
    )


def _times(n: str) -> str:
    return {"1": "once", "2": "twice"}.get(n, f"{n} times")


_STEP_HELP = {
    "empty arrive": "release each slot: arrive on the ring's empty barrier (`_empty_bar()` + 8 * slot) once the "
    "slot is read, or the producer waits for it forever",
    "full arrive": "signal each filled slot: arrive on the ring's full barrier (`_full_bar()` + 8 * slot)",
    "full wait": "wait on the ring's full barrier (`mbarrier.try_wait.parity`) before reading a slot",
    "empty wait": "wait on the ring's empty barrier before writing a slot",
    "full copy": "issue the copy that completes its bytes on the slot's full barrier",
    "read async": "read the slot asynchronously (a TMA store from it) in each iteration that writes it",
    "read wait": "wait for the earlier asynchronous reads of the slot (`cp.async.bulk.wait_group.read N`) before "
    "rewriting it",
}


def _arrive_count(f: Finding, fn: str, op: str) -> Worded:
    step, got, want = f.value("step"), f.value("got"), f.value("want")
    selected, width, times = f.value("threads"), f.value("width"), f.value("times")
    who = guard_words(f.value("guard"))
    each = f" × {times}" if times != "1" else ""
    return Worded(
        f"`{fn}` arrives {got} times per `{step}` of ring `{f.value('ring')}` ({who}: {selected} of role "
        f"`{f.value('role')}`'s {width} threads{each}); the contract counts {want}",
        f"`{step}` counts {want}",
        f"{got} arrivals here",
        "guard the arrive so the arrivals the count states arrive: one elected lane per warp for `per_warp`, one "
        "thread per warpgroup for `per_warpgroup`, one thread for a constant 1",
    )


def guard_words(text: str) -> str:
    """A guard (``steps.guard_text``) in words."""
    if text == "*":
        return "every thread"
    if text == "?":
        return "threads the analysis cannot tell"
    names = {"lane": "lane", "warp": "warp", "wgt": "thread of the warpgroup", "wg": "warpgroup", "thread": "thread"}
    ops = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    parts = []
    for conj in text.split("|"):
        atoms = []
        for atom in conj.split(";"):
            q, o, v = atom.split()
            atoms.append("the elected lane" if q == "elect" else f"{names.get(q, q)} {ops[o]} {v}")
        parts.append(" and ".join(atoms) or "every thread")
    return " or ".join(parts)


def _wait_parity(f: Finding, fn: str, op: str) -> Worded:
    step, ring, got = f.value("step"), f.value("ring"), dict(f.facts).get("got", "")
    if f.problem == "constant":
        return Worded(
            f"`{fn}` waits on `{step}` of ring `{ring}` with parity {got} in every iteration; the parity must flip "
            "each time the slot index wraps",
            f"`{step}`: the parity alternates",
            f"parity {got} here, every iteration",
            "flip the phase bit when the slot index wraps (`if (++slot == depth) { slot = 0; phase ^= 1; }`) and "
            "wait on the phase variable",
        )
    if f.problem == "reset":
        reset, side = f.value("reset"), f.value("side")
        after = dict(f.facts).get("after")
        passes = (
            "every pass of the loop around it"
            if after is None
            else (
                "every pass of the loop around it after one that ran its alternative loop "
                f"(the step at PTX line {after})"
            )
        )
        return Worded(
            f"`{fn}` starts the loop of its `{step}` on ring `{ring}` from the same {reset} on {passes} "
            "(a ring cursor reset per unit of work), so from the second pass on it waits on another "
            f"slot or phase than the ring is at; the {side} side states no `restart`: its position carries on from "
            "one unit of work to the next, as its partner's does",
            f"`{step}`: the ring position carries across units of work (no `restart`)",
            f"the {reset} the same at this loop's entry on every pass",
            "keep the ring cursor (slot and phase) across units of work: declare it once, before the loop over "
            "units, and let each unit's loop advance it; or, where the slot index really restarts, state "
            "`restart N` on both sides",
        )
    want = f.value("want")
    if f.problem == "advanced":
        depth, waits = f.value("depth"), f.value("waits")
        return Worded(
            f"`{fn}` waits on `{step}` of ring `{ring}` with parity {got} after {waits} earlier wait(s) of the "
            f"step; at depth {depth} the ring's phase there is {want}",
            f"`{step}`: the parity flips each time the slot index wraps",
            f"parity {got} on its first pass, at depth {depth}",
            "advance the ring position once per wait (`if (++slot == depth) { slot = 0; phase ^= 1; }`) and wait "
            "on its phase variable in every copy of the step",
        )
    why = "as stated" if f.value("stated") == "True" else ("its first fill" if step.startswith("full") else "passes")
    return Worded(
        f"`{fn}` first waits on `{step}` of ring `{ring}` with parity {got}; the contract's first wait uses "
        f"parity {want}",
        f"`{step}`: first parity {want} ({why})",
        f"parity {got} on the first iteration",
        "start the phase variable so the first wait uses the contract's parity (a consumer's `full wait` 0, a "
        "producer's `empty wait` 1, or the stated `parity P`): the other parity passes at once on a fresh barrier "
        "or waits for a phase that never completes",
    )


def _step_order(f: Finding, fn: str, op: str) -> Worded:
    step, before = f.value("step"), f.value("before")
    return Worded(
        f"`{fn}` runs `{step}` of ring `{f.value('ring')}` before `{before}`; the contract runs `{before}` first",
        f"`{step}` follows `{before}`",
        f"`{op}` runs first",
        f"move the instruction after the `{before}` step, in the order the contract's steps are written",
    )


def _ring_fence(f: Finding, fn: str, op: str) -> Worded:
    if f.problem == "async-read":
        ring, claim = f.value("ring"), f.value("claim")
        return Worded(
            f"`{fn}` reads the slot of ring `{ring}` (claim `{claim}`) asynchronously with `{op}` after generic "
            "writes of it, without the `fence.proxy.async` its contract promises between them",
            "`fence proxy_async` declared here",
            f"`{op}` without a proxy fence after the slot's writes",
            "run `fence.proxy.async.shared::cta` in the threads that write the slot, after the writes and before "
            "the asynchronous read (and the barrier that orders them)",
        )
    ring, release, side = f.value("ring"), f.value("release"), f.value("side")
    access = "writes" if side == "produce" else "reads"
    if f.problem == "early":
        return Worded(
            f"`{fn}` {access} a slot of ring `{ring}` with `{op}` after its `fence.proxy.async` and before `{release}`",
            "`fence proxy_async` declared here",
            "generic slot access after the fence",
            f"fence after the last slot access, just before `{release}`",
        )
    return Worded(
        f"`{fn}` runs `{release}` of ring `{ring}` without the `fence.proxy.async` its contract promises",
        "`fence proxy_async` declared here",
        f"`{release}` without a proxy fence before it",
        f"run `fence.proxy.async.shared::cta` in the threads that {access} the slot, after the accesses and before "
        f"`{release}`",
    )


def _read_proxy(f: Finding, fn: str, op: str) -> Worded:
    ring, role = f.value("ring"), f.value("role")
    if f.problem == "generic":
        return Worded(
            f"`{fn}` reads a slot of ring `{ring}` with `{op}`, a generic load, but role `{role}`'s contract says "
            "`reads async`",
            "`reads async` declared here",
            "a generic read of the slot",
            "write `reads generic` (and `fence proxy_async` before the release, when the next fill is a TMA or "
            "bulk copy), or read the slot through the async proxy",
        )
    return Worded(
        f"role `{role}` reads the slots of ring `{ring}` only through the async proxy (`{op}`), but its contract "
        "says `reads generic`",
        "`reads generic` declared here",
        "an asynchronous read of shared memory",
        "write `reads async`, so the contract states the proxy the slots are read through",
    )


def _named_barrier(f: Finding, fn: str, op: str) -> Worded:
    barrier, role = f.value("barrier"), f.value("role")
    if f.problem == "missing":
        return Worded(
            f"role `{role}` takes part in barrier `{barrier}` but `{fn}` never runs it",
            f"`{barrier}`: `{role}` takes part",
            f"`{fn}`: no `bar.sync`/`bar.arrive` on `{barrier}`",
            f"run the barrier through its `{barrier}_bar_id()` and `{barrier}_threads()` handles, or take `{role}` "
            "out of its participants; the other participants wait for these threads",
        )
    if f.problem == "not-participant":
        return Worded(
            f"`{fn}` runs `{op}` on barrier `{barrier}`, in which role `{role}` does not take part",
            f"barrier `{barrier}`",
            f"`{op}` here",
            f"add `{role}` to the barrier's participants (or rendezvous), or remove the instruction",
        )
    if f.problem == "count":
        other = f.value("other")
        got, want = _times(f.value("got")), _times(f.value("want"))
        return Worded(
            f"role `{role}` meets rendezvous `{barrier}` {got} per pass of its code (at loop depths "
            f"{f.value('depths')}), where `{other}` meets it {want} (at depths {f.value('other_depths')})",
            f"`{barrier}`: every participant syncs together",
            f"`{op}` here",
            "run the rendezvous as often, and in the same loops, as its other participants: a participant that "
            "syncs a different number of times leaves the others waiting, or runs ahead of them",
        )
    got, want = f.value("got"), f.value("want")
    return Worded(
        f"`{fn}` runs `bar.{got}` on rendezvous `{barrier}`; the contract states `{want}`",
        f"`{want} by {role}` declared here",
        f"`bar.{got}` here",
        f"use `bar.{want}` (`{want}` waits for every participant, `arrive` does not)",
    )


def _init_hook(f: Finding, fn: str, op: str) -> Worded:
    ring = f.value("ring")
    if f.problem == "missing-init":
        which = f.value("barrier")
        return Worded(
            f"the init hook `{fn}` never initialises the {which} barriers of ring `{ring}`",
            "`init by` declared here",
            f"`{fn}`: no `mbarrier.init` on the {which} barriers",
            f"initialise every slot's {which} barrier with the `{which}_count()` handle",
        )
    if f.problem == "same-slot":
        return Worded(
            f"the init hook `{fn}` initialises the same barrier of ring `{ring}` on every pass of its loop: its "
            "address does not change with the slot",
            "`init by` declared here",
            "`mbarrier.init` at a loop-invariant address",
            "initialise slot i's barrier at `_full_bar()`/`_empty_bar()` + 8 * i, i the loop's slot index",
        )
    if f.problem == "uneven":
        fewer = f.value("fewer")
        return Worded(
            f"the init hook `{fn}` initialises ring `{ring}`'s full barriers {_times(f.value('full'))} and its "
            f"empty barriers {_times(f.value('empty'))} per pass of its loop: some slot's {fewer} barrier is "
            "never initialised (or one is initialised twice)",
            "`init by` declared here",
            f"`{fn}`: uneven inits",
            "initialise one full and one empty barrier per slot, in the same loop",
        )
    if f.problem == "unfenced":
        return Worded(
            f"the init hook `{fn}` does not fence its mbarrier inits, but ring `{ring}` is `init by … fenced`",
            "`fenced` declared here",
            f"`{fn}`: no fence after the inits",
            f"end the hook with `{f.value('fence')};`",
        )
    return Worded(
        f"`{fn}` initialises a barrier of ring `{ring}`, which the dispatch already initialised through its init hook",
        "the ring's `init by`",
        "a second `mbarrier.init` here",
        "remove the init: re-initialising a live mbarrier is undefined behaviour",
    )


def _private_mbarrier(f: Finding, fn: str, op: str) -> Worded:
    claim, role = f.value("claim"), f.value("role")
    declared = f"`signal` of claim `{claim}` declared here"
    if f.problem == "missing":
        step = f.value("step")
        instr = {"init": "`mbarrier.init`", "arrive": "arrive", "wait": "`mbarrier.try_wait.parity`"}[step]
        return Worded(
            f"`{fn}`, the entry of role `{role}`, never runs the {step} the `signal` of claim `{claim}` states",
            declared,
            f"`{fn}`: no {instr} on `{claim}`",
            f"run the {step} on the claim's address (its `_{claim}_smem()` handle): without it the wait never "
            "completes, or completes on a barrier nobody initialised",
        )
    if f.problem == "other-function":
        return Worded(
            f"`{fn}` runs `{op}` on the mbarrier of claim `{claim}`, which belongs to role `{role}`'s entry alone",
            declared,
            "an instruction on another role's barrier",
            f"move the instruction into role `{role}`'s code, or give this role a barrier of its own",
        )
    if f.problem == "init-count":
        return Worded(
            f"`{fn}` initialises claim `{claim}`'s mbarrier to {f.value('count')} arrivals; its `signal` states "
            f"`init {f.value('want')}`",
            declared,
            f"`mbarrier.init` with {f.value('count')} here",
            f"initialise it to {f.value('want')}: a phase completes only when that many arrivals land",
        )
    if f.problem == "init-times":
        return Worded(
            f"`{fn}` initialises claim `{claim}`'s mbarrier more than once per run (by "
            f"{f.value('threads')} threads{' in a loop' if f.value('loop') == 'True' else ''})",
            declared,
            "a repeated `mbarrier.init`",
            "initialise it once, from one thread (`if (t == 0)`), before any arrive: re-initialising a live "
            "mbarrier is undefined behaviour",
        )
    if f.problem == "unfenced":
        return Worded(
            f"`{fn}` does not fence its init of claim `{claim}`'s mbarrier before arriving on it",
            declared,
            "`mbarrier.init` with no init fence after it",
            f"follow the init with `{f.value('fence')};` (the one form PTX defines), before the first arrive",
        )
    if f.problem == "arrive-kind":
        return Worded(
            f"`{fn}` runs `{op}` on claim `{claim}`'s mbarrier; its `signal` states `arrive {f.value('want')}`",
            declared,
            f"`{op}` here",
            "arrive with `tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64` only: the "
            "arrival must wait for the role's tcgen05 operations",
        )
    if f.problem == "arrive-loop":
        return Worded(
            f"`{fn}` arrives on claim `{claim}`'s mbarrier inside a loop, but its `signal` states one phase per run",
            declared,
            "an arrive in a loop",
            "arrive once, after the loop whose operations the arrival stands for",
        )
    if f.problem == "before-init":
        return Worded(
            f"`{fn}` arrives on claim `{claim}`'s mbarrier before it initialises it",
            declared,
            "an arrive before the init",
            "initialise and fence the barrier first",
        )
    if f.problem == "arrivals":
        return Worded(
            f"`{fn}` makes {f.value('got')} arrivals on claim `{claim}`'s mbarrier per run; its `signal` states "
            f"`init {f.value('want')}`",
            declared,
            "the first arrive",
            "arrive from one thread (`if (t == 0)`) once per arrival the init counts",
        )
    if f.problem == "wait-times":
        return Worded(
            f"`{fn}` waits on claim `{claim}`'s mbarrier more than once per run; its `signal` states one phase",
            declared,
            "a second wait",
            "wait once, after the arrive",
        )
    if f.problem == "wait-parity":
        return Worded(
            f"`{fn}` waits on claim `{claim}`'s mbarrier with parity {f.value('got')}; its `signal` states "
            f"`wait parity {f.value('want')}`",
            declared,
            f"parity {f.value('got')} here",
            f"wait on parity {f.value('want')}: the other parity returns at once on a fresh barrier, or never",
        )
    return Worded(
        f"`{fn}` waits on claim `{claim}`'s mbarrier before any arrive on it: the arriving thread never gets there",
        declared,
        "a wait before the arrive",
        "wait after the arrive",
    )


def _barrier_orders(f: Finding, fn: str, op: str) -> Worded:
    barrier, claim, role = f.value("barrier"), f.value("claim"), f.value("role")
    first, first_op = f.value("first"), f.value("first_op")
    if f.problem in ("counter-release", "counter-acquire"):
        callee = f.value("first_via")
        where = f"PTX line {first}" + (
            f", in the callable `{callee.split(':')[0]}` at its line {callee.split(':')[1]}" if callee else ""
        )
        after = "in the next pass of the loop around both, after" if f.value("across") == "True" else "after"
        if f.problem == "counter-release":
            message = (
                f"`{fn}` (role `{role}`) releases counter `{claim}` (`{op}`) {after} the global write `{first_op}` "
                f"({where}) with no `bar.sync` on barrier `{barrier}` between them: the counter's reader may see it "
                "before another thread's write"
            )
            between = "between the role's global writes and the counter's release"
        else:
            message = (
                f"`{fn}` (role `{role}`) reads global memory (`{op}`) {after} the acquire `{first_op}` of counter "
                f"`{claim}` ({where}) with no `bar.sync` on barrier `{barrier}` between them: a thread other than the "
                "one that acquired may read before the counter's writer's data is visible to it"
            )
            between = "between the counter's acquire and the role's global reads"
        return Worded(
            message,
            f"`orders {claim}` declared here",
            f"`{op}` here",
            f"sync on `{barrier}` (its `_bar_id()`/`_threads()` handles) {between}",
        )
    when = "in the next pass of the loop around both" if f.value("across") == "True" else "after it"
    return Worded(
        f"`{fn}` (role `{role}`) runs `{op}` on claim `{claim}` {when} `{first_op}` (PTX line {first}) on it, with "
        f"no `bar.sync` on barrier `{barrier}` between them: another thread of the role may still be reading, or "
        "not yet have written",
        f"`orders {claim}` declared here",
        f"`{op}` here",
        f"sync on `{barrier}` (its `_bar_id()`/`_threads()` handles) between the write and the access",
    )


_WORDING = {
    "block-barrier": _block_barrier,
    "barrier-id": _barrier_id,
    "barrier-threads": _barrier_threads,
    "mbarrier-init": _mbarrier_init,
    "expect-tx": _expect_tx,
    "copy-bytes": _copy_bytes,
    "copy-count": _copy_count,
    "setmaxnreg": _setmaxnreg,
    "static-shared": _static_shared,
    "smem-literal": _smem_literal,
    "scope": _scope,
    "proxy-fence": _proxy_fence,
    "launch-directive": _launch_directive,
    "tmem-alloc": _tmem_alloc,
    "tid-index": _tid_index,
    "feature": _feature,
    "params-read": _params_read,
    "ring-step": _ring_step,
    "arrive-count": _arrive_count,
    "wait-parity": _wait_parity,
    "step-order": _step_order,
    "ring-fence": _ring_fence,
    "read-proxy": _read_proxy,
    "named-barrier": _named_barrier,
    "init-hook": _init_hook,
    "private-mbarrier": _private_mbarrier,
    "barrier-orders": _barrier_orders,
}
