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
- the summary also holds the callable's **ring barrier and named barrier steps** on a barrier its caller passes
  (or one the analysis cannot trace; a step on the exporter's own barrier is the exporter's): its mbarrier
  arrives, waits (``try_wait``/``test_wait``) and expect-tx, and its ``bar.sync``/``bar.arrive``; a barrier's
  address built on a parameter is bound like a shared-memory address, and a wait's parity, an arrive's count, an
  expect-tx's bytes or a named barrier's ID or thread count is bound only where it is a parameter's value itself
  (``param:ROLE``): the caller's argument there, with the constant it holds when the call first runs and how it
  enters the caller's inner loop (``Fact.entry``). One the analysis cannot bind (only computed from parameters, an
  argument it cannot trace) is unknown at the call, and a spliced wait another wait on its barrier may precede in
  the caller has an unknown parity (how many waits ran before it is not worked out across the call): undecided,
  never a guess;
- the summary also holds the callable's loads and stores that may reach global memory (``gmem-access``; a call of
  a function of its own module that makes some is one whose address is unknown), what a barrier that ``orders`` a
  counter orders (:mod:`.orders`);
- a summary is **unknown** (never empty) when the callable makes an indirect call, calls a
  function of its own module that synchronises, or repeats a synchronisation step in a loop
  (how often it runs is not one count): the splice marks the call (``summary-unknown``, with the
  callable's PTX line) and a check that needs the steps there is undecided (I-CONFORM); so is a call of
  a callable the composition does not hold (what it runs is not known there);
- **the splice**: at each call (``xcall``) of an imported callable, the summary's facts are put
  in the caller's function at the call's position (orders rescaled so that the callee's facts
  sit between the call's predecessors and successors), the guard of each is the call's guard
  and the callee's, its loops the call's and the callee's, and an address built on parameter
  ``q`` is the caller's argument ``q`` at that call (``call-arg``: the claim handle the caller
  passes). Each spliced fact keeps its callable and own PTX line (``Fact.via``); its ``line``
  is the call's, so a diagnostic points at the caller's call and names the callable's line.

The caller's checks judge the spliced steps like its own (checks.through_calls): the staging ring's
steps and ``barrier-orders``, every ring side's steps (``ring-step``, ``arrive-count``, ``wait-parity``,
``step-order``, ``ring-fence``), its named barriers (``named-barrier``), and a spliced named barrier's ID
or expect-tx's barrier that the caller passes (``barrier-id``, ``barrier-threads``, ``expect-tx``); the
exporter's own checks leave those to the calls (one mistake, one diagnostic).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from contract_lang import ast as A
from package.codefacts.facts import CodeFacts, Fact, Guard, Operand

#: The synchronisation facts of a summary: what the caller's protocol checks read of a callable.
_SYNCHRONISING = frozenset(
    {"smem-access", "bulk-store", "bulk-commit", "bulk-wait", "proxy-fence", "arrive", "wait", "expect-tx", "barrier"}
)
#: The facts of a summary: the synchronisation, and the loads and stores that may reach global memory (what a
#: barrier that ``orders`` a counter orders before its release and after its acquire, orders.py).
SUMMARY_KINDS = _SYNCHRONISING | {"gmem-access"}
#: Steps of a summary that must run a known number of times (not inside a loop of the callable).
_COUNTED = frozenset(
    {"bulk-store", "bulk-commit", "bulk-wait", "proxy-fence", "arrive", "wait", "expect-tx", "barrier"}
)
#: The operands of a ring barrier or named barrier step a call binds to the caller's argument when the callable's
#: operand is that parameter itself (``param:ROLE``): a parity, an arrival count, transaction bytes, a barrier ID.
_EXACT = frozenset({"parity", "count", "bytes", "id", "threads"})


@dataclass(frozen=True)
class Summary:
    """The protocol summary of one exported callable: its facts, or why it is unknown (``unknown``: the
    reason and the callable's PTX line)."""

    function: str
    facts: tuple[Fact, ...]
    unknown: tuple[str, int] | None = None


def summarize(code: CodeFacts, function: str) -> Summary:
    """The summary of ``function`` in a module's facts (the exporter's recorded facts)."""
    mine = [f for f in code.facts if f.function == function and _callers(f)]
    synchronising = {f.function for f in code.facts if f.kind in _SYNCHRONISING and _callers(f)}
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


def _callers(f: Fact) -> bool:
    """Whether a callable's fact may be a step of its caller's protocol: a ring barrier or named barrier step on a
    barrier the caller passes (its address or ID computed from a parameter) or one the analysis cannot trace; a
    step on the exporter's own barrier (its handles, a literal ID) is the exporter's, judged with its stage."""
    role = {"arrive": "addr", "wait": "addr", "expect-tx": "addr", "barrier": "id"}.get(f.kind)
    op = f.operand(role) if role is not None else None
    return role is None or op is None or op.arg or op.kind == "unknown"


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
            if name is None:
                continue
            if name not in exports:  # a callable the composition does not hold: what it runs is not known here
                targets[(f.function, f.order)] = Summary(name, (), ("a callable the composition does not hold", f.line))
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
    return CodeFacts(tuple(_first_waits(facts)), code.lines)


def _first_waits(facts: list[Fact]) -> list[Fact]:
    """A spliced wait's place in its barrier's sequence (``Fact.prior``): the first wait on its barrier on every path
    of the caller (``(0,)``) when no other wait on the same barrier reaches it and it is its callable's first;
    otherwise its parity is unknown (how many waits ran before it is the caller's, not worked out here)."""

    def key(f: Fact) -> tuple[str, ...] | None:
        addr = f.operand("addr")
        return addr.handles if addr is not None and addr.handles else None

    waits = [f for f in facts if f.kind == "wait"]
    out = []
    for f in facts:
        if f.kind == "wait" and f.via is not None:
            mine = key(f)
            before = mine is None or any(
                g is not f and g.function == f.function and key(g) == mine and f.order in g.reaches for g in waits
            )
            first = f.prior == (0,)
            if before or not first:
                unknown = tuple((r, Operand("unknown") if r == "parity" else o) for r, o in f.operands)
                f = dataclasses.replace(f, operands=unknown)
            f = dataclasses.replace(f, prior=(0,), depths=())
        out.append(f)
    return out


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
    if g.kind in ("arrive", "wait", "expect-tx"):  # the parameters its barrier's address was built on, kept as such
        operands += tuple(("param:addr", op) for role, op in g.operands if role == "param")
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
        entry=_entry(g, arg),
        across=(),
    )


def _entry(g: Fact, arg: Fact | None) -> tuple[tuple[str, str], ...]:
    """A wait's slot and parity as they enter the caller's inner loop (``Fact.entry``): those of the arguments its
    barrier address and its parity are (``unknown`` where either is not one argument)."""
    if g.kind != "wait" or arg is None:
        return ()
    how = dict(arg.entry)
    params = {p.value for r, p in g.operands if r == "param"}
    parity = g.operand("param:parity")
    slot = how.get(f"a{params.pop()}", "unknown") if len(params) == 1 else "unknown"
    first = how.get(f"a{parity.value}", "unknown") if parity is not None else "unknown"
    return (("slot", slot), ("parity", first)) if arg.entry else ()


def _bound(role: str, op: Operand, g: Fact, arg: Fact | None) -> tuple[str, Operand]:
    """An operand of a callable's fact at a call: an address built on the callable's parameters is the caller's
    argument there (the handles it comes from); a parity, count, bytes or barrier ID that is a parameter's value is
    the caller's argument itself (with the constant it holds when the call first runs); one the analysis cannot bind
    (an argument it cannot trace, a value only computed from parameters) is unknown, never a guess."""
    if role in _EXACT and op.arg:
        q = g.operand(f"param:{role}")
        value = arg.operand(f"a{q.value}") if arg is not None and q is not None and q.value is not None else None
        return role, value if value is not None else Operand("unknown", arg=True)  # `arg`: the caller's to judge
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
