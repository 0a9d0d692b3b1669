"""Thread-block clusters: a 2x1x1 launch links on the CPU and, with a GPU, runs (grids of whole clusters).

The ring example's stages state `cluster 1x1x1, 2x1x1` and the pipeline launches 2x1x1:
the dispatch kernel carries `__cluster_dims__(2, 1, 1)`, waits on a cluster barrier after
the ring inits (the init hooks' `fence.mbarrier_init.release.cluster` then reaches every
CTA of the cluster) and again before exiting (no CTA leaves while a peer may still reach
its shared memory); a stage with a `cluster` line reads the launched size through
`kl_<stage>_cluster_size()`. Stages that accept several shapes and no 1x1x1 leave the
launch undecided: the pipeline must state it (E-UNSUPPORTED until it does).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from analysis.downstream import verify_downstream
from analysis.link_inputs import link_inputs
from analysis.plan import Plan
from kernlink.api import check_text, link
from linker.generate import generate, unsupported
from package.captured import Captured
from tests.link.examples import build_example

_LAUNCH = "    launch fixed threads 384\n"
CLUSTERED = {
    "loader.kc": {_LAUNCH: _LAUNCH + "    cluster 1x1x1, 2x1x1\n"},
    "reduce.kc": {_LAUNCH: _LAUNCH + "    cluster 1x1x1, 2x1x1\n"},
    "ring.kp": {"    target sm_90a\n": "    target sm_90a\n    cluster 2x1x1\n"},
}


@pytest.mark.toolchain
def test_a_2x1x1_cluster_launch_links_with_cluster_barriers(tmp_path: Path) -> None:
    pipeline = build_example("ring", tmp_path / "src", CLUSTERED)
    result = link([pipeline], tmp_path / "out", emit_ptx=True)
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    assert result.output is not None and result.output.generated is not None
    dispatch = result.output.generated.dispatch
    assert dispatch.cluster == (2, 1, 1)
    source = result.output.generated.source
    assert "__launch_bounds__(384, 1) __cluster_dims__(2, 1, 1) kl_dispatch(" in source
    assert "__syncthreads" not in source
    ptx = (tmp_path / "out" / "kernel.ptx").read_text()
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert ptx.count("barrier.cluster.arrive") == 2 and ptx.count("barrier.cluster.wait") == 2
    assert "clusters of 2x1x1 CTAs" in (tmp_path / "out" / "link.map").read_text()


@pytest.mark.toolchain
def test_the_unclustered_ring_keeps_its_block_barrier(tmp_path: Path) -> None:
    result = link([build_example("ring", tmp_path / "src")], tmp_path / "out", emit_ptx=True)
    assert result.ok and result.output is not None and result.output.generated is not None
    assert result.output.generated.dispatch.cluster == (1, 1, 1)
    assert "__syncthreads();" in result.output.generated.source
    assert "barrier.cluster" not in (tmp_path / "out" / "kernel.ptx").read_text()


STAGE = """stage "demo.cl" version "1.0.0" {
    target sm_90a
    role main entry demo_main warps 1
    launch fixed threads 32
    cluster SHAPES
}
"""


def test_a_stage_reads_the_launched_cluster_size_as_a_folded_handle() -> None:
    result = check_text(STAGE.replace("SHAPES", "2x1x1"), "demo.kc")
    assert result.accepted and result.composition is not None, [d.message for d in result.diagnostics]
    captured = Captured(frozenset(), frozenset({"kl_demo_cl_cluster_size"}))
    comp = dataclasses.replace(
        result.composition, stages=tuple(dataclasses.replace(s, captured=captured) for s in result.composition.stages)
    )
    placed = verify_downstream(comp).placed
    assert placed is not None
    generated = generate(Plan(comp, placed))
    assert [(h.symbol, h.value) for h in generated.handles] == [("kl_demo_cl_cluster_size", 2)]
    assert generated.dispatch.cluster == (2, 1, 1)


def test_several_common_shapes_without_a_pipeline_shape_are_refused() -> None:
    result = check_text(STAGE.replace("SHAPES", "2x1x1, 4x1x1"), "demo.kc")
    assert result.accepted and result.composition is not None, [d.message for d in result.diagnostics]
    [diag] = unsupported(link_inputs(result.composition))
    assert (diag.code, dict(diag.data)["what"]) == ("E-UNSUPPORTED", "cluster shape")
    assert diag.helps == ("state the launch's shape in the pipeline: `cluster 2x1x1`",)


@pytest.mark.gpu
@pytest.mark.parametrize(("tiles", "blocks"), [(37, 4), (3, 2), (264, 132)])
def test_the_2x1x1_clustered_ring_runs_and_matches_its_reference(tmp_path: Path, tiles: int, blocks: int) -> None:
    """On a GPU: the clustered link launches (grids of whole clusters) and sums bit for bit like the ring."""
    from tests.link.test_run_gpu import run_ring

    result = link([build_example("ring", tmp_path / "src", CLUSTERED)], tmp_path / "out")
    assert result.ok, [f"{d.code}: {d.message}" for d in result.diagnostics]
    run_ring(tmp_path / "out", tiles, blocks)
