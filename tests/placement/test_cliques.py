"""`maximal_cliques` finds exactly the maximal cliques, each once, in one fixed order.

networkx's `find_cliques` is the oracle (another implementation); a brute force over every
vertex subset checks the small graphs too.
"""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from placement._model import maximal_cliques


def _graph(seed: int, most: int) -> tuple[int, list[tuple[int, int]]]:
    rng = random.Random(seed)
    size = rng.randrange(0, most)
    density = rng.random()
    edges = [(x, y) for x in range(size) for y in range(size) if x != y and rng.random() < density / 2]
    rng.shuffle(edges)
    return size, edges


@pytest.mark.parametrize("seed", range(200))
def test_the_maximal_cliques_of_networkx(seed: int) -> None:
    size, edges = _graph(seed, 40)
    graph = nx.Graph()
    graph.add_nodes_from(range(size))
    graph.add_edges_from(edges)
    found = list(maximal_cliques(size, edges))
    assert len(found) == len(set(found))
    assert sorted(found) == sorted(tuple(sorted(c)) for c in nx.find_cliques(graph))


@pytest.mark.parametrize("seed", range(50))
def test_the_maximal_cliques_by_brute_force(seed: int) -> None:
    size, edges = _graph(seed, 9)
    adjacent = {frozenset(e) for e in edges}

    def clique(vs: tuple[int, ...]) -> bool:
        return all(frozenset(p) in adjacent for p in itertools.combinations(vs, 2))

    cliques = [vs for k in range(1, size + 1) for vs in itertools.combinations(range(size), k) if clique(vs)]
    maximal = [c for c in cliques if not any(set(c) < set(d) for d in cliques)]
    assert sorted(maximal_cliques(size, edges)) == sorted(maximal)


def test_one_order_whatever_the_edge_order() -> None:
    size, edges = _graph(7, 30)
    again = list(reversed(edges))
    assert list(maximal_cliques(size, edges)) == list(maximal_cliques(size, again))
