"""Which threads of a role run an instruction: the guards of a PTX function, read from its branches.

A role's synchronisation counts depend on *which* of its threads run each instruction:
an `mbarrier.arrive` under `if (lane == 0)` arrives once per warp, under
`if (threadIdx.x % 128 == 0)` (in a warpgroup-aligned role) once per warpgroup, and
unguarded once per thread. This module reads that from the code, contract-free:

- every register gets a symbolic form where it can: an affine form over ``%tid.x``, the
  handles' results and opaque thread-invariant values, or a *thread quantity* — the lane
  (``tid % 32``, ``%laneid``), the warp (``tid / 32``), the thread of a warpgroup
  (``tid % 128``), the warpgroup (``tid / 128``), each absolute or relative to the role's
  first warp (the ``*_warp0`` handle) — plus an offset;
- a comparison of a thread quantity with a constant is an *atom* (``("lane", "eq", 0)``),
  ``elect.sync`` the atom ``("elect", "eq", 1)``; predicates combine atoms (``and``/``or``/
  ``not``); a thread-invariant condition (a loop bound, a params value) selects no threads,
  so it is no atom; a thread-dependent one the analysis cannot read is unknown;
- an instruction's **guard** is a disjunction of conjunctions of atoms (``((),)``: every
  thread; ``None``: the analysis cannot tell), the conditions of the branch edges its block
  is control dependent on (:mod:`.flow`), and its own ``@p``.

Quantities: ``lane``, ``warp`` (relative), ``awarp`` (absolute), ``wgt`` (thread of the
warpgroup, relative), ``awgt`` (absolute: the same in a warpgroup-aligned role), ``wg``,
``awg``, ``thread`` (relative thread index), ``atid`` (absolute), ``elect``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from package.codefacts.flow import Flow
from package.codefacts.ptx import Instr
from package.codefacts.values import IMMEDIATE, callee, defines

Atom = tuple[str, str, int]
Conj = frozenset[Atom]
Dnf = frozenset[Conj]
TRUE: Dnf = frozenset({frozenset()})
FALSE: Dnf = frozenset()
_CAP = 8  # conjunctions kept before a guard is given up as unknown
_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
_CMP = {"eq": "eq", "ne": "ne", "lt": "lt", "lo": "lt", "le": "le", "ls": "le", "gt": "gt", "hi": "gt", "ge": "ge"}
_CMP["hs"] = "ge"
_VARYING_SOURCES = re.compile(r"^%(tid|laneid|warpid|lanemask_\w+|clock\w*|globaltimer\w*|smid|nsmid)")
_REG = re.compile(r"^%?[A-Za-z_$][\w$]*$")


@dataclass(frozen=True)
class Lin:
    """An affine form: ``sum(coef * symbol) + const`` (symbols: ``tid``, ``h:<handle>``, ``u:<register>``)."""

    terms: tuple[tuple[str, int], ...]
    const: int = 0

    def coef(self, symbol: str) -> int:
        return dict(self.terms).get(symbol, 0)

    def plus(self, other: Lin, sign: int = 1) -> Lin:
        terms = dict(self.terms)
        for s, c in other.terms:
            terms[s] = terms.get(s, 0) + sign * c
        return Lin(tuple(sorted((s, c) for s, c in terms.items() if c)), self.const + sign * other.const)

    def times(self, k: int) -> Lin:
        return Lin(tuple((s, c * k) for s, c in self.terms if c * k), self.const * k)

    @property
    def varying(self) -> bool:
        return self.coef("tid") != 0

    def warp0(self) -> str | None:
        """The ``*_warp0`` handle this form subtracts 32 times (a role-relative thread index), if any."""
        found = [s for s, c in self.terms if s.startswith("h:") and s.endswith("_warp0") and c == -32]
        return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class Quant:
    """A thread quantity (module docstring) plus a constant offset."""

    name: str
    offset: int = 0


Form = Lin | Quant | None  # None: a thread-dependent value the analysis cannot read


@dataclass(frozen=True)
class Pred:
    """A predicate as the threads for which it holds (``pos``) and fails (``neg``); None: unknown."""

    pos: Dnf | None
    neg: Dnf | None

    def negated(self) -> Pred:
        return Pred(self.neg, self.pos)


UNIFORM = Pred(TRUE, TRUE)
UNKNOWN = Pred(None, None)


def _atom(a: Atom) -> Pred:
    q, op, c = a
    return Pred(frozenset({frozenset({a})}), frozenset({frozenset({(q, _NEGATE[op], c)})}))


def conj_and(a: Dnf | None, b: Dnf | None) -> Dnf | None:
    if a is None or b is None:
        return FALSE if a == FALSE or b == FALSE else None
    out = {x | y for x in a for y in b}
    return _simplify(frozenset(c for c in out if not _contradicts(c)))


def conj_or(a: Dnf | None, b: Dnf | None) -> Dnf | None:
    if a is None or b is None:
        return TRUE if a == TRUE or b == TRUE else None
    return _simplify(a | b)


def _contradicts(c: Conj) -> bool:
    eq: dict[str, int] = {}
    for q, op, v in c:
        if op == "eq":
            if eq.get(q, v) != v:
                return True
            eq[q] = v
    return any(op == "ne" and eq.get(q) == v for q, op, v in c) or any(
        q in eq and not _holds(op, eq[q], v) for q, op, v in c if op not in ("eq", "ne")
    )


def _holds(op: str, x: int, v: int) -> bool:
    return {"lt": x < v, "le": x <= v, "gt": x > v, "ge": x >= v, "eq": x == v, "ne": x != v}[op]


def _simplify(d: Dnf) -> Dnf | None:
    conjs = set(d)
    changed = True
    while changed:
        changed = False
        for x in list(conjs):
            if any(y < x for y in conjs):  # absorbed by a weaker conjunction
                conjs.discard(x)
                changed = True
        for x in list(conjs):
            for a in x:
                q, op, v = a
                other = (x - {a}) | {(q, _NEGATE[op], v)}
                if other in conjs and x in conjs:
                    conjs.discard(x)
                    conjs.discard(other)
                    conjs.add(x - {a})
                    changed = True
                    break
    if len(conjs) > _CAP:
        return None
    return frozenset(conjs)


def pred_and(a: Pred, b: Pred) -> Pred:
    return Pred(conj_and(a.pos, b.pos), conj_or(a.neg, b.neg))


def pred_or(a: Pred, b: Pred) -> Pred:
    return Pred(conj_or(a.pos, b.pos), conj_and(a.neg, b.neg))


class Threads:
    """The symbolic forms, predicates and guards of one function (module docstring)."""

    def __init__(self, flow: Flow, handles: frozenset[str]) -> None:
        self.flow = flow
        self.body = flow.fn.body
        self.handles = handles
        self.defs: dict[str, list[int]] = {}
        self.callee: dict[int, str] = {}  # index of a `ld.param … [retval0]` -> the function called before it
        last_call: str | None = None
        for i, ins in enumerate(self.body):
            if ins.base == "call":
                last_call = callee(ins)
                continue
            if ins.base == "ld" and ins.has("param") and len(ins.operands) > 1 and "retval" in ins.operands[1]:
                self.callee[i] = last_call or ""
            for dest in self._dests(ins):
                self.defs.setdefault(dest, []).append(i)
        self._busy: set[str] = set()
        self._guards: dict[int, Dnf | None] = {}
        self._conditions: dict[tuple[int, str | None], frozenset[str]] = {}

    @staticmethod
    def _dests(ins: Instr) -> list[str]:
        if not ins.operands or not defines(ins) or ins.base == "call":
            return []
        first = ins.operands[0].strip().strip("{}")
        return [d.strip() for part in first.split(",") for d in part.split("|") if _REG.match(d.strip())]

    # ---- thread-variance and symbolic forms

    @functools.cached_property
    def varying(self) -> frozenset[str]:
        """Registers whose value may differ between the threads of a role (a flow-insensitive fixed point)."""
        out: set[str] = set()
        changed = True
        while changed:
            changed = False
            for i, ins in enumerate(self.body):
                dests = self._dests(ins)
                if not dests or all(d in out for d in dests):
                    continue
                if self._varies(i, ins, out):
                    out.update(dests)
                    changed = True
        return frozenset(out)

    def _varies(self, i: int, ins: Instr, known: set[str]) -> bool:
        base = ins.base
        if base in ("elect", "shfl", "vote", "activemask", "atom", "match", "redux"):
            return True
        if i in self.callee:
            return self.callee[i] not in self.handles
        sources = ins.operands[1:]
        if base in ("ld", "ldu") and ins.has("param"):
            return False
        if base == "mbarrier":
            return False  # a barrier's state is the same for every thread that reads it
        for op in sources:
            for reg in re.findall(r"%[\w$.]+", op):
                if _VARYING_SOURCES.match(reg) or reg in known:
                    return True
        return False

    def form(self, text: str) -> Form:
        """The symbolic form of an operand (module docstring)."""
        t = text.strip()
        if IMMEDIATE.match(t):
            return Lin((), int(t.rstrip("Uu"), 0))
        if t == "%tid.x":
            return Lin((("tid", 1),))
        if t == "%laneid":
            return Quant("lane")
        if _VARYING_SOURCES.match(t):
            return None
        if t.startswith("%") and "." in t:
            return Lin(((f"u:{t}", 1),))  # %ctaid.x, %nctaid.x, ...: the same for every thread of a block
        return self._register(t)

    def _register(self, reg: str) -> Form:
        defs = self.defs.get(reg, [])
        if len(defs) != 1 or reg in self._busy:
            return None if reg in self.varying else Lin(((f"u:{reg}", 1),))
        self._busy.add(reg)
        try:
            found = self._definition(defs[0])
        finally:
            self._busy.discard(reg)
        if found is None and reg not in self.varying:
            return Lin(((f"u:{reg}", 1),))
        return found

    def _definition(self, i: int) -> Form:
        ins = self.body[i]
        ops, base = ins.operands, ins.base
        if i in self.callee:
            callee = self.callee[i]
            return Lin(((f"h:{callee}", 1),)) if callee in self.handles else None
        if base in ("mov", "cvt", "cvta") and len(ops) == 2:
            return self.form(ops[1])
        if len(ops) < 3:
            return None
        a, b = self.form(ops[1]), self.form(ops[2])
        const = b.const if isinstance(b, Lin) and not b.terms else None
        if base in ("add", "sub"):
            sign = 1 if base == "add" else -1
            if isinstance(a, Lin) and isinstance(b, Lin):
                return a.plus(b, sign)
            if isinstance(a, Quant) and const is not None:
                return Quant(a.name, a.offset + sign * const)
            if isinstance(a, Quant) and a.name == "awarp" and sign == -1 and _is_warp0(b):
                assert isinstance(b, Lin)
                return Quant("warp", a.offset - b.const)
            return None
        if base == "mul" and isinstance(a, Lin) and const is not None:
            return a.times(const)
        if base == "shl" and isinstance(a, Lin) and const is not None and 0 <= const < 32:
            return a.times(1 << const)
        if base == "mad" and len(ops) == 4:
            c = self.form(ops[3])
            if isinstance(a, Lin) and const is not None and isinstance(c, Lin):
                return a.times(const).plus(c)
            return None
        if base in ("and", "rem") and const is not None and isinstance(a, Lin):
            size = const + 1 if base == "and" else const
            return _modulo(a, size)
        if base in ("shr", "div") and const is not None and isinstance(a, Lin):
            size = (1 << const) if base == "shr" and 0 <= const < 32 else const
            return _divide(a, size)
        return None

    # ---- predicates and guards

    def pred(self, text: str) -> Pred:
        """The threads for which predicate register ``text`` (optionally ``!``-negated) holds."""
        t = text.strip()
        if t.startswith("!"):
            return self.pred(t[1:]).negated()
        defs = self.defs.get(t, [])
        if len(defs) != 1 or t in self._busy:
            return UNKNOWN if t in self.varying else UNIFORM
        self._busy.add(t)
        try:
            return self._pred_definition(defs[0], t)
        finally:
            self._busy.discard(t)

    def _pred_definition(self, i: int, reg: str) -> Pred:
        ins = self.body[i]
        ops, base = ins.operands, ins.base
        parts = ins.opcode.split(".")
        if base == "elect":
            return _atom(("elect", "eq", 1))
        if base == "not" and len(ops) == 2:
            return self.pred(ops[1]).negated()
        if base in ("and", "or") and len(ops) == 3:
            a, b = self.pred(ops[1]), self.pred(ops[2])
            return pred_and(a, b) if base == "and" else pred_or(a, b)
        if base == "mov" and len(ops) == 2:
            return self.pred(ops[1])
        if base == "setp" and len(ops) >= 3:
            if ops[0].strip().split("|")[0].strip() != reg:
                return UNKNOWN if reg in self.varying else UNIFORM  # the complement output of `p|q`
            found = self._compare(_CMP.get(parts[1], "") if len(parts) > 1 else "", ops[1], ops[2])
            if len(ops) >= 4 and len(parts) > 2 and parts[2] in ("and", "or"):
                other = self.pred(ops[3])
                return pred_and(found, other) if parts[2] == "and" else pred_or(found, other)
            return found
        return UNKNOWN if reg in self.varying else UNIFORM

    def _compare(self, op: str, left: str, right: str) -> Pred:
        if not op:
            return UNKNOWN
        a, b = self.form(left), self.form(right)
        if isinstance(a, Lin) and isinstance(b, Lin):
            d = a.plus(b, -1)
            if not d.varying:
                return UNIFORM
            w0 = d.warp0()
            rest = [s for s, _ in d.terms if s not in ("tid", w0)]
            if d.coef("tid") != 1 or rest:
                return UNKNOWN
            return _atom(("thread" if w0 else "atid", op, -d.const))
        if isinstance(b, Quant) and isinstance(a, Lin):
            a, b, op = b, a, _SWAP[op]
        if isinstance(a, Quant) and isinstance(b, Lin):
            if not b.terms:
                return _atom((a.name, op, b.const - a.offset))
            if a.name == "awarp" and _is_warp0(b):
                return _atom(("warp", op, b.const - a.offset))
        return UNKNOWN

    def block_guard(self, block: int) -> Dnf | None:
        """The threads that run block ``block``: the conditions of the edges it is control dependent on."""
        if block in self._guards:
            return self._guards[block]
        self._guards[block] = None  # a cycle of control dependences (none without back edges) stays unknown
        edges = self.flow.control(block)
        out: Dnf | None = TRUE if not edges else FALSE
        for edge in edges:
            ins = self.flow.branch[edge.block]
            cond = self.pred(ins.guard or "")
            taken = cond.pos if edge.taken else cond.neg
            out = conj_or(out, conj_and(taken, self.block_guard(edge.block)))
        self._guards[block] = out
        return out

    def conditions(self, index: int, nonzero: str | None = None) -> tuple[str, ...]:
        """The thread-invariant conditions instruction ``index`` runs under (a params value, a loop bound), as
        ``<PTX line of the branch>:t|f`` (the edge taken or not) or ``@<predicate>`` (its own guard, a predicate
        with one definition; another is named by the instruction's line). A condition that holds exactly when
        register ``nonzero`` is not 0 is left out (a site completing ``nonzero`` bytes completes 0 when skipped).
        """
        found = set(self._block_conditions(self.flow.block_of[index], nonzero))
        own = self.body[index].guard
        if own and self.pred(own) == UNIFORM and not self._nonzero(own, True, nonzero):
            single = len(self.defs.get(own.lstrip("!"), [])) == 1
            found.add(f"@{own}" if single else f"@{own}:{self.body[index].line}")
        return tuple(sorted(found))

    def _block_conditions(self, block: int, nonzero: str | None) -> frozenset[str]:
        key = (block, nonzero)
        if key in self._conditions:
            return self._conditions[key]
        self._conditions[key] = frozenset()  # a cycle of control dependences (none without back edges) adds none
        out: set[str] = set()
        for edge in self.flow.control(block):
            ins = self.flow.branch[edge.block]
            if self.pred(ins.guard or "") == UNIFORM and not self._nonzero(ins.guard or "", edge.taken, nonzero):
                out.add(f"{ins.line}:{'t' if edge.taken else 'f'}")
            out |= self._block_conditions(edge.block, nonzero)
        self._conditions[key] = frozenset(out)
        return self._conditions[key]

    def _nonzero(self, guard: str, holds: bool, reg: str | None) -> bool:
        """Whether ``guard`` holding (``holds``) or failing means exactly ``reg != 0``."""
        name = guard.lstrip("!")
        defs = self.defs.get(name, [])
        if reg is None or len(defs) != 1 or len(self.defs.get(reg, [])) > 1:
            return False
        ins = self.body[defs[0]]
        parts = ins.opcode.split(".")
        if ins.base != "setp" or len(ins.operands) != 3 or len(parts) < 3 or parts[2] not in ("u32", "s32", "b32"):
            return False
        a, b = (o.strip() for o in ins.operands[1:])
        if {a, b} != {reg, "0"}:
            return False
        runs_when_true = holds != guard.startswith("!")
        unsigned = parts[2] == "u32"  # x > 0 is x != 0, x <= 0 is x == 0
        above, below = (("hi", "gt"), ("ls", "le")) if b == "0" else (("lo", "lt"), ("hs", "ge"))
        nonzero_test = parts[1] == "ne" or (unsigned and parts[1] in above)
        zero_test = parts[1] == "eq" or (unsigned and parts[1] in below)
        return (nonzero_test and runs_when_true) or (zero_test and not runs_when_true)

    def guard(self, index: int) -> Dnf | None:
        """The threads that run instruction ``index`` (module docstring)."""
        if not self.flow.reachable(index):
            return FALSE
        found = self.block_guard(self.flow.block_of[index])
        own = self.body[index].guard
        if own:
            found = conj_and(found, self.pred(own).pos)
        return found


def _is_warp0(form: Form) -> bool:
    """A role's first-warp handle (plus a constant)."""
    if not isinstance(form, Lin) or len(form.terms) != 1:
        return False
    symbol, coef = form.terms[0]
    return symbol.endswith("_warp0") and coef == 1


def _modulo(x: Lin, size: int) -> Form:
    if size not in (32, 128) or x.coef("tid") != 1:
        return None
    w0 = x.warp0()
    rest = [c for s, c in x.terms if s not in ("tid", w0)]
    if any(c % size for c in rest) or x.const % size:
        return None
    if size == 32:
        return Quant("lane")
    return Quant("wgt" if w0 else "awgt")


def _divide(x: Lin, size: int) -> Form:
    if size not in (32, 128) or x.coef("tid") != 1:
        return None
    w0 = x.warp0()
    rest = [c for s, c in x.terms if s not in ("tid", w0)]
    if rest or x.const % size:
        return None
    name = {32: "warp", 128: "wg"}[size]
    return Quant(name if w0 else "a" + name, x.const // size)
