"""A named barrier that ``orders`` a claim stands between its participants' accesses of it (check ``barrier-orders``).

``claim barrier B participants R orders C``: in the entry of each participant role ``R``, a
``bar.sync`` that waits for every thread of ``R`` (barrier ``B``, or a rendezvous ``R`` takes
part in with ``sync``), in no loop that does not hold both accesses, lies

- between a write of claim ``C`` and an access of ``C`` after it in the function's order
  (``unordered``: a read-after-write or write-after-write in one pass), and between a read
  of ``C`` and a write after it (write-after-read);
- for a read and a write of ``C`` in a loop around both, in the innermost such loop's body,
  after the earlier access of a pass or before the later one (``unordered`` across passes:
  the next pass's write overwrites what this pass's readers may still read, or its reads
  see a stale write).

Positions are the function's instruction order on paths without back edges (``Fact.order``);
a barrier under a branch counts as run (the check does not follow thread-invariant branches).

An access whose claim the analysis cannot tell is ``smem-literal``'s; a barrier another thread
count or mode runs is ``named-barrier``'s and ``barrier-threads``'.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.conformance.context import Ctx, Finding, found
from contract_lang import ast as A
from package.codefacts.facts import CodeFacts, Fact

ORDER_CHECKS = ("barrier-orders",)


def orders(ctx: Ctx, code: CodeFacts) -> Iterator[Finding]:
    """The findings of ``barrier-orders`` for every claimed barrier that states ``orders``."""
    for bar in ctx.stage.items:
        if not isinstance(bar, A.BarrierClaim) or not bar.orders:
            continue
        for role in ctx.stage.roles:
            if role.name not in bar.participants or not role.entry:
                continue
            facts = [f for f in code.facts if f.function == role.entry]
            syncs = [f for f in facts if f.kind == "barrier" and f.detail == "sync" and _whole(ctx, bar, role, f)]
            for name in bar.orders:
                claim = next((c for c in ctx.stage.items if isinstance(c, A.SmemClaim) and c.name == name), None)
                if claim is not None:
                    yield from _pairs(ctx, bar, role, claim, facts, syncs)


def _whole(ctx: Ctx, bar: A.BarrierClaim, role: A.Role, f: Fact) -> bool:
    """Whether a ``bar.sync`` waits for every thread of ``role``: barrier ``bar``, or a rendezvous the role syncs."""
    for spec in ctx.handles_of(f.operand("id"), "bar_id"):
        if spec.item == bar.name:
            return True
        if any(
            isinstance(i, A.Rendezvous) and i.name == spec.item and i.role == role.name and i.mode == "sync"
            for i in ctx.stage.items
        ):
            return True
    return False


def _pairs(
    ctx: Ctx, bar: A.BarrierClaim, role: A.Role, claim: A.SmemClaim, facts: Sequence[Fact], syncs: Sequence[Fact]
) -> Iterator[Finding]:
    accesses = [
        f
        for f in facts
        if f.kind == "smem-access" and any(s.node is claim for s in ctx.handles_of(f.operand("addr"), "smem"))
    ]
    reported: set[bool] = set()  # one finding per missing barrier: in one pass, across passes
    for p in accesses:
        for q in accesses:
            if not (_writes(p) or _writes(q)):
                continue
            common = _common_loops(p, q)
            inside = [b for b in syncs if b.loops == common[: len(b.loops)]]
            later = p.order < q.order and not any(p.order < b.order < q.order for b in inside)
            across = (
                bool(common)
                and _writes(p) != _writes(q)
                and not any(b.loops == common and (b.order > p.order or b.order < q.order) for b in inside)
            )
            if (later or across) and later not in reported:
                reported.add(later)
                yield found(
                    "barrier-orders",
                    "unordered",
                    q,
                    bar,
                    barrier=bar.name,
                    claim=claim.name,
                    role=role.name,
                    first=p.line,
                    first_op=p.opcode,
                    across=not later,
                )


def _writes(f: Fact) -> bool:
    return f.opcode.startswith(("st.", "atom.", "red."))


def _common_loops(p: Fact, q: Fact) -> tuple[int, ...]:
    """The loops around both accesses (their headers' positions), outermost first."""
    common: list[int] = []
    for a, b in zip(p.loops, q.loops, strict=False):
        if a != b:
            break
        common.append(a)
    return tuple(common)
