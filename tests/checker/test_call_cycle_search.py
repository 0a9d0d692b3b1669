"""L-CYCLE's own cycle test (it decides whether networkx is loaded at all) agrees with networkx's."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from checker.clauses.l_cycle import _has_cycle

NODES = [("export", f"s{i % 3}", f"f{i}") for i in range(7)]
edges_st = st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=20)


@given(edges_st)
def test_has_cycle_is_networkx_is_not_acyclic(pairs: list[tuple[tuple[str, str, str], tuple[str, str, str]]]) -> None:
    graph = nx.DiGraph()
    graph.add_edges_from(pairs)
    edges = [(src, dst, None) for src, dst in pairs]
    assert _has_cycle(edges) == (not nx.is_directed_acyclic_graph(graph))  # type: ignore[arg-type]
