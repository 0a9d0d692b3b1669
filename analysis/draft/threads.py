"""Which threads of a role reach an instruction: one, one per warp, one per warpgroup, or all.

A drafted arrival count (``full arrive 1``, ``empty arrive per_warp(R)``) is the number of the
role's threads that execute the ``mbarrier.arrive``. This module finds the conditions every path
to an instruction must pass (a *must* analysis over the function's control flow graph: a
condition holds at a block when it holds on every edge into it) and keeps those that select
threads: the thread's lane (``threadIdx.x & 31``, ``%laneid``), its warp or its index relative
to the role's first warp (``kl_<stage>_<role>_warp0``), its thread in a warpgroup (``% 128``),
and ``elect.sync``. A condition on anything else that differs between threads (a value loaded
from memory) makes the answer undecided; a condition every thread evaluates alike (params,
``blockIdx``, loop counters over them) and a loop's exit test (every thread leaves the loop)
select no thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from package.codefacts.ptx import Function, Instr

Reach = Literal["one", "per_warp", "per_warpgroup", "per_thread"]
#: Register kinds: the absolute thread index, its lane, its warp, the role's first warp (and x 32),
#: the index relative to the role, the warp relative to it, the thread in its warpgroup.
_KINDS = ("tid", "lane", "warp", "w0", "w0x32", "rel", "wrel", "wglane")
_LABEL = re.compile(r"^\s*(\$[\w$]+):")
#: Comparisons a bound literal holds, and the threads one index unit spans.
_CMPS = ("eq", "ne", "lt", "le", "gt", "ge")
_UNIT = {"tid": 1, "warp": 32, "wgi": 128}


@dataclass(frozen=True)
class _Lit:
    """``kind == 0`` (``eq``) or ``!= 0``; kind ``unknown`` is a condition that selects threads unknowably.

    With ``bound`` (``("lt", 4)``), the literal is ``kind < 4`` (``eq``) or its negation: a comparison of the
    absolute thread, warp or warpgroup index with a constant, which only :func:`ranges` reads."""

    kinds: frozenset[str]  # the operand: one kind, or several OR-ed together
    eq: bool
    where: int = 0
    bound: tuple[str, int] | None = None


@dataclass
class _Block:
    start: int  # index of its first instruction in the body
    end: int  # one past its last
    succ: list[tuple[int, _Lit | None]] = field(default_factory=list)


def reaches(fn: Function, ptx_lines: list[str], warp0: frozenset[str]) -> dict[int, Reach | None]:
    """For every arrive of ``fn`` (``mbarrier.arrive``, a ``tcgen05.commit`` that arrives on an mbarrier), by
    PTX line: which of the role's threads run it (None: undecided)."""
    body = fn.body
    if not any(is_arrive(i.opcode) for i in body):
        return {}
    kinds = _kinds(body, warp0)
    preds = _predicates(body, kinds)
    blocks, block_of = _blocks(body, ptx_lines, fn.line, preds)
    ignore = _loop_exits(blocks)
    must = _must(blocks, ignore)
    out: dict[int, Reach | None] = {}
    for index, ins in enumerate(body):
        if not is_arrive(ins.opcode):
            continue
        lits = set(must[block_of[index]] or ())
        own = _guard(ins.guard, preds) if ins.guard else None
        if own is not None:  # None: a condition every thread evaluates alike
            lits.add(own)
        out[ins.line] = _classify(lits)
    return out


def is_arrive(opcode: str) -> bool:
    """Whether an instruction arrives on an mbarrier once per thread that runs it."""
    return opcode.startswith("mbarrier.arrive") or (
        opcode.startswith("tcgen05.commit") and "mbarrier::arrive" in opcode
    )


def _classify(lits: set[_Lit]) -> Reach | None:
    if any(lit.kinds == {"rel"} and lit.eq and lit.bound is None for lit in lits):
        # the role's first thread alone: a bound on the index it also passes (`t < 32`) selects no other
        lits = {lit for lit in lits if not (lit.kinds == {"rel"} and lit.bound is not None and _holds_at_zero(lit))}
    if any("unknown" in lit.kinds or lit.bound is not None for lit in lits) or any(not lit.eq for lit in lits):
        return None  # a thread-varying condition, or one such as "lanes 1..31" that is no unit of the language
    zero: set[str] = set()
    for lit in lits:
        zero |= lit.kinds  # `a | b == 0`: both are zero
    if "rel" in zero or "tid" in zero or {"wrel", "lane"} <= zero:
        return "one"
    if "lane" in zero:
        return "per_warp"
    if "wglane" in zero:
        return "per_warpgroup"
    return "per_thread" if not lits else None


def _holds_at_zero(lit: _Lit) -> bool:
    """Whether index 0 passes a bound literal (``rel < 32``: yes; ``rel >= 32``: no)."""
    assert lit.bound is not None
    cmp, value = lit.bound
    holds = {"eq": value == 0, "ne": value != 0, "lt": value > 0, "le": value >= 0, "gt": value < 0, "ge": value <= 0}
    return holds[cmp] == lit.eq


def _kinds(body: tuple[Instr, ...], warp0: frozenset[str]) -> dict[str, str | frozenset[str]]:
    kinds: dict[str, str | frozenset[str]] = {}
    last_call: str | None = None
    for _ in range(3):
        for ins in body:
            ops = ins.operands
            if ins.base == "call":
                last_call = next((o.strip() for o in ops if re.fullmatch(r"[A-Za-z_$][\w$]*", o.strip())), None)
                continue
            if not ops or not re.fullmatch(r"%[\w$]+", ops[0].strip()):
                continue
            dest = ops[0].strip()
            got = _kind_of(ins, kinds, last_call, warp0)
            if got is not None and dest not in kinds:
                kinds[dest] = got
    return kinds


def _k(kinds: dict[str, str | frozenset[str]], text: str) -> str | frozenset[str] | None:
    text = text.strip()
    if text == "%tid.x":
        return "tid"
    if text == "%laneid":
        return "lane"
    return kinds.get(text)


def _const(text: str) -> int | None:
    text = text.strip().rstrip("Uu")
    return int(text, 0) if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", text) else None


def _kind_of(
    ins: Instr, kinds: dict[str, str | frozenset[str]], last_call: str | None, warp0: frozenset[str]
) -> str | frozenset[str] | None:
    ops = ins.operands
    base = ins.base
    if base == "ld" and ins.has("param") and len(ops) > 1 and "retval" in ops[1]:
        return "w0" if last_call in warp0 else None
    if base in ("mov", "cvt") and len(ops) > 1:
        return _k(kinds, ops[1])
    if len(ops) < 3:
        return None
    a, b = _k(kinds, ops[1]), _k(kinds, ops[2])
    c = _const(ops[2])
    if base in ("shl", "mul") and a == "w0" and c in (5, 32) and (base == "shl") == (c == 5):
        return "w0x32"
    if base == "sub" and a == "tid" and b == "w0x32":
        return "rel"
    if base == "sub" and a == "warp" and b == "w0":
        return "wrel"
    if base == "mad" and len(ops) > 3 and a == "w0" and c == -32 and _k(kinds, ops[3]) == "tid":
        return "rel"
    if base == "and" and a in ("tid", "rel") and c == 31:
        return "lane"
    if base == "rem" and a in ("tid", "rel") and c == 32:
        return "lane"
    if a == "rel" and ((base == "and" and c == 127) or (base == "rem" and c == 128)):
        return "wglane"
    if base in ("shr", "div") and a in ("tid", "rel") and c == (5 if base == "shr" else 32):
        return "warp" if a == "tid" else "wrel"
    if base in ("shr", "div") and a == "tid" and c == (7 if base == "shr" else 128):
        return "wgi"
    if base == "and" and a == "tid" and c in (-32, -128):  # the thread index rounded down to its warp(group)
        return "warp*32" if c == -32 else "wgi*128"
    if base == "or" and a is not None and b is not None:
        return _as_set(a) | _as_set(b)
    return None


def _as_set(kind: str | frozenset[str]) -> frozenset[str]:
    return kind if isinstance(kind, frozenset) else frozenset({kind})


def _predicates(body: tuple[Instr, ...], kinds: dict[str, str | frozenset[str]]) -> dict[str, _Lit | None]:
    """Each predicate register: the literal it is (None: it selects no thread, a uniform condition).

    Two passes: a predicate may be combined (``or.pred``) above the line that sets it (loops)."""
    earlier: dict[str, _Lit | None] = {}
    moving = varying(body)
    for _ in range(2):
        earlier = _predicate_pass(body, kinds, moving, earlier)
    return earlier


def _predicate_pass(
    body: tuple[Instr, ...],
    kinds: dict[str, str | frozenset[str]],
    moving: frozenset[str],
    earlier: dict[str, _Lit | None],
) -> dict[str, _Lit | None]:
    preds: dict[str, _Lit | None] = {}
    for ins in body:
        ops = ins.operands
        if ins.base == "elect" and ops:
            dest = ops[0].split("|")[-1].strip()
            preds[dest] = _Lit(frozenset({"lane"}), True, ins.line)
            continue
        if ins.opcode in ("or.pred", "and.pred", "not.pred") and len(ops) >= 2:
            preds[ops[0].strip()] = _combine(ins, {**earlier, **preds})
            continue
        if ins.base != "setp" or len(ops) < 3:
            continue
        dest = ops[0].split("|")[0].strip()
        cmp = ins.opcode.split(".")[1] if "." in ins.opcode else ""
        a, b = _k(kinds, ops[1]), _k(kinds, ops[2])
        zero = _const(ops[2]) == 0
        pair = {a, b}
        lit: _Lit | None
        bound = _const(ops[2])
        if a in ("warp*32", "wgi*128") and bound is not None:  # `(tid & -128) < 256` is `wgi < 2`
            unit = 32 if a == "warp*32" else 128
            a, bound = ("warp" if unit == 32 else "wgi"), (bound // unit if bound % unit == 0 else None)
        if cmp in ("eq", "ne") and zero and a is not None:
            lit = _Lit(_as_set(a), cmp == "eq", ins.line)
        elif a in ("tid", "warp", "wgi", "rel") and bound is not None and cmp in _CMPS:
            lit = _Lit(frozenset({str(a)}), True, ins.line, (cmp, bound))
        elif cmp in ("eq", "ne") and pair == {"warp", "w0"}:
            lit = _Lit(frozenset({"wrel"}), cmp == "eq", ins.line)
        elif cmp in ("eq", "ne") and pair == {"tid", "w0x32"}:
            lit = _Lit(frozenset({"rel"}), cmp == "eq", ins.line)
        elif _varies(moving, ops[1]) or _varies(moving, ops[2]):
            lit = _Lit(frozenset({"unknown"}), True, ins.line)
        else:
            lit = None
        if dest in preds and preds[dest] != lit:
            lit = _Lit(frozenset({"unknown"}), True, ins.line)  # a predicate set twice: no one literal
        preds[dest] = lit
    return preds


def _combine(ins: Instr, preds: dict[str, _Lit | None]) -> _Lit | None:
    """``or.pred`` of two "not zero" literals is "not all zero"; ``and.pred`` of two "zero" ones "all zero"."""
    parts = [_guard(o.strip(), preds) for o in ins.operands[1:3]]
    if ins.opcode == "not.pred":
        return _negate(parts[0])
    if all(p is None for p in parts):
        return None
    known = [p for p in parts if p is not None]
    want = ins.opcode == "and.pred"  # and: both "== 0"; or: both "!= 0"
    if all(p.eq == want and "unknown" not in p.kinds for p in known):
        # With a uniform part U, `A or U` is false only where A is (and `A and U` true only where A is): the edge
        # where the literal says "zero" is exact, the other edge's "not zero" only ever leaves a count undecided.
        return _Lit(frozenset().union(*(p.kinds for p in known)), want, ins.line)
    return _Lit(frozenset({"unknown"}), True, ins.line)


_PER_THREAD = re.compile(r"%(tid|laneid|lanemask_\w+|clock\w*|globaltimer\w*|smid|warpid)")
#: Results that differ between threads whatever their inputs.
_VARYING_OPS = ("atom", "shfl", "vote", "activemask", "elect", "match", "mbarrier", "redux", "tcgen05")


def varying(body: tuple[Instr, ...]) -> frozenset[str]:
    """The registers whose value may differ between the threads of a role: from the thread's index, an atomic,
    a shuffle, or memory read at an address that does (a load at a uniform address reads one value)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for ins in body:
            ops = ins.operands
            if not ops or ins.base in ("st", "bra", "call", "ret", "bar", "barrier"):
                continue
            dests = [d.strip() for d in ops[0].split("|")[0].strip("{}").split(",") if d.strip().startswith("%")]
            if not dests or all(d in found for d in dests):
                continue
            sources = " ".join(ops[1:])
            regs = set(re.findall(r"%[\w$]+", sources))
            if ins.base in _VARYING_OPS or _PER_THREAD.search(sources) or regs & found:
                found.update(dests)
                changed = True
    return frozenset(found)


def _varies(moving: frozenset[str], text: str) -> bool:
    return bool(set(re.findall(r"%[\w$]+", text)) & moving) or bool(_PER_THREAD.search(text))


def _guard(guard: str, preds: dict[str, _Lit | None]) -> _Lit | None:
    neg = guard.startswith("!")
    name = guard.lstrip("!")
    if name not in preds:
        return _Lit(frozenset({"unknown"}), True)
    lit = preds[name]
    if lit is None:
        return None
    return _Lit(lit.kinds, lit.eq != neg, lit.where)


def _blocks(
    body: tuple[Instr, ...], ptx_lines: list[str], first_line: int, preds: dict[str, _Lit | None]
) -> tuple[list[_Block], list[int]]:
    labels: dict[str, int] = {}  # label -> the PTX line it is on
    end_line = body[-1].line if body else first_line
    for number in range(first_line, min(end_line, len(ptx_lines)) + 1):
        m = _LABEL.match(ptx_lines[number - 1])
        if m:
            labels[m.group(1)] = number
    label_at: dict[str, int] = {}  # label -> index of the first instruction after it
    starts = {0}
    for name, line in labels.items():
        index = next((i for i, ins in enumerate(body) if ins.line > line), len(body))
        label_at[name] = index
        starts.add(index)
    for i, ins in enumerate(body):
        if ins.base in ("bra", "ret", "exit", "trap"):
            starts.add(i + 1)
    ordered = sorted(s for s in starts if s < len(body))
    blocks = [_Block(s, e) for s, e in zip(ordered, [*ordered[1:], len(body)], strict=True)]
    block_of = [0] * len(body)
    start_of = {b.start: n for n, b in enumerate(blocks)}
    for n, b in enumerate(blocks):
        for i in range(b.start, b.end):
            block_of[i] = n
    for n, b in enumerate(blocks):
        last = body[b.end - 1]
        falls = n + 1 < len(blocks)
        if last.base == "bra":
            target = start_of.get(label_at.get(last.operands[0].strip(), -1)) if last.operands else None
            if last.guard is None:
                if target is not None:
                    b.succ.append((target, None))
                continue
            lit = _guard(last.guard, preds)
            if target is not None:
                b.succ.append((target, lit))
            if falls:
                b.succ.append((n + 1, _negate(lit)))
        elif last.base not in ("ret", "exit", "trap") and falls:
            b.succ.append((n + 1, None))
    return blocks, block_of


def _negate(lit: _Lit | None) -> _Lit | None:
    """The other edge's literal: an unknown condition's two edges differ too, so that a join of both drops it."""
    return None if lit is None else _Lit(lit.kinds, not lit.eq, lit.where)


def _loop_exits(blocks: list[_Block]) -> set[tuple[int, int]]:
    """The edges that leave a natural loop from inside it: a loop's exit test selects no thread."""
    n = len(blocks)
    preds: list[set[int]] = [set() for _ in range(n)]
    for i, b in enumerate(blocks):
        for s, _ in b.succ:
            preds[s].add(i)
    dom: list[set[int]] = [set(range(n)) for _ in range(n)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for i in range(1, n):
            new = ({i} | set.intersection(*(dom[p] for p in preds[i]))) if preds[i] else {i}
            if new != dom[i]:
                dom[i], changed = new, True
    exits: set[tuple[int, int]] = set()
    for tail, b in enumerate(blocks):
        for head, _ in b.succ:
            if head in dom[tail]:  # a back edge: the loop of head (its predecessors outside the loop stay out)
                body = {head, tail}
                todo = [tail] if tail != head else []
                while todo:
                    for p in preds[todo.pop()]:
                        if p not in body:
                            body.add(p)
                            todo.append(p)
                for member in body:
                    for s, _ in blocks[member].succ:
                        if s not in body:
                            exits.update((member, t) for t, _ in blocks[member].succ)
    return exits


def _must(blocks: list[_Block], ignore: set[tuple[int, int]]) -> list[frozenset[_Lit] | None]:
    """At each block, the literals every path to it passes (None: unreachable so far)."""
    state: list[frozenset[_Lit] | None] = [None] * len(blocks)
    if not blocks:
        return state
    state[0] = frozenset()
    changed = True
    while changed:
        changed = False
        for i, b in enumerate(blocks):
            here = state[i]
            if here is None:
                continue
            for s, lit in b.succ:
                out = here if lit is None or (i, s) in ignore else here | {lit}
                new = out if state[s] is None else state[s] & out  # type: ignore[operator]
                if new != state[s]:
                    state[s], changed = new, True
    return state


def ranges(fn: Function, ptx_lines: list[str], lines: set[int], threads: int) -> dict[int, tuple[int, int] | None]:
    """For each instruction at a PTX line in ``lines``: the threads ``lo .. hi - 1`` of a block of ``threads``
    that every path to it selects by the absolute thread, warp or warpgroup index (None: not one range)."""
    body = fn.body
    kinds = _kinds(body, frozenset())
    preds = _predicates(body, kinds)
    blocks, block_of = _blocks(body, ptx_lines, fn.line, preds)
    must = _must(blocks, _loop_exits(blocks))
    out: dict[int, tuple[int, int] | None] = {}
    for index, ins in enumerate(body):
        if ins.line in lines:
            out[ins.line] = _range(must[block_of[index]] or frozenset(), threads)
    return out


def _range(lits: frozenset[_Lit], threads: int) -> tuple[int, int] | None:
    lo, hi = 0, threads
    for lit in lits:
        kind = next(iter(lit.kinds)) if len(lit.kinds) == 1 else ""
        if kind not in _UNIT:
            continue
        cmp, value = lit.bound if lit.bound is not None else ("eq", 0)
        if not lit.eq:
            cmp = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}[cmp]
        unit = _UNIT[kind]
        first, last = value * unit, (value + 1) * unit  # the threads of index `value`
        if cmp == "eq":
            lo, hi = max(lo, first), min(hi, last)
        elif cmp == "lt":
            hi = min(hi, first)
        elif cmp == "le":
            hi = min(hi, last)
        elif cmp == "gt":
            lo = max(lo, last)
        elif cmp == "ge":
            lo = max(lo, first)
        elif first <= lo < last:
            lo = last
        elif first < hi <= last:
            hi = first
        elif lo < first and last < hi:
            return None  # "not this index" inside the range: two ranges
    return (lo, hi) if lo < hi else None


def together(fn: Function, ptx_lines: list[str], warp0: frozenset[str], lines: set[int]) -> dict[int, bool]:
    """For each call at a PTX line in ``lines``: whether every thread of the role makes it, all together.

    Yes where the call post-dominates every branch whose condition differs between threads (it selects
    threads, or reads a value that varies) from which the call can be reached: the threads that part
    there meet again before the call, and none leaves on the way. A guarded return on such a condition,
    or a branch to a label the function does not have, is a no for every call.
    """
    body = fn.body
    kinds = _kinds(body, warp0)
    preds = _predicates(body, kinds)
    if any(i.base in ("ret", "exit", "trap") and i.guard and _guard(i.guard, preds) is not None for i in body):
        return dict.fromkeys(lines, False)
    blocks, block_of = _blocks(body, ptx_lines, fn.line, preds)
    if any(b.end > b.start and body[b.end - 1].base == "bra" and not b.succ for b in blocks):
        return dict.fromkeys(lines, False)
    n = len(blocks)
    exit_node = n
    post: list[set[int]] = [set(range(n + 1)) for _ in range(n)] + [{exit_node}]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(n)):
            nexts = [s for s, _ in blocks[i].succ] or [exit_node]
            new = {i} | set.intersection(*(post[s] for s in nexts))
            if new != post[i]:
                post[i], changed = new, True
    parting = [i for i, b in enumerate(blocks) if any(lit is not None for _, lit in b.succ)]
    out: dict[int, bool] = {}
    for index, ins in enumerate(body):
        if ins.line not in lines:
            continue
        at = block_of[index]
        own = ins.guard is not None and _guard(ins.guard, preds) is not None  # `@%p call` on a varying %p
        out[ins.line] = not own and all(at in post[b] for b in parting if at in _reachable(blocks, b))
    return out


def _reachable(blocks: list[_Block], start: int) -> set[int]:
    seen: set[int] = set()
    todo = [s for s, _ in blocks[start].succ]
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b)
            todo.extend(s for s, _ in blocks[b].succ)
    return seen


def at_most_once(fn: Function, ptx_lines: list[str], groups: list[set[int]]) -> dict[int, bool]:
    """For the instructions at the PTX lines of each group (the calls of one callee): whether each run of
    ``fn`` executes at most one of the group, once: none is on a cycle of its control flow, and none
    can be reached from another."""
    body = fn.body
    blocks, block_of = _blocks(body, ptx_lines, fn.line, _predicates(body, _kinds(body, frozenset())))
    broken = any(b.end > b.start and body[b.end - 1].base == "bra" and not b.succ for b in blocks)
    index = {ins.line: i for i, ins in enumerate(body)}
    out: dict[int, bool] = {}
    for group in groups:
        at = {line: block_of[index[line]] for line in group if line in index}
        after = {line: _reachable(blocks, b) for line, b in at.items()}
        for line, b in at.items():
            others = [o for o in at if o != line]
            out[line] = (
                not broken and b not in after[line] and not any(at[o] in after[line] or at[o] == b for o in others)
            )
    return out
