"""The control flow of one PTX function: blocks, loops, control dependence, and first-iteration constants.

- **Blocks** start at the function's first instruction, at every label and after every
  branch, return or exit; a guarded branch has two successors, a guarded return one.
- **Order**: blocks in reverse post-order of a depth-first walk from the entry, so every
  instruction's position (:attr:`Flow.order`) precedes the positions of the instructions
  it reaches without crossing a back edge.
- **Loops**: the natural loop of every back edge (an edge to a block that dominates its
  source), merged per header.
- **Control dependence** (on the post-dominator tree, with one virtual exit after every
  return): the branch edges that decide whether a block runs. A back edge decides whether
  an iteration runs again, not which threads run the block, so it is left out.
- **First-iteration constants**: the value a register holds when an instruction first runs,
  from a constant propagation over the blocks in order that ignores back edges (so every
  loop is in its first iteration). The parity a wait first uses is read this way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from package.codefacts.ptx import Function, Instr
from package.codefacts.values import FOLDS, IMMEDIATE, callee, defines, written

_ENDS = frozenset({"ret", "exit", "trap"})


@dataclass(frozen=True)
class Loop:
    """A natural loop: its header block and every block of its body (the header included)."""

    header: int
    body: frozenset[int]


@dataclass(frozen=True)
class Edge:
    """A branch edge: from block ``block`` (which ends in a guarded branch) along ``taken`` (to the label)
    or its fall-through."""

    block: int
    taken: bool


class Flow:
    """The control flow of one function (module docstring)."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        body = fn.body
        labels = dict(fn.labels)
        leaders = {0} | {i for _, i in fn.labels if i < len(body)}
        for i, ins in enumerate(body):
            if ins.base in ("bra", "brx") or ins.base in _ENDS:
                leaders.add(i + 1)
        starts = sorted(i for i in leaders if i < len(body))
        self.blocks: tuple[tuple[int, int], ...] = tuple(
            (s, starts[k + 1] if k + 1 < len(starts) else len(body)) for k, s in enumerate(starts)
        )
        block_at = {s: k for k, (s, _) in enumerate(self.blocks)}
        self.block_of: tuple[int, ...] = tuple(k for k, (s, e) in enumerate(self.blocks) for _ in range(s, e))
        succs: list[tuple[int, ...]] = []
        self.branch: dict[int, Instr] = {}
        for k, (s, e) in enumerate(self.blocks):
            last = body[e - 1] if e > s else None
            after = (k + 1,) if k + 1 < len(self.blocks) else ()
            if last is not None and last.base == "bra" and last.operands:
                target = block_at.get(labels.get(last.operands[0].strip(), -1))
                to = (target,) if target is not None else ()
                if last.guard:
                    self.branch[k] = last
                    succs.append(tuple(dict.fromkeys(to + after)))
                else:
                    succs.append(to)
            elif last is not None and (last.base in _ENDS or last.base == "brx"):
                succs.append(after if last.guard else ())
            else:
                succs.append(after)
        self.succs: tuple[tuple[int, ...], ...] = tuple(succs)
        self.preds: tuple[tuple[int, ...], ...] = tuple(
            tuple(p for p in range(len(succs)) if k in succs[p]) for k in range(len(succs))
        )
        self.rpo: tuple[int, ...] = _reverse_postorder(self.succs, 0) if self.blocks else ()
        rank = {b: n for n, b in enumerate(self.rpo)}
        self.rank: Mapping[int, int] = rank
        self.order: tuple[int, ...] = tuple(
            rank.get(self.block_of[i], len(self.blocks)) * (len(body) + 1) + i for i in range(len(body))
        )
        self.idom = _dominators(self.rpo, self.preds)
        self.back: frozenset[tuple[int, int]] = frozenset(
            (u, v) for u in self.rpo for v in self.succs[u] if v in rank and self.dominates(v, u)
        )
        self.loops: tuple[Loop, ...] = self._loops()

    # ---- dominance and loops

    def dominates(self, a: int, b: int) -> bool:
        while True:
            if a == b:
                return True
            up = self.idom.get(b)
            if up is None or up == b:
                return False
            b = up

    def _loops(self) -> tuple[Loop, ...]:
        bodies: dict[int, set[int]] = {}
        for u, v in sorted(self.back):
            body = bodies.setdefault(v, {v})
            stack = [u]
            while stack:
                x = stack.pop()
                if x not in body:
                    body.add(x)
                    stack.extend(p for p in self.preds[x] if p in self.rank)
        return tuple(Loop(h, frozenset(b)) for h, b in sorted(bodies.items(), key=lambda kv: self.rank[kv[0]]))

    def loops_of(self, index: int) -> tuple[Loop, ...]:
        """The loops containing instruction ``index``, outermost first."""
        block = self.block_of[index]
        inside = [lp for lp in self.loops if block in lp.body]
        return tuple(sorted(inside, key=lambda lp: -len(lp.body)))

    def reachable(self, index: int) -> bool:
        return self.block_of[index] in self.rank

    def precedes(self, a: int, b: int) -> bool:
        """Whether a path without a back edge runs instruction ``a`` and then instruction ``b``."""
        ba, bb = self.block_of[a], self.block_of[b]
        if ba == bb:
            return a < b
        return bb in self._forward.get(ba, frozenset())

    @functools.cached_property
    def _forward(self) -> dict[int, frozenset[int]]:
        """The blocks each block reaches without a back edge."""
        out: dict[int, frozenset[int]] = {}
        for b in reversed(self.rpo):
            found: set[int] = set()
            for n in self.succs[b]:
                if (b, n) not in self.back and n in out:
                    found.add(n)
                    found |= out[n]
            out[b] = frozenset(found)
        return out

    # ---- control dependence

    @functools.cached_property
    def _ipdom(self) -> dict[int, int]:
        """Immediate post-dominators; ``-1`` is the virtual exit after every return."""
        exit_ = -1
        rsuccs: dict[int, tuple[int, ...]] = {exit_: tuple(b for b in self.rpo if not self.succs[b])}
        for b in self.rpo:
            rsuccs[b] = tuple(p for p in self.preds[b] if p in self.rank)
        rpo = _reverse_postorder(rsuccs, exit_)
        rpreds: dict[int, tuple[int, ...]] = {b: () for b in rpo}
        for b in self.rpo:
            rpreds[b] = (*self.succs[b], *((exit_,) if not self.succs[b] else ()))
        return _dominators(rpo, rpreds)

    def control(self, block: int) -> tuple[Edge, ...]:
        """The branch edges block ``block`` is control dependent on (back edges left out)."""
        return self._control.get(block, ())

    @functools.cached_property
    def _control(self) -> dict[int, tuple[Edge, ...]]:
        ipdom = self._ipdom
        found: dict[int, list[Edge]] = {}
        for a, ins in self.branch.items():
            if a not in self.rank:
                continue
            target, fall = self.branch_targets(a, ins)
            for b, taken in ((target, True), (fall, False)):
                if b is None or (a, b) in self.back or b not in ipdom:
                    continue
                stop = ipdom.get(a)
                x: int | None = b
                seen: set[int] = set()
                while x is not None and x != stop and x != -1 and x not in seen:
                    seen.add(x)
                    found.setdefault(x, []).append(Edge(a, taken))
                    up = ipdom.get(x)
                    x = None if up == x else up
        return {b: tuple(edges) for b, edges in found.items()}

    def branch_targets(self, block: int, ins: Instr) -> tuple[int | None, int | None]:
        labels = dict(self.fn.labels)
        start = labels.get(ins.operands[0].strip())
        target = self.block_of[start] if start is not None and start < len(self.block_of) else None
        fall = block + 1 if block + 1 < len(self.blocks) else None
        if target == fall:  # a branch to the next block decides nothing
            return None, None
        return target, fall

    # ---- reaching definitions

    def defined(self, index: int, register: str) -> bool:
        """Whether some path (loops included) defines ``register`` before instruction ``index`` runs."""
        block = self.block_of[index]
        if block not in self.rank:
            return True
        if register in self._defined_in[block]:
            start = self.blocks[block][0]
            if any(register in written(ins) for ins in self.fn.body[start:index]):
                return True
        elif any(register in written(ins) for ins in self.fn.body[self.blocks[block][0] : index]):
            return True
        return register in self._reaching[block]

    def assigned(self, index: int, register: str) -> bool:
        """Whether every path from the function's entry defines ``register`` before instruction ``index`` runs:
        else, on some path, the instruction reads no value or one left by an earlier pass of a loop (a
        definition moved after its use)."""
        block = self.block_of[index]
        if block not in self.rank:
            return True
        start = self.blocks[block][0]
        if any(register in written(ins) for ins in self.fn.body[start:index]):
            return True
        return register in self._assigned[block]

    def invariant(self, index: int, register: str) -> bool:
        """Whether ``register`` keeps its value across the iterations of the innermost loop around ``index``
        (no instruction of that loop defines it); False outside any loop."""
        inside = self.loops_of(index)
        if not inside:
            return False
        return all(register not in self._defined_in[b] for b in inside[-1].body)

    @functools.cached_property
    def _defined_in(self) -> dict[int, frozenset[str]]:
        return {
            b: frozenset(r for ins in self.fn.body[s:e] for r in written(ins)) for b, (s, e) in enumerate(self.blocks)
        }

    @functools.cached_property
    def _reaching(self) -> dict[int, frozenset[str]]:
        """The registers some definition reaches at each block's entry (a may-analysis over every edge)."""
        params = frozenset(self.fn.params)
        entry: dict[int, set[str]] = {b: set() for b in self.rpo}
        changed = True
        while changed:
            changed = False
            for b in self.rpo:
                found = set(params) if b == self.rpo[0] else set()
                for p in self.preds[b]:
                    if p in entry:
                        found |= entry[p] | self._defined_in[p]
                if found != entry[b]:
                    entry[b] = found
                    changed = True
        return {b: frozenset(r) for b, r in entry.items()}

    @functools.cached_property
    def _assigned(self) -> dict[int, frozenset[str]]:
        """The registers every path defines before each block's entry (a must-analysis: the meet over the
        reachable predecessors, from the parameters at the entry; a guarded definition counts)."""
        params = frozenset(self.fn.params)
        every = params.union(*self._defined_in.values())
        out: dict[int, frozenset[str]] = {b: every for b in self.rpo}
        entry: dict[int, frozenset[str]] = {}
        changed = True
        while changed:
            changed = False
            for b in self.rpo:
                preds = [p for p in self.preds[b] if p in self.rank]
                found = frozenset.intersection(*(out[p] for p in preds)) if preds else every
                if b == self.rpo[0]:
                    found = found & params  # the entry: only the parameters hold a value
                entry[b] = found
                new = found | self._defined_in[b]
                if new != out[b]:
                    out[b] = new
                    changed = True
        return entry

    # ---- first-iteration constants

    def first(self, index: int, operand: str, results: Mapping[str, int] | None = None) -> int | None:
        """The constant ``operand`` holds when instruction ``index`` first runs (None: not a constant).

        ``results``: functions whose call results count as these constants (a ring's depth handle at one
        depth), every other call's result being unknown.
        """
        text = operand.strip()
        if IMMEDIATE.match(text):
            return int(text.rstrip("Uu"), 0)
        block = self.block_of[index]
        if block not in self.rank:
            return None
        known = tuple(sorted((results or {}).items()))
        state = dict(self._entry_states(known)[block])
        start = self.blocks[block][0]
        called: list[str | None] = [None]
        for ins in self.fn.body[start:index]:
            _step(state, ins, dict(known), called)
        return state.get(text)

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one Flow per function, kept while its facts are derived
    def _entry_states(self, known: tuple[tuple[str, int], ...] = ()) -> dict[int, dict[str, int | None]]:
        results = dict(known)
        entry: dict[int, dict[str, int | None]] = {}
        out: dict[int, dict[str, int | None]] = {}
        for b in self.rpo:
            incoming = [p for p in self.preds[b] if p in out and (p, b) not in self.back]
            state: dict[str, int | None] = dict(out[incoming[0]]) if incoming else {}
            for p in incoming[1:]:
                other = out[p]
                for reg in set(state) | set(other):
                    if state.get(reg) != other.get(reg):
                        state[reg] = None
            entry[b] = state
            after = dict(state)
            s, e = self.blocks[b]
            called: list[str | None] = [None]
            for ins in self.fn.body[s:e]:
                _step(after, ins, results, called)
            out[b] = after
        return entry

    def first_beyond(self, index: int, operand: str, handle: str, bound: int) -> int | None:
        """The constant ``operand`` holds when instruction ``index`` first runs, the same for every result
        ``d >= bound`` of function ``handle`` (a ring's depth): ``d`` may only be copied or compared with
        constants below ``bound`` (``slot + 1 == depth`` is then false, ``slot < depth`` true); any other use
        of it, or of a value computed from it, makes what it reaches unknown. None: no such constant."""
        big = 1 << 40  # stands for every d >= bound: only comparisons with constants below bound read it
        text = operand.strip()
        block = self.block_of[index]
        if block not in self.rank:
            return None
        states = self._beyond_states(handle, big, bound)
        if states is None:
            return None
        state, depth = dict(states[block][0]), set(states[block][1])
        called: list[str | None] = [None]
        start = self.blocks[block][0]
        for ins in self.fn.body[start:index]:
            if not _beyond_step(state, depth, ins, handle, big, bound, called):
                return None
        value = state.get(text)
        return None if value is None or text in depth else value

    @functools.lru_cache(maxsize=16)  # noqa: B019 - one Flow per function, kept while its facts are derived
    def _beyond_states(
        self, handle: str, big: int, bound: int
    ) -> dict[int, tuple[dict[str, int | None], frozenset[str]]] | None:
        entry: dict[int, tuple[dict[str, int | None], frozenset[str]]] = {}
        out: dict[int, tuple[dict[str, int | None], frozenset[str]]] = {}
        for b in self.rpo:
            incoming = [p for p in self.preds[b] if p in out and (p, b) not in self.back]
            state: dict[str, int | None] = dict(out[incoming[0]][0]) if incoming else {}
            depth = set(out[incoming[0]][1]) if incoming else set()
            for p in incoming[1:]:
                other, others = out[p]
                for reg in set(state) | set(other):
                    if state.get(reg) != other.get(reg):
                        state[reg] = None
                depth &= others
            entry[b] = (state, frozenset(depth))
            after, now = dict(state), set(depth)
            called: list[str | None] = [None]
            s, e = self.blocks[b]
            for ins in self.fn.body[s:e]:
                if not _beyond_step(after, now, ins, handle, big, bound, called):
                    return None
            out[b] = (after, frozenset(now))
        return entry

    def by_count(
        self,
        index: int,
        operand: str,
        counted: frozenset[int],
        results: tuple[tuple[str, int], ...] = (),
        beyond: tuple[str, int] | None = None,
        cap: int = 16,
    ) -> dict[int, int | None] | None:
        """The constant ``operand`` holds when instruction ``index`` first runs, per count ``k`` of the
        instructions ``counted`` a path without a back edge runs before it: paths with the same count are
        joined, paths with different counts kept apart (a peeled copy after a loop that ran or did not).
        ``results``: call results fixed as in :meth:`first`; ``beyond``: ``(handle, bound)``, the handle's
        result any value of ``bound`` or more, as in :meth:`first_beyond`. None: more than ``cap`` counts,
        or (``beyond``) the handle's result used otherwise than there."""
        states = self._keyed(counted, results, beyond, cap)
        block = self.block_of[index]
        if states is None or block not in states:
            return None
        start = self.blocks[block][0]
        text = operand.strip()
        out: dict[int, int | None] = {}
        for k, (regs, depth) in states[block].items():
            state, now = dict(regs), set(depth)
            step = _Stepper(results, beyond)
            for i in range(start, index):
                if not step(state, now, self.fn.body[i]):
                    return None
                k += i in counted
            value = state.get(text)
            out[k] = None if value is None or text in now else value
        return out

    @functools.lru_cache(maxsize=32)  # noqa: B019 - one Flow per function, kept while its facts are derived
    def _keyed(
        self,
        counted: frozenset[int],
        results: tuple[tuple[str, int], ...],
        beyond: tuple[str, int] | None,
        cap: int,
    ) -> dict[int, dict[int, tuple[dict[str, int | None], frozenset[str]]]] | None:
        Keyed = dict[int, tuple[dict[str, int | None], frozenset[str]]]
        entry: dict[int, Keyed] = {}
        out: dict[int, Keyed] = {}
        for b in self.rpo:
            merged: Keyed = {0: ({}, frozenset())} if b == self.rpo[0] else {}
            for p in (p for p in self.preds[b] if p in out and (p, b) not in self.back):
                for k, (regs, depth) in out[p].items():
                    if k not in merged:
                        merged[k] = (dict(regs), depth)
                        continue
                    mine, mine_depth = merged[k]
                    joined = {r: v for r, v in mine.items() if regs.get(r) == v}
                    joined.update({r: None for r in set(mine) ^ set(regs)})
                    merged[k] = (joined, mine_depth & depth)
            if len(merged) > cap:
                return None
            entry[b] = merged
            after: Keyed = {}
            s, e = self.blocks[b]
            for k, (regs, depth) in merged.items():
                state, now = dict(regs), set(depth)
                step = _Stepper(results, beyond)
                for i in range(s, e):
                    if not step(state, now, self.fn.body[i]):
                        return None
                    k += i in counted
                if k > cap:
                    return None
                after[k] = (state, frozenset(now))
            out[b] = after
        return entry

    def prior(self, index: int, counted: frozenset[int], cap: int = 16) -> tuple[int, ...] | None:
        """How many of the instructions ``counted`` a path without a back edge runs before instruction
        ``index`` (every such count, sorted; None: more than ``cap`` counts, or one past ``cap``)."""
        at_entry: dict[int, frozenset[int] | None] = {}
        for b in self.rpo:
            incoming = [p for p in self.preds[b] if p in at_entry and (p, b) not in self.back]
            counts: frozenset[int] | None = frozenset({0}) if b == self.rpo[0] else frozenset()
            for p in incoming:
                got = self._through(p, at_entry[p], counted, len(self.fn.body), cap)
                counts = None if counts is None or got is None else counts | got
            at_entry[b] = counts
        block = self.block_of[index]
        if block not in at_entry:
            return None
        found = self._through(block, at_entry[block], counted, index, cap)
        return None if found is None or len(found) > cap else tuple(sorted(found))

    def _through(
        self, block: int, counts: frozenset[int] | None, counted: frozenset[int], stop: int, cap: int
    ) -> frozenset[int] | None:
        s, e = self.blocks[block]
        extra = sum(1 for i in range(s, min(e, stop)) if i in counted)
        if counts is None or any(c + extra > cap for c in counts):
            return None
        return frozenset(c + extra for c in counts)


class _Stepper:
    """One instruction at a time of :meth:`Flow.by_count`: fixed call results, or a handle's result
    standing for every value past a bound (``_beyond_step``), across one block."""

    def __init__(self, results: tuple[tuple[str, int], ...], beyond: tuple[str, int] | None) -> None:
        self.results = dict(results)
        self.beyond = beyond
        self.called: list[str | None] = [None]

    def __call__(self, state: dict[str, int | None], depth: set[str], ins: Instr) -> bool:
        if self.beyond is not None:
            handle, bound = self.beyond
            return _beyond_step(state, depth, ins, handle, 1 << 40, bound, self.called)
        _step(state, ins, self.results, self.called)
        return True


def _beyond_step(
    state: dict[str, int | None],
    depth: set[str],
    ins: Instr,
    handle: str,
    big: int,
    bound: int,
    called: list[str | None],
) -> bool:
    """One instruction of :meth:`Flow.first_beyond` (False: the depth is compared with a constant of
    ``bound`` or more, so no one value holds beyond it)."""
    ops = ins.operands
    if ins.base == "call":
        called[0] = callee(ins)
        return True
    reads = [r for o in ops[1:] for r in re.findall(r"%[\w$.]+", o)] + ([ins.guard.lstrip("!")] if ins.guard else [])
    dests = [d.strip() for d in ops[0].strip("{} ").split(",")] if ops and defines(ins) else []
    if ins.base == "ld" and ins.has("param") and len(ops) == 2 and "retval" in ops[1] and called[0] == handle:
        state[dests[0]] = big
        depth.add(dests[0])
        return True
    uses = [r for r in reads if r in depth]
    if not uses:
        _step(state, ins)
        depth.difference_update(dests)
        return True
    if ins.base in ("mov", "cvt") and len(ops) == 2 and not ins.guard:
        state[dests[0]] = big
        depth.add(dests[0])
        return True
    if ins.base == "setp" and len(ops) == 3 and not ins.guard:
        other = [o.strip() for o in ops[1:] if o.strip() not in depth]
        value = None
        if len(other) == 1:
            value = int(other[0].rstrip("Uu"), 0) if IMMEDIATE.match(other[0]) else state.get(other[0])
        if value is not None and value < bound:
            _step(state, ins)
            depth.difference_update(dests)
            return True
        if value is not None:
            return False
    for d in dests:  # any other use: unknown from here on
        state[d] = None
        depth.discard(d)
    return True


def _step(
    state: dict[str, int | None],
    ins: Instr,
    results: Mapping[str, int] | None = None,
    called: list[str | None] | None = None,
) -> None:
    """One instruction of the first-iteration constant propagation (``results``: the constant results of
    these functions; ``called``: the function the block called last, kept across its instructions)."""
    ops = ins.operands
    if ins.base == "call" and called is not None:
        called[0] = callee(ins)
        return
    if (
        results
        and called is not None
        and ins.base == "ld"
        and ins.has("param")
        and len(ops) == 2
        and "retval" in ops[1]
        and called[0] in results
    ):
        state[ops[0].strip()] = results[str(called[0])]
        return
    if not ops or not defines(ins) or ins.base == "call":
        return
    dest = ops[0].strip()
    if not dest.startswith("%"):
        return
    if ins.guard:
        state[dest] = None
        return

    def val(text: str) -> int | None:
        t = text.strip()
        if IMMEDIATE.match(t):
            return int(t.rstrip("Uu"), 0)
        return state.get(t)

    base = ins.base
    value: int | None = None
    if base in ("mov", "cvt") and len(ops) == 2:
        value = val(ops[1])
    elif base == "selp" and len(ops) == 4:
        a, b, p = val(ops[1]), val(ops[2]), state.get(ops[3].strip())
        value = (a if p else b) if p is not None else (a if a == b else None)
    elif base == "setp" and len(ops) == 3:
        value = _compare(ins, val(ops[1]), val(ops[2]))
    elif base in FOLDS and len(ops) >= 2:
        args = [val(o) for o in ops[1:]]
        if all(a is not None for a in args):
            try:
                value = FOLDS[base]([a for a in args if a is not None]) & 0xFFFFFFFFFFFFFFFF
            except (ZeroDivisionError, ValueError):
                value = None
    state[dest] = value


def _compare(ins: Instr, a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    parts = ins.opcode.split(".")
    cmp = parts[1] if len(parts) > 1 else ""
    table = {
        "eq": a == b,
        "ne": a != b,
        "lt": a < b,
        "lo": a < b,
        "le": a <= b,
        "ls": a <= b,
        "gt": a > b,
        "hi": a > b,
        "ge": a >= b,
        "hs": a >= b,
    }
    result = table.get(cmp)
    return None if result is None else int(result)


def _reverse_postorder(
    succs: Mapping[int, tuple[int, ...]] | tuple[tuple[int, ...], ...], start: int
) -> tuple[int, ...]:
    def nexts(b: int) -> tuple[int, ...]:
        return succs[b] if isinstance(succs, tuple) else succs.get(b, ())

    seen = {start}
    post: list[int] = []
    stack: list[tuple[int, int]] = [(start, 0)]
    while stack:
        b, k = stack[-1]
        out = nexts(b)
        if k < len(out):
            stack[-1] = (b, k + 1)
            n = out[k]
            if n not in seen:
                seen.add(n)
                stack.append((n, 0))
        else:
            stack.pop()
            post.append(b)
    return tuple(reversed(post))


def _dominators(
    rpo: tuple[int, ...], preds: Mapping[int, tuple[int, ...]] | tuple[tuple[int, ...], ...]
) -> dict[int, int]:
    """Immediate dominators (Cooper, Harvey and Kennedy's iteration) of the blocks in ``rpo``."""
    if not rpo:
        return {}
    index = {b: n for n, b in enumerate(rpo)}
    idom: dict[int, int] = {rpo[0]: rpo[0]}

    def before(b: int) -> tuple[int, ...]:
        return preds[b] if isinstance(preds, tuple) else preds.get(b, ())

    def intersect(a: int, b: int) -> int:
        while a != b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            done = [p for p in before(b) if p in idom]
            if not done:
                continue
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom
