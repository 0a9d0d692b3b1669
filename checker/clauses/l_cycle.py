"""L-CYCLE: the callable graph across components has a cycle.

## What it checks
The call graph has a node per role and per exported callable, and an edge from each
caller to the export serving its call (calls made inside an exported callable are
declared `from callable F`). No exported callable may reach itself: every cycle —
through several components or one callable calling its own export — is reported
once, as a path, with a label on every call site along it. Edges of calls that no
single export serves are left out (L-UNRESOLVED and L-AMBIGUOUS report those).

## Why it matters
Every call through a seam becomes a trampoline that link-time optimisation inlines
into the caller. A cycle cannot be inlined: it leaves device recursion, whose stack
depth `ptxas` cannot bound ("stack size cannot be statically determined"), so the
kernel needs a guessed `cudaLimitStackSize` and overflows it with a launch failure,
and the register count of the linked kernel is no longer known when placing roles.

## Example
```kernlink
stage "moe.route" version "1.0.0" {
    target sm_90a
    role router entry route_main warps 4
    export callable pick (u32) -> u32 = route_pick
    call rebalance (u32) -> u32 as kl_call_rebalance from callable pick
    call pick (u32) -> u32 as kl_call_pick from role router
}
stage "moe.balance" version "1.0.0" {
    target sm_90a
    export callable rebalance (u32) -> u32 = balance_rebalance
    call pick (u32) -> u32 as kl_call_pick from callable rebalance
}
```

## Fix
Break the cycle: pass the result the inner call needs as an argument, or move the
shared logic into a callable that neither side calls back.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from checker.clause import Clause
from checker.composition import Composition, Owned
from checker.report import seam
from checker.resolve import serving_exports
from contract_lang import ast as A
from diagnostics.model import Diagnostic
from diagnostics.symbols import Code

if TYPE_CHECKING:
    import networkx as nx

Node = tuple[str, str, str]  # (kind, stage, name)


class CycleClause(Clause):
    code = Code.L_CYCLE
    name = "call-cycle"
    summary = "the callable graph across components has a cycle"
    category = "callables"

    def check(self, comp: Composition) -> Iterator[Diagnostic]:
        edges = [
            (src, dst, call) for src, dst, call in comp.call_graph.edges() if len(serving_exports(comp, call)) == 1
        ]
        if not _has_cycle(edges):
            return
        # networkx (~0.1 s to import) only once there is a cycle to report: a sound
        # composition is checked without it, and the path search below stays the one
        # whose tie-breaking the snapshots record
        import networkx as nx

        graph = nx.DiGraph()
        for src, dst, call in edges:
            graph.add_edge(src, dst, call=call)
        components = [sorted(c) for c in nx.strongly_connected_components(graph)]
        for nodes in sorted(components):
            start = nodes[0]
            if len(nodes) == 1 and not graph.has_edge(start, start):
                continue
            path = _shortest_cycle(graph.subgraph(nodes), start)
            yield self._cycle(graph, path)

    def _cycle(self, graph: nx.DiGraph, path: list[Node]) -> Diagnostic:
        steps = list(itertools.pairwise(path))
        calls: list[Owned[A.Call]] = [graph.edges[a, b]["call"] for a, b in steps]
        shown = " → ".join(_show(n) for n in path)
        labels = [
            (call.span, f"`{a[2]}` calls `{b[2]}` (exported by `{b[1]}`)")
            for call, (a, b) in zip(calls, steps, strict=True)
        ]
        stages = sorted({n[1] for n in path})
        message = (
            f"exported callable `{path[0][2]}` of `{path[0][1]}` calls itself through its own export"
            if len(path) == 2
            else f"exported callables call each other in a cycle: {shown}"
        )
        return seam(
            self.code,
            message,
            labels[0],
            labels[1:],
            notes=(
                f"the cycle runs through {', '.join(f'`{s}`' for s in stages)}",
                "LTO cannot inline a recursive call, and the stack depth of device recursion cannot be bounded",
            ),
            helps=(
                "break the cycle: pass what the inner call computes as an argument, or move the "
                "shared code into a callable that calls neither side back",
            ),
            data={"cycle": " -> ".join(f"{n[1]}:{n[2]}" for n in path)},
        )


def _has_cycle(edges: list[tuple[Node, Node, Owned[A.Call]]]) -> bool:
    """Whether the directed graph of ``edges`` has a cycle (a self-loop included)."""
    succ: dict[Node, list[Node]] = {}
    for src, dst, _ in edges:
        succ.setdefault(src, []).append(dst)
    done: set[Node] = set()
    for root in succ:
        if root in done:
            continue
        on_path = {root}
        stack = [(root, iter(succ[root]))]
        while stack:
            node, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif nxt in on_path:
                return True
            elif nxt not in done:
                on_path.add(nxt)
                stack.append((nxt, iter(succ.get(nxt, ()))))
    return False


def _shortest_cycle(graph: nx.DiGraph, start: Node) -> list[Node]:
    """A shortest cycle through ``start``, as a node path that ends where it begins."""
    import networkx as nx  # already loaded by CycleClause.check: only a graph with a cycle gets here

    best: list[Node] | None = None
    for succ in sorted(graph.successors(start)):
        back = [start] if succ == start else nx.shortest_path(graph, succ, start)
        candidate = [start, *back]
        if best is None or len(candidate) < len(best):
            best = candidate
    assert best is not None, "a strongly connected node has a successor"
    return best


def _show(node: Node) -> str:
    return f"`{node[2]}` (`{node[1]}`)"
