"""The range a params field's value is known to lie in at an instruction: from the checks that trap.

A block that runs an unguarded ``trap`` ends every path through it. A guarded branch with a
trapping side (``@%p bra TRAP`` or a fall-through into one) lets only the threads for which the
predicate has the other value go on; when that side's block is entered from the branch alone (a
block after a trap, which no path enters, does not count) and
dominates the instruction, the predicate's value holds there. A predicate set once by an
unsigned 32-bit comparison of ``field + c`` (a linear form of one params field, coefficient 1)
against a constant bounds the field: ``add %r, %rows, -1; setp.gt.u32 %p, %r, 127; @%p bra
TRAP`` leaves ``rows`` in 1..128 after the branch. Every bound found is intersected; a field
no such check bounds has no range.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from package.codefacts.flow import Flow
from package.codefacts.ptx import Instr
from package.codefacts.values import Env, linear_of

_WORD = 1 << 32
# An unsigned comparison ``x OP k`` as the interval of x where it holds, and where it does not.
_HOLDS: dict[str, Callable[[int], tuple[tuple[int, int], ...]]] = {
    "lt": lambda k: ((0, k - 1),),
    "lo": lambda k: ((0, k - 1),),
    "le": lambda k: ((0, k),),
    "ls": lambda k: ((0, k),),
    "gt": lambda k: ((k + 1, _WORD - 1),),
    "hi": lambda k: ((k + 1, _WORD - 1),),
    "ge": lambda k: ((k, _WORD - 1),),
    "hs": lambda k: ((k, _WORD - 1),),
    "eq": lambda k: ((k, k),),
    "ne": lambda k: ((0, k - 1), (k + 1, _WORD - 1)),
}
_SWAP = {"lt": "gt", "lo": "hi", "le": "ge", "ls": "hs", "gt": "lt", "hi": "lo", "ge": "le", "hs": "ls"}
_NEGATE = {"lt": "ge", "lo": "hs", "le": "gt", "ls": "hi", "gt": "le", "hi": "ls", "ge": "lt", "hs": "lo"}
_NEGATE |= {"eq": "ne", "ne": "eq"}


def field_bounds(flow: Flow, env: Env, index: int) -> dict[int, tuple[int, int]]:
    """params offset -> (low, high): the unsigned range of each field the trap checks before ``index`` bound."""
    body = flow.fn.body
    traps = {k for k, (s, e) in enumerate(flow.blocks) if any(i.base == "trap" and not i.guard for i in body[s:e])}
    site = flow.block_of[index]
    out: dict[int, tuple[int, int]] = {}
    for block, branch in flow.branch.items():
        taken, fall = flow.branch_targets(block, branch)
        if taken is None or fall is None or (taken in traps) == (fall in traps):
            continue
        safe = fall if taken in traps else taken
        entries = [p for p in flow.preds[safe] if p in flow.rank]  # a block after a trap is entered from nowhere
        if entries != [block] or not flow.dominates(safe, site):
            continue
        guard = branch.guard or ""
        holds = (safe == taken) != guard.startswith("!")  # the predicate's value past the check
        for off, (low, high) in _bounds(body, env, guard.lstrip("!"), holds):
            was = out.get(off, (0, _WORD - 1))
            out[off] = (max(was[0], low), min(was[1], high))
    return out


def _bounds(body: tuple[Instr, ...], env: Env, predicate: str, holds: bool) -> list[tuple[int, tuple[int, int]]]:
    """The fields and ranges ``predicate == holds`` gives: a ``setp`` bound, or the bounds of each side of
    an ``and.pred`` that holds (an ``or.pred`` that does not)."""
    sets = [i for i in body if i.operands and i.operands[0].strip() == predicate]
    if len(sets) != 1:
        return []
    ins = sets[0]
    if ins.opcode in ("and.pred", "or.pred") and len(ins.operands) == 3 and holds == (ins.opcode == "and.pred"):
        sides = [o.strip() for o in ins.operands[1:]]
        if all(re.fullmatch(r"%[\w$]+", o) for o in sides):  # a negated side (`!%p`) is left out
            return [b for o in sides for b in _bounds(body, env, o, holds)]
        return []
    bound = _bound(ins, env, holds)
    return [] if bound is None else [bound]


def _bound(setp: Instr, env: Env, holds: bool) -> tuple[int, tuple[int, int]] | None:
    """The field and range a ``setp`` that is ``holds`` gives, when it compares one field with a constant."""
    sets = [setp]
    if sets[0].base != "setp" or len(sets[0].operands) != 3:
        return None
    parts = sets[0].opcode.split(".")
    if len(parts) != 3 or parts[2] not in ("u32", "b32") or parts[1] not in _HOLDS:
        return None
    cmp = parts[1]
    left, right = (linear_of(env.operand(o)) for o in sets[0].operands[1:])
    if left is None or right is None:
        return None
    if not left[1] and right[1]:
        left, right, cmp = right, left, _SWAP.get(cmp, cmp)
    if right[1] or len(left[1]) != 1 or left[1][0][1] != 1:
        return None
    if not holds:
        cmp = _NEGATE[cmp]
    k = right[0]
    spans = [(lo, hi) for lo, hi in _HOLDS[cmp](k) if lo <= hi]
    if len(spans) != 1:
        return None
    (lo, hi), shift = spans[0], left[0]  # field = x - shift (mod 2**32), x in lo..hi
    low, high = (lo - shift) % _WORD, (hi - shift) % _WORD
    if low > high:
        return None  # the range wraps around zero: no single interval
    return left[1][0][0], (low, high)
