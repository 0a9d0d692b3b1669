"""A small abstract interpretation over one PTX function: where does each value come from?

Every register gets an abstract value, the join over all its definitions (flow
insensitive, so a value redefined in a loop is the join of its initial and its
updated value — loops are widened by construction). A value is

- a *constant* (``const`` set, no origins): an immediate, or arithmetic on immediates;
- *from a handle*: it depends on the result of a call to a handle function
  (``h:<symbol>`` in ``origins``);
- a *params load*: loaded from the params pointer (``params``) or a function parameter
  (``arg``; the two parameters of an entry-like function carry it too, since a callable
  taking two pointers looks the same);
- the dynamic shared-memory base (``smem``: the entry's second argument, or an
  ``extern .shared`` array), the thread index (``tid``, with ``tid_abs`` while it is
  not reduced to a lane), the grid (``grid``);
- a *local* address (``local``, kind ``local``): the function's own stack (``__local_depot``
  and the ``%SP``/``%SPL`` copied from it), another ``.local`` name, at an offset or an
  index, or the result of any ``cvta.local``/``cvta.to.local`` (the local window holds
  nothing else). It is never a shared-memory address. Every definition must be one (a
  select or join with anything else is not), so the flag only survives a join of locals.
  An address at a known offset of a ``.local`` name carries the name (origin
  ``frame:<name>``) and the offset (``const``);
- *a value loaded from the function's own frame* (:class:`Frame`): what the function stored
  at that place of its ``.local`` memory, where the PTX shows every store there and the
  frame's addresses reach nothing that could write it (a call, memory outside the frame, an
  atomic); otherwise unknown;
- *unknown*: a load from memory, a call's result, anything not listed above.

Arithmetic unions origins; constants fold where the operation is known. The result
is a fixed point reached in at most a few passes (origins only grow, and a constant
only becomes non-constant).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from package.codefacts.ptx import Function, Instr

#: A 32-bit value as a linear form over ``u32`` params fields, modulo 2**32: the constant and the
#: (params offset, coefficient) terms, sorted, no zero coefficient. ``16384 - (rows << 7)`` with
#: ``rows`` at offset 48 is ``(16384, ((48, 2**32 - 128),))``.
Linear = tuple[int, tuple[tuple[int, int], ...]]
_WORD = 1 << 32


@dataclass(frozen=True)
class Val:
    const: int | None = None
    origins: frozenset[str] = frozenset()
    unknown: bool = False
    tid_abs: bool = False
    field: int | None = None  # the params offset a value loaded from the params block was read at
    linear: Linear | None = None  # a 32-bit value of params fields (a run-time copy or credit size)
    local: bool = False  # every definition is an address of the function's own local memory (never shared)
    shared: bool = False  # some definition is a ``cvta.shared``/``cvta.to.shared`` conversion (a shared address)

    @property
    def handles(self) -> frozenset[str]:
        return frozenset(o[2:] for o in self.origins if o.startswith("h:"))

    @property
    def is_const(self) -> bool:
        return self.const is not None and not self.origins and not self.unknown

    def kind(self) -> str:
        """``handle``, ``local``, ``unknown``, ``constant``, ``params`` or ``arith`` (computed without a handle)."""
        if self.handles:
            return "handle"
        if self.local and not self.unknown:
            return "local"
        if self.unknown:
            return "unknown"
        if self.is_const:
            return "constant"
        if self.origins and self.origins <= {"params", "arg"}:
            return "params"
        return "arith"


def frame_place(val: Val) -> tuple[str, int | None] | None:
    """Where in the function's own ``.local`` memory an address points: the ``.local`` name and the offset (None: an
    index the analysis does not fold), or None when it is no address of one known ``.local`` name."""
    names = [o[6:] for o in val.origins if o.startswith("frame:")]
    if not val.local or val.unknown or len(names) != 1:
        return None
    return names[0], val.const


@dataclass
class Frame:
    """What a function keeps in its own ``.local`` memory (the stack nvcc calls ``__local_depot``), flow insensitive:
    at each place (name, offset) the width and the join of every value stored there; ``wild``, per width, the join of
    the values stored at an offset the analysis does not fold. A load of a place reads the join of what is stored there
    and of every wild store of its width. The contents are ``lost`` (every load of the frame unknown) when a store
    there is of a place the analysis cannot tell or overlaps another of another width, an atomic updates the frame, or
    one of its addresses goes where it may be written through unseen (a call's argument, memory outside the frame, a
    conversion that is no copy). ``final``: every store is seen, so a load of a place no store writes is unknown."""

    cells: dict[tuple[str, int], tuple[int, Val]] = dataclasses.field(default_factory=dict)
    wild: dict[int, Val] = dataclasses.field(default_factory=dict)
    lost: bool = False
    final: bool = False

    def lose(self) -> bool:
        changed = not self.lost
        self.lost = True
        return changed

    def store(self, addr: Val, width: int, lanes: list[Val]) -> bool:
        """Record a store of ``lanes`` (each ``width`` bytes, one after the other) at ``addr``: whether it changed."""
        place = frame_place(addr)
        if place is None or width <= 0:
            return self.lose()
        name, offset = place
        changed = False
        for i, val in enumerate(lanes):
            if offset is None:
                old = self.wild.get(width)
                new = join(old, val)
                if new != old:
                    self.wild[width] = new
                    changed = True
                continue
            at = offset + i * width
            cell = self.cells.get((name, at))
            if cell is not None and cell[0] != width:
                return self.lose()
            if any(n == name and o != at and o < at + width and at < o + w for (n, o), (w, _) in self.cells.items()):
                return self.lose()  # a store overlapping another: a part of a value is no value
            new = join(None if cell is None else cell[1], val)
            if cell is None or new != cell[1]:
                self.cells[(name, at)] = (width, new)
                changed = True
        return changed

    def load(self, addr: Val, width: int, lanes: int) -> Val | None:
        """The value a load of ``lanes`` places of ``width`` bytes at ``addr`` reads (the join over its lanes), or None
        while the stores are not all seen and one of its places has none yet."""
        place = frame_place(addr)
        if self.lost or place is None or width <= 0 or any(w != width for w in self.wild):
            return UNKNOWN
        name, offset = place
        if offset is None:  # any place of the frame
            if any(w != width for w, _ in self.cells.values()):
                return UNKNOWN
            stored = [v for _, v in self.cells.values()] + list(self.wild.values())
        else:
            stored = list(self.wild.values())
            for i in range(lanes):
                cell = self.cells.get((name, offset + i * width))
                if cell is None and any(
                    n == name and o < offset + (i + 1) * width and offset + i * width < o + w
                    for (n, o), (w, _) in self.cells.items()
                ):
                    return UNKNOWN  # part of another store
                if cell is None:
                    if self.final:
                        return UNKNOWN  # a place nothing stores to
                    return None
                stored.append(cell[1])
        if not stored:
            return UNKNOWN if self.final else None
        val: Val | None = None
        for v in stored:
            val = join(val, v)
        return val


CONSTANT_ZERO = Val(0)
UNKNOWN = Val(unknown=True)
LOCAL = Val(origins=frozenset({"local"}), local=True)
#: Origins of a value that is an integer, never an address: added to a local address, it stays one.
_INDEX_ORIGINS = frozenset({"tid", "lane", "grid", "wg_lane"})


def join(a: Val | None, b: Val) -> Val:
    if a is None:
        return b
    if a == b:
        return a
    const = a.const if a.const == b.const else None
    field = a.field if a.field == b.field else None
    linear = a.linear if a.linear == b.linear else None
    local = a.local and b.local
    shared = a.shared or b.shared
    return Val(
        const, a.origins | b.origins, a.unknown or b.unknown, a.tid_abs or b.tid_abs, field, linear, local, shared
    )


def linear_of(val: Val) -> Linear | None:
    """``val`` as a linear form over params fields (a constant is one without terms), or None."""
    if val.is_const and val.const is not None:
        return (val.const % _WORD, ())
    return val.linear


def linear_sum(forms: list[Linear], scale: list[int] | None = None) -> Linear:
    """``sum(scale[i] * forms[i])`` modulo 2**32."""
    const = 0
    terms: dict[int, int] = {}
    for i, (c, ts) in enumerate(forms):
        k = 1 if scale is None else scale[i]
        const += k * c
        for off, coef in ts:
            terms[off] = terms.get(off, 0) + k * coef
    return (const % _WORD, tuple(sorted((o, c % _WORD) for o, c in terms.items() if c % _WORD)))


def _linear(ins: Instr, srcs: list[Val]) -> Linear | None:
    """The linear form a 32-bit ``mov``/``add``/``sub``/``shl``/``mul.lo``/``mad.lo`` computes, or None."""
    parts = ins.opcode.split(".")
    if not {"u32", "s32", "b32"} & set(parts) or "cc" in parts or "sat" in parts:
        return None
    forms = [linear_of(v) for v in srcs]
    base = ins.base
    if base == "mov" and len(forms) == 1 and forms[0] is not None:
        return forms[0]
    if len(forms) < 2 or any(f is None for f in forms[:2]):
        return None
    a, b = forms[0], forms[1]
    assert a is not None and b is not None
    if base == "add" and len(forms) == 2:
        return linear_sum([a, b])
    if base == "sub" and len(forms) == 2:
        return linear_sum([a, b], [1, -1])
    if base == "shl" and len(forms) == 2 and not b[1] and b[0] < 32:
        return linear_sum([a], [1 << b[0]])
    if base in ("mul", "mad") and "lo" in parts and (not a[1] or not b[1]):
        product = linear_sum([b], [a[0]]) if not a[1] else linear_sum([a], [b[0]])
        if base == "mul" and len(forms) == 2:
            return product
        if base == "mad" and len(forms) == 3 and forms[2] is not None:
            return linear_sum([product, forms[2]])
    return None


def combine(vals: list[Val], fold: Callable[[list[int]], int] | None = None) -> Val:
    origins = frozenset().union(*(v.origins for v in vals)) if vals else frozenset()
    unknown = any(v.unknown for v in vals)
    const = None
    if fold is not None and vals and all(v.const is not None for v in vals):
        try:
            const = fold([v.const for v in vals if v.const is not None])
        except (ZeroDivisionError, ValueError):
            const = None
    return Val(const, origins, unknown, any(v.tid_abs for v in vals), shared=any(v.shared for v in vals))


FOLDS: Mapping[str, Callable[[list[int]], int]] = {
    "add": lambda v: sum(v),
    "sub": lambda v: v[0] - v[1],
    "mul": lambda v: v[0] * v[1],
    "mad": lambda v: v[0] * v[1] + v[2],
    "shl": lambda v: v[0] << v[1],
    "shr": lambda v: v[0] >> v[1],
    "and": lambda v: v[0] & v[1],
    "or": lambda v: v[0] | v[1],
    "xor": lambda v: v[0] ^ v[1],
    "neg": lambda v: -v[0],
    "not": lambda v: ~v[0],
    "min": min,
    "max": max,
    "div": lambda v: v[0] // v[1],
    "rem": lambda v: v[0] % v[1],
}
_COPIES = ("mov", "cvt", "cvta", "mapa")  # mapa: the same shared offset in another CTA of the cluster
_SPECIAL = re.compile(
    r"%(tid|ntid|laneid|warpid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|"
    r"cluster_nctarank|cluster_ctarank|smid|nsmid|gridid|lanemask_\w+|clock\w*|globaltimer\w*)"
)
IMMEDIATE = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)[Uu]?$")
_REG = re.compile(r"^%[\w$]+$")
_REGS = re.compile(r"%[\w$]+")
_ADDR = re.compile(r"^\[\s*([^\]+]+?)\s*(?:\+\s*(-?\w+))?\s*\]$")


@dataclass
class Env:
    """The abstract values of one function's registers and the names it declares."""

    values: dict[str, Val]
    smem_names: frozenset[str]
    handle_names: frozenset[str]
    params: tuple[str, ...]
    entry_like: bool
    smem_value: Val = Val(origins=frozenset({"smem"}))
    static_names: frozenset[str] = frozenset()
    local_names: frozenset[str] = frozenset()
    frame: Frame = dataclasses.field(default_factory=lambda: Frame())

    def operand(self, text: str) -> Val:
        text = text.strip()
        if IMMEDIATE.match(text):
            return Val(int(text.rstrip("Uu"), 0))
        if text.startswith("0f") or text.startswith("0d"):
            return Val(0)
        special = _SPECIAL.match(text)
        if special:
            what = special.group(1)
            if what == "tid":
                return Val(origins=frozenset({"tid"}), tid_abs=True)
            if what == "laneid":
                return Val(origins=frozenset({"lane"}))
            if what in (
                "ntid",
                "nctaid",
                "ctaid",
                "clusterid",
                "nclusterid",
                "cluster_ctaid",
                "cluster_nctarank",
                "cluster_ctarank",
            ):
                return Val(origins=frozenset({"grid"}))
            return UNKNOWN
        if text in self.smem_names:
            return self.smem_value
        if text in self.static_names:
            return Val(origins=frozenset({"static_shared"}))
        if text in self.local_names:
            return Val(0, frozenset({"local", f"frame:{text}"}), local=True)
        if _REG.match(text):
            return self.values.get(text, Val())
        return UNKNOWN

    def address(self, text: str) -> Val:
        """The value of ``[reg+off]`` / ``[name]``."""
        m = _ADDR.match(text.strip())
        if m is None:
            return UNKNOWN
        base = self.operand(m.group(1))
        if m.group(2) is None:
            return base
        offset = self.operand(m.group(2))
        val = combine([base, offset], FOLDS["add"])
        if base.local and offset.is_const:
            val = dataclasses.replace(val, local=True)  # ``[%SP+8]``: still the function's own local memory
        return val


def analyse(
    function: Function,
    *,
    handle_names: frozenset[str],
    smem_names: frozenset[str],
    entry_like: bool,
    smem_offsets: bool = False,
    static_names: frozenset[str] = frozenset(),
) -> Env:
    """The fixed point of the function's register values (module docstring).

    ``smem_offsets``: the shared-memory base counts as offset 0 (origin ``smem``), so
    an address ``base + 196608`` keeps its offset in ``const`` (the link audit reads it).
    """
    base = Val(0, frozenset({"smem"})) if smem_offsets else Val(origins=frozenset({"smem"}))
    env = Env({}, smem_names, handle_names, function.params, entry_like, base, static_names, function.local_names)
    for _ in range(32):
        changed = False
        last_call: str | None = None
        for ins in function.body:
            if ins.base == "call":
                last_call = callee(ins)
                dest = _call_result(ins)
                if dest is not None:
                    changed |= _set(env, dest, UNKNOWN)
                continue
            result = _transfer(env, ins, last_call)
            changed |= _frame_effects(env, ins, None if result is None else result[1])
            if result is None:
                continue
            for part, lane in _lanes(ins, *result):
                changed |= _set(env, part, lane)
        if not changed:
            if env.frame.final:
                return env
            env.frame.final = True  # every store is seen: a load of a place none writes is unknown from here on
    for name in list(env.values):  # no fixed point within the budget: widen to unknown
        env.values[name] = UNKNOWN
    return env


def _set(env: Env, dest: str, val: Val) -> bool:
    old = env.values.get(dest)
    new = join(old, val)
    if new != old:
        env.values[dest] = new
        return True
    return False


def _lanes(ins: Instr, dest: str, val: Val) -> list[tuple[str, Val]]:
    """Each register ``ins`` writes with its value: every destination of a vector load (the parser drops its braces,
    :func:`written`) reads the loaded value, a params-block word its own field; any other destination ``val``."""
    if ins.base not in ("ld", "ldu"):
        return [(part, val) for part in _dests(dest)]
    width, _ = access_width(ins.opcode)
    regs = written(ins)
    if val.field is None or len(regs) < 2:
        return [(reg, val) for reg in regs]
    return [(reg, dataclasses.replace(val, field=val.field + i * width, linear=None)) for i, reg in enumerate(regs)]


def _dests(dest: str) -> list[str]:
    """The registers of ``%r`` or ``{%r1, %r2}`` (``_`` sinks dropped)."""
    return [d.strip() for d in dest.strip("{}").split(",") if _REG.match(d.strip())]


def callee(ins: Instr) -> str | None:
    for op in ins.operands:
        name = op.strip()
        if re.fullmatch(r"[A-Za-z_$][\w$]*", name):
            return name
    return None


def call_arguments(ins: Instr) -> list[str]:
    """The parameter names a call passes (the list after the callee's name; none when it has no callee)."""
    target = callee(ins)
    ops = [o.strip() for o in ins.operands]
    after = ops[ops.index(target) + 1 :] if target in ops else []
    return [a.strip() for o in after if o.startswith("(") for a in o.strip("() ").split(",") if a.strip()]


def _call_result(ins: Instr) -> str | None:
    first = ins.operands[0].strip() if ins.operands else ""
    m = re.fullmatch(r"\(\s*(%[\w$]+)\s*\)", first)
    return m.group(1) if m else None


# Instructions whose first operand is read, not written (PTX ISA): stores, reductions, barriers,
# fences, branches, copies, prefetches and the control of the asynchronous units.
_NO_DEST_BASES = frozenset(
    {
        "st",
        "stmatrix",
        "red",
        "sust",
        "sured",
        "membar",
        "fence",
        "bra",
        "brx",
        "ret",
        "exit",
        "trap",
        "brkpt",
        "nanosleep",
        "pmevent",
        "setmaxnreg",
        "griddepcontrol",
        "prefetch",
        "prefetchu",
        "cp",
        "discard",
        "applypriority",
        "tensormap",
        "stackrestore",
        "clusterlaunchcontrol",
    }
)
# Families with both kinds: the second opcode part that reads its first operand.
_NO_DEST_PARTS = {
    "bar": frozenset({"sync", "arrive", "warp", "cta"}),
    "barrier": frozenset({"sync", "arrive", "cluster", "cta", "aligned"}),
    "mbarrier": frozenset({"init", "inval", "expect_tx", "complete_tx"}),
    "wgmma": frozenset({"fence", "commit_group", "wait_group"}),
    "multimem": frozenset({"st", "red"}),
    "wmma": frozenset({"store"}),
}


def defines(ins: Instr) -> bool:
    """Whether ``ins`` writes its first operand (an instruction of the PTX ISA without a destination does not).

    ``bar.red``/``barrier.red`` define their first operand; ``bar.cta.sync`` and ``bar.sync`` do
    not; every ``tcgen05`` instruction but ``tcgen05.ld`` reads its operands.
    """
    parts = ins.opcode.split(".")
    base = parts[0]
    if base in _NO_DEST_BASES:
        return base == "clusterlaunchcontrol" and "query_cancel" in parts
    if base in ("bar", "barrier"):
        return "red" in parts
    if base == "tcgen05":
        return len(parts) > 1 and parts[1] == "ld"
    rest = _NO_DEST_PARTS.get(base)
    return not (rest is not None and len(parts) > 1 and parts[1] in rest)


def written(ins: Instr) -> tuple[str, ...]:
    """The registers ``ins`` writes: a call's results, or its destinations (both of ``setp``'s ``%p|%q``,
    every one of a vector load's); none for an instruction without a destination (:func:`defines`).

    The parser drops a vector's braces (:mod:`.ptx`), so only a load's destinations can be told from its
    sources (they stand before its address); any other instruction's destination is its first operand."""
    ops = ins.operands
    if not ops:
        return ()
    if ins.base in ("ld", "ldu"):
        before = ops[: next((i for i, o in enumerate(ops) if o.strip().startswith("[")), len(ops))]
        return tuple(r for o in before for r in _REGS.findall(o))
    if ins.base == "call":
        first = ops[0].strip()
        return tuple(_REGS.findall(first)) if first.startswith("(") else ()
    if not defines(ins):
        return ()
    return tuple(_REGS.findall(ops[0])) if ops[0].strip().startswith(("%", "{")) else ()


def _transfer(env: Env, ins: Instr, last_call: str | None) -> tuple[str, Val] | None:
    ops = ins.operands
    if not ops or not defines(ins):
        return None
    dest = ops[0].strip()
    if not _REG.match(dest) and not (dest.startswith("{") and ins.base in ("ld", "ldu", "mov")):
        return None
    if dest.startswith("{") and ins.base == "mov":  # a vector unpack: each part is the source's
        return dest, env.operand(ops[1]) if len(ops) > 1 and _REG.match(ops[1].strip()) else UNKNOWN
    base = ins.base
    if base == "ld" and ins.has("param"):
        addr = ops[1].strip()
        if "retval" in addr:
            if last_call is not None and last_call in env.handle_names:
                return dest, Val(origins=frozenset({f"h:{last_call}"}))
            return dest, UNKNOWN
        name = addr.strip("[]").split("+")[0].strip()
        if name in env.params:
            index = env.params.index(name)
            # ``arg``: a value the caller passed (an entry-like function may be a callable taking two pointers)
            if env.entry_like and index == 1:
                return dest, Val(origins=frozenset({"smem", "arg"}))
            if env.entry_like and index == 0:
                return dest, Val(0, frozenset({"params_ptr", "arg"}))  # offset 0 of the params block
            return dest, Val(origins=frozenset({"arg"}))
        return dest, UNKNOWN
    if base in ("ld", "ldu"):
        bracket = next((o for o in ops[1:] if o.strip().startswith("[")), None)
        loaded = env.address(bracket) if bracket is not None else UNKNOWN
        if "params_ptr" in loaded.origins and not loaded.unknown and not ins.has("shared"):
            word = loaded.const is not None and ins.opcode in ("ld.u32", "ld.s32", "ld.b32", "ld.global.u32")
            linear = (0, ((loaded.const, 1),)) if word and loaded.const is not None else None
            return dest, Val(origins=frozenset({"params"}), field=loaded.const, linear=linear)
        if ins.has("local") or (loaded.local and not loaded.unknown):
            width, lanes = access_width(ins.opcode)
            val = env.frame.load(loaded, width, lanes)
            return None if val is None else (dest, val)  # None: not every store is seen yet
        return dest, UNKNOWN
    if base in _COPIES:
        if len(ops) < 2:
            return None
        val = env.operand(ops[1])
        if val.linear is not None and (base != "mov" or _linear(ins, [val]) is None):
            val = dataclasses.replace(val, linear=None)  # a conversion or a 64-bit copy: no longer the u32 form
        if base == "cvta" and ins.has("local"):
            # to or from the local window: whatever it was computed from, it is a local address
            val = val if val.local and not val.unknown else Val(origins=frozenset({"local"}), local=True)
        elif val.local and base != "mov":
            val = dataclasses.replace(val, local=False)  # truncated, or taken to another state space
        if base == "cvta" and ins.has("shared"):
            val = dataclasses.replace(val, shared=True)  # whatever it was computed from, it is a shared address
        return dest, val
    if base == "selp":
        return dest, combine([env.operand(ops[1]), env.operand(ops[2]), _predless(env.operand(ops[3]))])
    if base == "and" and len(ops) == 3:
        a, b = env.operand(ops[1]), env.operand(ops[2])
        val = combine([a, b], FOLDS["and"])
        mask = b.const if b.is_const else (a.const if a.is_const else None)
        if mask is not None and 0 <= mask < 32:
            val = Val(val.const, val.origins, val.unknown, False)
        elif mask is not None and 0 <= mask < 128:
            # a thread of its warpgroup: placement-independent only in a warpgroup-aligned role
            val = Val(val.const, val.origins | ({"wg_lane"} if val.tid_abs else set()), val.unknown, False)
        return dest, val
    if base == "rem" and len(ops) == 3:
        a, b = env.operand(ops[1]), env.operand(ops[2])
        val = combine([a, b], FOLDS["rem"])
        if b.is_const and b.const is not None and 0 < b.const <= 32:
            val = Val(val.const, val.origins, val.unknown, False)
        return dest, val
    fold = FOLDS.get(base)
    if base in ("setp", "set"):
        return dest, combine([env.operand(o) for o in ops[1:3]])
    srcs = [env.operand(o) for o in ops[1:]]
    if fold is not None or base in (
        "mul24",
        "mad24",
        "bfe",
        "bfi",
        "prmt",
        "shf",
        "abs",
        "popc",
        "clz",
        "brev",
        "sad",
        "addc",
        "subc",
        "madc",
        "mul",
        "fma",
        "cnot",
        "lop3",
        "copysign",
        "testp",
        "vote",
        "shfl",
        "activemask",
        "elect",
    ):
        if base in ("vote", "shfl", "activemask", "elect"):
            return dest, UNKNOWN
        val = combine(srcs, fold)
        if _offsets_local(base, srcs):
            val = dataclasses.replace(val, local=True)
        form = _linear(ins, srcs) if base in ("add", "sub", "shl", "mul", "mad") else None
        return dest, val if form is None or val.is_const else dataclasses.replace(val, linear=form)
    return dest, UNKNOWN


def _offsets_local(base: str, srcs: list[Val]) -> bool:
    """Whether ``base`` adds an integer to a local address (``add``, ``sub`` from it, ``mad`` into it)."""

    def index(v: Val) -> bool:
        return not v.unknown and not v.local and v.origins <= _INDEX_ORIGINS

    if base in ("add", "sub") and len(srcs) == 2:
        a, b = srcs
        return (a.local and index(b)) or (base == "add" and b.local and index(a))
    if base == "mad" and len(srcs) == 3:
        return srcs[2].local and index(srcs[0]) and index(srcs[1])
    return False


def _predless(val: Val) -> Val:
    """A select's predicate decides which operand, not the value: keep only its unknown-ness."""
    return Val(None, frozenset(), val.unknown, False)


def access_width(opcode: str) -> tuple[int, int]:
    """The bytes of one lane of a load or store and its lanes (``ld.local.v2.u64``: 8 and 2; 0 when no type)."""
    parts = opcode.split(".")
    bits = next((int(p[1:]) for p in reversed(parts) if re.fullmatch(r"[bsuf](8|16|32|64|128)", p)), 0)
    lanes = next((int(p[1:]) for p in parts if re.fullmatch(r"v[248]", p)), 1)
    return bits // 8, lanes


def _frame_effects(env: Env, ins: Instr, result: Val | None) -> bool:
    """What ``ins`` does to the function's own frame (:class:`Frame`): a store there, or a use of one of its addresses
    through which it may be written unseen. Whether the frame's record changed."""
    frame = env.frame
    ops = [o.strip() for o in ins.operands]
    base = ins.base
    changed = False
    into_frame = False
    if ops and ops[0].startswith("[") and base in ("st", "atom", "red") and not ins.has("param"):
        addr = env.address(ops[0])
        if ins.has("local") or (addr.local and not addr.unknown):
            if base != "st" or len(ops) < 2:
                return frame.lose()  # an atomic update of the frame
            width, _ = access_width(ins.opcode)
            lanes = [env.operand(o.strip("{} ")) for o in ops[1:]]  # a vector's lanes are operands of their own
            changed |= frame.store(addr, width, lanes)
            into_frame = True
    if base in ("atom", "red") and len(ops) >= 2 and ops[1].startswith("["):
        addr = env.address(ops[1])
        if ins.has("local") or addr.local:
            return frame.lose() or changed
    for i, op in enumerate(ops):
        if op.startswith("[") or (i == 0 and defines(ins)):
            continue
        for reg in re.findall(r"%[\w$]+", op):
            val = env.values.get(reg)
            if val is None or not val.local:
                continue
            if base in ("setp", "set") or (base == "st" and into_frame):
                continue  # compared, or kept in the frame itself (a load of it is this record's)
            if base in ("mov", "cvta", "add", "sub", "mad") and result is not None and result.local:
                continue  # another address of the frame
            changed |= frame.lose()  # a call's argument, stored elsewhere, converted: it may be written through
    return changed
