"""What the code does, as facts: every instruction a conformance check reads, with its operands classified.

The facts depend on the PTX alone (not on the contract), so ``kernlink pack`` records
them in the package (manifest key ``conformance``) and the loader derives them again
from the package's PTX payload: a manifest whose facts disagree with its own payload
is L-INTEGRITY. The checks (:mod:`checker.conformance.checks`) then judge the facts
against the contract.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from package.codefacts.bounds import field_bounds
from package.codefacts.carry import Carry
from package.codefacts.conds import Definitions, fields_of
from package.codefacts.flow import Flow, Loop
from package.codefacts.ptx import Function, Instr, parse
from package.codefacts.threads import Threads
from package.codefacts.values import Env, Linear, Val, analyse, call_arguments, callee, defines

#: Bumped whenever the facts a given PTX yields change (a package's record is then re-derived, not compared).
FACTS_VERSION = 16  # 2: `mbarrier.complete_tx` gives a `complete-tx` fact; 3: guards, loops, order, waits, arrives;
# 4: an operand's linear form over params fields; 5: an operand from the function's arguments, `smem-arg`,
# the conditions a copy, credit or expect-tx runs under; 6: a `local` operand (the function's stack), `param-pass`,
# `call-arg` at calls to the module's own functions; 7: those conditions as expressions of params fields (`when`);
# 8: the conditions of named barriers and shared-memory accesses too; 9: a wait's `entry` (its ring position at
# the entry of its loop, carried from the loop around it or reset); 10: a callable's protocol summary: the bulk-group
# steps (`bulk-store`, `bulk-commit`, `bulk-wait`), `xcall` at a call of another stage's callable, the parameter a
# callable's shared-memory access is addressed from (`param`); fences and generic shared writes record what a path
# reaches after them, and calls of another module's function and bulk stores the conditions they run under;
# 11: a wait's `across` (its entry after a pass that ran an alternative loop, `loops N`); 12: `gmem-access`, a load or
# store that may reach global memory (not shared, local, param or const; not a params-block read), with the conditions
# it runs under and the parameters a callable's address is built on; 13: `mma-commit` and `mma-wait`
# (`wgmma.commit_group`, `wgmma.wait_group N` with its `groups`), ordered as synchronisation steps; an arrive's
# `entry` (in a loop nested in another: its slot on the inner loop's first iteration, carried or reset); 14: the
# parameters an mbarrier arrive's, wait's or expect-tx's address is built on (`param`), the parameter a wait's parity,
# an arrive's count, an expect-tx's bytes or a named barrier's ID or thread count is (`param:ROLE`, where the operand
# is that parameter's value itself), and a call's arguments with the constant each holds when the call first runs
# (`first`); 15: a fence's conditions; a load of a value the function keeps in its own frame
# (values.Frame), a `[%SP+8]`-style address and any `cvta.local` are local; 16: a function's return parameter is
# no argument (parameter indices of a value-returning callable), every lane of a vector load is what it loads


@dataclass(frozen=True)
class Operand:
    """A classified operand: ``kind`` is constant / handle / params / arith / unknown."""

    kind: str
    value: int | None = None
    handles: tuple[str, ...] = ()
    smem: bool = False
    tid_abs: bool = False
    tid_wg: bool = False  # %tid reduced modulo a warpgroup: relative only in a warpgroup-aligned role
    first: int | None = None  # the constant it holds when the instruction first runs (a wait's first parity)
    field: int | None = None  # the params offset it was loaded from (a tensor map's address)
    linear: Linear | None = None  # a value of params fields (values.Linear): a run-time copy or credit size
    arg: bool = False  # computed from a value the function's caller passed (one of its parameters)

    @classmethod
    def of(cls, val: Val, first: int | None = None) -> Operand:
        relative = any(h.endswith("_warp0") for h in val.handles)
        return cls(
            val.kind(),
            val.const if val.is_const else None,
            tuple(sorted(val.handles)),
            "smem" in val.origins,
            val.tid_abs and not relative,
            "wg_lane" in val.origins and not relative,
            first,
            val.field if val.kind() == "params" else None,
            val.linear if val.kind() == "params" else None,
            "arg" in val.origins,
        )

    def describe(self) -> str:
        if self.kind == "constant":
            return f"the literal {self.value}"
        if self.kind == "handle":
            return "a value from " + ", ".join(f"`{h}()`" for h in self.handles)
        if self.kind == "params":
            return "a value loaded from the params"
        if self.kind == "arith":
            return "a value computed without any handle"
        return "a value the analysis cannot trace"

    def as_json(self) -> list[Any]:
        linear = None if self.linear is None else [self.linear[0], [list(t) for t in self.linear[1]]]
        return [
            self.kind,
            self.value,
            list(self.handles),
            self.smem,
            self.tid_abs,
            self.tid_wg,
            self.first,
            self.field,
            linear,
            self.arg,
        ]

    @classmethod
    def from_json(cls, raw: Any) -> Operand:
        kind, value, handles, smem, tid_abs, tid_wg, first, field, linear, arg = raw
        return cls(
            str(kind),
            None if value is None else int(value),
            tuple(str(h) for h in handles),
            bool(smem),
            bool(tid_abs),
            bool(tid_wg),
            None if first is None else int(first),
            None if field is None else int(field),
            None if linear is None else (int(linear[0]), tuple((int(o), int(c)) for o, c in linear[1])),
            bool(arg),
        )


Atom = tuple[str, str, int]
#: The threads of a role that run an instruction: a disjunction of conjunctions of atoms
#: (``threads.py``); ``((),)`` every thread, ``None`` undecided.
Guard = tuple[tuple[Atom, ...], ...] | None
EVERY_THREAD: Guard = ((),)


@dataclass(frozen=True)
class Fact:
    """One instruction (or declaration) a check reads.

    Where an instruction sits in its function: ``guard`` (the threads that run it), ``order``
    (its position in an order of the function's instructions that every path without a back
    edge follows), ``loops`` (the positions of the headers of the loops around it, outermost
    first; a loop that only spins on an mbarrier wait is not one) and ``reaches`` (the
    positions of the synchronisation facts a path without a back edge runs after it).
    """

    kind: str
    function: str
    line: int
    opcode: str
    operands: tuple[tuple[str, Operand], ...] = ()
    src: tuple[str, int] | None = None
    detail: str = ""
    guard: Guard = EVERY_THREAD
    loops: tuple[int, ...] = ()
    order: int = 0
    reaches: tuple[int, ...] = ()
    origin: tuple[str, int] | None = None  # the instruction's own line in an inlined helper (``Instr.origin``)
    conds: tuple[str, ...] = ()  # the thread-invariant conditions it runs under (``Threads.conditions``)
    # each condition computed from params fields alone, with its expression (``conds.py``): (cond, expression)
    when: tuple[tuple[str, str], ...] = ()
    # A wait: how many waits on the same barrier a path without a back edge runs before it (every count;
    # empty: more than the cap), and, when its parity is no constant on that first pass, the parity it
    # first uses on the paths of each count with a ring-depth handle's result fixed at 1 .. MAX_DEPTH,
    # then at every deeper depth: ``(handle, per depth (MAX_DEPTH + 1 of them) the parity per count of
    # ``prior``)``, None where it is no constant.
    prior: tuple[int, ...] = ()
    depths: tuple[tuple[str, tuple[tuple[int | None, ...], ...]], ...] = ()
    # A wait in a loop nested in another (a k-loop in a loop over units of work): how the registers it reads
    # (``parity``; ``slot``, its barrier's address or slot argument) enter the inner loop on a pass of the outer
    # one (``carry.py``): ``carried`` (what the previous pass left), ``reset`` (the same on every pass) or
    # ``unknown``. An arrive there: its ``slot`` alone (the barrier address it releases on the first iteration).
    entry: tuple[tuple[str, str], ...] = ()
    # The same wait, after a pass of the outer loop that ran another innermost loop of it instead (an
    # alternative k-loop, ``loops N``): ``(that loop's header position, slot|parity, carried|reset|unknown)``.
    across: tuple[tuple[int, str, str], ...] = ()
    # A fact of a callable's protocol summary spliced at its caller's call (checker/conformance/summary.py): the
    # callable's function and the instruction's own PTX line there. Never recorded: the composition derives it.
    via: tuple[str, int] | None = None

    def operand(self, role: str) -> Operand | None:
        return next((o for r, o in self.operands if r == role), None)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "function": self.function,
            "line": self.line,
            "opcode": self.opcode,
            "operands": [[r, o.as_json()] for r, o in self.operands],
            "src": list(self.src) if self.src else None,
            "detail": self.detail,
        }
        if self.guard != EVERY_THREAD:
            out["guard"] = None if self.guard is None else [[list(a) for a in c] for c in self.guard]
        if self.loops:
            out["loops"] = list(self.loops)
        if self.order:
            out["order"] = self.order
        if self.reaches:
            out["reaches"] = list(self.reaches)
        if self.origin:
            out["origin"] = list(self.origin)
        if self.conds:
            out["conds"] = list(self.conds)
        if self.when:
            out["when"] = [list(w) for w in self.when]
        if self.prior:
            out["prior"] = list(self.prior)
        if self.depths:
            out["depths"] = [[h, [list(per) for per in v]] for h, v in self.depths]
        if self.entry:
            out["entry"] = [list(e) for e in self.entry]
        if self.across:
            out["across"] = [list(e) for e in self.across]
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Fact:
        if not isinstance(raw, Mapping):  # a package's manifest is input: its shape is checked, never assumed
            raise TypeError(f"a fact is {type(raw).__name__}, not an object")
        src = raw.get("src")
        guard: Guard = EVERY_THREAD
        if "guard" in raw:
            got = raw["guard"]
            guard = None if got is None else tuple(tuple((str(q), str(o), int(v)) for q, o, v in c) for c in got)
        return cls(
            str(raw["kind"]),
            str(raw["function"]),
            int(raw["line"]),
            str(raw["opcode"]),
            tuple((str(r), Operand.from_json(o)) for r, o in raw["operands"]),
            (str(src[0]), int(src[1])) if src else None,
            str(raw.get("detail", "")),
            guard,
            tuple(int(x) for x in raw.get("loops", ())),
            int(raw.get("order", 0)),
            tuple(int(x) for x in raw.get("reaches", ())),
            (str(raw["origin"][0]), int(raw["origin"][1])) if raw.get("origin") else None,
            tuple(str(c) for c in raw.get("conds", ())),
            tuple((str(c), str(e)) for c, e in raw.get("when", ())),
            tuple(int(c) for c in raw.get("prior", ())),
            tuple(
                (str(h), tuple(tuple(None if v is None else int(v) for v in per) for per in vs))
                for h, vs in raw.get("depths", ())
            ),
            tuple((str(r), str(how)) for r, how in raw.get("entry", ())),
            tuple((int(h), str(r), str(how)) for h, r, how in raw.get("across", ())),
        )


@dataclass(frozen=True)
class CodeFacts:
    """The facts of one PTX module and how many PTX lines produced them."""

    facts: tuple[Fact, ...]
    lines: int

    def as_json(self) -> dict[str, Any]:
        return {"version": FACTS_VERSION, "facts": [f.as_json() for f in self.facts]}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CodeFacts:
        return cls(tuple(Fact.from_json(f) for f in raw["facts"]), 0)


_BARRIER = re.compile(r"^(bar|barrier)\.(sync|arrive|red)|^(bar|barrier)(\.cta)?\.(sync|arrive|red)|^bar$")
_ASYNC_READ = (
    "cp.async.bulk.global.shared",
    "cp.async.bulk.tensor",
    "cp.reduce.async.bulk",
    "wgmma.mma_async",
    "tcgen05.mma",
    "tcgen05.cp",
)
_SHARED_OPS = ("ld", "st", "atom", "red", "ldmatrix", "stmatrix", "ldu")


def longest_chain(facts: Sequence[Fact]) -> int:
    """The most of ``facts`` that one path without a back edge runs (``Fact.reaches`` orders them)."""
    ordered = sorted(facts, key=lambda f: f.order)
    best: dict[int, int] = {}
    for f in ordered:
        before = [best[g.order] for g in ordered if g.order < f.order and f.order in g.reaches]
        best[f.order] = 1 + max(before, default=0)
    return max(best.values(), default=0)


def derive(ptx: str, *, ignore: frozenset[str] = frozenset()) -> CodeFacts:
    """The facts of a PTX module; functions named in ``ignore`` (the params probe) are skipped.

    A pure function of its arguments, kept per process (the facts are frozen): a build reads
    each package's PTX several times (pack, the check's load, the link's), a resident build
    (`kernlink build --watch`) again on every rebuild.
    """
    return _derive(ptx, ignore)


@functools.lru_cache(maxsize=64)
def _derive(ptx: str, ignore: frozenset[str]) -> CodeFacts:
    module = parse(ptx)
    handles = frozenset(re.findall(r"\.extern\s+\.func\s*(?:\([^)]*\))?\s*([\w$]+)", ptx))
    defined = frozenset(f.name for f in module.functions)
    smem_names = frozenset(d.name for d in module.shared if d.dynamic)
    static_names = frozenset(d.name for d in module.shared if not d.dynamic)
    facts: list[Fact] = []
    for decl in module.shared:
        if not decl.dynamic:
            facts.append(
                Fact(
                    "shared-decl",
                    decl.function or "",
                    decl.line,
                    ".shared",
                    (("bytes", Operand("constant", decl.size)),),
                    detail=decl.name,
                )
            )
    for fn in module.functions:
        if fn.name in ignore:
            continue
        facts.extend(_function(fn, handles, defined, smem_names, static_names))
    return CodeFacts(tuple(facts), module.lines)


#: The facts of synchronisation steps: each records the ones a path reaches after it (``Fact.reaches``).
SYNC_KINDS = frozenset(
    {
        "arrive",
        "wait",
        "expect-tx",
        "tensor-copy",
        "bulk-copy",
        "complete-tx",
        "proxy-fence",
        "barrier",
        "call",
        "init-fence",
        "mbarrier-init",
        "bulk-store",
        "bulk-commit",
        "bulk-wait",
        "xcall",
        "fence",
        "mma-commit",
        "mma-wait",
    }
)


class _Site:
    """Where the instructions of one function sit: their guards, loops and order (the ``Fact`` fields)."""

    def __init__(self, fn: Function, handles: frozenset[str]) -> None:
        self.flow = Flow(fn)
        self.threads = Threads(self.flow, handles)
        body = fn.body
        spinning = {lp.header for lp in self.flow.loops if _spins(body, self.flow, lp, handles)}
        self.headers = {lp.header: self.flow.order[self.flow.blocks[lp.header][0]] + 1 for lp in self.flow.loops}
        self.spinning = spinning
        self._defs: dict[str, list[Instr]] = {}
        for ins in body:
            if ins.operands and defines(ins) and ins.base != "call":
                for dest in ins.operands[0].strip("{} ").split(","):
                    self._defs.setdefault(dest.strip(), []).append(ins)
        self._sources: dict[str, set[int]] = {}

    def params_of(self, registers: list[str]) -> set[int]:
        """The function parameters (by position) these registers' values are computed from."""
        found: set[int] = set()
        for reg in registers:
            found |= self._param_sources(reg, frozenset())
        return found

    def exact_param(self, reg: str) -> int | None:
        """The parameter (by position) whose value a register holds on every path (loaded from it, or moved
        from such a register), or None."""
        fn = self.flow.fn
        found: set[int] = set()
        seen: set[str] = set()
        todo = [reg]
        while todo:
            r = todo.pop()
            if r in seen:
                continue
            seen.add(r)
            defs = self._defs.get(r, [])
            if not defs:
                return None
            for ins in defs:
                if ins.base == "ld" and ins.has("param") and len(ins.operands) == 2:
                    name = ins.operands[1].strip("[] ")
                    if name not in fn.params:
                        return None
                    found.add(fn.params.index(name))
                elif ins.base == "mov" and len(ins.operands) == 2 and ins.operands[1].strip().startswith("%"):
                    todo.append(ins.operands[1].strip())
                else:
                    return None
        return found.pop() if len(found) == 1 else None

    def _param_sources(self, reg: str, busy: frozenset[str]) -> set[int]:
        if reg in self._sources:
            return self._sources[reg]
        if reg in busy:
            return set()
        fn = self.flow.fn
        found: set[int] = set()
        for ins in self._defs.get(reg, ()):
            if ins.base == "ld" and ins.has("param") and len(ins.operands) == 2:
                name = ins.operands[1].strip("[] ").split("+")[0].strip()
                if name in fn.params:
                    found.add(fn.params.index(name))
                continue
            for src in (r for o in ins.operands[1:] for r in re.findall(r"%[\w$]+", o)):
                found |= self._param_sources(src, busy | {reg})
        if not busy:
            self._sources[reg] = found
        return found

    def place(self, index: int) -> tuple[Guard, tuple[int, ...], int]:
        guard = self.threads.guard(index)
        shown: Guard = None if guard is None else tuple(sorted(tuple(sorted(c)) for c in guard))
        loops = tuple(self.headers[lp.header] for lp in self.flow.loops_of(index) if lp.header not in self.spinning)
        return shown, loops, self.flow.order[index] + 1


def _spins(body: tuple[Instr, ...], flow: Flow, loop: Loop, handles: frozenset[str]) -> bool:
    """A loop that only polls an mbarrier (``try_wait``/``test_wait``, the address it polls and the branch
    back; a handle's value may be read again): part of the wait, not a loop of the role."""
    waits = False
    for block in loop.body:
        start, end = flow.blocks[block]
        for ins in body[start:end]:
            if ins.opcode.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
                waits = True
            elif (ins.base == "call" and callee(ins) in handles) or (ins.base == "ld" and ins.has("param")):
                continue
            elif ins.base in _EFFECTS or ins.base == "mbarrier":
                return False
    return waits


# Instructions that do something a wait loop does not: a loop holding one is a loop of the role's work.
_EFFECTS = frozenset(
    {"st", "atom", "red", "cp", "bar", "barrier", "fence", "membar", "wgmma", "tcgen05", "call", "stmatrix", "ld"}
)


def _function(
    fn: Function,
    handles: frozenset[str],
    defined: frozenset[str],
    smem_names: frozenset[str],
    static_names: frozenset[str],
) -> Iterator[Fact]:
    entry_like = fn.entry_like
    env = analyse(fn, handle_names=handles, smem_names=smem_names, entry_like=entry_like, static_names=static_names)
    yield Fact("function", fn.name, fn.line, fn.kind)  # where a step the code lacks is shown
    for name, values, line in fn.directives:
        yield Fact(
            "directive",
            fn.name,
            line,
            f".{name}",
            tuple((f"v{i}", Operand("constant", v)) for i, v in enumerate(values)),
            detail=name,
        )
    site = _Site(fn, handles)
    pending_write: Instr | None = None
    stored: dict[str, tuple[int, str]] = {}  # a call's parameter -> (index, register) of the store that set it
    found_all: list[tuple[int, Fact]] = []
    params_seen: set[tuple[str, str]] = set()
    defs: Definitions | None = None  # built at the first conditional site
    waits_read: dict[int, tuple[tuple[str, int, str], ...]] = {}  # a wait handle's call -> (role, at, register)
    for index, ins in enumerate(fn.body):
        found = [f for f in _instruction(fn.name, ins, env, site, index) if (f.kind, f.detail) not in params_seen]
        params_seen |= {(f.kind, f.detail) for f in found if f.kind == "smem-param"}  # one per parameter set
        if ins.base == "st" and ins.has("param") and len(ins.operands) == 2:
            stored[ins.operands[0].strip("[] ").split("+")[0].strip()] = (index, ins.operands[1].strip())
        elif ins.base == "call":
            found.extend(_call(fn.name, ins, env, site, index, stored, handles, defined))
            if any(f.kind == "wait" for f in found):  # a ring's wait handle: the registers of its slot and parity
                waits_read[index] = _handle_wait_registers(ins, stored)
            elif any(f.kind == "xcall" and f.detail for f in found):  # another stage's callable: its arguments
                waits_read[index] = tuple(
                    (f"a{i}", stored[arg][0], stored[arg][1])
                    for i, arg in enumerate(call_arguments(ins))
                    if arg in stored
                )
            stored = {}
        if found and site.flow.reachable(index):
            guard, loops, order = site.place(index)
            found = [dataclasses.replace(f, guard=guard, loops=loops, order=order) for f in found]
            if any(f.kind in _CONDITIONAL for f in found):
                conds = site.threads.conditions(index, _bytes_register(ins))
                if defs is None and conds:
                    defs = Definitions(fn, env)
                when = _when(conds, fn, defs) if defs is not None else ()
                found = [dataclasses.replace(f, conds=conds, when=when) if f.kind in _CONDITIONAL else f for f in found]
            undefined = [r for o in ins.operands for r in re.findall(r"%[\w$]+", o) if _unassigned(site.flow, index, r)]
            if undefined:  # a register some path leaves undefined (or stale from a loop's last pass): unknown
                found = [_unknown_operands(f) if f.kind in SYNC_KINDS else f for f in found]
        found_all.extend((index, f) for f in found)
        op = ins.opcode
        if op.startswith("fence.proxy.async"):
            pending_write = None
        elif _generic_smem_write(ins, env):
            pending_write = pending_write or ins
        elif op.startswith(_ASYNC_READ) and pending_write is not None:
            found_all.append(
                (
                    index,
                    Fact(
                        "proxy",
                        fn.name,
                        ins.line,
                        op,
                        src=ins.src,
                        detail=f"{pending_write.line}:{pending_write.opcode}",
                    ),
                )
            )
            pending_write = None
    found_all = _waits(fn, site, handles, found_all)
    found_all = _entries(fn, site, found_all, waits_read)
    synced = [(i, f) for i, f in found_all if _ordered(f)]
    for index, f in found_all:
        if _ordered(f):
            later = sorted({g.order for j, g in synced if j != index and site.flow.precedes(index, j)})
            f = dataclasses.replace(f, reaches=tuple(later)) if later else f
        yield f


def _unassigned(flow: Flow, index: int, register: str) -> bool:
    """A register read at ``index`` that no path defines before it, or that some path reaches the
    instruction without defining (its definition moved after the use: the value of a loop's last pass)."""
    return not flow.defined(index, register) or not flow.assigned(index, register)


def _ordered(f: Fact) -> bool:
    """A fact that records what a path reaches after it, and that others record reaching: a synchronisation fact,
    or a generic write of shared memory (what a claim's barrier orders, a staging slot's fence and read wait)."""
    return f.kind in SYNC_KINDS or (
        f.kind == "smem-access" and f.opcode.startswith(("st.", "stmatrix", "atom.", "red."))
    )


#: The ring depths a wait's first parity is worked out at, when it depends on the ring's depth handle.
MAX_DEPTH = 8


def _waits(fn: Function, site: _Site, handles: frozenset[str], found: list[tuple[int, Fact]]) -> list[tuple[int, Fact]]:
    """Each wait with the waits on its barrier before it (``Fact.prior``) and, where its first parity is
    no constant, that parity at each depth of a ring-depth handle the function calls (``Fact.depths``)."""

    def key(f: Fact) -> tuple[str, ...]:
        addr = f.operand("addr")
        return addr.handles if addr is not None and addr.handles else (f.detail,)

    waits = [(i, f) for i, f in found if f.kind == "wait"]
    depth_handles = sorted(
        {callee(ins) or "" for ins in fn.body if ins.base == "call"} & {h for h in handles if h.endswith("_depth")}
    )
    out = []
    for index, f in found:
        if f.kind == "wait" and site.flow.reachable(index):
            same = frozenset(i for i, g in waits if key(g) == key(f))
            f = dataclasses.replace(f, prior=site.flow.prior(index, same) or ())
            parity = f.operand("parity")
            ins = fn.body[index]
            if (
                parity is not None
                and parity.first is None
                and ins.base == "mbarrier"
                and len(ins.operands) >= 3
                and f.prior
            ):
                reg = ins.operands[2].strip()
                found_depths = []
                addr = f.operand("addr")
                rings = {h.rsplit("_", 2)[0] + "_depth" for h in (addr.handles if addr else ()) if h.endswith("_bar")}
                for h in [d for d in depth_handles if d in rings] or depth_handles:  # its ring's, by the ABI's names
                    at = [site.flow.by_count(index, reg, same, ((h, d),)) for d in range(1, MAX_DEPTH + 1)]
                    at.append(site.flow.by_count(index, reg, same, beyond=(h, MAX_DEPTH + 1)))  # every deeper ring
                    values = tuple(tuple((got or {}).get(k) for k in f.prior) for got in at)
                    if any(v is not None for per in values for v in per):
                        found_depths.append((h, values))
                f = dataclasses.replace(f, depths=tuple(found_depths))
        out.append((index, f))
    return out


def _handle_wait_registers(ins: Instr, stored: dict[str, tuple[int, str]]) -> tuple[tuple[str, int, str], ...]:
    """The registers a call to a ring's wait handle passes as its slot and parity, where they are stored."""
    args = call_arguments(ins)
    out = []
    for role, arg in zip(("slot", "parity"), args, strict=False):
        if arg in stored:
            at, reg = stored[arg]
            out.append((role, at, reg))
    return tuple(out)


def _entries(
    fn: Function, site: _Site, found: list[tuple[int, Fact]], waits_read: dict[int, tuple[tuple[str, int, str], ...]]
) -> list[tuple[int, Fact]]:
    """Each wait in a loop nested in another with how its slot and parity enter the inner loop (``Fact.entry``)."""
    carry: Carry | None = None
    out = []
    waiting = [index for index, f in found if f.kind == "wait"]
    for index, f in found:
        loops = [lp for lp in site.flow.loops_of(index) if lp.header not in site.spinning]
        if f.kind == "arrive" and len(loops) >= 2 and site.flow.reachable(index):
            # a release in a nested loop: whether the slot it addresses on a unit's first iteration is the one the
            # previous unit left (a release carried across units) or one reset per unit
            ins = fn.body[index]
            carry = carry or Carry(site.flow)
            how = "unknown"
            if ins.base == "mbarrier" and len(ins.operands) >= 2:
                how = carry.entry(loops[-2], loops[-1], index, ins.operands[1].strip())
            f = dataclasses.replace(f, entry=(("slot", how),))
        if f.kind == "call-arg" and len(loops) >= 2 and index in waits_read and site.flow.reachable(index):
            # a call of another stage's callable in a nested loop: how each argument enters the inner loop (a wait
            # the callable runs on the slot and parity it is passed: the composition binds them, summary.py)
            carry = carry or Carry(site.flow)
            f = dataclasses.replace(
                f, entry=tuple((r, carry.entry(loops[-2], loops[-1], at, reg)) for r, at, reg in waits_read[index])
            )
        elif f.kind == "wait" and len(loops) >= 2 and site.flow.reachable(index):
            ins = fn.body[index]
            read: tuple[tuple[str, int, str], ...] = ()
            if ins.base == "mbarrier" and len(ins.operands) >= 3:
                read = (("slot", index, ins.operands[1].strip()), ("parity", index, ins.operands[2].strip()))
            elif ins.base == "call":
                read = waits_read.get(index, ())
            carry = carry or Carry(site.flow)
            entry = {role: carry.entry(loops[-2], loops[-1], at, reg) for role, at, reg in read}
            f = dataclasses.replace(f, entry=tuple((role, entry.get(role, "unknown")) for role in ("slot", "parity")))
            across = [
                (site.headers[other.header], role, carry.across(loops[-2], loops[-1], other, at, reg))
                for other in _siblings(site, loops[-2], loops[-1], waiting)
                for role, at, reg in read
            ]
            f = dataclasses.replace(f, across=tuple(across))
        out.append((index, f))
    return out


def _siblings(site: _Site, outer: Loop, inner: Loop, waiting: list[int]) -> list[Loop]:
    """The other innermost loops around a wait directly inside ``outer`` (the alternatives of ``inner``)."""
    out: list[Loop] = []
    for index in waiting:
        loops = [lp for lp in site.flow.loops_of(index) if lp.header not in site.spinning]
        if len(loops) >= 2 and loops[-2] == outer and loops[-1] != inner and loops[-1] not in out:
            out.append(loops[-1])
    return out


#: The facts whose thread-invariant conditions are recorded: a fill's arrive, expect-tx and the bytes completed on it.
_CONDITIONAL = frozenset(
    {
        "arrive",
        "expect-tx",
        "tensor-copy",
        "bulk-copy",
        "complete-tx",
        "barrier",
        "smem-access",
        "xcall",
        "bulk-store",
        "gmem-access",
        "fence",
    }
)


def _when(conds: tuple[str, ...], fn: Function, defs: Definitions) -> tuple[tuple[str, str], ...]:
    """The conditions computed from params fields alone, each with its expression (``conds.py``)."""
    branches = {b.line: b for b in fn.body if b.base == "bra" and b.guard}
    out = []
    for cond in conds:
        if cond.startswith("@"):
            guard, _, line = cond[1:].partition(":")
            expr = None if line else defs.condition(guard, True)
        else:
            line, _, taken = cond.partition(":")
            branch = branches.get(int(line)) if line.isdigit() else None
            expr = None if branch is None or branch.guard is None else defs.condition(branch.guard, taken == "t")
        if expr is not None and fields_of(expr):
            out.append((cond, expr))
    return tuple(out)


def _bytes_register(ins: Instr) -> str | None:
    """The register holding the bytes a credit or bulk copy completes (a tensor copy's are its box's)."""
    ops = ins.operands
    if ins.opcode.startswith("mbarrier.complete_tx") and len(ops) >= 2:
        return ops[1].strip()
    if ins.opcode.startswith("cp.async.bulk.shared") and len(ops) >= 3:
        return ops[2].strip()
    return None


def _call(
    fn: str,
    ins: Instr,
    env: Env,
    site: _Site,
    index: int,
    stored: dict[str, tuple[int, str]],
    handles: frozenset[str],
    defined: frozenset[str],
) -> Iterator[Fact]:
    """A call to a ring's wait handle (a ``wait`` with its slot and parity) or to a function of the module."""
    target = callee(ins)
    if target is None:  # an indirect call: what it runs is not in the module (a summary that holds one is unknown)
        yield Fact("xcall", fn, ins.line, ins.opcode, (), ins.src, "")
        return
    args = call_arguments(ins)  # the list after the callee's name (a result, `(retval0)`, comes before it)
    if target in handles and target.endswith(("_full_wait", "_empty_wait")) and len(args) == 2:
        parts = []
        for role, arg in zip(("slot", "parity"), args, strict=True):
            at, reg = stored.get(arg, (index, ""))
            parts.append((role, Operand.of(env.operand(reg), site.flow.first(at, reg) if reg else None)))
        yield Fact("wait", fn, ins.line, ins.opcode, tuple(parts), ins.src, f"handle:{target}")
    elif target in defined:
        yield Fact("call", fn, ins.line, ins.opcode, (), ins.src, target)
    elif target in handles:
        # a call of a function another module defines (another stage's callable, a placement handle): where the
        # composition splices the callable's protocol summary (checker/conformance/summary.py)
        yield Fact("xcall", fn, ins.line, ins.opcode, (), ins.src, target)
    if (target in handles or target in defined) and args and not target.endswith(("_full_wait", "_empty_wait")):
        # what a call to another stage's callable, or to a function of this module, passes (the callee
        # may address shared memory with it); an argument that is one of this function's own parameters
        # is followed: `param-pass` says which parameter reaches which position of the callee
        passed = []
        for i, arg in enumerate(args):
            at, reg = stored.get(arg, (index, ""))
            # with the constant it holds when the call first runs (a wait's parity passed to a callable)
            passed.append(
                (f"a{i}", Operand.of(env.operand(reg), site.flow.first(at, reg)) if reg else Operand("unknown"))
            )
            for q in sorted(site.params_of([reg]) if reg and "arg" in env.operand(reg).origins else ()):
                into = (("at", Operand("constant", i)), ("param", Operand("constant", q)))
                yield Fact("param-pass", fn, ins.line, ins.opcode, into, ins.src, target)
        yield Fact("call-arg", fn, ins.line, ins.opcode, tuple(passed), ins.src, target)
    for arg in args:
        # A shared-memory address handed to another function: the callee addresses what it is given
        # (its accesses are relative to its argument), so the address is judged here, where it is made.
        reg = stored.get(arg, (index, ""))[1]
        val = env.operand(reg) if reg else None
        if val is not None and ("smem" in val.origins or (val.shared and "static_shared" not in val.origins)):
            # `shared`: the code converts it to or from the shared window; a static variable's own finding covers it
            yield Fact("smem-arg", fn, ins.line, ins.opcode, (("addr", Operand.of(val)),), ins.src, target)


def _unknown_operands(fact: Fact) -> Fact:
    return dataclasses.replace(fact, operands=tuple((r, Operand("unknown")) for r, _ in fact.operands))


def _generic_smem_write(ins: Instr, env: Env) -> bool:
    if ins.base not in ("st", "stmatrix") or ins.has("async") or not ins.operands:
        return False
    return ins.has("shared") or "smem" in env.address(ins.operands[0]).origins


def _op(env: Env, text: str) -> Operand:
    return Operand.of(env.operand(text))


def _addr(env: Env, text: str) -> Operand:
    return Operand.of(env.address(text))


#: What a feature-gated instruction needs (the hardware table's feature names), by opcode prefix; first match.
_FEATURES: tuple[tuple[str, str], ...] = (
    ("wgmma.", "wgmma"),
    ("tcgen05.", "tcgen05"),
    ("cp.async.bulk.tensor", "tma"),
    ("cp.reduce.async.bulk.tensor", "tma"),
    ("cp.async.bulk.prefetch.tensor", "tma"),
    ("cp.async.bulk", "cp_async_bulk"),
    ("cp.reduce.async.bulk", "cp_async_bulk"),
    ("mbarrier.", "mbarrier"),
    ("barrier.cluster", "clusters"),
    ("mapa", "clusters"),
    ("getctarank", "clusters"),
    ("multimem.", "multimem"),
)


def _instruction(fn: str, ins: Instr, env: Env, site: _Site, index: int) -> Iterator[Fact]:
    op, ops, src = ins.opcode, ins.operands, ins.src

    def fact(kind: str, *operands: tuple[str, Operand], detail: str = "") -> Fact:
        return Fact(kind, fn, ins.line, op, tuple(operands), src, detail, origin=ins.origin)

    feature = next((f for prefix, f in _FEATURES if op.startswith(prefix)), None)
    if feature is not None:
        yield fact("feature", detail=feature)
        if ".multicast" in op:
            yield fact("feature", detail="tma_multicast" if feature == "tma" else "clusters")
    if _BARRIER.match(op) and not op.startswith(("bar.warp", "barrier.cluster")):
        if not ops:  # `barrier.sync.aligned` without operands is not valid PTX; treat as barrier 0
            yield fact("barrier", ("id", Operand("constant", 0)))
        else:
            red = 1 if op.startswith(("bar.red", "barrier.red")) else 0
            parts = [("id", _op(env, ops[red])), *_exact(site, env, index, "id", ops[red])]
            if len(ops) > red + 1 and not ops[red + 1].startswith(("%p", "!")) and red == 0:
                parts += [("threads", _op(env, ops[1])), *_exact(site, env, index, "threads", ops[1])]
            mode = "sync" if ".sync" in op or op.startswith(("bar.red", "barrier.red")) or op == "bar" else "arrive"
            yield fact("barrier", *parts, detail=mode)
    elif op.startswith("mbarrier.init") and len(ops) >= 2:
        regs = re.findall(r"%[\w$]+", ops[0])
        same = bool(regs) and all(site.flow.invariant(index, r) for r in regs)
        # `invariant`: inside a loop, the address is the same on every pass (one barrier initialised again)
        detail = "invariant" if same else ""
        yield fact("mbarrier-init", ("addr", _addr(env, ops[0])), ("count", _op(env, ops[1])), detail=detail)
    elif op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")) and len(ops) >= 3:
        parity = ".parity" in op
        third = ops[2]
        detail = "" if parity else "state"
        first = site.flow.first(index, third) if parity else None
        yield fact(
            "wait",
            ("addr", _addr(env, ops[1])),
            ("parity", Operand.of(env.operand(third), first)),
            *_params_of(site, env, ops[1]),
            *(_exact(site, env, index, "parity", third) if parity else []),
            detail=detail,
        )
    elif op.startswith("mbarrier.arrive") and len(ops) >= 2:
        count = [("count", _op(env, ops[2]))] if len(ops) > 2 and ".expect_tx" not in op else []
        if count:
            count += _exact(site, env, index, "count", ops[2])
        at = _params_of(site, env, ops[1])
        if ".expect_tx" in op and len(ops) > 2:
            tx = _exact(site, env, index, "bytes", ops[2])
            yield fact("expect-tx", ("addr", _addr(env, ops[1])), ("bytes", _op(env, ops[2])), *at, *tx)
        kinds = [k for k in ("expect_tx", "arrive_drop", "noComplete") if k in op]
        where = "remote" if "shared::cluster" in op else ""
        yield fact(
            "arrive", ("addr", _addr(env, ops[1])), *count, *at, detail=",".join([*kinds, *([where] if where else [])])
        )
    elif op.startswith("mbarrier.expect_tx") and len(ops) >= 2:
        tx = _exact(site, env, index, "bytes", ops[1])
        yield fact(
            "expect-tx", ("addr", _addr(env, ops[0])), ("bytes", _op(env, ops[1])), *_params_of(site, env, ops[0]), *tx
        )
    elif op.startswith("mbarrier.complete_tx") and len(ops) >= 2:
        # transaction bytes a thread completes without a copy (e.g. the part of a copy a clipped box leaves out)
        yield fact("complete-tx", ("addr", _addr(env, ops[0])), ("bytes", _op(env, ops[1])), *_bounds(site, env, index))
    elif op.startswith("cp.async.bulk.tensor") and "mbarrier" in op:
        yield fact(
            "tensor-copy",
            ("bar", _addr(env, ops[2] if len(ops) > 2 else "")),
            *_tensor_map(env, ops),
            *_bounds(site, env, index),
        )
    elif op.startswith("cp.async.bulk.shared") and "mbarrier" in op and len(ops) >= 4:
        yield fact("bulk-copy", ("dst", _addr(env, ops[0])), ("bytes", _op(env, ops[2])), ("bar", _addr(env, ops[3])))
    elif op.startswith(BULK_STORES) and "mbarrier" not in op and len(ops) >= 2:
        # an asynchronous read of shared memory into global memory, completed by bulk groups (a TMA store)
        read = ops[-1] if op.startswith("cp.async.bulk.tensor") or ops[-1].startswith("[") else ops[1]
        yield fact("bulk-store", ("src", _addr(env, read)), *_params_of(site, env, read))
    elif op.startswith("cp.async.bulk.commit_group"):
        yield fact("bulk-commit")
    elif op.startswith("cp.async.bulk.wait_group"):
        groups = _op(env, ops[0]) if ops else Operand("constant", 0)
        yield fact("bulk-wait", ("groups", groups), detail="read" if ".read" in op else "")
    elif op.startswith("wgmma.commit_group"):
        yield fact("mma-commit")
    elif op.startswith("wgmma.wait_group"):
        # at most `groups` of the warpgroup's committed wgmma groups are pending after it (the rest retired)
        yield fact("mma-wait", ("groups", _op(env, ops[0]) if ops else Operand("unknown")))
    elif op.startswith("cp.async.mbarrier.arrive") and ops:
        yield fact("arrive", ("addr", _addr(env, ops[0])), *_params_of(site, env, ops[0]), detail="cp.async")
    elif op.startswith("tcgen05.commit") and "mbarrier::arrive" in op and ops:
        yield fact("arrive", ("addr", _addr(env, ops[0])), *_params_of(site, env, ops[0]), detail="tcgen05.commit")
    elif op.startswith("setmaxnreg") and ops:
        yield fact("setmaxnreg", ("regs", _op(env, ops[0])), detail="inc" if ".inc" in op else "dec")
    elif op.startswith("tcgen05.alloc") and len(ops) >= 2:
        yield fact("tmem-alloc", ("columns", _op(env, ops[1])))
    elif op.startswith("tcgen05.dealloc"):
        yield fact("tmem-op", detail="dealloc")
    elif op.startswith("tcgen05.relinquish_alloc_permit"):
        yield fact("tmem-op", detail="relinquish_alloc_permit")
    elif op.startswith("fence.proxy.async"):
        yield fact("proxy-fence", detail=op)
    elif op.startswith("fence.mbarrier_init"):
        yield fact("init-fence", detail=op)
    elif op.startswith(("fence.", "membar.")) and not op.startswith(("fence.proxy", "fence.mbarrier_init")):
        yield fact("fence", detail=_scope(op))
    if ins.base in ("atom", "red") and len(ops) >= 2:
        addr_text = ops[1] if ins.base == "atom" else ops[0]
        yield fact("atomic", ("addr", _addr(env, addr_text)), detail=_scope(op))
    if ins.base in ("ld", "ldu") and len(ops) >= 2 and not ins.has("param"):
        loaded = env.address(ops[1])
        if "params_ptr" in loaded.origins and not loaded.unknown and not ins.has("shared"):
            offset = Operand("constant", loaded.const) if loaded.const is not None else Operand("unknown")
            yield fact("params-read", ("offset", offset), detail=str(_width(op, ops[0])))
    if (
        ins.base in _SHARED_OPS
        and ops
        and not op.startswith(("ld.param", "st.param", "ld.local", "st.local", "ld.const", "ld.global", "st.global"))
    ):
        bracket = next((o for o in ops if o.startswith("[")), None)
        if bracket is not None:
            addr = env.address(bracket)
            if "static_shared" in addr.origins:
                pass  # a static variable's accesses: its declaration's finding covers them (root cause first)
            elif ins.has("shared") or "smem" in addr.origins:
                yield fact(
                    "smem-access",
                    ("addr", Operand.of(addr)),
                    *_params_of(site, env, bracket),
                    detail=str(_width(op, ops[-1])),
                )
                if "arg" in addr.origins:
                    # addressed relative to what the caller passed: which parameters (the caller answers)
                    used = site.params_of(re.findall(r"%[\w$]+", bracket))
                    if used:
                        yield fact("smem-param", detail=",".join(map(str, sorted(used))))
            elif Operand.of(addr).tid_abs or Operand.of(addr).tid_wg:
                yield fact("tid-index", ("addr", Operand.of(addr)))
    if ins.base in _GLOBAL_OPS and ops and not ins.has("shared") and not ins.has("param"):
        yield from _gmem(fact, ins, env, site)
    if ins.base == "setp" and len(ops) >= 3:
        val = env.operand(ops[1])
        other = env.operand(ops[2])
        both = Operand.of(
            Val(None, val.origins | other.origins, val.unknown or other.unknown, val.tid_abs or other.tid_abs)
        )
        if both.tid_abs or both.tid_wg:
            yield fact("tid-index", ("cmp", both))


_GLOBAL_OPS = frozenset({"ld", "ldu", "st", "atom", "red"})
_NOT_GLOBAL = ("local", "const", "tex", "surf")


def _gmem(fact: Callable[..., Fact], ins: Instr, env: Env, site: _Site) -> Iterator[Fact]:
    """A load or store that may reach global memory (``gmem-access``; ``detail`` ``write`` or ``read``): a ``.global``
    one, or a generic one whose address is neither shared memory, the function's stack nor the params block. What a
    counter's release or acquire orders (``orders C`` of a counter claim, checker/conformance/orders.py)."""
    if any(ins.has(space) for space in _NOT_GLOBAL):
        return
    bracket = next((o for o in ins.operands if o.startswith("[")), None)
    if bracket is None:
        return
    addr = env.address(bracket)
    if "smem" in addr.origins or "static_shared" in addr.origins or addr.shared:
        return
    if (addr.local and not addr.unknown) or ("params_ptr" in addr.origins and not addr.unknown):
        return
    writes = ins.base in ("st", "atom", "red")
    yield fact(
        "gmem-access", ("addr", Operand.of(addr)), *_params_of(site, env, bracket), detail="write" if writes else "read"
    )


#: Bulk copies from shared memory to global memory (TMA and plain bulk stores, reductions): asynchronous reads of
#: shared memory that complete at a later ``cp.async.bulk.wait_group`` of their bulk group.
BULK_STORES = (
    "cp.async.bulk.tensor.1d.global.shared",
    "cp.async.bulk.tensor.2d.global.shared",
    "cp.async.bulk.tensor.3d.global.shared",
    "cp.async.bulk.tensor.4d.global.shared",
    "cp.async.bulk.tensor.5d.global.shared",
    "cp.async.bulk.global.shared",
    "cp.reduce.async.bulk.global.shared",
    "cp.reduce.async.bulk.tensor",
)


def _params_of(site: _Site, env: Env, text: str) -> list[tuple[str, Operand]]:
    """The function parameters (``param``, by position) a shared-memory address computed from the caller's arguments
    is built on: where a callable's access lands is decided at each call by what the caller passes there."""
    if "arg" not in env.address(text).origins:
        return []
    return [("param", Operand("constant", q)) for q in sorted(site.params_of(re.findall(r"%[\w$]+", text)))]


def _exact(site: _Site, env: Env, index: int, role: str, text: str) -> list[tuple[str, Operand]]:
    """``param:ROLE``: the parameter (by position) an operand of a callable is, its value itself (a parity, a
    count, a barrier ID passed as they are): a call binds it to the caller's argument there. An operand only
    computed from parameters has none (a summary leaves it unbound: the caller's value is not the operand's)."""
    text = text.strip()
    if not text.startswith("%") or "arg" not in env.operand(text).origins:
        return []
    q = site.exact_param(text)
    return [] if q is None else [(f"param:{role}", Operand("constant", q))]


def _bounds(site: _Site, env: Env, index: int) -> list[tuple[str, Operand]]:
    """The ranges the trap checks before ``index`` give params fields (``low``/``high`` per field, in ``field``)."""
    if not site.flow.reachable(index):
        return []
    found = field_bounds(site.flow, env, index)
    return [
        part
        for off, (low, high) in sorted(found.items())
        for part in (("low", Operand("constant", low, field=off)), ("high", Operand("constant", high, field=off)))
    ]


def _tensor_map(env: Env, ops: tuple[str, ...]) -> list[tuple[str, Operand]]:
    """The tensor map a TMA copy reads (``[tmap, {coords}]``): where its address comes from (``map``), or,
    for a map held in the params block itself, the block offset it sits at (``map-inline``)."""
    if len(ops) < 2:
        return []
    inner = ops[1].strip().strip("[]")
    base = inner.split(",", 1)[0].strip()
    if not base:
        return []
    val = env.operand(base)
    if val.origins and val.origins <= {"params_ptr", "arg"} and val.const is not None and not val.unknown:
        return [("map-inline", Operand("constant", val.const, field=val.const))]
    return [("map", Operand.of(val))]


def _width(opcode: str, value: str) -> int:
    """Bytes one access moves: its type's width times the lanes of a ``.v2``/``.v4`` vector."""
    parts = opcode.split(".")
    bits = next((int(p[1:]) for p in reversed(parts) if re.fullmatch(r"[bsuf](8|16|32|64|128)", p)), 0)
    lanes = next((int(p[1:]) for p in parts if re.fullmatch(r"v[248]", p)), 1)
    return bits // 8 * lanes


def _scope(opcode: str) -> str:
    for scope in ("sys", "gpu", "cluster", "cta"):
        if f".{scope}" in opcode:
            return scope
    if opcode.startswith("membar.gl"):
        return "gpu"
    return "gpu" if opcode.startswith(("atom", "red")) else ""
