"""The code-mutation campaign (``kernlink fuzz --code``): edit each component's PTX, one synchronisation
instruction at a time, and see whether conformance notices.

For every package of a composition, every synchronisation instruction of its PTX (mbarrier
inits, waits, arrives, expect-tx and complete-tx, bulk and tensor copies, ``tcgen05.commit``,
named barriers, fences) gets each mutation that applies to it:

| kind | edit |
|---|---|
| ``delete`` | remove the instruction (a fence: ``drop-fence``) |
| ``duplicate`` | run it twice |
| ``reorder`` | move it before the synchronisation instruction that precedes it |
| ``barrier`` | address another barrier the function uses (another ring barrier, another named barrier) |
| ``count`` | another arrival, thread, byte or init count |
| ``parity`` | wait on a constant parity, or on the other parity (first iteration flipped) |
| ``scope`` | another scope (``.cta``, ``.cluster``, ``.gpu``) or state space |
| ``drop-fence`` | remove a fence |
| ``guard`` | run a copy or credit only in some blocks (under a thread-invariant condition: ``%ctaid.x != 0``) |
| ``cursor`` | restart a ring wait's slot or parity (the registers its iteration loop carries) from their first-pass |
| | value before that loop, on every pass of the loop around it (a persistent kernel's reset cursor) |

Each mutant is judged as ``kernlink pack --strict`` and ``kernlink check --strict`` judge a
package's code: the conformance findings of its stage (an undecided site counts, as under
``--strict``), then the composition's L-CONFORM clause with the mutant in place of the
package's PTX (what only the whole composition decides, such as a rendezvous run a
different number of times by its participants). The link is not repeated: it reads a
package's LTO IR, which a PTX mutant does not change; ``bench/gpu/code_mutants.py`` rebuilds
a sample of mutants from their CUDA line and runs them on a GPU.

A mutant is **rejected**, **equivalent** (accepted, and one of the edits this module can
show changes nothing the protocol observes: a repeated fence, a widened scope, a dropped
init fence beside the one that publishes the inits, a bulk-group wait, commit or store run
twice, a callable's gpu-scope fence before its caller's whole-role barrier and release),
**outside** (it changes only what no contract line states: a callable no role of the
composition calls, one of several bulk stores of a slot) or **accepted**: an edit that changes
the protocol and that conformance missed. The campaign's goal is no accepted mutant.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from checker.composition import Composition
from diagnostics.model import Diagnostic, Severity
from package.codefacts import derive
from package.codefacts.facts import BULK_STORES, Operand
from package.codefacts.ptx import Function, Instr, parse
from package.codefacts.values import Env, analyse, call_arguments, callee
from package.loader import StageEntry

CODE_KINDS = {
    "delete": "remove a synchronisation instruction",
    "duplicate": "run a synchronisation instruction twice",
    "reorder": "move a synchronisation instruction before the one that precedes it",
    "barrier": "address another barrier the function uses",
    "count": "another arrival, thread, byte or init count",
    "parity": "wait on a constant parity, or on the other parity",
    "scope": "another scope or state space",
    "drop-fence": "remove a fence",
    "guard": "run a copy or credit under a data-dependent condition",
    "cursor": "restart a ring wait's slot or parity at each pass of the loop around its iteration loop",
}
_SYNC = ("mbarrier.", "bar.", "barrier.", "fence.", "membar.", "cp.async.bulk", "tcgen05.commit")
_PROBE = "kl_probe_keep_"

Verdict = Literal["rejected", "equivalent", "outside", "undecided", "accepted"]


@dataclass(frozen=True)
class CodeMutation:
    """One edit of one component's PTX: what it does and to which instruction."""

    component: str
    kind: str
    function: str
    line: int
    opcode: str
    edit: str
    ptx: str
    src: tuple[str, int] | None = None
    equivalent: str = ""  # why the edit changes nothing the protocol observes (empty: it may)
    origin: tuple[str, int] | None = None  # the CUDA line of the instruction itself (an inlined helper's)

    def describe(self) -> str:
        where = f" (CUDA {self.src[0]}:{self.src[1]})" if self.src else ""
        return f"{self.component}: `{self.function}` PTX line {self.line}{where}: {self.edit}"


@dataclass(frozen=True)
class CodeOutcome:
    mutation: CodeMutation
    verdict: Verdict
    codes: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    at: str = ""  # "pack" or "check": where it was rejected


def _is_sync(ins: Instr) -> bool:
    # an L2 prefetch (``cp.async.bulk.prefetch``) is a hint: it completes on no barrier and orders nothing
    skip = ("bar.warp", "fence.proxy.tensormap", "cp.async.bulk.prefetch")
    return ins.opcode.startswith(_SYNC) and not ins.opcode.startswith(skip)


def mutations(component: str, ptx: str) -> Iterator[CodeMutation]:
    """Every mutation of every synchronisation instruction of ``ptx``, in PTX order."""
    lines = ptx.split("\n")
    module = parse(ptx)
    handles = frozenset(re.findall(r"\.extern\s+\.func\s*(?:\([^)]*\))?\s*([\w$]+)", ptx))
    derived = derive(ptx)
    for fn in module.functions:
        if fn.name.startswith(_PROBE):
            continue
        env = analyse(fn, handle_names=handles, smem_names=frozenset(), entry_like=fn.entry_like)
        syncs = [ins for ins in fn.body if _is_sync(ins)]
        resets = _cursor_resets(component, lines, fn, handles, derived)
        for k, ins in enumerate(syncs):
            yield from _of(component, lines, fn, env, ins, syncs[k - 1] if k else None, syncs)
            yield from resets.pop(ins.line, ())
        for rest in sorted(resets.items()):  # a wait handle's call: after the function's instructions
            yield from rest[1]


#: Bulk stores from shared memory (asynchronous reads of it, completed by bulk groups); not the reductions,
#: whose second run adds again.
_BULK_STORES = tuple(op for op in BULK_STORES if not op.startswith("cp.reduce"))


def _twice(opcode: str) -> str:
    """Why an instruction run twice in a row changes nothing the protocol observes ('' where it may)."""
    if opcode.startswith(("fence.", "membar.")):
        return "a fence run twice orders no more and no less"
    if opcode.startswith("cp.async.bulk.wait_group"):
        return (
            "a bulk-group wait run twice in a row: the second finds no more groups pending than the first left, and "
            "returns at once"
        )
    if opcode.startswith("cp.async.bulk.commit_group"):
        return (
            "the second commit closes an empty bulk group, complete at once: a later `wait_group N` waits for at least "
            "the groups it waited for before (never fewer)"
        )
    if opcode.startswith(_BULK_STORES):
        return (
            "the same bulk store issued again with no commit between: it reads the same bytes of the slot and joins "
            "the same bulk group, so the same wait completes it"
        )
    return ""


def _of(
    component: str,
    lines: list[str],
    fn: Function,
    env: Env,
    ins: Instr,
    previous: Instr | None,
    syncs: Sequence[Instr],
) -> Iterator[CodeMutation]:
    at = ins.line - 1
    text = lines[at]
    fence = ins.opcode.startswith(("fence.", "membar."))

    def make(kind: str, new_lines: list[str], edit: str, equivalent: str = "") -> CodeMutation:
        return CodeMutation(
            component,
            kind,
            fn.name,
            ins.line,
            ins.opcode,
            edit,
            "\n".join(new_lines),
            ins.src,
            equivalent,
            ins.origin or ins.src,
        )

    def replaced(new: str) -> list[str]:
        return [*lines[:at], new, *lines[at + 1 :]]

    if text.count(";") != 1 or ins.opcode not in text:
        return  # a statement over several lines, or several on one: leave it alone
    kind = "drop-fence" if fence else "delete"
    yield make(kind, replaced(""), f"remove `{ins.opcode}`")
    yield make(
        "duplicate",
        [*lines[: at + 1], text, *lines[at + 1 :]],
        f"run `{ins.opcode}` twice",
        _twice(ins.opcode),
    )
    if previous is not None and previous.line < ins.line:
        before = previous.line - 1
        # the moved instruction takes its operands' computation along, within one block of straight-line code
        inputs = set() if _branches(lines[before:at]) else _inputs(lines, fn, ins, previous)
        group = [lines[i] for i in sorted(inputs)] + [text]
        stay = [line for i, line in enumerate(lines[before:at], before) if i not in inputs]
        moved = [*lines[:before], *group, *stay, *lines[at + 1 :]]
        inits = ins.opcode.startswith("mbarrier.init") and previous.opcode.startswith("mbarrier.init")
        why = "inits of two barriers commute (nothing waits or arrives until the hook returns)" if inits else ""
        if ins.opcode.startswith(_BULK_STORES) and previous.opcode.startswith(_BULK_STORES):
            why = "two bulk stores of one bulk group commute: no commit lies between them, both complete at its wait"
        yield make("reorder", moved, f"move `{ins.opcode}` before `{previous.opcode}` (line {previous.line})", why)
    brackets = [o for o in ins.operands if o.startswith("[")]
    # the barrier operand: a copy's last (its first is the destination), an mbarrier instruction's only one
    addr = brackets[-1] if brackets else None
    if addr is not None and ins.opcode.startswith(("mbarrier.", "cp.async.bulk", "tcgen05.commit")):
        yield from _other_barrier(make, replaced, text, ins, addr, env, syncs)
    if ins.opcode.startswith(("bar.", "barrier.")) and ins.operands:
        yield from _other_named(make, replaced, text, ins, env, syncs)
    yield from _counts(make, replaced, text, ins)
    if ins.opcode.startswith(("mbarrier.try_wait.parity", "mbarrier.test_wait.parity")) and len(ins.operands) >= 3:
        parity = ins.operands[2]
        held = env.operand(parity)
        for value in ("0", "1"):
            if parity != value:
                same = (
                    f"`{parity}` holds the constant {value} at each of its definitions: the wait's parity is unchanged"
                    if held.is_const and held.const == int(value)
                    else ""
                )
                yield make("parity", replaced(_swap_operand(text, parity, value)), f"wait on parity {value}", same)
        flip = ["\t{", "\t.reg .b32 %kl_flip;", f"\txor.b32 %kl_flip, {parity}, 1;"]
        flip += [_swap_operand(text, parity, "%kl_flip", last=True), "\t}"]
        yield make("parity", [*lines[:at], *flip, *lines[at + 1 :]], "wait on the other parity")
    yield from _scopes(make, replaced, text, ins)
    if ins.opcode.startswith(_FILLS) and not ins.guard:
        # the same instruction, skipped by the first block: those fills lack its bytes
        guarded = ["\t{", "\t.reg .b32 %kl_cta;", "\t.reg .pred %kl_run;", "\tmov.u32 %kl_cta, %ctaid.x;"]
        guarded += ["\tsetp.ne.u32 %kl_run, %kl_cta, 0;", f"\t@%kl_run {text.strip()}", "\t}"]
        yield make("guard", [*lines[:at], *guarded, *lines[at + 1 :]], f"run `{ins.opcode}` only where `%ctaid.x != 0`")


# ----------------------------------------------------------------- cursor resets


def _cursor_resets(
    component: str, lines: list[str], fn: Function, handles: frozenset[str], derived: Any
) -> dict[int, list[CodeMutation]]:
    """For each wait in a loop nested in another (a persistent role's k-loop in its loop over units of work)
    whose slot or parity its iteration loop carries (``Fact.entry``: ``carried``): mutants that set the carried
    registers the wait's slot, its parity, or both are computed from to the value they hold on the first pass,
    on every edge into the iteration loop (inside the loop around it), keyed by the wait's PTX line."""
    from package.codefacts.carry import CARRIED, Carry
    from package.codefacts.facts import _spins
    from package.codefacts.flow import Flow

    waits = {
        f.line: f
        for f in derived.facts
        if f.function == fn.name and f.kind == "wait" and any(how == CARRIED for _, how in f.entry)
    }
    if not waits:
        return {}
    flow = Flow(fn)
    carry = Carry(flow)
    types = _register_types(lines, fn)
    out: dict[int, list[CodeMutation]] = {}
    for index, ins in enumerate(fn.body):
        fact = waits.get(ins.line)
        if fact is None or not flow.reachable(index):
            continue
        loops = [lp for lp in flow.loops_of(index) if not _spins(fn.body, flow, lp, handles)]
        if len(loops) < 2:
            continue
        outer, inner = loops[-2], loops[-1]
        carried = carry.carried(outer, inner)
        if not carried:
            continue
        read = _wait_reads(fn, index)
        region = [
            j
            for b in inner.body
            for j in range(*flow.blocks[b])
            if j != index and flow.reachable(j) and flow.precedes(j, index)
        ]
        roles = {role: _entering(fn, flow, region, regs, index) & carried for role, regs in read.items()}
        header = flow.blocks[inner.header][0]
        entering = [p for p in flow.preds[inner.header] if p not in inner.body and p in outer.body]
        if not entering:
            continue
        variants = [
            frozenset().union(*roles.values()),
            roles.get("slot", frozenset()),
            roles.get("parity", frozenset()),
        ]
        seen: set[frozenset[str]] = set()
        for regs in variants:
            if not regs or regs in seen:
                continue
            seen.add(regs)
            what = " and ".join(role for role in ("slot", "parity") if roles.get(role) and roles[role] <= regs)
            firsts = {r: flow.first(header, r) for r in sorted(regs)}
            if any(v is None for v in firsts.values()) or any(types.get(_prefix(r), "pred") == "pred" for r in regs):
                continue  # no first-pass constant to restart from (or a predicate): no mutant
            movs = [f"\tmov.{types[_prefix(r)]} \t{r}, {v};" for r, v in firsts.items()]
            new = list(lines)
            for p in sorted(entering, key=lambda b: -flow.blocks[b][1]):
                last = fn.body[flow.blocks[p][1] - 1]
                at = last.line - 1 if last.base == "bra" else last.line  # before its branch, else after it
                new[at:at] = movs
            said = ", ".join(f"`{r}` = {v}" for r, v in firsts.items())
            label = next((f" `{name}`" for name, at in fn.labels if at == header), "")
            edit = (
                f"restart the wait's {what} ({said}: the first pass's values) before its iteration loop "
                f"(PTX line {fn.body[header].line}{label}) on every pass of "
                "the loop around it"
            )
            opcode = ins.opcode if ins.base != "call" else callee(ins) or ins.opcode
            out.setdefault(ins.line, []).append(
                CodeMutation(
                    component,
                    "cursor",
                    fn.name,
                    ins.line,
                    opcode,
                    edit,
                    "\n".join(new),
                    ins.src,
                    "",
                    ins.origin or ins.src,
                )
            )
    return out


_REGISTER = re.compile(r"%[\w$]+")


def _prefix(register: str) -> str:
    return register.rstrip("0123456789")


def _register_types(lines: list[str], fn: Function) -> dict[str, str]:
    """A function's register families (``%r`` of ``.reg .b32 %r<88>;``) and their types."""
    end = max((ins.line for ins in fn.body), default=fn.line)
    types: dict[str, str] = {}
    for text in lines[fn.line - 1 : end]:
        m = re.match(r"\s*\.reg\s+\.(\w+)\s+(%[\w$]+)<\d+>\s*;", text)
        if m:
            types.setdefault(m.group(2), m.group(1))
    return types


def _wait_reads(fn: Function, index: int) -> dict[str, frozenset[str]]:
    """The registers a wait reads as its slot (its barrier's address) and its parity: an inline
    ``try_wait.parity``'s operands, or the values a call to a ring's wait handle passes."""
    ins = fn.body[index]
    ops: tuple[str, ...]
    if ins.base == "mbarrier" and len(ins.operands) >= 3:
        ops = (ins.operands[1], ins.operands[2])
    else:
        args = call_arguments(ins)
        stored = _stored(fn, index)
        ops = tuple(stored.get(a, "") for a in args[:2])
    return {role: frozenset(_REGISTER.findall(op)) for role, op in zip(("slot", "parity"), ops, strict=False)}


def _stored(fn: Function, call: int) -> dict[str, str]:
    """What the ``st.param`` stores before call ``call`` (back to the call before it) put in each parameter."""
    out: dict[str, str] = {}
    for j in range(call - 1, -1, -1):
        ins = fn.body[j]
        if ins.base == "call":
            break
        if ins.base == "st" and ins.has("param") and len(ins.operands) == 2:
            out.setdefault(ins.operands[0].strip("[] ").split("+")[0].strip(), ins.operands[1].strip())
    return out


def _entering(fn: Function, flow: Any, region: Sequence[int], registers: frozenset[str], at: int) -> frozenset[str]:
    """The registers whose values at the iteration loop's entry the registers ``registers`` that instruction
    ``at`` reads are computed from: a backward slice through the definitions in ``region`` (the loop's
    instructions before ``at``, back edges left out), keeping each register some read of which no definition
    in ``region`` dominates (a call's result reads the values passed to the call)."""
    from package.codefacts.values import defines

    defs: dict[str, list[int]] = {}
    srcs: dict[int, set[str]] = {}
    for j in region:
        ins = fn.body[j]
        if not ins.operands or not defines(ins) or ins.base == "call":
            continue
        if ins.base == "ld" and ins.has("param") and "retval" in ins.operands[1]:
            call = next((k for k in range(j - 1, -1, -1) if fn.body[k].base == "call"), None)
            srcs[j] = set()
            if call is not None:
                for v in _stored(fn, call).values():
                    srcs[j] |= set(_REGISTER.findall(v))
        else:
            srcs[j] = {r for o in ins.operands[1:] for r in _REGISTER.findall(o)}
        for d in _REGISTER.findall(ins.operands[0]):
            defs.setdefault(d, []).append(j)

    def dominates(d: int, j: int) -> bool:
        bd, bj = flow.block_of[d], flow.block_of[j]
        return d < j if bd == bj else bool(flow.dominates(bd, bj))

    exposed: set[str] = set()
    seen: set[tuple[str, int]] = set()
    todo = [(r, at) for r in sorted(registers)]
    while todo:
        r, j = todo.pop()
        if (r, j) in seen:
            continue
        seen.add((r, j))
        before = [d for d in defs.get(r, ()) if d != j and flow.precedes(d, j)]
        if not any(dominates(d, j) for d in before):
            exposed.add(r)
        todo += [(s, d) for d in before for s in sorted(srcs[d])]
    return frozenset(exposed)


# What completes bytes of a fill: a bulk or tensor copy on an mbarrier, a thread's credit.
_FILLS = ("cp.async.bulk.tensor", "cp.async.bulk.shared", "mbarrier.complete_tx")


def _swap_operand(text: str, old: str, new: str, last: bool = False) -> str:
    """``text`` with operand ``old`` (a whole token) replaced by ``new`` (the last occurrence if ``last``)."""
    pattern = re.compile(rf"(?<![\w%$]){re.escape(old)}(?![\w$])")
    found = list(pattern.finditer(text))
    if not found:
        return text
    m = found[-1] if last else found[0]
    return text[: m.start()] + new + text[m.end() :]


Make = Callable[..., CodeMutation]


def _other_barrier(
    make: Make,
    replaced: Callable[[str], list[str]],
    text: str,
    ins: Instr,
    addr: str,
    env: Env,
    syncs: Sequence[Instr],
) -> Iterator[CodeMutation]:
    mine = env.address(addr)
    seen: set[str] = set()
    for other in syncs:
        oa = next((o for o in other.operands if o.startswith("[")), None)
        if oa is None or oa == addr or oa in seen or not other.opcode.startswith("mbarrier."):
            continue
        val = env.address(oa)
        if val.origins != mine.origins or val.const != mine.const:
            seen.add(oa)
            at_end = text.rfind(addr)
            edited = text[:at_end] + oa + text[at_end + len(addr) :]
            yield make("barrier", replaced(edited), f"`{ins.opcode}` on `{oa}` instead of `{addr}`")


def _other_named(
    make: Make, replaced: Callable[[str], list[str]], text: str, ins: Instr, env: Env, syncs: Sequence[Instr]
) -> Iterator[CodeMutation]:
    red = 1 if ".red" in ins.opcode else 0
    if len(ins.operands) <= red:
        return
    ident = ins.operands[red]
    mine = env.operand(ident)
    seen: set[str] = set()
    for other in syncs:
        if not other.opcode.startswith(("bar.", "barrier.")) or len(other.operands) <= red:
            continue
        oid = other.operands[red]
        val = env.operand(oid)
        if oid != ident and oid not in seen and (val.origins != mine.origins or val.const != mine.const):
            seen.add(oid)
            yield make("barrier", replaced(_swap_operand(text, ident, oid)), f"barrier `{oid}` instead of `{ident}`")
    literal = "1" if ident != "1" else "2"
    yield make("barrier", replaced(_swap_operand(text, ident, literal)), f"barrier {literal} instead of `{ident}`")


def _counts(make: Make, replaced: Callable[[str], list[str]], text: str, ins: Instr) -> Iterator[CodeMutation]:
    op, ops = ins.opcode, ins.operands
    target: tuple[str, str] | None = None
    if op.startswith("mbarrier.init") and len(ops) >= 2:
        target = (ops[1], "3")  # an arrival count no example's barrier has
    elif op.startswith("mbarrier.arrive.expect_tx") and len(ops) >= 3:
        target = (ops[2], "8192")
    elif op.startswith(("mbarrier.expect_tx", "mbarrier.complete_tx")) and len(ops) >= 2:
        target = (ops[1], "8192")
    elif op.startswith("cp.async.bulk.shared") and len(ops) >= 4:
        target = (ops[2], "8192")
    elif op.startswith(("bar.sync", "bar.arrive", "barrier.sync", "barrier.arrive")) and len(ops) >= 2:
        target = (ops[1], "64")
    if target is not None and target[0] != target[1]:
        yield make("count", replaced(_swap_operand(text, target[0], target[1], last=True)), f"count {target[1]}")
    if op.startswith("mbarrier.arrive") and ".expect_tx" not in op and len(ops) == 2:
        yield make("count", replaced(text.rstrip().rstrip(";") + ", 2;"), "arrive with count 2")


_SCOPES = (
    (".cta.", ".gpu.", "a wider scope orders at least what the narrower one did"),
    (".gpu.", ".cta.", ""),
    (".cluster.", ".cta.", ""),
    (".shared::cta", ".global", ""),
)


def _scopes(make: Make, replaced: Callable[[str], list[str]], text: str, ins: Instr) -> Iterator[CodeMutation]:
    op = ins.opcode
    if not op.startswith(("fence.", "membar.", "mbarrier.")):
        return
    for old, new, why in _SCOPES:
        if old in op + "." and not (old == ".shared::cta" and not op.startswith("fence.proxy")):
            new_op = (op + ".").replace(old, new, 1).rstrip(".")
            yield make("scope", replaced(text.replace(op, new_op, 1)), f"`{new_op}` instead of `{op}`", why)
            return
    if op.startswith("mbarrier.arrive") and ".release" not in op:
        new_op = op.replace("mbarrier.arrive", "mbarrier.arrive.release.cluster", 1)
        why = "a release at cluster scope orders at least what the default CTA-scope release did"
        yield make("scope", replaced(text.replace(op, new_op, 1)), f"`{new_op}` instead of `{op}`", why)


# ----------------------------------------------------------------- judging


def _said(d: Diagnostic) -> tuple[str, str, str]:
    """A finding without where it is (a mutant's PTX lines move): what the baseline already reports."""
    return (d.code, d.message, dict(d.data).get("check", ""))


def judge(
    entry: StageEntry,
    mutation: CodeMutation,
    composition: Composition | None,
    known: frozenset[tuple[str, str, str]] = frozenset(),
    shaky: bool = False,
) -> CodeOutcome:
    """A mutant as ``kernlink pack --strict`` then ``kernlink check --strict`` judge it; ``known`` are the
    findings of the unmutated composition (its undecided sites), which do not count against a mutant;
    ``shaky`` says the mutated component has such a site, which may hide what the mutant changed."""
    from checker.clauses import l_conform

    facts = derive(mutation.ptx)
    found = l_conform.diagnostics(
        entry.stage, facts, ptx_name=f"{mutation.component}!code.ptx", source_name=None, strict=True
    )
    errors = [d for d in found if d.severity is Severity.ERROR and _said(d) not in known]
    if errors:
        return _rejected(mutation, errors, "pack")
    if composition is not None:
        errors = [
            d
            for d in _composition(entry, mutation, composition)
            if d.severity is Severity.ERROR and _said(d) not in known
        ]
        if errors:
            return _rejected(mutation, errors, "check")
    if mutation.equivalent:
        return CodeOutcome(mutation, "equivalent")
    verdict, why = _argued(entry, mutation, composition)
    if verdict != "accepted":
        return CodeOutcome(dataclasses.replace(mutation, equivalent=why), verdict)
    if shaky:
        why = "the unmutated component already has an undecided site here, which `--strict` rejects"
        return CodeOutcome(dataclasses.replace(mutation, equivalent=why), "undecided")
    return CodeOutcome(mutation, "accepted")


#: Instructions that only compute a register from registers and immediates (no memory, no synchronisation).
_PURE = frozenset({"mov", "mapa", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "cvt", "cvta"})


def _inputs(lines: list[str], fn: Function, ins: Instr, previous: Instr) -> set[int]:
    """The 0-based PTX lines between ``previous`` and ``ins`` that compute what ``ins`` reads (its operands'
    definitions, transitively), when each is a one-line computation or load, or the result of a call
    without arguments (a handle: its whole call sequence): a reorder moves them along, as moving the
    statement in the source would (its arguments are evaluated where it runs). A definition of another
    kind (a volatile load, a guarded one, a call with arguments) stays where it is, and nothing moves:
    the instruction then reads a register no path has set yet (conformance: an undecided site)."""
    between = [i for i in fn.body if previous.line < i.line < ins.line]
    need = set(_reads(ins))
    taken: set[int] = set()
    for other in reversed(between):
        dests = set(_dests_of(other))
        if not dests & need:
            continue
        if other.base == "ld" and other.has("param") and len(dests) == 1:
            block = _call_sequence(lines, other.line - 1, previous.line - 1)
            if block is None:
                return set()
            taken |= block
            need -= dests
            continue
        loads = other.base == "ld" and not other.has("volatile")  # an argument read from memory: it moves too
        if (other.base not in _PURE and not loads) or other.guard or len(dests) != 1:
            return set()
        taken.add(other.line - 1)
        need = (need - dests) | set(_reads(other))
    return taken


def _call_sequence(lines: list[str], at: int, floor: int) -> set[int] | None:
    """The lines of the ``{ // callseq N`` … ``} // callseq N`` block around line ``at`` (0-based), when its
    call passes no arguments and the block starts after line ``floor``; else None."""
    start = next((i for i in range(at, floor, -1) if lines[i].strip().startswith("{ // callseq")), None)
    if start is None:
        return None
    number = lines[start].split("callseq", 1)[1].split(",")[0].strip()
    end = next((i for i in range(at, len(lines)) if lines[i].strip() == f"}} // callseq {number}"), None)
    if end is None:
        return None
    text = "\n".join(lines[start : end + 1])
    if re.search(r"\(\s*[^()\s][^()]*\)\s*;", text.split("call", 1)[-1].split(",", 2)[-1]):
        return None  # arguments: their computation would have to move too
    return set(range(start, end + 1))


def _dests_of(ins: Instr) -> list[str]:
    from package.codefacts.values import defines

    if not ins.operands or not defines(ins) or ins.base == "call":
        return []
    return [d.strip() for d in ins.operands[0].strip("{} ").split(",") if d.strip().startswith("%")]


def _reads(ins: Instr) -> list[str]:
    from package.codefacts.values import defines

    ops = ins.operands[1:] if ins.operands and defines(ins) and ins.base != "call" else ins.operands
    return [r for o in ops for r in re.findall(r"%[\w$]+", o)]


_NO_ID = Operand("unknown")
_RELEASE = re.compile(r"^(st|red|atom)(\.\w+)*\.release\.(gpu|sys)\b")


def _published_after_sync(exported: str, composition: Composition) -> str:
    """Why a gpu-scope fence at the end of callable ``exported`` is redundant ('' where it may not be): at every
    call of it, by every thread of a role, the role's threads then meet at a ``bar.sync`` of a barrier the
    role alone claims, and the role's next call is of a callable that runs a release at gpu (or system) scope,
    all under the same loops and conditions as the call. The PTX memory model makes the barrier's operations
    synchronize (base causality order) and a release cumulative over causality order, so every thread's
    writes before the barrier precede the release, and any acquire that observes it; the per-thread fence
    adds no order. CUTLASS's GenericBarrier::arrive_inc (cutlass/barrier.h: a barrier of the group, then one
    thread's ``red.release``) publishes the same way."""
    from contract_lang import ast as A

    exports: dict[str, tuple[str, str]] = {}  # export name -> (its symbol, its module's PTX)
    for e in composition.stages:
        ptx = e.captured.ptx if e.captured is not None else None
        for i in e.stage.items:
            if isinstance(i, A.ExportCallable) and ptx:
                exports[i.name] = (i.symbol, ptx)

    def releases(name: str) -> str | None:
        # the callable's first release, from its module's code facts (a release store is a `gmem-access` or
        # `smem-access`, a release reduction or atomic an `atomic`: each fact keeps its instruction's opcode)
        symbol, ptx = exports.get(name, ("", ""))
        hits = [(f.line, f.opcode) for f in derive(ptx).facts if f.function == symbol and _RELEASE.match(f.opcode)]
        return f"`{min(hits)[1]}` in `{symbol}`" if ptx and hits else None

    sites = 0
    found = ""
    for e in composition.stages:
        calls = {c.symbol: c for c in e.stage.items if isinstance(c, A.Call)}
        mine = [c for c in calls.values() if c.name == exported]
        if not mine:
            continue
        ptx = e.captured.ptx if e.captured is not None else None
        if not ptx:
            return ""
        facts = derive(ptx).facts
        alone = {i.name: i for i in e.stage.items if isinstance(i, A.BarrierClaim) and len(i.participants) == 1}
        for x in (f for f in facts if f.kind == "xcall" and f.detail in {c.symbol for c in mine}):
            same = [f for f in facts if f.function == x.function and f.loops == x.loops and f.conds == x.conds]
            syncs = [
                b
                for b in same
                if b.kind == "barrier"
                and b.detail == "sync"
                and b.guard == x.guard == ((),)
                and b.order in x.reaches
                and any(h.endswith(f"_{n}_bar_id") for h in (b.operand("id") or _NO_ID).handles for n in alone)
            ]
            after = [
                y for y in same if y.kind == "xcall" and y.detail in calls and any(y.order in b.reaches for b in syncs)
            ]
            nxt = min(after, key=lambda y: y.order, default=None)
            released = releases(calls[nxt.detail].name) if nxt is not None else None
            if released is None:
                return ""
            sites += 1
            found = released
    if not sites:
        return ""
    return (
        f"at each of its {sites} call(s) every thread of the role then meets at a `bar.sync` of a barrier the role "
        f"alone claims, and the role's next call publishes with {found}: the barrier synchronizes the threads (PTX "
        "memory model: base causality order) and a release is cumulative over causality order, so every thread's "
        "stores before the barrier precede the release and any acquire that observes it (CUTLASS's "
        "GenericBarrier::arrive_inc: a group barrier, then one thread's `red.release`)"
    )


def _barrier_claim_at(entry: StageEntry, mutation: CodeMutation) -> Any:
    """The claimed barrier whose ID handle a mutant's named barrier uses (None: not one claimed barrier)."""
    from contract_lang import ast as A

    site = next(
        (f for f in derive(mutation.ptx).facts if f.function == mutation.function and f.line == mutation.line),
        None,
    )
    ident = site.operand("id") if site is not None and site.kind == "barrier" else None
    handles = ident.handles if ident is not None else ()
    claims = [
        i
        for i in entry.stage.items
        if isinstance(i, A.BarrierClaim) and any(h.endswith(f"_{i.name}_bar_id") for h in handles)
    ]
    return claims[0] if len(claims) == 1 else None


def _argued(entry: StageEntry, mutation: CodeMutation, composition: Composition | None = None) -> tuple[Verdict, str]:
    """Whether an accepted mutant is ``equivalent`` (it changes nothing the protocol observes) or ``outside``
    the contract (it changes only what no contract line states), and why; else ``accepted``."""
    from contract_lang import ast as A

    exported = next(
        (i.name for i in entry.stage.items if isinstance(i, A.ExportCallable) and i.symbol == mutation.function), None
    )
    if (
        exported is not None
        and composition is not None
        and mutation.kind == "drop-fence"
        and mutation.opcode in ("membar.gl", "fence.sc.gpu", "fence.acq_rel.gpu")
    ):
        published = _published_after_sync(exported, composition)
        if published:
            return "equivalent", published
    if exported is not None and composition is not None:
        called = {c.name for e in composition.stages for c in e.stage.items if isinstance(c, A.Call)}
        if exported not in called:
            return "outside", (
                f"no role of this composition calls `{exported}`: its summary is spliced at no call here (a "
                "composition that calls it judges its steps)"
            )

    original = derive(entry.captured.ptx if entry.captured is not None and entry.captured.ptx else "")
    mine = [f for f in original.facts if f.function == mutation.function]
    at = [f for f in mine if f.line == mutation.line]
    kinds = {f.kind for f in at}
    if mutation.opcode.startswith("fence.") and mutation.function in _hooks(entry):
        return "equivalent", (
            "the init hook still fences its inits after the last one (one init fence publishes them: CUTLASS's "
            "`fence_barrier_init` alone), and the dispatch's block-wide barrier follows"
        )
    if (
        mutation.kind == "reorder"
        and kinds & {"tensor-copy", "bulk-copy"}
        and "cp.async.bulk" in mutation.edit
        and not _crosses_branch(mutation, (entry.captured.ptx if entry.captured is not None else None) or "")
    ):
        return "equivalent", "two copies that complete on one barrier commute: the phase waits for both"
    if mutation.kind == "reorder" and kinds - {"feature"} == {"arrive"} and "expect_tx" not in mutation.opcode:
        past = [f for f in mine if f.line in _before(mutation) and f.kind in _STEPS]
        if (
            past
            and all(f.kind == "arrive" and f.opcode == mutation.opcode for f in past)
            and not _crosses_branch(mutation, (entry.captured.ptx if entry.captured is not None else None) or "")
        ):
            return "equivalent", (
                "two arrives in a row commute: each only counts toward its barrier's phase, and the release "
                "each one makes covers the same earlier accesses of the thread (none lies between them)"
            )
    if mutation.kind == "reorder" and "complete-tx" in kinds:
        credit = next(f for f in at if f.kind == "complete-tx")
        past = [f for f in mine if f.line in _before(mutation) and f.kind in _STEPS]
        if past and all(
            f.kind in ("arrive", "expect-tx") and f.operand("addr") == credit.operand("addr") for f in past
        ):
            return "equivalent", (
                "the credit moves before its own thread's `arrive.expect_tx` on the same barrier: the phase cannot "
                "complete before that arrive, and the transaction count may go below zero until it (it is signed), "
                "so the phase completes on the same bytes"
            )
    if mutation.kind == "delete" and "bulk-store" in kinds:
        others = [f for f in mine if f.kind == "bulk-store" and f.line != mutation.line]
        if others:
            return "outside", (
                f"{len(others)} other bulk store(s) of the function still read the slot in the same bulk group: "
                "which bytes of the slot the reads cover no contract line states (`read async` states the proxy and "
                "the completion, not the boxes)"
            )
    if "arrive" in kinds and mutation.kind in ("delete", "duplicate", "count"):
        site = next(f for f in at if f.kind == "arrive")
        waits = [f.loops for f in mine if f.kind == "wait" and f.loops]
        if not site.loops and waits and all(len(lp) == 1 for lp in waits):
            return "equivalent", (
                "an arrive after the role's only loop: it releases the last slot, and no iteration of the other "
                "side waits for it (the role's work, and its ring, end with that loop)"
            )
    if "barrier" in kinds:
        site = next(f for f in at if f.kind == "barrier")
        ident = site.operand("id")
        handles = ident.handles if ident is not None else ()
        claims = [
            i
            for i in entry.stage.items
            if isinstance(i, A.BarrierClaim) and any(h.endswith(f"_{i.name}_bar_id") for h in handles)
        ]
        if mutation.kind == "barrier" and claims and not claims[0].orders:
            other = _barrier_claim_at(entry, mutation)
            x = claims[0]
            if (
                other is not None
                and other is not x
                and len(x.participants) == 1
                and other.participants == x.participants
                and other.threads == x.threads
            ):
                return "equivalent", (
                    f"barriers `{x.name}` and `{other.name}` have the same participants (role `{x.participants[0]}`, "
                    f"whose threads all run the same code): a `bar.sync` on `{other.name}` where `{x.name}`'s was "
                    f"meets "
                    f"the same threads at the same point and orders no less, and `{x.name}` states no `orders`"
                )
        if claims and len(claims[0].participants) == 1 and (mutation.kind == "duplicate" or not claims[0].orders):
            if mutation.kind == "duplicate":
                return "equivalent", (
                    f"barrier `{claims[0].name}` has one participant role, whose threads all run the same code: "
                    "one more barrier among the same threads still meets, and orders no less"
                )
            if mutation.kind in ("delete", "reorder"):
                return "outside", (
                    f"barrier `{claims[0].name}` has one participant role and states no `orders`: what it orders "
                    "inside the role (the reuse of the role's own claim) no contract line states"
                )
        same = [
            f
            for f in mine
            if f.kind == "barrier" and f.operand("id") == ident and f.line < site.line and f.line in _before(mutation)
        ]
        between = [f for f in mine if same and same[-1].line < f.line < site.line and f.kind in _STEPS]
        if mutation.kind == "reorder" and same and not between:
            return "equivalent", (
                "the barrier moves before another instance of the same barrier with no step between them: the "
                "participants meet twice in a row, as before"
            )
    fences = ("membar.", "fence.sc", "fence.acq_rel")
    counters = any(isinstance(i, (A.Counter, A.CounterClaim)) and i.scope in ("gpu", "sys") for i in entry.stage.items)
    role = next((r.name for r in entry.stage.roles if r.entry == mutation.function), None)
    meets = any(isinstance(i, A.Rendezvous) and i.role == role and i.mode == "sync" for i in entry.stage.items)
    moved_past = mutation.kind == "reorder" and any(op.startswith(fences) for op in _moved_past(mutation, original))
    if (
        counters
        and meets
        and ((mutation.opcode.startswith(fences) and mutation.kind in ("drop-fence", "reorder", "scope")) or moved_past)
    ):
        return "equivalent", (
            "the fence only orders the role's global writes for other blocks, and those blocks read them after "
            "acquiring a gpu-scope counter that the linker's handle releases (`red.release.gpu`) after the "
            "block's rendezvous (`bar.sync`, which the role syncs): in the PTX memory model the barrier "
            "synchronises the writer with the releasing thread and causality order is transitive, so the release "
            "is cumulative over these writes with or without the fence (a grid barrier's one fence after its "
            "block barrier)"
        )
    return "accepted", ""


# Facts that are steps of some protocol: a barrier moved past one of them changes the protocol.
_STEPS = frozenset({"arrive", "wait", "expect-tx", "tensor-copy", "bulk-copy", "complete-tx", "barrier", "call"})


def _before(mutation: CodeMutation) -> range:
    """PTX lines a ``reorder`` mutant's instruction moved before (from its description)."""
    import re as _re

    found = _re.search(r"\(line (\d+)\)$", mutation.edit)
    return range(int(found.group(1)), mutation.line) if found else range(0)


def _crosses_branch(mutation: CodeMutation, ptx: str) -> bool:
    """Whether a ``reorder`` mutant moves its instruction past a branch or a label of the original PTX
    (into or out of a block that runs under another condition)."""
    lines = _before(mutation)
    return _branches(ptx.split("\n")[lines.start - 1 : lines.stop - 1])


def _branches(between: Sequence[str]) -> bool:
    """Whether PTX lines hold a branch or a label (a boundary of straight-line code)."""
    return any(re.match(r"\s*(@!?%\w+\s+)?bra(\.uni)?\s|\s*[$\w]+:", t) for t in between)


def _moved_past(mutation: CodeMutation, original: Any) -> list[str]:
    lines = _before(mutation)
    return [f.opcode for f in original.facts if f.function == mutation.function and f.line in lines]


def _hooks(entry: StageEntry) -> frozenset[str]:
    from contract_lang import ast as A
    from package.abi import init_hook_symbol

    return frozenset(
        init_hook_symbol(entry.stage, r.name)
        for r in entry.stage.rings
        if isinstance(r.first(A.RingInitBy), A.RingInitBy)
    )


def _composition(entry: StageEntry, mutation: CodeMutation, comp: Composition) -> list[Diagnostic]:
    from checker.clauses import l_conform

    assert entry.captured is not None
    mutant = dataclasses.replace(entry, captured=dataclasses.replace(entry.captured, ptx=mutation.ptx))
    stages = tuple(mutant if s is entry else s for s in comp.stages)
    return l_conform.strict(list(l_conform.ConformClause().check(dataclasses.replace(comp, stages=stages))))


def _rejected(mutation: CodeMutation, errors: Sequence[Diagnostic], at: str) -> CodeOutcome:
    checks = tuple(sorted({dict(d.data).get("check", "") for d in errors} - {""}))
    return CodeOutcome(mutation, "rejected", tuple(sorted({d.code for d in errors})), checks, at)


# ----------------------------------------------------------------- the campaign


@dataclass(frozen=True)
class CodeReport:
    subject: str
    outcomes: tuple[CodeOutcome, ...]
    planned: int
    seconds: float
    baseline: tuple[str, ...] = ()  # components with findings unmutated (undecided sites): those do not count

    def accepted(self) -> list[CodeOutcome]:
        return [o for o in self.outcomes if o.verdict == "accepted"]

    def table(self, key: Callable[[CodeOutcome], str]) -> list[dict[str, Any]]:
        rows: dict[str, Counter[str]] = {}
        for o in self.outcomes:
            rows.setdefault(key(o), Counter())[o.verdict] += 1
        return [
            {
                "name": name,
                "mutants": sum(c.values()),
                **{v: c[v] for v in ("rejected", "equivalent", "outside", "undecided", "accepted")},
            }
            for name, c in sorted(rows.items())
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "mutants": len(self.outcomes),
            "planned": self.planned,
            "seconds": round(self.seconds, 1),
            "baseline_rejected": list(self.baseline),
            "by_component": self.table(lambda o: o.mutation.component),
            "by_kind": self.table(lambda o: o.mutation.kind),
            "rejected_by": dict(Counter(c for o in self.outcomes for c in o.checks).most_common()),
            **{
                verdict: [
                    {
                        "mutant": o.mutation.describe(),
                        "why": o.mutation.equivalent,
                        "kind": o.mutation.kind,
                        "component": o.mutation.component,
                        "opcode": o.mutation.opcode,
                        "cuda": list(o.mutation.origin) if o.mutation.origin else None,
                    }
                    for o in self.outcomes
                    if o.verdict == verdict
                ]
                for verdict in ("equivalent", "outside", "undecided")
            },
            "accepted": [o.mutation.describe() for o in self.accepted()],
            "accepted_cuda": [
                {
                    "kind": o.mutation.kind,
                    "component": o.mutation.component,
                    "opcode": o.mutation.opcode,
                    "cuda": list(o.mutation.origin) if o.mutation.origin else None,
                }
                for o in self.accepted()
            ],
        }


def components(comp: Composition) -> list[StageEntry]:
    """The packages of a composition whose code the campaign mutates (those that carry PTX)."""
    return [e for e in comp.stages if e.captured is not None and e.captured.ptx]


def run_code_campaign(
    comp: Composition,
    subject: str,
    *,
    kinds: frozenset[str] | None = None,
    seconds: float | None = None,
    examples: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> CodeReport:
    """Every mutant of every component (in a fixed order), until the budget runs out."""
    from checker.clauses import l_conform

    start = time.monotonic()
    outcomes: list[CodeOutcome] = []
    baseline: list[str] = []
    planned = 0
    known: set[tuple[str, str, str]] = set()
    todo: list[tuple[StageEntry, CodeMutation]] = []
    for entry in components(comp):
        assert entry.captured is not None and entry.captured.ptx is not None
        name = entry.package or entry.source
        clean = l_conform.diagnostics(
            entry.stage, derive(entry.captured.ptx), ptx_name=f"{name}!code.ptx", source_name=None, strict=True
        )
        if any(d.is_error for d in clean):
            baseline.append(name)
        known |= {_said(d) for d in clean}
        for m in mutations(name, entry.captured.ptx):
            if kinds is None or m.kind in kinds:
                todo.append((entry, m))
    planned = len(todo)
    for entry, m in todo:
        if examples is not None and len(outcomes) >= examples:
            break
        if seconds is not None and time.monotonic() - start > seconds:
            break
        outcomes.append(judge(entry, m, comp, frozenset(known), m.component in baseline))
        if progress is not None:
            progress(1)
    return CodeReport(subject, tuple(outcomes), planned, time.monotonic() - start, tuple(baseline))
