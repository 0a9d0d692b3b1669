"""What the code does, as facts: every instruction a conformance check reads, with its operands classified.

The facts depend on the PTX alone (not on the contract), so ``kernlink pack`` records
them in the package (manifest key ``conformance``) and the loader derives them again
from the package's PTX payload: a manifest whose facts disagree with its own payload
is L-INTEGRITY. The checks (:mod:`checker.conformance.checks`) then judge the facts
against the contract.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from package.codefacts.ptx import Function, Instr, parse
from package.codefacts.values import Env, Val, analyse

#: Bumped whenever the facts a given PTX yields change (a package's record is then re-derived, not compared).
FACTS_VERSION = 2  # 2: `mbarrier.complete_tx` gives a `complete-tx` fact


@dataclass(frozen=True)
class Operand:
    """A classified operand: ``kind`` is constant / handle / params / arith / unknown."""

    kind: str
    value: int | None = None
    handles: tuple[str, ...] = ()
    smem: bool = False
    tid_abs: bool = False
    tid_wg: bool = False  # %tid reduced modulo a warpgroup: relative only in a warpgroup-aligned role

    @classmethod
    def of(cls, val: Val) -> Operand:
        relative = any(h.endswith("_warp0") for h in val.handles)
        return cls(
            val.kind(),
            val.const if val.is_const else None,
            tuple(sorted(val.handles)),
            "smem" in val.origins,
            val.tid_abs and not relative,
            "wg_lane" in val.origins and not relative,
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
        return [self.kind, self.value, list(self.handles), self.smem, self.tid_abs, self.tid_wg]

    @classmethod
    def from_json(cls, raw: Any) -> Operand:
        kind, value, handles, smem, tid_abs, tid_wg = raw
        return cls(
            str(kind),
            None if value is None else int(value),
            tuple(str(h) for h in handles),
            bool(smem),
            bool(tid_abs),
            bool(tid_wg),
        )


@dataclass(frozen=True)
class Fact:
    """One instruction (or declaration) a check reads."""

    kind: str
    function: str
    line: int
    opcode: str
    operands: tuple[tuple[str, Operand], ...] = ()
    src: tuple[str, int] | None = None
    detail: str = ""

    def operand(self, role: str) -> Operand | None:
        return next((o for r, o in self.operands if r == role), None)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "function": self.function,
            "line": self.line,
            "opcode": self.opcode,
            "operands": [[r, o.as_json()] for r, o in self.operands],
            "src": list(self.src) if self.src else None,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Fact:
        src = raw.get("src")
        return cls(
            str(raw["kind"]),
            str(raw["function"]),
            int(raw["line"]),
            str(raw["opcode"]),
            tuple((str(r), Operand.from_json(o)) for r, o in raw["operands"]),
            (str(src[0]), int(src[1])) if src else None,
            str(raw.get("detail", "")),
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
    handles = frozenset(re.findall(r"\.extern\s+\.func\s*\([^)]*\)\s*([\w$]+)", ptx))
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
        facts.extend(_function(fn, handles, smem_names, static_names))
    return CodeFacts(tuple(facts), module.lines)


def _function(
    fn: Function, handles: frozenset[str], smem_names: frozenset[str], static_names: frozenset[str]
) -> Iterator[Fact]:
    entry_like = len(fn.params) == 2 and fn.kind == ".func"
    env = analyse(fn, handle_names=handles, smem_names=smem_names, entry_like=entry_like, static_names=static_names)
    for name, values, line in fn.directives:
        yield Fact(
            "directive",
            fn.name,
            line,
            f".{name}",
            tuple((f"v{i}", Operand("constant", v)) for i, v in enumerate(values)),
            detail=name,
        )
    pending_write: Instr | None = None
    for ins in fn.body:
        yield from _instruction(fn.name, ins, env)
        op = ins.opcode
        if op.startswith("fence.proxy.async"):
            pending_write = None
        elif _generic_smem_write(ins, env):
            pending_write = pending_write or ins
        elif op.startswith(_ASYNC_READ) and pending_write is not None:
            yield Fact(
                "proxy", fn.name, ins.line, op, src=ins.src, detail=f"{pending_write.line}:{pending_write.opcode}"
            )
            pending_write = None


def _generic_smem_write(ins: Instr, env: Env) -> bool:
    if ins.base not in ("st", "stmatrix") or ins.has("async") or not ins.operands:
        return False
    return ins.has("shared") or "smem" in env.address(ins.operands[0]).origins


def _op(env: Env, text: str) -> Operand:
    return Operand.of(env.operand(text))


def _addr(env: Env, text: str) -> Operand:
    return Operand.of(env.address(text))


def _instruction(fn: str, ins: Instr, env: Env) -> Iterator[Fact]:
    op, ops, src = ins.opcode, ins.operands, ins.src

    def fact(kind: str, *operands: tuple[str, Operand], detail: str = "") -> Fact:
        return Fact(kind, fn, ins.line, op, tuple(operands), src, detail)

    if _BARRIER.match(op) and not op.startswith(("bar.warp", "barrier.cluster")):
        if not ops:  # `barrier.sync.aligned` without operands is not valid PTX; treat as barrier 0
            yield fact("barrier", ("id", Operand("constant", 0)))
        else:
            red = 1 if op.startswith(("bar.red", "barrier.red")) else 0
            parts = [("id", _op(env, ops[red]))]
            if len(ops) > red + 1 and not ops[red + 1].startswith(("%p", "!")) and red == 0:
                parts.append(("threads", _op(env, ops[1])))
            yield fact("barrier", *parts)
    elif op.startswith("mbarrier.init") and len(ops) >= 2:
        yield fact("mbarrier-init", ("addr", _addr(env, ops[0])), ("count", _op(env, ops[1])))
    elif (op.startswith("mbarrier.arrive.expect_tx") or op.startswith("mbarrier.expect_tx")) and len(ops) >= 2:
        addr_i = 1 if op.startswith("mbarrier.arrive") else 0
        if len(ops) > addr_i + 1:
            yield fact("expect-tx", ("addr", _addr(env, ops[addr_i])), ("bytes", _op(env, ops[addr_i + 1])))
    elif op.startswith("mbarrier.complete_tx") and len(ops) >= 2:
        # transaction bytes a thread completes without a copy (e.g. the part of a copy a clipped box leaves out)
        yield fact("complete-tx", ("addr", _addr(env, ops[0])), ("bytes", _op(env, ops[1])))
    elif op.startswith("cp.async.bulk.tensor") and "mbarrier" in op:
        yield fact("tensor-copy", ("bar", _addr(env, ops[2] if len(ops) > 2 else "")))
    elif op.startswith("cp.async.bulk.shared") and "mbarrier" in op and len(ops) >= 4:
        yield fact("bulk-copy", ("dst", _addr(env, ops[0])), ("bytes", _op(env, ops[2])), ("bar", _addr(env, ops[3])))
    elif op.startswith("setmaxnreg") and ops:
        yield fact("setmaxnreg", ("regs", _op(env, ops[0])), detail="inc" if ".inc" in op else "dec")
    elif op.startswith("tcgen05.alloc") and len(ops) >= 2:
        yield fact("tmem-alloc", ("columns", _op(env, ops[1])))
    elif op.startswith(("fence.", "membar.")) and not op.startswith(("fence.proxy", "fence.mbarrier_init")):
        yield fact("fence", detail=_scope(op))
    if ins.base in ("atom", "red") and len(ops) >= 2:
        addr_text = ops[1] if ins.base == "atom" else ops[0]
        yield fact("atomic", ("addr", _addr(env, addr_text)), detail=_scope(op))
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
                yield fact("smem-access", ("addr", Operand.of(addr)))
            elif Operand.of(addr).tid_abs or Operand.of(addr).tid_wg:
                yield fact("tid-index", ("addr", Operand.of(addr)))
    if ins.base == "setp" and len(ops) >= 3:
        val = env.operand(ops[1])
        other = env.operand(ops[2])
        both = Operand.of(
            Val(None, val.origins | other.origins, val.unknown or other.unknown, val.tid_abs or other.tid_abs)
        )
        if both.tid_abs or both.tid_wg:
            yield fact("tid-index", ("cmp", both))


def _scope(opcode: str) -> str:
    for scope in ("sys", "gpu", "cluster", "cta"):
        if f".{scope}" in opcode:
            return scope
    if opcode.startswith("membar.gl"):
        return "gpu"
    return "gpu" if opcode.startswith(("atom", "red")) else ""
