"""A stage's own mbarrier keeps the protocol its claim's ``signal`` states (check ``private-mbarrier``).

``claim smem C … use mbarrier signal by R init N arrive commit wait parity P``: the mbarrier in
claim ``C`` belongs to role ``R`` alone. Its entry function, on every path:

- initialises it once (``init``: one ``mbarrier.init`` by one thread, outside any loop) to ``N``
  arrivals (``init-count``), and fences the init with ``fence.mbarrier_init.release.cluster``
  before the first arrive (``unfenced``);
- arrives on it as ``arrive`` says (``commit``: ``tcgen05.commit … mbarrier::arrive::one``,
  ``arrive-kind``), after the init, outside any loop, ``N`` arrivals in all (the threads each
  arrive's guard selects: ``arrivals``);
- waits on it once, after its arrives, on parity ``P`` (``wait-parity``, ``wait-order``,
  ``wait-times``).

A missing init, arrive or wait is ``missing`` (named at the role's entry); an instruction on the
barrier in another function is ``other-function``. A claim that holds mbarriers and states no
``signal`` has an unchecked protocol: its first instruction is an undecided site, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checker.conformance.context import Ctx, Finding, found, unknown
from checker.conformance.steps import threads
from contract_lang import ast as A
from package.codefacts.facts import CodeFacts, Fact, Operand, longest_chain

PRIVATE_CHECKS = ("private-mbarrier",)
_ON_BARRIER = ("mbarrier-init", "arrive", "wait", "expect-tx", "complete-tx")
INIT_FENCE = "fence.mbarrier_init.release.cluster"  # the one form PTX defines


def private(ctx: Ctx, code: CodeFacts) -> Iterator[Finding]:
    """The findings of ``private-mbarrier`` for every claim of the stage that holds mbarriers."""
    for claim in ctx.stage.items:
        if not isinstance(claim, A.SmemClaim) or "mbarrier" not in claim.uses:
            continue
        on = [f for f in code.facts if f.kind in _ON_BARRIER and ctx.private_claim(_addr(f)) is claim]
        if claim.signal is None:
            for f in on[:1]:  # one cause: the claim states no protocol
                yield unknown("private-mbarrier", f, "private-protocol", claim)
            continue
        yield from _signal(ctx, claim, claim.signal, code, on)


def _addr(f: Fact) -> Operand | None:
    return f.operand("bar" if f.kind == "complete-tx" and f.operand("addr") is None else "addr")


def _signal(ctx: Ctx, claim: A.SmemClaim, sig: A.Signal, code: CodeFacts, on: list[Fact]) -> Iterator[Finding]:
    role = next((r for r in ctx.stage.roles if r.name == sig.role), None)
    if role is None or not role.entry:
        return  # L-ROLE reports the name
    fn = role.entry
    names = {"claim": claim.name, "role": role.name}
    for f in on:
        if f.function != fn:
            yield found("private-mbarrier", "other-function", f, sig, **names)
    mine = [f for f in on if f.function == fn]
    anchor = next((f for f in code.facts if f.function == fn and f.kind == "function"), None)
    inits = [f for f in mine if f.kind == "mbarrier-init"]
    arrives = [f for f in mine if f.kind == "arrive"]
    waits = [f for f in mine if f.kind == "wait"]
    for f in mine:
        if f.kind not in ("mbarrier-init", "arrive", "wait"):
            yield found("private-mbarrier", "arrive-kind", f, sig, **names, want=sig.arrive)
    for what, sites in (("init", inits), ("arrive", arrives), ("wait", waits)):
        if not sites and anchor is not None:
            yield found("private-mbarrier", "missing", anchor, sig, **names, step=what)
    width = role.warps or 0
    yield from _inits(sig, inits, width, names)
    fences = [f for f in code.facts if f.function == fn and f.kind == "init-fence"]
    for init in inits[:1]:
        later = [a for a in arrives if a.order in init.reaches]
        first = min(later, key=lambda a: a.order, default=None)
        good = [
            f
            for f in fences
            if f.opcode == INIT_FENCE and f.order in init.reaches and (first is None or first.order in f.reaches)
        ]
        if not good:
            yield found("private-mbarrier", "unfenced", init, sig, **names, fence=INIT_FENCE)
    yield from _arrives(sig, inits, arrives, width, names)
    yield from _waits(sig, arrives, waits, names)


def _inits(sig: A.Signal, inits: Sequence[Fact], width: int, names: dict[str, str]) -> Iterator[Finding]:
    for f in inits:
        count = f.operand("count")
        if count is None or count.kind != "constant" or count.value is None:
            yield unknown("private-mbarrier", f, "arrival-count", sig)
        elif count.value != sig.init:
            yield found("private-mbarrier", "init-count", f, sig, **names, count=count.value, want=sig.init)
        selected = threads(f.guard, width, False)
        if selected is None:
            yield unknown("private-mbarrier", f, "arrivals", sig)
        elif selected != 1 or f.loops:
            yield found("private-mbarrier", "init-times", f, sig, **names, threads=selected, loop=bool(f.loops))
    if len(inits) > 1:
        yield found("private-mbarrier", "init-times", inits[1], sig, **names, threads=len(inits), loop=False)


def _arrives(
    sig: A.Signal, inits: Sequence[Fact], arrives: Sequence[Fact], width: int, names: dict[str, str]
) -> Iterator[Finding]:
    total = 0
    for f in arrives:
        if sig.arrive == "commit" and f.detail != "tcgen05.commit":
            yield found("private-mbarrier", "arrive-kind", f, sig, **names, want=sig.arrive)
        if f.loops:
            yield found("private-mbarrier", "arrive-loop", f, sig, **names)
        if inits and f.order not in inits[0].reaches:
            yield found("private-mbarrier", "before-init", f, sig, **names)
        selected = threads(f.guard, width, False)
        if selected is None:
            yield unknown("private-mbarrier", f, "arrivals", sig)
            return
        total += selected
    if arrives and total != sig.init:
        yield found("private-mbarrier", "arrivals", arrives[0], sig, **names, got=total, want=sig.init)


def _waits(sig: A.Signal, arrives: Sequence[Fact], waits: Sequence[Fact], names: dict[str, str]) -> Iterator[Finding]:
    if longest_chain(waits) > 1 or any(f.loops for f in waits):
        yield found("private-mbarrier", "wait-times", waits[-1], sig, **names)
    for f in waits:
        parity = f.operand("parity")
        if parity is None or parity.first is None or f.detail == "state":
            yield unknown("private-mbarrier", f, "first-parity", sig)
        elif parity.first % 2 != sig.parity:
            yield found("private-mbarrier", "wait-parity", f, sig, **names, got=parity.first % 2, want=sig.parity)
        if arrives and not any(f.order in a.reaches for a in arrives):
            yield found("private-mbarrier", "wait-order", f, sig, **names)
