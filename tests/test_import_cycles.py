"""No import cycles inside our packages: a module never imports, directly or not, a module that imports it.

The layers contract (import-linter, pyproject.toml) orders the packages; this test
orders the modules within each one, and across them. The graph is built by grimp
(import-linter's engine), lazy imports inside functions and ``TYPE_CHECKING`` imports
included: a cycle is removed by moving what is shared down, not by hiding an import.
"""

from __future__ import annotations

import grimp
import networkx as nx
import pytest

ACYCLIC = (
    "hardware",
    "diagnostics",
    "solver",
    "contract_lang",
    "package",
    "checker",
    "toolchain",
    "packing",
    "placement",
    "transfer_model",
    "analysis",
    "fuzzing",
    "linker",
    "runtime",
    "kernlink",
)


@pytest.fixture(scope="module")
def imports() -> nx.DiGraph:
    graph = grimp.build_graph(*ACYCLIC, cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            edges.add_edge(module, imported)
    return edges


@pytest.mark.parametrize("package", ACYCLIC)
def test_package_has_no_import_cycle(imports: nx.DiGraph, package: str) -> None:
    inside = imports.subgraph(m for m in imports if m == package or m.startswith(f"{package}."))
    cycles = [sorted(c) for c in nx.strongly_connected_components(inside) if len(c) > 1]
    assert cycles == [], f"import cycles in {package}: {cycles}"


def test_no_import_cycle_across_packages(imports: nx.DiGraph) -> None:
    """Module by module over every package at once: no cycle through a lazy import across layers either."""
    cycles = [sorted(c) for c in nx.strongly_connected_components(imports) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"
