"""A callable's protocol summary, spliced at each call of it by another stage's role.

A role may run part of its contract's protocol inside a callable another stage exports (the
persistent GEMM's consumer runs its staging buffer's writes, fence, TMA stores, commits and read
waits inside the `swiglu.epilogue` callables). The stage's own facts end at the call; the
composition (``kernlink check``, the link) has the callable's facts too, so it splices them in:

- **the summary** of an exported callable is the synchronisation its function runs, in program
  order, each fact with where it sits (its guard: which threads run it; its position and the
  facts a path reaches after it; the loops of the callable around it) and, for a shared-memory
  access or an asynchronous read of shared memory, the parameter its address is built on
  (``param``). It is a part of the exporter's recorded facts (the package's ``conformance``
  record, derived again from its PTX payload at load: a record that differs is L-INTEGRITY);
- the summary also holds the callable's loads and stores that may reach global memory (``gmem-access``; a call of
  a function of its own module that makes some is one whose address is unknown), what a barrier that ``orders`` a
  counter orders (:mod:`.orders`);
- a summary is **unknown** (never empty) when the callable makes an indirect call, calls a
  function of its own module that synchronises, or repeats a synchronisation step in a loop
  (how often it runs is not one count): the splice marks the call (``summary-unknown``, with the
  callable's PTX line) and a check that needs the steps there is undecided (I-CONFORM);
- **the splice**: at each call (``xcall``) of an imported callable, the summary's facts are put
  in the caller's function at the call's position (orders rescaled so that the callee's facts
  sit between the call's predecessors and successors), the guard of each is the call's guard
  and the callee's, its loops the call's and the callee's, and an address built on parameter
  ``q`` is the caller's argument ``q`` at that call (``call-arg``: the claim handle the caller
  passes). Each spliced fact keeps its callable and own PTX line (``Fact.via``); its ``line``
  is the call's, so a diagnostic points at the caller's call and names the callable's line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang import ast as A
from package.codefacts.facts import CodeFacts, Fact, Guard, Operand

#: The synchronisation facts of a summary: what the caller's protocol checks read of a callable.
_SYNCHRONISING = frozenset({"smem-access", "bulk-store", "bulk-commit", "bulk-wait", "proxy-fence"})
#: The facts of a summary: the synchronisation, and the loads and stores that may reach global memory (what a
#: barrier that ``orders`` a counter orders before its release and after its acquire, orders.py).
SUMMARY_KINDS = _SYNCHRONISING | {"gmem-access"}
#: Steps of a summary that must run a known number of times (not inside a loop of the callable).
_COUNTED = frozenset({"bulk-store", "bulk-commit", "bulk-wait", "proxy-fence"})


@dataclass(frozen=True)
class Summary:
    """The protocol summary of one exported callable: its facts, or why it is unknown (``unknown``: the
    reason and the callable's PTX line)."""

    function: str
    facts: tuple[Fact, ...]
    unknown: tuple[str, int] | None = None


def summarize(code: CodeFacts, function: str) -> Summary:
    """The summary of ``function`` in a module's facts (the exporter's recorded facts)."""
    mine = [f for f in code.facts if f.function == function]
    synchronising = {f.function for f in code.facts if f.kind in _SYNCHRONISING}
    touching = {f.function for f in code.facts if f.kind == "gmem-access"}
    unseen: list[Fact] = []  # calls of a function of the module that may access global memory: unknown accesses
    for f in sorted(mine, key=lambda g: g.order):
        if f.kind == "xcall" and not f.detail:
            return Summary(function, (), ("an indirect call", f.line))
        if f.kind == "call" and f.detail in synchronising:
            return Summary(function, (), (f"a call of `{f.detail}`, which synchronises", f.line))
        if f.kind in _COUNTED and f.loops:
            return Summary(function, (), (f"`{f.opcode}` in a loop", f.line))
        if f.kind == "call" and f.detail in touching:
            unseen.append(dataclasses.replace(f, kind="gmem-access", operands=(), detail="unknown"))
    kept = [f for f in mine if f.kind in SUMMARY_KINDS]
    return Summary(function, tuple(sorted((*kept, *unseen), key=lambda g: g.order)))


def splice(parts: Sequence[tuple[A.Stage, CodeFacts]]) -> list[CodeFacts]:
    """Each part's facts with the summaries of the callables it calls spliced in at their calls (a part that calls
    none of the composition's callables is returned as it is)."""
    exports: dict[str, tuple[int, str]] = {}
    for index, (stage, _) in enumerate(parts):
        for item in stage.items:
            if isinstance(item, A.ExportCallable):
                exports[item.name] = (index, item.symbol)
    summaries: dict[tuple[int, str], Summary] = {}
    out = []
    for stage, code in parts:
        calls = {c.symbol: c.name for c in stage.items if isinstance(c, A.Call)}
        targets: dict[tuple[str, int], Summary] = {}
        for f in code.facts:
            name = calls.get(f.detail) if f.kind == "xcall" else None
            if name is None or name not in exports:
                continue
            key = exports[name]
            if key not in summaries:
                summaries[key] = summarize(parts[key[0]][1], key[1])
            targets[(f.function, f.order)] = summaries[key]
        out.append(_spliced(code, targets) if targets else code)
    return out


def _spliced(code: CodeFacts, targets: dict[tuple[str, int], Summary]) -> CodeFacts:
    span = 1 + max((f.order for s in targets.values() for f in s.facts), default=0)
    args = {(f.function, f.line, f.detail): f for f in code.facts if f.kind == "call-arg"}
    # the orders of each call's spliced facts, to add to what reaches the call
    inner: dict[tuple[str, int], list[int]] = {
        (fn, order): [order * span + f.order for f in s.facts] for (fn, order), s in targets.items()
    }
    per_function: dict[str, dict[int, list[int]]] = {}
    for (fn, order), orders in inner.items():
        per_function.setdefault(fn, {})[order] = orders
    facts: list[Fact] = []
    for f in code.facts:
        facts.append(_scaled(f, span, per_function.get(f.function, {})))
        summary = targets.get((f.function, f.order)) if f.kind == "xcall" else None
        if summary is None:
            continue
        if summary.unknown is not None:
            reason, line = summary.unknown
            facts.append(
                dataclasses.replace(
                    _scaled(f, span, {}), kind="summary-unknown", detail=reason, via=(summary.function, line)
                )
            )
            continue
        call_arg = args.get((f.function, f.line, f.detail))
        after = _after(f, span, per_function.get(f.function, {}))
        for g in summary.facts:
            facts.append(_placed(f, g, span, after, call_arg, summary.function))
    return CodeFacts(tuple(facts), code.lines)


def _after(call: Fact, span: int, calls: dict[int, list[int]]) -> tuple[int, ...]:
    """What a path reaches after a call: the caller's facts it reaches, and the facts spliced at those calls."""
    return tuple(sorted({r * span for r in call.reaches} | {o for r in call.reaches for o in calls.get(r, ())}))


def _scaled(f: Fact, span: int, calls: dict[int, list[int]]) -> Fact:
    """A caller's fact with its positions rescaled; what it reaches now holds the facts spliced at the calls it
    reaches."""
    return dataclasses.replace(
        f,
        order=f.order * span,
        loops=tuple(h * span for h in f.loops),
        reaches=_after(f, span, calls),
    )


def _placed(call: Fact, g: Fact, span: int, after: tuple[int, ...], arg: Fact | None, callee: str) -> Fact:
    base = call.order * span
    operands = tuple(_bound(role, op, g, arg) for role, op in g.operands if role != "param")
    return dataclasses.replace(
        g,
        function=call.function,
        line=call.line,
        src=call.src,
        origin=g.origin or g.src,
        guard=_both(call.guard, g.guard),
        loops=tuple(h * span for h in call.loops) + tuple(base + h for h in g.loops),
        order=base + g.order,
        reaches=tuple(sorted({base + r for r in g.reaches} | set(after))),
        conds=call.conds + tuple(f"{callee}:{c}" for c in g.conds),
        when=(),
        operands=operands,
        via=(callee, g.line),
    )


def _bound(role: str, op: Operand, g: Fact, arg: Fact | None) -> tuple[str, Operand]:
    """An operand of a callable's fact at a call: an address built on the callable's parameters is the caller's
    argument there (the handles it comes from); one the analysis cannot bind is unknown."""
    if role not in ("addr", "src") or not op.arg:
        return role, op
    params = [p.value for r, p in g.operands if r == "param" and p.value is not None]
    passed = [arg.operand(f"a{q}") if arg is not None else None for q in params]
    if not passed or any(p is None or p.kind == "unknown" for p in passed):
        return role, Operand("unknown")
    if g.kind == "gmem-access" and all(p is not None and p.kind == "local" for p in passed):
        return role, Operand("local")  # the caller's own stack (an array or a struct it passes by address)
    handles = tuple(sorted({h for p in passed if p is not None for h in p.handles}))
    return role, Operand("handle" if handles else "arith", handles=handles, smem=any(p.smem for p in passed if p))


def _both(a: Guard, b: Guard) -> Guard:
    """The threads that run a callable's instruction: those of the call and those of the callable's guard."""
    if a is None or b is None:
        return None
    return tuple(sorted({tuple(sorted(set(x) | set(y))) for x in a for y in b}))
