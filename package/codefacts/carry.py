"""Whether the ring position a loop starts from is the one the previous pass of the loop around it left.

A ring side's iteration loop (the innermost loop around its wait) that is nested in another loop
(a persistent kernel's loop over units of work) starts each unit from some slot and phase. A side
that does not restart its position (``restart``) must start every unit from the position the
previous unit's iteration loop left: a consumer that resets its cursor (``cur = RingCursor{}``)
while its producer carries its own on waits on the wrong slot and phase from the second unit on.

The question is answered per register a wait reads (its parity, and the register its slot's
barrier address is computed from) by a dependence analysis of one pass of the outer loop ``O``
around the iteration loop ``L``. Every value is described by what it is computed from, as two
sets of *sources*: ``may`` (on some path) and ``must`` (on every path). A source is

- ``carried``: the value a *carried* register held at the pass's start (the value the previous
  pass left in it);
- ``const``: a literal;
- ``fixed``: the same on every pass (a register no instruction of ``O`` writes, a function
  parameter, the thread's or the block's index, a shared-memory or local name);
- ``varies``: a register ``O`` writes that is not carried (a tile counter, the unit's index);
- ``opaque``: a load from memory, a call's result, anything else.

Arithmetic unions the sources of its operands (``must`` too: the result depends on each
operand on every path); a join of paths, and a select's two values, unite ``may`` and intersect
``must`` (a select whose predicate must depend on a source depends on it too). A register is
*carried* when ``L`` writes it and its value at the end of every pass must depend on the carried
registers' values at the pass's start: no path from ``L``'s writes back to ``O``'s header resets it
(a greatest fixed point: registers whose value at the pass's end does not are dropped until none
is). The register a wait reads on the first iteration of ``L`` of a pass (``L``'s back edges left
out) is then

- ``carried``: it must depend on a carried register: the position the previous pass left;
- ``reset``: it is computed from literals and values fixed across passes alone: the same
  position at every unit of work;
- ``unknown``: anything else (a reset on some paths only, a position read from memory or
  computed from the unit's index): the analysis cannot tell, which is never a pass.

**Across alternative loops** (a side's ``loops N``, specs/language.md §8.8): when ``O`` holds
another innermost loop ``K`` that runs instead of ``L`` on some passes, :meth:`Carry.across`
answers the same question for a pass that ran ``K`` followed by a pass that runs ``L``: a pass
restricted to the blocks on a path through ``K`` (those ``K`` reaches or that reach ``K`` without
``O``'s back edges) starts from ``K``'s carried registers (the rest varies); its end seeds a pass
restricted to ``L``'s path; the register the wait reads on ``L``'s first iteration is then
``carried`` (it must depend on what ``K`` carries: the position ``K`` left), ``reset`` or
``unknown`` (a cursor of ``L``'s own that ``K`` never moves is computed from values that vary).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from package.abi import HANDLE_PREFIX
from package.codefacts.flow import Flow, Loop
from package.codefacts.ptx import Instr
from package.codefacts.values import IMMEDIATE, call_arguments, callee, written

#: How a wait's register enters its iteration loop (module docstring).
CARRIED, RESET, UNKNOWN = "carried", "reset", "unknown"

Sources = frozenset[str]
Value = tuple[Sources, Sources]  # (may, must)
State = dict[str, Value]

_CONST: Value = (frozenset({"const"}), frozenset({"const"}))
_FIXED: Value = (frozenset({"fixed"}), frozenset({"fixed"}))
_VARIES: Value = (frozenset({"varies"}), frozenset({"varies"}))
_OPAQUE: Value = (frozenset({"opaque"}), frozenset({"opaque"}))
_CARRIED: Value = (frozenset({"carried"}), frozenset({"carried"}))
_MAYBE: Value = (frozenset({"carried"}), frozenset())  # a position on some paths only
_REG = re.compile(r"%[\w$]+")
# special registers whose value is the same on every pass of a loop (a thread's or the launch's)
_FIXED_SPECIAL = re.compile(
    r"^%(tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|cluster_nctaid|"
    r"cluster_ctarank|cluster_nctarank|smid|nsmid|gridid|lanemask_\w+|SP|SPL)(\.[xyz])?$"
)
# instructions whose result is what their operands hold, combined: their sources are the operands'
_COMPUTE = frozenset(
    {
        "mov", "cvt", "cvta", "add", "sub", "mul", "mad", "mul24", "mad24", "div", "rem", "abs", "neg", "min",
        "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "shf", "bfe", "bfi", "prmt", "lop3", "popc", "clz",
        "brev", "setp", "set", "slct", "sad", "addc", "subc", "madc", "shfl", "mapa",
    }
)  # fmt: skip


def _join(a: Value | None, b: Value) -> Value:
    if a is None:
        return b
    return (a[0] | b[0], a[1] & b[1])


def _combine(values: Iterable[Value]) -> Value:
    got = list(values)
    if not got:
        return _CONST
    may: Sources = frozenset().union(*(v[0] for v in got))
    must: Sources = frozenset().union(*(v[1] for v in got))
    return (may, must)


class Carry:
    """The carried-position analysis of one function's loops (module docstring)."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        body = flow.fn.body
        self._writes: dict[int, frozenset[str]] = {
            b: frozenset(r for ins in body[s:e] for r in written(ins)) for b, (s, e) in enumerate(flow.blocks)
        }
        self._registers = frozenset(r for regs in self._writes.values() for r in regs)
        self._passes: dict[tuple[int, int], tuple[dict[int, State], frozenset[str]] | None] = {}
        self._firsts: dict[tuple[int, ...], dict[int, State] | None] = {}
        self._across: dict[tuple[int, int, int], dict[int, State] | None] = {}
        self._across_firsts: dict[tuple[int, ...], dict[int, State] | None] = {}

    def entry(self, outer: Loop, inner: Loop, index: int, operand: str) -> str:
        """How ``operand`` (a register, an address ``[reg+off]`` or a literal) read by instruction ``index``
        of ``inner`` (nested in ``outer``) enters ``inner`` on a pass of ``outer``: ``carried``, ``reset`` or
        ``unknown``."""
        text = operand.strip()
        if IMMEDIATE.match(text):
            return RESET
        plain = _REG.fullmatch(text) or (text.startswith("[") and _REG.search(text))
        if not plain or self.flow.block_of[index] not in inner.body:
            return UNKNOWN
        found = self._pass(outer, inner)
        if found is None:
            return UNKNOWN
        states, _ = found
        value = self._at(outer, inner, states, index, text)
        if value is None:
            return UNKNOWN
        may, must = value
        if "carried" in must:
            return CARRIED
        if may <= {"const", "fixed"}:
            return RESET
        return UNKNOWN

    def across(self, outer: Loop, inner: Loop, other: Loop, index: int, operand: str) -> str:
        """How ``operand`` read by instruction ``index`` of ``inner`` enters ``inner`` on a pass of ``outer``
        that follows a pass which ran ``other`` (another innermost loop of ``outer``): ``carried`` (from the
        position ``other`` left), ``reset`` or ``unknown`` (module docstring)."""
        text = operand.strip()
        if IMMEDIATE.match(text):
            return RESET
        plain = _REG.fullmatch(text) or (text.startswith("[") and _REG.search(text))
        if not plain or self.flow.block_of[index] not in inner.body:
            return UNKNOWN
        key = (outer.header, inner.header, other.header)
        if key not in self._across:
            self._across[key] = self._solve_across(outer, inner, other)
        states = self._across[key]
        if states is None:
            return UNKNOWN
        value = self._first(key, inner, states, index, text)
        if value is None:
            return UNKNOWN
        may, must = value
        if "carried" in must:
            return CARRIED
        if may <= {"const", "fixed"}:
            return RESET
        return UNKNOWN

    def _solve_across(self, outer: Loop, inner: Loop, other: Loop) -> dict[int, State] | None:
        """The in-states of the blocks on a pass of ``outer`` through ``inner`` that follows a pass through
        ``other``, the registers ``other`` carries marked carried at the start of that pass (None: no fixed
        point)."""
        moved = self.carried(outer, other)
        if moved is None:
            return None
        written = frozenset(r for b in outer.body for r in self._writes[b])
        seed: State = {r: (_CARRIED if r in moved else _VARIES) for r in written}
        before = self._solve(outer, seed, self._through_loop(outer, other))
        ends = self._ends(outer, before, written) if before is not None else None
        if ends is None:
            return None
        return self._solve(outer, {r: ends.get(r, _VARIES) for r in written}, self._through_loop(outer, inner))

    def _through_loop(self, outer: Loop, inner: Loop) -> frozenset[int]:
        """The blocks of ``outer`` on a pass through ``inner``: those ``inner``'s header reaches, or that
        reach it, without ``outer``'s back edges (the header of ``outer`` included)."""
        flow = self.flow

        def walk(step: Callable[[int], Iterable[int]]) -> set[int]:
            seen = {inner.header}
            stack = [inner.header]
            while stack:
                for n in step(stack.pop()):
                    if n in outer.body and n not in seen:
                        seen.add(n)
                        if n != outer.header:  # a pass starts and ends at the header
                            stack.append(n)
            return seen

        forward = walk(lambda b: flow.succs[b])
        backward = walk(lambda b: flow.preds[b])
        return frozenset(forward | backward | {outer.header})

    def _first(
        self, key: tuple[int, int, int], inner: Loop, states: Mapping[int, State], index: int, register: str
    ) -> Value | None:
        """``register``'s value when instruction ``index`` of ``inner`` first runs, on the pass ``states``
        (``key``: the pass's, for the first iteration's states kept)."""
        return self._first_value(self._across_firsts, key, inner, states, index, register)

    def carried(self, outer: Loop, inner: Loop) -> frozenset[str] | None:
        """The registers ``inner`` carries from one pass of ``outer`` to the next (None: no fixed point)."""
        found = self._pass(outer, inner)
        return None if found is None else found[1]

    def _pass(self, outer: Loop, inner: Loop) -> tuple[dict[int, State], frozenset[str]] | None:
        """The in-states of ``outer``'s blocks on a pass, and its carried registers (None: no fixed point)."""
        key = (outer.header, inner.header)
        if key not in self._passes:
            self._passes[key] = self._solve_pass(outer, inner)
        return self._passes[key]

    def _solve_pass(self, outer: Loop, inner: Loop) -> tuple[dict[int, State], frozenset[str]] | None:
        written = frozenset(r for b in outer.body for r in self._writes[b])
        candidates = carried = frozenset(r for b in inner.body for r in self._writes[b])
        for _ in range(len(carried) + 2):
            seed: State = {r: (_CARRIED if r in carried else _VARIES) for r in written}
            states = self._solve(outer, seed)
            ends = self._ends(outer, states, carried) if states is not None else None
            if states is None or ends is None:
                return None
            kept = frozenset(r for r in carried if r in ends and "carried" in ends[r][1])
            if kept == carried:
                break
            carried = kept
        else:
            return None
        # the other registers the loop writes start a later pass with what the passes before left in
        # them: the join of every pass's end, the first pass starting from any previous value (one the
        # inner loop wrote may be a position on some paths; another varies): a register reset after the
        # inner loop starts every later pass reset, a counter the loop adds to varies
        others = written - candidates - carried
        moved = (candidates - carried) & written
        start: State = {**{r: _VARIES for r in others}, **{r: _MAYBE for r in moved}}
        others |= moved
        first_done = False
        for _ in range(64):
            seed = {**start, **{r: _CARRIED for r in carried}}
            states = self._solve(outer, seed)
            ends = self._ends(outer, states, others) if states is not None else None
            if states is None or ends is None:
                return None
            joined = {r: _join(start.get(r), ends[r]) if first_done else ends[r] for r in others if r in ends}
            if first_done and joined == start:
                return states, carried
            start, first_done = joined, True
        return None

    def _ends(self, outer: Loop, states: Mapping[int, State], registers: frozenset[str]) -> State | None:
        """The values ``registers`` hold at the end of a pass of ``outer`` (on the edges back to its header)."""
        back = [p for p in self.flow.preds[outer.header] if p in outer.body and p in states]
        if not back:
            return None
        ends: State = {}
        for p in back:
            out = self._through(p, states[p])
            for r in registers:
                got = out.get(r)
                if got is not None:
                    ends[r] = _join(ends.get(r), got)
        return ends

    def _solve(self, loop: Loop, seed: State, within: frozenset[int] | None = None) -> dict[int, State] | None:
        """The in-state of every block of ``loop`` on one pass: its header starts from ``seed``, the
        edges back to the header are left out, every other edge kept (the loops inside iterate to a
        fixed point). ``within``: the blocks the pass may run (every block of ``loop`` when None)."""
        flow = self.flow
        body = loop.body if within is None else loop.body & within
        order = [b for b in flow.rpo if b in body]
        states: dict[int, State] = {}
        outs: dict[int, State] = {}
        for _ in range(64):
            changed = False
            for b in order:
                if b == loop.header:
                    state = dict(seed)
                else:
                    state = {}
                    for p in flow.preds[b]:
                        if p not in outs or p not in body:
                            continue
                        for r, v in outs[p].items():
                            state[r] = _join(state.get(r), v)
                if states.get(b) != state:
                    states[b] = state
                    outs[b] = self._through(b, state)
                    changed = True
            if not changed:
                return states
        return None

    def _through(self, block: int, state: State) -> State:
        s, e = self.flow.blocks[block]
        return self._run(dict(state), s, e)

    def _run(self, state: State, start: int, stop: int) -> State:
        body = self.flow.fn.body
        passed: dict[str, Value] = {}  # what a call's parameters hold (``st.param``)
        result = _OPAQUE  # what the last call returned
        for ins in body[start:stop]:
            if ins.base == "st" and ins.has("param") and len(ins.operands) == 2:
                passed[ins.operands[0].strip("[] ").split("+")[0].strip()] = self._operand(ins.operands[1], state)
                continue
            if ins.base == "call":
                # a handle of the ABI (``kl_…``) is a function of its arguments alone, the same on every pass
                # (a ring's barrier, slot or depth); any other call's result is opaque
                target = callee(ins) or ""
                args = call_arguments(ins)
                pure = target.startswith(HANDLE_PREFIX) and all(a in passed for a in args)
                result = _combine([_FIXED, *(passed[a] for a in args)]) if pure else _OPAQUE
                passed = {}
                for r in written(ins):
                    state[r] = result
                continue
            dests = written(ins)
            if not dests:
                continue
            if ins.base == "ld" and ins.has("param") and len(ins.operands) >= 2 and "retval" in ins.operands[1]:
                value = result
            else:
                value = self._value(ins, state)
            for r in dests:
                state[r] = _join(state.get(r), value) if ins.guard else value
        return state

    def _value(self, ins: Instr, state: Mapping[str, Value]) -> Value:
        ops = ins.operands
        base = ins.base
        if base == "ld":
            if ins.has("param") and len(ops) >= 2 and "retval" not in ops[1]:
                return _FIXED  # a parameter of the function: the same on every pass
            return _OPAQUE
        if base == "selp" and len(ops) == 4:
            a, b, p = (self._operand(o, state) for o in ops[1:4])
            if a == b == _CONST and ops[1].strip() == ops[2].strip():
                return _CONST
            return (a[0] | b[0] | p[0], (a[1] & b[1]) | p[1])
        if base in _COMPUTE:
            return _combine(self._operand(o, state) for o in ops[1:])
        return _OPAQUE

    def _operand(self, text: str, state: Mapping[str, Value]) -> Value:
        t = text.strip().lstrip("!")
        if not t:
            return _CONST
        if IMMEDIATE.match(t) or t.startswith(("0f", "0d")):
            return _CONST
        if _FIXED_SPECIAL.match(t):
            return _FIXED
        if t.startswith("%"):
            if t in state:
                return state[t]
            # written nowhere in the loop: the same on every pass; a special register otherwise
            return _FIXED if t in self._registers or t in self.flow.fn.params else _OPAQUE
        if t.startswith("[") or t.startswith("{"):
            parts = _REG.findall(t)
            return _combine(self._operand(p, state) for p in parts) if parts else _FIXED
        return _FIXED  # a name: a shared or local variable's address, a function's

    def _at(self, outer: Loop, inner: Loop, states: Mapping[int, State], index: int, register: str) -> Value | None:
        """``register``'s value when instruction ``index`` of ``inner`` first runs in a pass."""
        return self._first_value(self._firsts, (outer.header, inner.header), inner, states, index, register)

    def _first_value(
        self,
        cache: dict[tuple[int, ...], dict[int, State] | None],
        key: tuple[int, ...],
        inner: Loop,
        states: Mapping[int, State],
        index: int,
        register: str,
    ) -> Value | None:
        """``register`` at instruction ``index`` on ``inner``'s first iteration, entered from the states
        ``states`` of the blocks before it (the first iteration's states kept in ``cache`` under ``key``)."""
        flow = self.flow
        if key not in cache:
            entries = [p for p in flow.preds[inner.header] if p not in inner.body and p in states]
            seed: State = {}
            for p in entries:
                for r, v in self._through(p, states[p]).items():
                    seed[r] = _join(seed.get(r), v)
            cache[key] = self._solve(inner, seed) if entries else None
        first = cache[key]
        block = flow.block_of[index]
        if first is None or block not in first:
            return None
        state = self._run(dict(first[block]), flow.blocks[block][0], index)
        return self._operand(register, state)
