"""What a draft reads in one PTX module: its handles by item, and what each function does with them.

Built on :mod:`package.codefacts` (its PTX reader and its value analysis): every register
is classified by :func:`package.codefacts.values.analyse`, and an operand that comes from
a handle names the handle (``kl_<stage>_<item>_<what>``, specs/handles.md), so an
``mbarrier.arrive`` on ``kl_ring_loader_kv_full_bar() + 8 * slot`` is an arrival on ring
``kv``'s full barrier. This module only reads; :mod:`analysis.draft.derive` turns what it
finds into contract items.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from analysis.draft.threads import at_most_once, reaches, together
from package.codefacts.ptx import Declaration, Function, Instr, Module, declarations, parse
from package.codefacts.values import Env, Val, analyse, defines

#: Handle suffixes (specs/handles.md), longest first, each with the kind of item it belongs to.
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_counter_ptr", "counter"),
    ("_counter_add", "counter"),
    ("_counter_wait", "counter"),
    ("_counter", "counter"),
    ("_full_count", "ring"),
    ("_empty_count", "ring"),
    ("_full_wait", "ring"),
    ("_empty_wait", "ring"),
    ("_full_bar", "ring"),
    ("_empty_bar", "ring"),
    ("_depth", "ring"),
    ("_bar_id", "barrier"),
    ("_threads", "barrier"),
    ("_stride", "smem"),
    ("_smem", "smem"),
    ("_tmem", "tmem"),
    ("_warp0", "role"),
    ("_regs", "role"),
    ("_export", "export"),
    ("_import", "import"),
)
_STAGE_WIDE = ("params_offset", "cluster_size")
#: Externals the toolkit resolves (never a handle nor a call trampoline).
TOOLKIT = frozenset({"vprintf", "__assertfail", "malloc", "free"})


@dataclass(frozen=True)
class Handle:
    """One handle a component reads: its symbol, item kind and name, and what it returns."""

    symbol: str
    kind: str  # ring / barrier / smem / tmem / role / counter / export / import / fact / stage
    item: str
    what: str  # the suffix without its underscore ("full_bar", "warp0", …; the fact's name for facts)


def parse_handle(rest: str) -> tuple[str, str, str] | None:
    """``(kind, item, what)`` of a handle name after its stage prefix; None when it is none."""
    if rest.startswith("fact_") and len(rest) > 5:
        return "fact", rest[5:], "fact"
    if rest in _STAGE_WIDE:
        return "stage", "", rest
    for suffix, kind in _SUFFIXES:
        if rest.endswith(suffix) and len(rest) > len(suffix):
            return kind, rest[: -len(suffix)], suffix[1:]
    return None


def stage_prefix(names: Iterable[str]) -> str | None:
    """The ``kl_<stage>_`` prefix that explains most of ``names`` as handles (the longest on a tie)."""
    names = sorted(set(names))
    candidates: set[str] = set()
    for name in names:
        parts = name.split("_")
        candidates.update("_".join(parts[:i]) + "_" for i in range(2, len(parts)))
    best: tuple[int, int, str] | None = None
    for prefix in candidates:
        score = sum(1 for n in names if n.startswith(prefix) and parse_handle(n[len(prefix) :]) is not None)
        if score and (best is None or (score, len(prefix)) > best[:2]):
            best = (score, len(prefix), prefix)
    return best[2] if best else None


@dataclass(frozen=True)
class Site:
    """One instruction a draft reads, with the PTX line it is on."""

    op: str  # init / wait / arrive / expect / copy / tensor-copy / credit / bar / setmaxnreg / call / smem / desc
    line: int
    handles: frozenset[str] = frozenset()  # the handles its address (or barrier ID) comes from
    value: int | None = None  # a constant operand: count, bytes, thread count, register budget, swizzle bytes
    detail: str = ""  # the opcode, a callee, `sync`/`arrive`, `store`/`load`
    args: tuple[int | None, ...] = ()  # a call's constant arguments
    types: tuple[str, ...] = ()  # a call's PTX argument types, then `->` and its result's, when it has one
    reach: str | None = None  # an arrive: which of the role's threads run it; a call: `per_thread` when all together
    extra: frozenset[str] = frozenset()  # a second operand's handles (a copy's destination)
    once: bool = False  # a call in a role entry: each run of it makes at most one call of this callee, once


@dataclass(frozen=True)
class FunctionCode:
    """What one function of the module does: its sites, the handles it calls, the opcodes it runs."""

    name: str
    kind: str
    line: int
    params: tuple[str, ...]
    sites: tuple[Site, ...]
    calls: frozenset[str]
    opcodes: frozenset[str]
    param_types: tuple[tuple[str, str | None], ...] = ()  # (parameter, its type as the body reads it: `ld.param.f32`)
    result_type: str | None = None  # the type the body stores its result as (`st.param.f32 [func_retval0]`)


@dataclass(frozen=True)
class Code:
    """A module as a draft reads it."""

    module: Module
    decls: tuple[Declaration, ...]
    target: str | None
    functions: tuple[FunctionCode, ...]
    lines: dict[str, int] = field(default_factory=dict)  # symbol -> the PTX line declaring it
    ptx_lines: list[str] = field(default_factory=list)

    def function(self, name: str) -> FunctionCode | None:
        return next((f for f in self.functions if f.name == name), None)

    def line_of(self, symbol: str) -> int:
        return self.lines.get(symbol, 0)

    @property
    def externs(self) -> dict[str, Declaration]:
        return {d.name: d for d in self.decls if d.linkage == ".extern"}

    @property
    def defined(self) -> dict[str, Declaration]:
        return {d.name: d for d in self.decls if d.linkage in (".visible", ".weak")}


_DECL_LINE = re.compile(r"^\s*\.(?:extern|visible|weak)\s+\.(?:func|entry)\b(?P<rest>.*)$")
_LAST_NAME = re.compile(r"([A-Za-z_$][\w$]*)\s*\(?\s*$")
_TARGET = re.compile(r"^\s*\.target\s+(\w+)", re.M)


def read(ptx: str, *, ignore: frozenset[str] = frozenset()) -> Code:
    """Read ``ptx`` (functions named in ``ignore`` are left out)."""
    module = parse(ptx)
    decls = declarations(ptx)
    externs = frozenset(d.name for d in decls if d.linkage == ".extern")
    smem_names = frozenset(d.name for d in module.shared if d.dynamic)
    static_names = frozenset(d.name for d in module.shared if not d.dynamic)
    lines: dict[str, int] = {}
    for number, text in enumerate(ptx.split("\n"), start=1):
        m = _DECL_LINE.match(text.split("//", 1)[0])
        if m:
            name = _LAST_NAME.search(m.group("rest"))
            if name and name.group(1) not in lines:
                lines[name.group(1)] = number
    target = _TARGET.search(ptx)
    ptx_lines = ptx.split("\n")
    functions = tuple(
        _function(fn, externs, smem_names, static_names, ptx_lines) for fn in module.functions if fn.name not in ignore
    )
    return Code(module, decls, target.group(1) if target else None, functions, lines, ptx_lines)


def _function(
    fn: Function, externs: frozenset[str], smem: frozenset[str], static: frozenset[str], ptx_lines: list[str]
) -> FunctionCode:
    entry_like = fn.entry_like
    env = analyse(fn, handle_names=externs, smem_names=smem, entry_like=entry_like, static_names=static)
    warp0 = frozenset(n for n in externs if n.endswith("_warp0"))
    reach = reaches(fn, ptx_lines, warp0)
    found = list(_sites(fn, env))
    lines = {s.line for s in found if s.op == "call"}
    calls = together(fn, ptx_lines, warp0, lines) if entry_like else {}
    callees: dict[str, set[int]] = {}
    for s in found:
        if s.op == "call":
            callees.setdefault(s.detail, set()).add(s.line)
    once = at_most_once(fn, ptx_lines, list(callees.values())) if entry_like else {}
    sites = tuple(
        dataclasses.replace(s, reach=reach.get(s.line))
        if s.op == "arrive"
        else dataclasses.replace(s, reach="per_thread" if calls.get(s.line) else None, once=once.get(s.line, False))
        if s.op == "call"
        else s
        for s in found
    )
    return FunctionCode(
        fn.name,
        fn.kind,
        fn.line,
        fn.params,
        sites,
        frozenset(c for ins in fn.body if ins.base == "call" for c in [_callee(ins)] if c),
        frozenset(ins.opcode for ins in fn.body),
        tuple((p, _param_type(fn, p)) for p in fn.params),
        next(
            (i.opcode.rsplit(".", 1)[-1] for i in fn.body if i.opcode.startswith("st.param") and "retval" in i.text),
            None,
        ),
    )


def _param_type(fn: Function, param: str) -> str | None:
    for ins in fn.body:
        if ins.opcode.startswith("ld.param.") and len(ins.operands) > 1 and ins.operands[1].strip("[] ") == param:
            return ins.opcode.rsplit(".", 1)[-1]
    return None


def _const(val: Val) -> int | None:
    return val.const if val.is_const else None


def _callee(ins: Instr) -> str | None:
    for op in ins.operands:
        name = op.strip()
        if re.fullmatch(r"[A-Za-z_$][\w$]*", name):
            return name
    return None


def _result_type(body: tuple[Instr, ...], index: int) -> tuple[str, ...]:
    """``("->", T)`` when the call at ``index`` reads a result (``ld.param.T … [retval0]``)."""
    for ins in body[index + 1 : index + 4]:
        if ins.base == "ld" and ins.has("param") and any("retval" in o for o in ins.operands):
            return ("->", ins.opcode.rsplit(".", 1)[-1])
    return ()


def _sites(fn: Function, env: Env) -> Iterator[Site]:
    pending: list[Val] = []  # the `st.param` values of the call being set up
    types: list[str] = []
    for index, ins in enumerate(fn.body):
        op, ops, line = ins.opcode, ins.operands, ins.line

        def addr(i: int, ops: tuple[str, ...] = ops) -> Val:
            return env.address(ops[i]) if len(ops) > i else Val(unknown=True)

        if ins.base == "st" and ins.has("param") and len(ops) >= 2 and "param" in ops[0] and "retval" not in ops[0]:
            pending.append(env.operand(ops[1]))
            types.append(op.rsplit(".", 1)[-1])
            continue
        if ins.base == "call":
            callee = _callee(ins)
            if callee is not None:
                args = tuple(_const(v) for v in pending)
                yield Site("call", line, detail=callee, args=args, types=(*types, *_result_type(fn.body, index)))
            pending, types = [], []
            continue

        if op.startswith("mbarrier.init") and len(ops) >= 2:
            count = env.operand(ops[1])
            yield Site("init", line, addr(0).handles, _const(count), op, extra=count.handles)
        elif op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")) and len(ops) >= 2:
            yield Site("wait", line, addr(1).handles, detail=op)
        elif op.startswith("mbarrier.arrive"):
            i = 0 if ops and ops[0].startswith("[") else 1  # `mbarrier.arrive _, [bar]` / `… %state, [bar]`
            tx = _const(env.operand(ops[i + 1])) if "expect_tx" in op and len(ops) > i + 1 else None
            yield Site("arrive", line, addr(i).handles, tx, op)
        elif op.startswith("tcgen05.commit") and "mbarrier::arrive" in op and ops:
            yield Site("arrive", line, addr(0).handles, None, op)  # one arrive once the thread's MMAs complete
        elif op.startswith("mbarrier.expect_tx") and len(ops) >= 2:
            yield Site("expect", line, addr(0).handles, _const(env.operand(ops[1])), op)
        elif op.startswith("mbarrier.complete_tx") and len(ops) >= 2:
            yield Site("credit", line, addr(0).handles, _const(env.operand(ops[1])), op)
        elif op.startswith("cp.async.bulk.tensor") and "mbarrier" in op and len(ops) >= 3:
            yield Site("tensor-copy", line, addr(2).handles, None, op, extra=addr(0).handles)
        elif op.startswith("cp.async.bulk.shared") and "mbarrier" in op and len(ops) >= 4:
            yield Site("copy", line, addr(3).handles, _const(env.operand(ops[2])), op, extra=addr(0).handles)
        elif re.match(r"^(bar|barrier)(\.cta)?\.(sync|arrive)", op) and ops:
            bid = env.operand(ops[0])
            threads = env.operand(ops[1]) if len(ops) > 1 and not ops[1].startswith(("%p", "!")) else None
            mode = "arrive" if ".arrive" in op else "sync"
            yield Site(
                "bar",
                line,
                bid.handles,
                _const(bid),
                mode,
                args=(_const(threads) if threads is not None else None,),
                extra=threads.handles if threads is not None else frozenset(),
            )
        elif op.startswith(("wgmma.mma_async", "tcgen05.mma")):
            for reg in (o.strip() for o in ops if re.fullmatch(r"%rd\d+", o.strip())):
                swizzle, base = _descriptor(fn, reg, op.startswith("tcgen05"))
                yield Site("desc", line, env.operand(reg).handles, swizzle, op, args=(base,))
            if op.startswith("tcgen05.mma") and len(ops) >= 4 and ops[0].strip().startswith("["):
                d = ops[0].strip().strip("[]").strip()
                idesc = env.operand(ops[3])
                direct = 1 if re.fullmatch(r"%r\d+", d) and _returned(fn, d) else 0
                value = idesc.const if idesc.is_const else None
                yield Site("tmem-mma", line, env.operand(d).handles, value, op, args=(direct,))
        elif op.startswith("setmaxnreg") and ops:
            yield Site("setmaxnreg", line, value=_const(env.operand(ops[0])), detail=op)
        elif op.startswith(("fence.mbarrier_init", "fence.proxy.async")):
            yield Site("fence", line, detail=op)
        elif ins.base in ("st", "ld", "ldmatrix", "stmatrix") and not op.startswith(
            ("ld.param", "st.param", "ld.global", "st.global", "ld.local", "st.local", "ld.const")
        ):
            bracket = next((o for o in ops if o.startswith("[")), None)
            if bracket is not None:
                where = env.address(bracket)
                if where.handles and (ins.has("shared") or "smem" in where.origins):
                    kind = "load" if ins.base in ("ld", "ldmatrix") else "store"
                    yield Site("smem", line, where.handles, detail=f"{kind}:{ins.base}")


#: A shared-memory matrix descriptor's layout type -> the swizzle's bytes (0: none). wgmma (sm_90a):
#: bits 62..63 (PTX ISA "Matrix Descriptor Format"); tcgen05 (sm_100a): bits 61..63, where 1 (128-byte
#: swizzle with 32-byte atoms) is left out.
_WGMMA_SWIZZLE = {0: 0, 1: 128, 2: 64, 3: 32}
_TCGEN05_SWIZZLE = {0: 0, 2: 128, 4: 64, 6: 32}


def _descriptor(fn: Function, reg: str, tcgen05: bool) -> tuple[int | None, int | None]:
    """The swizzle bytes and matrix base offset of the descriptor in ``reg`` (None each: undecided).

    Decided where every definition of ``reg`` is ``or.b64 reg, low, C`` with one constant ``C`` and ``low``
    zero-extended from 32 bits (``cvt.u64.u32``): the descriptor's bits 32..63, which hold the layout type
    and the base offset, are then ``C``'s.
    """
    high: set[int] = set()
    for ins in fn.body:
        if not (ins.operands and ins.operands[0].strip() == reg and defines(ins)):
            continue
        ops = [o.strip() for o in ins.operands]
        if ins.opcode != "or.b64" or len(ops) != 3 or not re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", ops[2]):
            return None, None
        if not _zero_extended(fn, ops[1]):
            return None, None
        high.add((int(ops[2], 0) & (1 << 64) - 1) >> 32)
    if len(high) != 1:
        return None, None
    c = high.pop() << 32
    layout = (c >> 61) & 7 if tcgen05 else (c >> 62) & 3
    swizzle = (_TCGEN05_SWIZZLE if tcgen05 else _WGMMA_SWIZZLE).get(layout)
    return swizzle, (c >> 49) & 7


def _returned(fn: Function, reg: str) -> bool:
    """Whether every definition of ``reg`` is a call's return value itself (``ld.param … [retval0]``): no
    offset is added to what the callee (a handle) returned."""
    defs = [i for i in fn.body if i.operands and i.operands[0].strip() == reg and defines(i)]
    return bool(defs) and all(
        i.opcode.startswith("ld.param")
        and len(i.operands) == 2
        and i.operands[1].replace(" ", "") in ("[retval0]", "[retval0+0]")
        for i in defs
    )


_REG = re.compile(r"%\w+")


def one_mbarrier(module: Module, symbol: str) -> bool:
    """Whether the claim the handle ``symbol`` names is reached only as one mbarrier at its offset 0: in every
    function, each instruction that reads a register holding the handle's value (or one computed from it)
    is either the ``add`` of the function's shared-memory block (:func:`_at_base`) or an mbarrier operation
    (``mbarrier.*``, ``tcgen05.commit … mbarrier``) whose address is such a sum and which reads the value
    nowhere else. Any other use (an offset, a copy, a call argument, a store) answers False."""
    used = False
    for fn in module.functions:
        held: set[str] = set()
        for index, ins in enumerate(fn.body):
            if ins.base == "call" and _callee(ins) == symbol:
                for after in fn.body[index + 1 : index + 4]:
                    if after.opcode.startswith("ld.param") and "retval0" in after.operands[-1]:
                        held.add(after.operands[0].strip())
                        break
        grown = True
        while grown:
            grown = False
            for ins in fn.body:
                if defines(ins) and any(set(_REG.findall(o)) & held for o in ins.operands[1:]):
                    reg = ins.operands[0].strip()
                    if reg not in held:
                        held.add(reg)
                        grown = True
        for ins in fn.body:
            sources = ins.operands[1:] if defines(ins) else ins.operands
            if not any(set(_REG.findall(o)) & held for o in sources):
                continue
            if ins.opcode in ("add.s32", "add.u32") and _at_base(fn, f"[{ins.operands[0].strip()}]"):
                continue
            barrier = ins.opcode.startswith("mbarrier.") or (
                ins.opcode.startswith("tcgen05.commit") and "mbarrier" in ins.opcode
            )
            reads = [o.strip() for o in sources if set(_REG.findall(o)) & held]
            if not barrier or not all(o.startswith("[") and _at_base(fn, o) for o in reads):
                return False
            used = True
    return used


def _defs(fn: Function, reg: str) -> list[Instr]:
    return [i for i in fn.body if i.operands and i.operands[0].strip() == reg and defines(i)]


def _at_base(fn: Function, operand: str) -> bool:
    """Whether the address ``operand`` (``[%rN]``) is, on every definition of its register, a handle's value
    (a call's return value itself) plus the shared-memory block the function receives (its last parameter,
    converted with ``cvta.to.shared``), with no other term: offset 0 of the claim the handle names."""
    m = re.fullmatch(r"\[\s*(%r\d+)\s*\]", operand.strip())
    if m is None:
        return False
    defs = _defs(fn, m.group(1))

    def plus(ins: Instr) -> bool:
        if ins.opcode not in ("add.s32", "add.u32") or len(ins.operands) != 3:
            return False
        a, b = (o.strip() for o in ins.operands[1:])
        return (_returned(fn, a) and _smem_block(fn, b)) or (_returned(fn, b) and _smem_block(fn, a))

    return bool(defs) and all(plus(i) for i in defs)


def _smem_block(fn: Function, reg: str) -> bool:
    """Whether ``reg`` is, on every definition, the 32-bit shared address of the function's last parameter
    (``ld.param.u64`` of it, ``cvta.to.shared.u64``, ``cvt.u32.u64``): the block the handles' offsets are in."""
    if not fn.params or not re.fullmatch(r"%r\d+", reg):
        return False
    last = fn.params[-1]

    def each(r: str, test: Callable[[Instr], bool]) -> bool:
        defs = _defs(fn, r)
        return bool(defs) and all(test(i) for i in defs)

    def loaded(ins: Instr) -> bool:
        return ins.opcode == "ld.param.u64" and len(ins.operands) == 2 and ins.operands[1].strip() == f"[{last}]"

    def shared(ins: Instr) -> bool:
        return ins.opcode == "cvta.to.shared.u64" and len(ins.operands) == 2 and each(ins.operands[1].strip(), loaded)

    def narrowed(ins: Instr) -> bool:
        return ins.opcode == "cvt.u32.u64" and len(ins.operands) == 2 and each(ins.operands[1].strip(), shared)

    return each(reg, narrowed)


def _zero_extended(fn: Function, reg: str) -> bool:
    """Whether every definition of ``reg`` zero-extends a 32-bit value (its bits 32..63 are 0)."""
    defs = [i for i in fn.body if i.operands and i.operands[0].strip() == reg and defines(i)]
    return bool(defs) and all(i.opcode == "cvt.u64.u32" for i in defs)
