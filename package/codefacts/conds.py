"""A branch condition as an expression of params fields, evaluated for given field values.

A copy that runs only under a thread-invariant condition (``Fact.conds``: the branches it is
control dependent on, or its own guard predicate) is in every fill only if that condition
always holds. When the condition is computed from params fields alone (``j < 128 / page_size``
in an unrolled loop), this module writes it down so that a check can decide it for each value
the contract lets the fields take (``page_size: i32 @ … in {16, 32, 64}``).

An expression is a small prefix text, recorded in the facts (so it is contract-free, like
them): a decimal constant, ``f<offset>`` (the 32-bit word of the params block at that offset),
or ``op(arg,…)`` with ``op`` a PTX operation and its type (``div.s32``, ``setp.lt.s32``,
``selp``, ``not.pred``, ``and.pred``, ``or.pred``, ``xor.pred``). Values are 32-bit words;
a predicate is 0 or 1. Only a register with one definition is followed (PTX from NVVM is
in SSA form but for loop-carried values), so a value redefined on some path is no expression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from package.codefacts.ptx import Function, Instr
from package.codefacts.values import IMMEDIATE, Env, defines, written

_WORD = 1 << 32
_MAX_DEPTH = 24  # definitions followed back from a condition
_ARITH = frozenset({"add", "sub", "mul", "div", "rem", "min", "max", "shl", "shr", "and", "or", "xor", "neg", "not"})
_COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"})
_TYPES = frozenset({"s32", "u32", "b32"})


class Definitions:
    """The single definition of each register of one function (a register defined twice has none)."""

    def __init__(self, fn: Function, env: Env) -> None:
        self.env = env
        self.defs: dict[str, Instr | None] = {}
        for ins in fn.body:
            if not ins.operands or not defines(ins) or ins.base == "call":
                continue
            for reg in written(ins):
                self.defs[reg] = None if reg in self.defs else ins
        self._memo: dict[str, str | None] = {}

    def condition(self, guard: str, holds: bool) -> str | None:
        """The expression of ``@guard`` (``%p`` or ``!%p``) holding (or failing, ``holds`` False)."""
        negated = guard.startswith("!")
        pred = self.expr(guard.lstrip("!"), 0)
        if pred is None:
            return None
        return pred if holds != negated else f"not.pred({pred})"

    def expr(self, reg: str, depth: int) -> str | None:
        if IMMEDIATE.match(reg):
            return str(int(reg.rstrip("Uu"), 0) % _WORD)
        if depth > _MAX_DEPTH or not reg.startswith("%"):
            return None
        if reg in self._memo:
            return self._memo[reg]
        ins = self.defs.get(reg)
        found = None if ins is None else self._of(ins, reg, depth)
        self._memo[reg] = found
        return found

    def _of(self, ins: Instr, reg: str, depth: int) -> str | None:
        parts = ins.opcode.split(".")
        ops = [o.strip() for o in ins.operands]
        if ins.base == "ld" and not ins.has("shared") and not ins.has("local") and not ins.has("param"):
            return self._load(ins, reg, ops)
        if ins.base == "mov" and len(ops) == 2 and (parts[-1] in _TYPES or parts[-1] == "pred"):
            return self.expr(ops[1], depth + 1)
        if ins.base == "cvt" and len(ops) == 2 and parts[-1] in _TYPES and parts[-2] in _TYPES:
            return self.expr(ops[1], depth + 1)  # a 32-bit word as another 32-bit type
        args = [self.expr(o, depth + 1) for o in ops[1:]]
        if any(a is None for a in args):
            return None
        if ins.base == "setp" and len(parts) == 3 and parts[1] in _COMPARE and parts[2] in _TYPES and len(args) == 2:
            return f"setp.{parts[1]}.{parts[2]}({args[0]},{args[1]})"
        if ins.base == "selp" and parts[-1] in _TYPES and len(args) == 3:
            return f"selp({args[0]},{args[1]},{args[2]})"
        if ins.base in ("and", "or", "xor", "not") and parts[-1] == "pred":
            return f"{ins.base}.pred({','.join(a for a in args if a is not None)})"
        if ins.base in _ARITH and parts[-1] in _TYPES and (ins.base != "mul" or "lo" in parts):
            return f"{ins.base}.{parts[-1]}({','.join(a for a in args if a is not None)})"
        return None

    def _load(self, ins: Instr, reg: str, ops: list[str]) -> str | None:
        """A 32-bit word (or one part of a vector) loaded from the params block: ``f<offset>``."""
        parts = ins.opcode.split(".")
        if parts[-1] not in _TYPES:
            return None
        dests = [o for o in ops if not o.startswith("[")]
        address = next((o for o in ops if o.startswith("[")), None)
        if address is None or reg not in dests:
            return None
        loaded = self.env.address(address)
        if "params_ptr" not in loaded.origins or loaded.unknown or loaded.const is None:
            return None
        return f"f{loaded.const + 4 * dests.index(reg)}"


# ------------------------------------------------------------------------------------ evaluation


def fields_of(expr: str) -> frozenset[int]:
    """The params offsets an expression reads."""
    return frozenset(int(m) for m in re.findall(r"\bf(\d+)", expr))


def evaluate(expr: str, values: Mapping[int, int]) -> int | None:
    """The expression's 32-bit value with each params word at its offset given by ``values`` (None: a
    field without a value, a division by zero, or text that is no expression)."""
    try:
        value, rest = _eval(expr, values)
    except (ValueError, KeyError, ZeroDivisionError, IndexError):
        return None
    return value if rest == "" else None


def _eval(text: str, values: Mapping[int, int]) -> tuple[int, str]:
    m = re.match(r"(\d+)|f(\d+)|([a-z]+(?:\.[a-z0-9]+)*)\(", text)
    if m is None:
        raise ValueError(text)
    if m.group(1) is not None:
        return int(m.group(1)) % _WORD, text[m.end() :]
    if m.group(2) is not None:
        return values[int(m.group(2))] % _WORD, text[m.end() :]
    op, rest = m.group(3), text[m.end() :]
    args: list[int] = []
    while True:
        value, rest = _eval(rest, values)
        args.append(value)
        if rest.startswith(","):
            rest = rest[1:]
            continue
        if rest.startswith(")"):
            return _apply(op, args), rest[1:]
        raise ValueError(rest)


def _signed(v: int) -> int:
    return v - _WORD if v >= 1 << 31 else v


def _apply(op: str, args: list[int]) -> int:
    parts = op.split(".")
    base, kind = parts[0], parts[-1]
    if kind == "pred":
        if base == "not":
            return 1 - (args[0] != 0)
        lhs, rhs = (x != 0 for x in args[:2])
        return int({"and": lhs and rhs, "or": lhs or rhs, "xor": lhs != rhs}[base])
    if base == "selp":
        return args[0] if args[2] else args[1]
    signed = kind == "s32"
    v = [_signed(x) if signed else x for x in args]
    if base == "setp":
        a, b = v[0], v[1]
        return int(
            {
                "eq": a == b,
                "ne": a != b,
                "lt": a < b,
                "le": a <= b,
                "gt": a > b,
                "ge": a >= b,
                "lo": a < b,
                "ls": a <= b,
                "hi": a > b,
                "hs": a >= b,
            }[parts[1]]
        )
    if base in ("div", "rem"):
        if v[1] == 0:
            raise ZeroDivisionError
        q = abs(v[0]) // abs(v[1]) * (1 if (v[0] < 0) == (v[1] < 0) else -1)  # truncating, as PTX divides
        return (q if base == "div" else v[0] - q * v[1]) % _WORD
    if base in ("shl", "shr"):
        n = min(args[1], 32)
        return (v[0] << n if base == "shl" else v[0] >> n) % _WORD
    folds = {
        "add": lambda: v[0] + v[1],
        "sub": lambda: v[0] - v[1],
        "mul": lambda: v[0] * v[1],
        "min": lambda: min(v[0], v[1]),
        "max": lambda: max(v[0], v[1]),
        "and": lambda: args[0] & args[1],
        "or": lambda: args[0] | args[1],
        "xor": lambda: args[0] ^ args[1],
        "neg": lambda: -v[0],
        "not": lambda: ~args[0],
    }
    return folds[base]() % _WORD
